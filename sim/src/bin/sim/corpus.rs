//! `explore --guided --corpus DIR`: the corpus files a campaign starts
//! from and the one it leaves, and the lines that say what it reached.

use std::path::Path;

use retention_sim::model::{Flaw, RunSpec};
use retention_sim::search::{GuidedReport, Shard, corpus_text, parse_corpus};

use crate::files::write_checked;
use crate::output::say;

/// Every plan of every `*.corpus` file in `dir`, files by name, each set
/// to run `flaw`. A folder not there yet holds none.
pub fn load(dir: &Path, flaw: Option<Flaw>) -> Result<Vec<RunSpec>, String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(format!("--corpus {}: {error}", dir.display())),
    };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "corpus"))
        .collect();
    files.sort();
    let mut plans = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path)
            .map_err(|error| format!("--corpus {}: {error}", path.display()))?;
        plans.extend(parse_corpus(&text, &path.display().to_string(), flaw)?);
    }
    Ok(plans)
}

/// Writes the corpus to `dir` as `START-I-of-N.corpus` (made if missing),
/// replacing the file an earlier campaign of this seed and shard left: it
/// holds every plan that one loaded.
pub fn save(dir: &Path, start: u64, shard: Shard, plans: &[RunSpec]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|error| format!("{}: {error}", dir.display()))?;
    let path = dir.join(format!("{start}-{}-of-{}.corpus", shard.index, shard.count));
    write_checked(&path, &corpus_text(plans), true, |text| {
        parse_corpus(text, &path.display().to_string(), None)
            .map(|_| ())
            .map_err(|problem| format!("the written corpus does not read back: {problem}"))
    })
}

/// What the campaign reached, after the summary.
pub fn print_campaign(report: &GuidedReport) {
    say!(
        "guided: corpus {} plans ({} loaded); {} abstract states, {} features reached",
        report.corpus_plans,
        report.loaded_plans,
        report.states,
        report.features
    );
    let records: Vec<String> = report
        .records
        .iter()
        .map(|(name, value)| format!("{name} {value} ms"))
        .collect();
    if !records.is_empty() {
        say!("guided: records: {}", records.join(", "));
    }
}
