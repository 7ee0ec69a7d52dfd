//! Inside every folder of `sim/src` and `worker/src`, the files use each
//! other in one direction: no circle of files, read from the source.
//!
//! A folder's nodes are its own `mod.rs` (or crate root) and its direct
//! children, a file or a subfolder taken whole. A file uses another when it
//! names an item of it: through `use`, a path in code, or a name that a
//! `mod.rs` re-exports (followed to the file that defines it, so a re-export
//! is no side door). A `mod.rs`'s own `pub use` lines are the folder's face,
//! not a use. Unit tests (`#[cfg(test)]` to the end of a file) are left out.

use crate::source_paths::{Module, crate_modules, references_of};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each crate source tree: its folder, its root file, subfolders that are
/// other crates.
const TREES: &[(&str, &str, &[&str])] = &[
    ("sim/src", "lib.rs", &["bin"]),
    ("sim/src/bin/sim", "main.rs", &[]),
    ("worker/src", "lib.rs", &["bin"]),
    ("worker/test-support/src", "lib.rs", &[]),
];

/// Circles that exist today and are being taken apart (issue 38); the test
/// fails on any other circle, and on one of these once it is gone, so the
/// list only shrinks.
const KNOWN_CIRCLES: &[&str] = &[];

/// A folder's node for a module path: the folder's face or its child.
fn node_in(folder: &[String], module: &Module) -> Option<String> {
    if !module.path.starts_with(folder) {
        return None;
    }
    Some(match module.path.get(folder.len()) {
        None => "mod".to_owned(),
        Some(child) if module.path.len() > folder.len() + 1 || module.is_folder => {
            format!("{child}/")
        }
        Some(child) => format!("{child}.rs"),
    })
}

/// Every circle of files inside a folder, each as `folder: {a, b, ...}`.
pub(crate) fn circles(tree_label: &str, modules: &[Module]) -> Vec<String> {
    let folders: BTreeSet<&Vec<String>> = modules
        .iter()
        .filter(|m| m.is_folder)
        .map(|m| &m.path)
        .collect();
    let mut found = Vec::new();
    for folder in folders {
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (index, module) in modules.iter().enumerate() {
            let Some(from) = node_in(folder, module) else {
                continue;
            };
            for target in references_of(index, modules) {
                let Some(to) = node_in(folder, &modules[target]) else {
                    continue;
                };
                if to != from {
                    edges.entry(from.clone()).or_default().insert(to);
                }
            }
        }
        for members in strongly_connected(&edges) {
            let place = if folder.is_empty() {
                tree_label.to_owned()
            } else {
                format!("{tree_label}/{}", folder.join("/"))
            };
            let list: Vec<String> = members.into_iter().collect();
            found.push(format!("{place}: {{{}}}", list.join(", ")));
        }
    }
    found
}

/// The groups of two or more nodes that reach each other.
fn strongly_connected(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reach = |start: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start.clone()];
        while let Some(node) = stack.pop() {
            for next in edges.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        edges.keys().map(|node| (node, reach(node))).collect();
    let mut groups: Vec<BTreeSet<String>> = Vec::new();
    for (node, from_node) in &reached {
        if groups.iter().any(|group| group.contains(*node)) {
            continue;
        }
        let group: BTreeSet<String> = from_node
            .iter()
            .filter(|other| {
                *other == *node || reached.get(other).is_some_and(|back| back.contains(*node))
            })
            .cloned()
            .collect();
        if group.len() > 1 {
            groups.push(group);
        }
    }
    groups
}

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace holds sim/")
}

#[test]
fn no_folder_holds_a_circle_of_files() {
    let mut found = Vec::new();
    for (folder, root_file, skip) in TREES {
        let modules = crate_modules(&workspace().join(folder), root_file, skip);
        assert!(modules.len() > 1, "{folder}: no modules read");
        found.extend(circles(folder, &modules));
    }
    let known: BTreeSet<&str> = KNOWN_CIRCLES.iter().copied().collect();
    let new: Vec<&String> = found
        .iter()
        .filter(|c| !known.contains(c.as_str()))
        .collect();
    let gone: Vec<&&str> = known
        .iter()
        .filter(|c| !found.iter().any(|f| f == **c))
        .collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "circles of files inside a folder:\n  new: {new:#?}\n  gone from KNOWN_CIRCLES: {gone:#?}\n\
         every circle today: {found:#?}"
    );
}

fn modules_of(files: &[(&str, &str)]) -> Vec<Module> {
    crate::source_paths::modules_from(
        files
            .iter()
            .map(|(path, text)| ((*path).to_owned(), (*text).to_owned()))
            .collect(),
        "lib.rs",
    )
}

#[test]
fn a_circle_through_a_reexport_is_found_and_a_face_is_not_a_use() {
    let tree = [
        ("lib.rs", "pub mod a;\npub use a::Thing;"),
        (
            "a/mod.rs",
            "mod b;\nmod c;\npub use b::Thing;\npub(crate) use c::Other;",
        ),
        ("a/b.rs", "use super::Other;\npub struct Thing;"),
        (
            "a/c.rs",
            "pub struct Other;\nfn f() -> crate::Thing { crate::a::Thing }",
        ),
    ];
    assert_eq!(circles("t", &modules_of(&tree)), ["t/a: {b.rs, c.rs}"]);
    let one_way = [
        ("lib.rs", "pub mod a;"),
        ("a/mod.rs", "mod b;\nmod c;\npub use b::Thing;"),
        (
            "a/b.rs",
            "use super::c::{self, Other as O};\npub struct Thing(O);",
        ),
        (
            "a/c.rs",
            "pub struct Other;\n#[cfg(test)]\nmod tests { use super::super::b::Thing; }",
        ),
    ];
    assert!(circles("t", &modules_of(&one_way)).is_empty());
}

#[test]
fn a_face_that_uses_its_child_in_code_is_a_node_of_the_circle() {
    let tree = [
        ("lib.rs", "mod a;"),
        ("a/mod.rs", "mod b;\nfn helper() {}\nfn f() { b::g() }"),
        (
            "a/b.rs",
            "pub fn g() { super::helper() }\nconst S: &str = \"super::x\";",
        ),
    ];
    assert_eq!(circles("t", &modules_of(&tree)), ["t/a: {b.rs, mod}"]);
}
