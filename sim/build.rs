//! Stamps the binary with a hash of the sources it was built from, so sweep
//! summaries from different builds are never silently merged.

use std::path::{Path, PathBuf};

/// What a build is made of, relative to the workspace root.
const INPUTS: [&str; 6] = [
    "Cargo.toml",
    "Cargo.lock",
    "worker/Cargo.toml",
    "worker/src",
    "sim/Cargo.toml",
    "sim/src",
];

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest
        .parent()
        .expect("sim/ sits in the workspace")
        .to_owned();
    let mut files = Vec::new();
    for input in INPUTS {
        let path = root.join(input);
        // A folder is scanned whole by cargo when any file in it changes.
        println!("cargo:rerun-if-changed={}", path.display());
        collect(&path, &mut files);
    }
    files.sort();
    // FNV-1a over each file's relative path and contents: stable across
    // machines and toolchains, unlike std's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for file in &files {
        let relative = file.strip_prefix(&root).expect("under the root");
        eat(relative.to_string_lossy().replace('\\', "/").as_bytes());
        eat(&[0]);
        eat(&std::fs::read(file).unwrap_or_default());
        eat(&[0]);
    }
    println!("cargo:rustc-env=SIM_SOURCE_HASH={hash:016x}");
}

fn collect(path: &Path, files: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let Ok(entries) = std::fs::read_dir(path) else {
            return;
        };
        for entry in entries.flatten() {
            collect(&entry.path(), files);
        }
    } else if path.is_file() {
        files.push(path.to_owned());
    }
}
