//! Reads a crate's source as a module tree and resolves every path a module
//! names (in `use` lines and in code) to the module that defines the item,
//! following re-exports: what the architecture tests judge.

use std::path::Path;

/// One module that is a file: where it sits and what it names.
pub(crate) struct Module {
    /// Its path from the crate root (`["world", "port"]`).
    pub(crate) path: Vec<String>,
    /// A `mod.rs` or crate root: it has children.
    pub(crate) is_folder: bool,
    /// Its `use` items: the path, the name it binds, and whether the line is
    /// part of a folder's face (a `pub use` in a `mod.rs` or crate root).
    uses: Vec<(Vec<String>, String, bool)>,
    /// Paths named in code, outside `use` lines.
    named: Vec<Vec<String>>,
}

/// Every file module of a crate under `dir`, whose root is `root_file`;
/// subfolders in `skip` are other crates.
pub(crate) fn crate_modules(dir: &Path, root_file: &str, skip: &[&str]) -> Vec<Module> {
    modules_from(rust_sources(dir, skip), root_file)
}

/// Every `.rs` file under `dir` (but not under the subfolders in `skip`),
/// as its path relative to `dir` and its text, in path order.
pub(crate) fn rust_sources(dir: &Path, skip: &[&str]) -> Vec<(String, String)> {
    let mut files = Vec::new();
    collect(dir, dir, skip, &mut files);
    files
}

fn collect(root: &Path, dir: &Path, skip: &[&str], out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let relative = path.strip_prefix(root).expect("under root");
        let relative = relative.to_string_lossy().replace('\\', "/");
        if path.is_dir() {
            if !skip.contains(&relative.as_str()) {
                collect(root, &path, skip, out);
            }
        } else if relative.ends_with(".rs") {
            let text = std::fs::read_to_string(&path).expect("readable source");
            out.push((relative, text));
        }
    }
}

/// The module tree of files given as (path relative to the crate folder, text).
pub(crate) fn modules_from(files: Vec<(String, String)>, root_file: &str) -> Vec<Module> {
    let mut modules = Vec::new();
    for (relative, text) in files {
        let mut path: Vec<String> = relative
            .trim_end_matches(".rs")
            .split('/')
            .map(str::to_owned)
            .collect();
        let last = path.last().cloned().unwrap_or_default();
        let is_folder = last == "mod" || relative == root_file;
        if is_folder {
            path.pop();
        }
        let code = match text.find("#[cfg(test)]") {
            Some(at) => &text[..at],
            None => &text[..],
        };
        let tokens = tokens_of(code);
        let (uses, named) = paths_of(&tokens, is_folder);
        modules.push(Module {
            path,
            is_folder,
            uses,
            named,
        });
    }
    modules
}

/// Identifiers, `::` and single punctuation; comments, strings and
/// character literals are dropped.
fn tokens_of(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut tokens = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        let next = chars.get(at + 1).copied();
        if c == '/' && next == Some('/') {
            while at < chars.len() && chars[at] != '\n' {
                at += 1;
            }
        } else if c == '/' && next == Some('*') {
            at += 2;
            while at + 1 < chars.len() && !(chars[at] == '*' && chars[at + 1] == '/') {
                at += 1;
            }
            at += 2;
        } else if c == '"' || (c == 'r' && matches!(next, Some('"' | '#'))) {
            at = skip_string(&chars, at);
        } else if c == '\'' {
            // 'x' and '\n' are character literals; 'a alone is a lifetime.
            if next == Some('\\') {
                at += 2;
                while at < chars.len() && chars[at] != '\'' {
                    at += 1;
                }
                at += 1;
            } else if chars.get(at + 2) == Some(&'\'') {
                at += 3;
            } else {
                at += 1;
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = at;
            while at < chars.len() && (chars[at].is_alphanumeric() || chars[at] == '_') {
                at += 1;
            }
            tokens.push(chars[start..at].iter().collect());
        } else if c == ':' && next == Some(':') {
            tokens.push("::".to_owned());
            at += 2;
        } else {
            if !c.is_whitespace() {
                tokens.push(c.to_string());
            }
            at += 1;
        }
    }
    tokens
}

/// Past a string literal starting at `at` (plain, raw or raw with hashes).
fn skip_string(chars: &[char], mut at: usize) -> usize {
    if chars[at] == 'r' {
        let mut hashes = 0;
        at += 1;
        while chars.get(at) == Some(&'#') {
            hashes += 1;
            at += 1;
        }
        if chars.get(at) != Some(&'"') {
            return at; // an identifier starting with r, such as r#type
        }
        at += 1;
        while at < chars.len() {
            if chars[at] == '"' && (1..=hashes).all(|k| chars.get(at + k) == Some(&'#')) {
                return at + 1 + hashes;
            }
            at += 1;
        }
        return at;
    }
    at += 1;
    while at < chars.len() && chars[at] != '"' {
        at += if chars[at] == '\\' { 2 } else { 1 };
    }
    at + 1
}

