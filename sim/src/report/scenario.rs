//! Scenario files: a named, described, reviewer-readable run with its
//! expected outcome, loaded with errors that name the file, line and field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::input::{SCENARIO_LIMIT_BYTES, read_text};
use super::toml_location::{failing_event, field_at, line_of, offset_of};
use crate::checker::{CLAUSES, Verdict};
use crate::model::{Flaw, RunSpec};

/// The most texts `expect.shows` may list: each is searched for in the
/// whole timeline.
pub const SHOWN_TEXTS_MAX: usize = 1_000;

/// One scenario file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// The file's name without `.toml`; also the snapshot's name.
    pub name: String,
    /// What the scenario shows, for a reviewer.
    pub description: String,
    /// The clause IDs it exercises.
    pub clauses: Vec<String>,
    /// The run.
    pub run: RunSpec,
    /// What must come out of it.
    #[serde(default)]
    pub expect: Expect,
}

/// A scenario's expected outcome.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Clauses the run must violate; empty means it must keep every clause.
    #[serde(default)]
    pub violates: Vec<String>,
    /// Text the timeline must contain, so the scenario proves it staged its
    /// story (a pause, a fenced delete, a stop during an acquire...).
    #[serde(default)]
    pub shows: Vec<String>,
    /// For a flawed variant (by name, e.g. `stale-release`): clauses the same
    /// run must violate when that variant replaces the worker.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub flaws: BTreeMap<String, Vec<String>>,
    /// `shows` texts a run against PostgreSQL (`sim scenario --real`) may
    /// miss, for the reason `real_why`: an instant or a call number that
    /// real timing moves. The simulated run must still show them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub real_may_miss: Vec<String>,
    /// Why the real run may miss `real_may_miss`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub real_why: String,
}

/// A scenario file that cannot be used, and where the problem is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file.
    pub file: PathBuf,
    /// The 1-based line, when known.
    pub line: Option<usize>,
    /// The field, as a path (`run.events[2].replica`), when known.
    pub field: Option<String>,
    /// What is wrong.
    pub problem: String,
}

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": {field}")?;
        }
        write!(f, ": {}", self.problem)
    }
}

impl std::error::Error for ScenarioError {}

