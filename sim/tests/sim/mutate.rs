//! Mutations of valid inputs for the fuzz tests: cut the text, drop,
//! repeat or swap lines, delete a field, put a number at a limit, swap a
//! word for a name the format uses elsewhere, insert or flip bytes. Each is
//! a proptest value, so a failure shrinks to the fewest, smallest edits.

use proptest::prelude::*;
use proptest::sample::Index;

/// Numbers at the edges of the types and ranges the formats use.
const LIMITS: &[&str] = &[
    "0",
    "1",
    "-1",
    "-0",
    "1.5",
    "1e400",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "3600000",
    "3600001",
    "86400001",
];

/// Words the formats use, so a swap makes a plausible but wrong input.
const WORDS: &[&str] = &[
    "", "x", "acquire", "renew", "release", "delete", "lease", "db", "world", "invoke", "return",
    "final", "pause", "crash", "stop", "reject", "FEN-1", "CAP-1", "null", "replica", "seq",
];

/// One edit.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Keep only the first part.
    Truncate(Index),
    /// Remove one line.
    DeleteLine(Index),
    /// Repeat one line right after itself.
    DuplicateLine(Index),
    /// Swap two lines.
    SwapLines(Index, Index),
    /// Remove one field: a key of a JSON object, or a `key = value` line.
    DeleteField(Index),
    /// Replace one number with a limit.
    Number(Index, Index),
    /// Replace one quoted word with another the formats use.
    Word(Index, Index),
    /// Insert bytes.
    Insert(Index, Vec<u8>),
    /// XOR one byte.
    Flip(Index, u8),
}

/// Any one edit.
pub fn mutation() -> impl Strategy<Value = Mutation> {
    let index = any::<Index>;
    prop_oneof![
        1 => index().prop_map(Mutation::Truncate),
        1 => index().prop_map(Mutation::DeleteLine),
        1 => index().prop_map(Mutation::DuplicateLine),
        1 => (index(), index()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        3 => index().prop_map(Mutation::DeleteField),
        4 => (index(), index()).prop_map(|(a, b)| Mutation::Number(a, b)),
        2 => (index(), index()).prop_map(|(a, b)| Mutation::Word(a, b)),
        1 => (index(), prop::collection::vec(any::<u8>(), 1..8)).prop_map(|(a, b)| Mutation::Insert(a, b)),
        1 => (index(), 1..=255u8).prop_map(|(a, b)| Mutation::Flip(a, b)),
    ]
}

/// One of `corpus` (with its label), edited one to four times.
pub fn mutated<T: Clone + std::fmt::Debug + 'static>(
    corpus: Vec<(T, String)>,
) -> impl Strategy<Value = (T, Vec<u8>)> {
    (
        prop::sample::select(corpus),
        prop::collection::vec(mutation(), 1..=4),
    )
        .prop_map(|((label, text), edits)| {
            let bytes = edits
                .iter()
                .fold(text.into_bytes(), |bytes, edit| apply(&bytes, edit));
            (label, bytes)
        })
}

