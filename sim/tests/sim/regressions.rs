//! `sim/regressions/`: failures worth keeping, saved by `sim merge
//! --save-failures` (as proptest keeps `*.proptest-regressions`). Each is
//! replayed and must still do what its file expects: a flaw's counterexample
//! must still be caught, a fixed bug's plan must still pass.

use std::path::Path;

use retention_sim::report::scenario_files;
use retention_sim::{Scenario, Sim, check};

#[test]
fn every_kept_failure_still_meets_its_expectation() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let files = scenario_files(&dir).expect("the regressions folder");
    assert!(!files.is_empty(), "{} holds no regression", dir.display());
    for file in files {
        let scenario = Scenario::load(&file).unwrap_or_else(|error| panic!("{error}"));
        let history = Sim::new(&scenario.run).run().unwrap();
        let verdict = check(&history);
        if let Err(problems) = scenario.judge(&verdict, &history.timeline()) {
            panic!("{}: not as kept:\n{problems}", file.display());
        }
    }
}