impl Scenario {
    /// Reads and checks a scenario file.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let text = read_text(path, SCENARIO_LIMIT_BYTES).map_err(|error| ScenarioError {
            file: path.to_owned(),
            line: error.line,
            field: None,
            problem: error.problem,
        })?;
        Self::parse(path, &text)
    }

    /// Parses and checks scenario text; `path` names it in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ScenarioError> {
        let fail = |field: Option<String>, problem: String, offset: Option<usize>| {
            let line = offset.map(|at| line_of(text, at));
            ScenarioError {
                file: path.to_owned(),
                line,
                field,
                problem,
            }
        };
        let scenario: Self = toml::from_str(text).map_err(|error| {
            // serde reads an event through its `kind` tag, which loses the
            // spans inside it: find the entry and key again, one by one.
            if let Some((field, problem)) = failing_event(text) {
                let offset = offset_of(text, &field);
                return fail(Some(field), problem, offset);
            }
            let offset = error.span().map(|span| span.start);
            let problem = error.message().trim().to_owned();
            // A missing field's span is its whole table, which starts at
            // the table's first key: that key is not what is wrong.
            let field = offset
                .and_then(|at| field_at(text, at))
                .filter(|_| !problem.starts_with("missing field"));
            fail(field, problem, offset)
        })?;
        scenario.validate(path).map_err(|(field, problem)| {
            let offset = offset_of(text, &field);
            fail(Some(field), problem, offset)
        })?;
        Ok(scenario)
    }

    fn validate(&self, path: &Path) -> Result<(), (String, String)> {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        if self.name != stem {
            return Err((
                "name".into(),
                format!("{:?} must match the file name {stem:?}", self.name),
            ));
        }
        let known = |id: &String| CLAUSES.iter().any(|(clause, _)| clause == id);
        for (list, ids) in [
            ("clauses", &self.clauses),
            ("expect.violates", &self.expect.violates),
        ] {
            if let Some((index, id)) = ids.iter().enumerate().find(|(_, id)| !known(id)) {
                return Err((format!("{list}[{index}]"), format!("unknown clause {id:?}")));
            }
        }
        for (flaw, clauses) in &self.expect.flaws {
            let field = format!("expect.flaws.{flaw}");
            if Flaw::from_name(flaw).is_err() {
                return Err((field, format!("unknown flaw {flaw:?}")));
            }
            if let Some(id) = clauses.iter().find(|id| !known(id)) {
                return Err((field, format!("unknown clause {id:?}")));
            }
            if clauses.is_empty() {
                return Err((field, "name the clauses the flaw must break".into()));
            }
        }
        if self.description.trim().is_empty() {
            return Err((
                "description".into(),
                "say what the scenario shows, for a reviewer".into(),
            ));
        }
        if self.expect.shows.len() > SHOWN_TEXTS_MAX {
            return Err((
                format!("expect.shows[{SHOWN_TEXTS_MAX}]"),
                format!(
                    "{} texts: a scenario shows at most {SHOWN_TEXTS_MAX}",
                    self.expect.shows.len()
                ),
            ));
        }
        for (list, ids) in [
            ("clauses", &self.clauses),
            ("expect.violates", &self.expect.violates),
            ("expect.shows", &self.expect.shows),
        ] {
            let mut seen = std::collections::BTreeSet::new();
            if let Some(index) = ids.iter().position(|id| !seen.insert(id)) {
                return Err((
                    format!("{list}[{index}]"),
                    format!("{:?} listed twice", ids[index]),
                ));
            }
        }
        if let Some(index) = self
            .expect
            .shows
            .iter()
            .position(|text| text.trim().is_empty())
        {
            return Err((
                format!("expect.shows[{index}]"),
                "empty text is in every timeline: it shows nothing".into(),
            ));
        }
        if self.clauses.is_empty() {
            return Err((
                "clauses".into(),
                "name at least one clause the scenario exercises".into(),
            ));
        }
        let expect = &self.expect;
        for (field, texts) in [
            ("expect.shows", &expect.shows),
            ("expect.real_may_miss", &expect.real_may_miss),
        ] {
            if let Some(index) = (1..texts.len()).find(|&at| texts[..at].contains(&texts[at])) {
                return Err((
                    format!("{field}[{index}]"),
                    format!("{:?} is listed twice", texts[index]),
                ));
            }
        }
        if let Some(index) = (expect.real_may_miss.iter()).position(|t| !expect.shows.contains(t)) {
            return Err((
                format!("expect.real_may_miss[{index}]"),
                format!("{:?} is not in expect.shows", expect.real_may_miss[index]),
            ));
        }
        match (
            expect.real_may_miss.is_empty(),
            expect.real_why.trim().is_empty(),
        ) {
            (false, true) => {
                return Err((
                    "expect.real_may_miss".into(),
                    "say in expect.real_why why a real run may miss these".into(),
                ));
            }
            (true, false) => {
                return Err((
                    "expect.real_why".into(),
                    "explains nothing: expect.real_may_miss is empty".into(),
                ));
            }
            _ => {}
        }
        self.run
            .validate()
            .map_err(|error| (format!("run.{}", error.field), error.problem))?;
        let mut previous: Option<(usize, u64)> = None;
        for (index, event) in self.run.events.iter().enumerate() {
            let Some(at_ms) = event.at_ms() else { continue };
            let field = format!("run.events[{index}].at_ms");
            if let Some((before, before_ms)) = previous
                && at_ms < before_ms
            {
                let problem = format!(
                    "{at_ms} ms is in the past: events[{before}] happens at {before_ms} ms"
                );
                return Err((field, problem));
            }
            // Events after the end are the spec's own rule (validated above).
            previous = Some((index, at_ms));
        }
        Ok(())
    }

    /// Whether `verdict` and `timeline` meet the expectation; the problems
    /// otherwise, one per line.
    pub fn judge(&self, verdict: &Verdict, timeline: &str) -> Result<(), String> {
        let mut problems = Vec::new();
        let violated: Vec<&str> = verdict.violations.iter().map(|v| v.clause).collect();
        for clause in &self.expect.violates {
            if !violated.contains(&clause.as_str()) {
                problems.push(format!("expected a {clause} violation, found none"));
            }
        }
        for violation in &verdict.violations {
            if !self.expect.violates.iter().any(|c| c == violation.clause) {
                problems.push(format!("unexpected violation: {violation}"));
            }
        }
        for text in &self.expect.shows {
            if !timeline.contains(text.as_str()) {
                problems.push(format!("the timeline never shows {text:?}"));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n"))
        }
    }

    /// As [`Scenario::judge`], for a run against PostgreSQL: the texts of
    /// `expect.real_may_miss` it did not show are no problem, and are
    /// returned.
    pub fn judge_real(&self, verdict: &Verdict, timeline: &str) -> Result<Vec<String>, String> {
        let excused: Vec<String> = (self.expect.real_may_miss.iter())
            .filter(|text| !timeline.contains(text.as_str()))
            .cloned()
            .collect();
        let strict = Scenario {
            expect: Expect {
                shows: (self.expect.shows.iter())
                    .filter(|text| !excused.contains(text))
                    .cloned()
                    .collect(),
                ..self.expect.clone()
            },
            ..self.clone()
        };
        strict.judge(verdict, timeline).map(|()| excused)
    }

    /// Whether `verdict`, from this scenario's run with `flaw`'s variant,
    /// breaks every clause `expect.flaws` lists for it and nothing the flaw
    /// does not explain.
    pub fn judge_flawed(&self, flaw: Flaw, verdict: &Verdict) -> Result<(), String> {
        let expected = self.expect.flaws.get(flaw.name()).ok_or_else(|| {
            format!(
                "{} has no expect.flaws entry for {}",
                self.name,
                flaw.name()
            )
        })?;
        let violated: Vec<&str> = verdict.violations.iter().map(|v| v.clause).collect();
        let mut problems: Vec<String> = expected
            .iter()
            .filter(|clause| !violated.contains(&clause.as_str()))
            .map(|clause| {
                format!(
                    "with {} expected a {clause} violation, found none",
                    flaw.name()
                )
            })
            .collect();
        for violation in &verdict.violations {
            if !flaw.clauses().contains(&violation.clause) {
                problems.push(format!(
                    "with {} an unexplained violation: {violation}",
                    flaw.name()
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n"))
        }
    }

    /// The scenario as TOML, headed by `comment` lines.
    pub fn to_toml(&self, comment: &str) -> String {
        let mut out: String = comment.lines().map(|line| format!("# {line}\n")).collect();
        out.push_str(&toml::to_string_pretty(self).expect("a scenario serialises"));
        out
    }
}

/// Every `*.toml` file in `dir`, sorted by name.
pub fn scenario_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.retain(|path| path.extension().is_some_and(|ext| ext == "toml"));
    files.sort();
    Ok(files)
}
