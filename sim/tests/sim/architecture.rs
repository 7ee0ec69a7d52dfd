//! The simulator's layering, read from its source: each layer folder uses
//! only the layers `lib.rs` says it may, so the top-level modules never
//! import each other in a circle, and only the madsim boundary and the
//! worker under test touch madsim.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Layer order, and what each layer may use, as `lib.rs` documents it.
const LAYERS: &[(&str, &[&str])] = &[
    ("model", &[]),
    ("checker", &["model"]),
    ("db", &["model"]),
    ("calls", &["model"]),
    ("plan", &["model", "calls"]),
    ("world", &["model", "db", "calls", "plan"]),
    ("subject", &["model", "world"]),
    ("report", &["model", "checker"]),
    (
        "search",
        &[
            "model", "checker", "db", "calls", "world", "subject", "report",
        ],
    ),
    ("sweep", &["model", "checker", "report", "search"]),
    (
        "real",
        &["model", "checker", "calls", "plan", "report", "subject"],
    ),
];

/// Layers that run on any runtime: madsim is not theirs to name.
const RUNTIME_FREE: &[&str] = &[
    "model", "checker", "db", "calls", "plan", "report", "sweep", "real",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The code of a file without its comments, so that docs may name layers.
fn code_of(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::NAME` (also `$crate::NAME`) a piece of code names.
fn crate_paths(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let after = &rest[at + "crate::".len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            found.push(name);
        }
        rest = after;
    }
    found
}

/// Each layer's files (path under `src`, text): the top-level folder (or
/// file) under `src`.
fn files_by_layer() -> BTreeMap<String, Vec<(String, String)>> {
    let mut by_layer: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (relative, text) in crate::source_paths::rust_sources(&src(), &[]) {
        let top = relative.split('/').next().expect("a component");
        let top = top.trim_end_matches(".rs").to_owned();
        by_layer.entry(top).or_default().push((relative, text));
    }
    by_layer
}

#[test]
fn every_top_level_module_is_a_layer_folder() {
    let by_layer = files_by_layer();
    let mut tops: Vec<&str> = by_layer.keys().map(String::as_str).collect();
    tops.retain(|top| !matches!(*top, "lib" | "bin"));
    let mut layers: Vec<&str> = LAYERS.iter().map(|(name, _)| *name).collect();
    layers.sort_unstable();
    assert_eq!(tops, layers, "sim/src holds exactly the layer folders");
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs");
    let declared: Vec<&str> = lib
        .lines()
        .filter_map(|line| line.strip_prefix("pub mod "))
        .map(|rest| rest.trim_end_matches(';'))
        .collect();
    let in_order: Vec<&str> = LAYERS.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        declared, in_order,
        "lib.rs declares the layers in layer order"
    );
    for (layer, _) in LAYERS {
        let mod_rs = src().join(layer).join("mod.rs");
        let text = std::fs::read_to_string(&mod_rs).expect("a layer's mod.rs");
        assert!(
            text.starts_with("//! "),
            "{}: opens with a //! line saying what the layer is",
            mod_rs.display()
        );
    }
}

#[test]
fn layers_use_only_the_layers_before_them() {
    for (index, (layer, allowed)) in LAYERS.iter().enumerate() {
        let earlier: Vec<&str> = LAYERS[..index].iter().map(|(name, _)| *name).collect();
        for used in *allowed {
            assert!(
                earlier.contains(used),
                "the table lets {layer} use {used}, which is not before it"
            );
        }
    }
    let mut broken = Vec::new();
    for (layer, files) in files_by_layer() {
        let Some((_, allowed)) = LAYERS.iter().find(|(name, _)| *name == layer) else {
            continue;
        };
        for (file, text) in files {
            let code = code_of(&text);
            for used in crate_paths(&code) {
                if used != layer && !allowed.contains(&used.as_str()) {
                    broken.push(format!("sim/src/{file}: uses crate::{used}"));
                }
            }
            if RUNTIME_FREE.contains(&layer.as_str()) && code.contains("madsim") {
                broken.push(format!("sim/src/{file}: names madsim"));
            }
        }
    }
    assert!(broken.is_empty(), "layering broken:\n{}", broken.join("\n"));
}

#[test]
fn the_reader_finds_cross_layer_paths() {
    let code = code_of("use crate::model::{A, B};\nlet x = $crate::world::f(); // crate::search");
    assert_eq!(crate_paths(&code), ["model", "world"]);
}

/// The layer rule again, with every path followed to the file that defines
/// what it names: a layer's `pub use` of another layer's item is no side
/// door for a third.
#[test]
fn no_reexport_is_a_side_door_between_layers() {
    use crate::source_paths::{crate_modules, references_of};
    let modules = crate_modules(&src(), "lib.rs", &["bin"]);
    let mut broken = Vec::new();
    for (index, module) in modules.iter().enumerate() {
        let Some(layer) = module.path.first() else {
            continue;
        };
        let Some((_, allowed)) = LAYERS.iter().find(|(name, _)| name == layer) else {
            continue;
        };
        for target in references_of(index, &modules) {
            let Some(used) = modules[target].path.first() else {
                continue;
            };
            if used != layer && !allowed.contains(&used.as_str()) {
                broken.push(format!(
                    "{}: reaches {} (layer {used})",
                    module.path.join("/"),
                    modules[target].path.join("/")
                ));
            }
        }
    }
    broken.sort();
    broken.dedup();
    assert!(broken.is_empty(), "side doors:\n{}", broken.join("\n"));
}