type Uses = Vec<(Vec<String>, String, bool)>;

/// The `use` items and the paths named in code, from a module's tokens.
fn paths_of(tokens: &[String], is_face_file: bool) -> (Uses, Vec<Vec<String>>) {
    let mut uses = Vec::new();
    let mut named = Vec::new();
    let mut at = 0;
    while at < tokens.len() {
        let token = tokens[at].as_str();
        let after_path = at > 0 && tokens[at - 1] == "::";
        if token == "use" && !after_path {
            let public = at > 0 && (tokens[at - 1] == "pub" || tokens[at - 1] == ")");
            let mut items = Vec::new();
            at = use_tree(tokens, at + 1, Vec::new(), &mut items);
            for (path, name) in items {
                uses.push((path, name, public && is_face_file));
            }
            continue;
        }
        let starts_path = matches!(token, "crate" | "super" | "self")
            || (is_face_file && token.chars().next().is_some_and(char::is_lowercase));
        if starts_path && !after_path && tokens.get(at + 1).is_some_and(|t| t == "::") {
            let mut path = vec![token.to_owned()];
            at += 1;
            while at + 1 < tokens.len() && tokens[at] == "::" && is_ident(&tokens[at + 1]) {
                path.push(tokens[at + 1].clone());
                at += 2;
            }
            named.push(path);
            continue;
        }
        at += 1;
    }
    (uses, named)
}

fn is_ident(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphanumeric() || c == '_')
}

/// One use tree from `at`, each leaf as (full path, the name it binds);
/// returns where the tree ends.
fn use_tree(
    tokens: &[String],
    mut at: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, String)>,
) -> usize {
    while at < tokens.len() {
        match tokens[at].as_str() {
            "::" => at += 1,
            "{" => {
                at += 1;
                while at < tokens.len() && tokens[at] != "}" {
                    at = use_tree(tokens, at, prefix.clone(), out);
                    if tokens.get(at).is_some_and(|t| t == ",") {
                        at += 1;
                    }
                }
                return at + 1;
            }
            "*" => {
                out.push((prefix, "*".to_owned()));
                return at + 1;
            }
            "," | "}" | ";" => return at,
            word => {
                prefix.push(word.to_owned());
                at += 1;
                if tokens.get(at).is_some_and(|t| t == "::") {
                    continue;
                }
                let mut name = word.to_owned();
                if tokens.get(at).is_some_and(|t| t == "as") {
                    name = tokens.get(at + 1).cloned().unwrap_or_default();
                    at += 2;
                }
                if name == "self" {
                    prefix.pop();
                    name = prefix.last().cloned().unwrap_or_default();
                }
                out.push((prefix, name));
                return at;
            }
        }
    }
    at
}

fn find(modules: &[Module], path: &[String]) -> Option<usize> {
    modules.iter().position(|m| m.path == path)
}

/// The module a path names, read from inside `from`, following re-exports;
/// `None` for another crate's path.
fn resolve(modules: &[Module], from: usize, path: &[String], depth: usize) -> Option<usize> {
    assert!(depth < 32, "re-exports loop at {path:?}");
    let here = &modules[from].path;
    let (mut current, rest) = match path.first().map(String::as_str) {
        Some("crate") => (Vec::new(), &path[1..]),
        Some("self" | "super") => (here.clone(), path),
        Some(first) => {
            let mut child = here.clone();
            child.push(first.to_owned());
            find(modules, &child)?;
            (here.clone(), path)
        }
        None => return None,
    };
    for segment in rest {
        match segment.as_str() {
            "self" => continue,
            "super" => {
                current.pop();
                continue;
            }
            "*" => break,
            _ => {}
        }
        let mut child = current.clone();
        child.push(segment.clone());
        if find(modules, &child).is_some() {
            current = child;
            continue;
        }
        let owner = find(modules, &current)?;
        let reexport = modules[owner]
            .uses
            .iter()
            .find(|(_, name, _)| name == segment);
        return match reexport {
            Some((target, _, _)) => resolve(modules, owner, target, depth + 1),
            None => Some(owner),
        };
    }
    find(modules, &current)
}

/// The modules that `modules[index]` uses, face lines left out.
pub(crate) fn references_of(index: usize, modules: &[Module]) -> Vec<usize> {
    let module = &modules[index];
    let paths = module
        .uses
        .iter()
        .filter(|(_, _, face)| !face)
        .map(|(path, _, _)| path)
        .chain(module.named.iter());
    paths
        .filter_map(|path| resolve(modules, index, path, 0))
        .collect()
}
