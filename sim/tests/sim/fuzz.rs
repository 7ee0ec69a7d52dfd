//! Fuzzing every parser the tool has: replay tokens, scenario TOML, history
//! JSON lines and the command line's event syntax get random bytes and
//! edits of valid inputs (`mutate.rs`); none may panic, each refusal must
//! say where, and what is accepted must be usable (a token round-trips and
//! runs, a history is judged). About 11,000 cases per `cargo test`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use retention_sim::model::{EventFlag, FaultConfig, set_fault_flag};
use retention_sim::report::{parse_token, replay_token, scenario_files};
use retention_sim::search::properties::config;
use retention_sim::search::swarm;
use retention_sim::{History, RunSpec, Scenario, Sim, check};

use super::mutate::mutated;

/// Random bytes, either any at all or from the characters JSON and TOML
/// are made of (which get further into a parser).
fn noise() -> impl Strategy<Value = Vec<u8>> {
    let syntax = b"{}[]\":,=.#-+_ \n\t0123456789eEtrufalsn\\xyz".to_vec();
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..300),
        prop::collection::vec(prop::sample::select(syntax), 0..300),
    ]
}

fn tokens() -> Vec<((), String)> {
    (0..24)
        .map(|seed| ((), replay_token(&swarm(seed, None))))
        .chain([((), replay_token(&RunSpec::default()))])
        .collect()
}

fn scenarios() -> &'static Vec<(PathBuf, String)> {
    static CORPUS: OnceLock<Vec<(PathBuf, String)>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        scenario_files(&dir)
            .expect("the scenarios folder")
            .into_iter()
            .map(|path| {
                let text = std::fs::read_to_string(&path).expect("a scenario file");
                (path, text)
            })
            .collect()
    })
}

/// Short runs with faults, so every kind of event is in some history.
fn histories() -> &'static Vec<((), String)> {
    static CORPUS: OnceLock<Vec<((), String)>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        (1..=6)
            .map(|seed| {
                let mut spec = swarm(seed, None);
                spec.duration_ms = 8_000;
                spec.events
                    .retain(|event| event.at_ms().is_none_or(|at| at < spec.duration_ms));
                let history = Sim::new(&spec).run().expect("a valid spec");
                ((), history.to_jsonl())
            })
            .collect()
    })
}

/// Whether a replay token's refusal says where: serde's line and column, a
/// field path, or that the token is not an object at all.
fn token_error_is_located(message: &str) -> bool {
    let Some(rest) = message.strip_prefix("replay token: ") else {
        return false;
    };
    let field = rest.split_once(": ").is_some_and(|(field, _)| {
        !field.is_empty()
            && field
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.[]".contains(c))
    });
    rest.contains("column ") || field || rest.starts_with("expected a JSON object")
}

/// Accepted tokens that are also run (each run costs milliseconds).
static TOKEN_RUNS: AtomicUsize = AtomicUsize::new(0);

fn token_case(bytes: &[u8]) -> Result<(), TestCaseError> {
    let text = String::from_utf8_lossy(bytes);
    match parse_token(&text) {
        Err(message) => prop_assert!(token_error_is_located(&message), "{message}"),
        Ok(spec) => {
            // What is accepted is normalised: its own token reads back equal.
            let again = parse_token(&replay_token(&spec));
            prop_assert_eq!(again.as_ref(), Ok(&spec));
            let cheap = spec.duration_ms <= 20_000
                && spec.backlog_rows + spec.boundary_rows <= 20_000
                && spec.arrivals_per_sec <= 100;
            if cheap && TOKEN_RUNS.fetch_add(1, Ordering::Relaxed) < 150 {
                let history = Sim::new(&spec).run().expect("a validated spec runs");
                check(&history);
            }
        }
    }
    Ok(())
}

fn scenario_case(path: &Path, bytes: &[u8]) -> Result<(), TestCaseError> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Ok(()); // read_text refuses it first: `non_utf8_names_line_and_byte`
    };
    if let Err(error) = Scenario::parse(path, text) {
        let lines = text.lines().count().max(1);
        prop_assert!(
            error
                .line
                .is_some_and(|line| (1..=lines + 1).contains(&line)),
            "no line, or past the end ({lines} lines): {error}\n--- text ---\n{text}"
        );
    }
    Ok(())
}

fn history_case(bytes: &[u8]) -> Result<(), TestCaseError> {
    let text = String::from_utf8_lossy(bytes);
    match History::from_jsonl(&text) {
        Err(message) => {
            let lines = text.lines().count().max(1);
            let line: Option<usize> = message.split_once("line ").and_then(|(_, rest)| {
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                digits.parse().ok()
            });
            prop_assert!(
                line.is_some_and(|line| (1..=lines).contains(&line)),
                "no line, or past the end ({lines} lines): {message}"
            );
        }
        Ok(history) => {
            // Judged, printed and excerpted without a panic.
            let verdict = check(&history);
            let _ = history.timeline();
            for violation in verdict.violations.iter().take(5) {
                let _ = retention_sim::report::excerpt(&history, &violation.events);
            }
        }
    }
    Ok(())
}

fn flag_case(flag: EventFlag, text: &str) -> Result<(), TestCaseError> {
    match flag.parse(text) {
        Err(message) => prop_assert!(message.starts_with(flag.flag()), "{message}"),
        Ok(event) => {
            let spec = RunSpec {
                events: vec![event],
                ..RunSpec::default()
            };
            if let Err(error) = spec.validate() {
                prop_assert!(error.field.starts_with("events[0]"), "{error}");
            }
        }
    }
    let mut faults = FaultConfig::default();
    if let Err(message) = set_fault_flag(&mut faults, text) {
        prop_assert!(message.starts_with("--fault"), "{message}");
    }
    Ok(())
}

/// Text for the event flags: numbers (some at limits), operation and knob
/// names, separators and junk, joined.
fn flag_text() -> impl Strategy<Value = String> {
    let part = prop_oneof![
        (0u64..5_000).prop_map(|n| n.to_string()),
        prop::sample::select(vec![
            "18446744073709551615",
            "18446744073709551616",
            "4294967296",
            "-1",
            "",
            "renew",
            "acquire",
            "delete",
            "release",
            "latency_ms_max",
            "reject_permille",
            "=",
            "==",
            ":",
            "+5",
            " 1",
            "1.0",
            "é",
            "\u{0}",
        ])
        .prop_map(str::to_owned),
    ];
    prop::collection::vec(part, 0..6).prop_map(|parts| parts.join(":"))
}

proptest! {
    #![proptest_config(config(3_000))]

    #[test]
    fn fuzz_replay_tokens_edited(case in mutated(tokens())) {
        token_case(&case.1)?;
    }

    #[test]
    fn fuzz_scenario_files_edited(case in mutated(scenarios().clone())) {
        scenario_case(&case.0, &case.1)?;
    }

    #[test]
    fn fuzz_event_flags(flag in prop::sample::select(EventFlag::ALL.to_vec()), text in flag_text()) {
        flag_case(flag, &text)?;
    }
}

proptest! {
    #![proptest_config(config(1_500))]

    #[test]
    fn fuzz_histories_edited(case in mutated(histories().clone())) {
        history_case(&case.1)?;
    }
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn fuzz_parsers_with_noise(bytes in noise()) {
        token_case(&bytes)?;
        scenario_case(Path::new("noise.toml"), &bytes)?;
        history_case(&bytes)?;
        flag_case(EventFlag::Pause, &String::from_utf8_lossy(&bytes))?;
    }
}