/// `bytes` with `edit` made.
pub fn apply(bytes: &[u8], edit: &Mutation) -> Vec<u8> {
    let lines = || -> Vec<Vec<u8>> { bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect() };
    let join = |lines: Vec<Vec<u8>>| lines.join(&b'\n');
    match edit {
        Mutation::Truncate(at) => bytes[..at.index(bytes.len() + 1)].to_vec(),
        Mutation::DeleteLine(at) => {
            let mut lines = lines();
            lines.remove(at.index(lines.len()));
            join(lines)
        }
        Mutation::DuplicateLine(at) => {
            let mut lines = lines();
            let at = at.index(lines.len());
            lines.insert(at, lines[at].clone());
            join(lines)
        }
        Mutation::SwapLines(a, b) => {
            let mut lines = lines();
            let (a, b) = (a.index(lines.len()), b.index(lines.len()));
            lines.swap(a, b);
            join(lines)
        }
        Mutation::DeleteField(at) => delete_field(lines(), at).map_or(bytes.to_vec(), join),
        Mutation::Number(at, limit) => {
            let spans = spans(bytes, |b| b.is_ascii_digit(), |b| b.is_ascii_digit());
            replace(bytes, &spans, at, LIMITS[limit.index(LIMITS.len())])
        }
        Mutation::Word(at, word) => {
            let spans = quoted(bytes);
            replace(bytes, &spans, at, WORDS[word.index(WORDS.len())])
        }
        Mutation::Insert(at, extra) => {
            let mut out = bytes.to_vec();
            let at = at.index(out.len() + 1);
            out.splice(at..at, extra.iter().copied());
            out
        }
        Mutation::Flip(at, mask) => {
            let mut out = bytes.to_vec();
            if !out.is_empty() {
                let at = at.index(out.len());
                out[at] ^= mask;
            }
            out
        }
    }
}

/// Removes the `at`-th field over all lines: each key of a JSON object
/// line (nested ones too), each `key = value` line of TOML.
fn delete_field(mut lines: Vec<Vec<u8>>, at: &Index) -> Option<Vec<Vec<u8>>> {
    let mut slots = Vec::new();
    for (line, text) in lines.iter().enumerate() {
        match serde_json::from_slice::<serde_json::Value>(text) {
            Ok(value) => {
                for key in 0..count_keys(&value) {
                    slots.push((line, Some(key)));
                }
            }
            Err(_) if text.contains(&b'=') => slots.push((line, None)),
            Err(_) => {}
        }
    }
    let (line, key) = *slots.get(at.index(slots.len().max(1)))?;
    match key {
        None => {
            lines.remove(line);
        }
        Some(key) => {
            let mut value: serde_json::Value = serde_json::from_slice(&lines[line]).ok()?;
            remove_key(&mut value, &mut { key });
            lines[line] = value.to_string().into_bytes();
        }
    }
    Some(lines)
}

fn count_keys(value: &serde_json::Value) -> usize {
    match value {
        serde_json::Value::Object(map) => map.len() + map.values().map(count_keys).sum::<usize>(),
        serde_json::Value::Array(items) => items.iter().map(count_keys).sum(),
        _ => 0,
    }
}

/// Removes the `left`-th key in depth-first order; true once done.
fn remove_key(value: &mut serde_json::Value, left: &mut usize) -> bool {
    match value {
        serde_json::Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                if *left == 0 {
                    map.remove(&key);
                    return true;
                }
                *left -= 1;
                if remove_key(map.get_mut(&key).expect("a listed key"), left) {
                    return true;
                }
            }
            false
        }
        serde_json::Value::Array(items) => items.iter_mut().any(|item| remove_key(item, left)),
        _ => false,
    }
}

/// Byte ranges of runs that start with `first` and continue with `rest`.
fn spans(
    bytes: &[u8],
    first: impl Fn(u8) -> bool,
    rest: impl Fn(u8) -> bool,
) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if first(bytes[at]) {
            let start = at;
            while at < bytes.len() && rest(bytes[at]) {
                at += 1;
            }
            out.push((start, at));
        } else {
            at += 1;
        }
    }
    out
}

/// Byte ranges of the insides of `"..."` strings (no escapes followed).
fn quoted(bytes: &[u8]) -> Vec<(usize, usize)> {
    let quotes: Vec<usize> = (0..bytes.len()).filter(|&i| bytes[i] == b'"').collect();
    quotes
        .chunks_exact(2)
        .map(|pair| (pair[0] + 1, pair[1]))
        .collect()
}

fn replace(bytes: &[u8], spans: &[(usize, usize)], at: &Index, with: &str) -> Vec<u8> {
    let mut out = bytes.to_vec();
    if !spans.is_empty() {
        let (start, end) = spans[at.index(spans.len())];
        out.splice(start..end, with.bytes());
    }
    out
}
