//! The checked-in CI matrix workflow and Kubernetes Jobs parse, and run
//! exactly the commands `sim explore --print-shard-plan` prints: each
//! shell step is run with `sim` replaced by a function that prints its
//! arguments.

use std::path::Path;
use std::process::Command;

use yaml_rust2::{Yaml, YamlLoader};

use crate::cli::{sim, words};

const SHARDS: usize = 4;

fn load(relative: &str) -> Vec<Yaml> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative);
    let text = std::fs::read_to_string(&path).unwrap();
    YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// The plan the workflow and the Jobs were written from.
fn plan() -> Vec<String> {
    let (code, out, err) = sim(&words(
        "explore --seeds 1000000 --swarm --jobs 2 --force --print-shard-plan 4",
    ));
    assert_eq!(code, 0, "{err}");
    let lines: Vec<String> = out
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), SHARDS + 1, "{out}");
    lines
}

/// Runs `script` in `shell` with `sim` stubbed to print its command line
/// and exit with `status`; returns what it printed and its exit status.
fn stubbed(shell: &str, script: &str, envs: &[(&str, String)], status: i32) -> (String, i32) {
    let stub = format!("sim() {{ echo \"sim $*\"; return {status}; }}\n{script}");
    let output = Command::new(shell)
        .args(["-c", &stub])
        .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap();
    (
        String::from_utf8(output.stdout)
            .unwrap()
            .trim_end()
            .to_owned(),
        output.status.code().unwrap(),
    )
}

fn step_running<'a>(steps: &'a Yaml, command: &str) -> &'a str {
    steps
        .as_vec()
        .unwrap()
        .iter()
        .filter_map(|step| step["run"].as_str())
        .find(|run| run.contains(command))
        .unwrap_or_else(|| panic!("no step runs {command}"))
}

#[test]
fn the_ci_workflow_runs_the_shard_plan_and_merges_it() {
    let plan = plan();
    let workflow = &load(".github/workflows/sweep.yml")[0];
    let shard_job = &workflow["jobs"]["shard"];
    let matrix: Vec<i64> = shard_job["strategy"]["matrix"]["shard"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert_eq!(matrix, [1, 2, 3, 4]);
    let run = step_running(&shard_job["steps"], "sim explore");
    for shard in &matrix {
        let script = run.replace("${{ matrix.shard }}", &shard.to_string());
        let (printed, _) = stubbed("bash", &script, &[], 0);
        assert_eq!(printed, plan[*shard as usize - 1]);
        // A shard that found a violation (1) passes; bad input (2) fails.
        assert_eq!(stubbed("bash", &script, &[], 1).1, 0);
        assert_ne!(stubbed("bash", &script, &[], 2).1, 0);
    }
    let upload = shard_job["steps"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|step| {
            step["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact"))
        })
        .expect("an upload step");
    assert_eq!(
        upload["if"].as_str(),
        Some("${{ always() }}"),
        "a failed or cancelled shard's partial summary is uploaded too"
    );
    let merge_job = &workflow["jobs"]["merge"];
    assert_eq!(merge_job["needs"].as_str(), Some("shard"));
    assert_eq!(merge_job["if"].as_str(), Some("${{ always() }}"));
    let run = step_running(&merge_job["steps"], "sim merge");
    let (printed, status) = stubbed("bash", run, &[], 1);
    assert_eq!((printed.as_str(), status), (plan[SHARDS].as_str(), 1));
}

/// The first container's `sh -c` script of a Job.
fn script(job: &Yaml) -> (&str, &str) {
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["command"][0].as_str(), Some("sh"));
    (
        container["args"][0].as_str().expect("one script"),
        container["workingDir"].as_str().expect("a working folder"),
    )
}

#[test]
fn the_kubernetes_indexed_job_runs_the_shard_plan_and_merges_it() {
    let plan = plan();
    let sweep = load("sim/deploy/sweep-job.yaml");
    let job = sweep
        .iter()
        .find(|doc| doc["kind"].as_str() == Some("Job"))
        .expect("a Job");
    assert_eq!(job["spec"]["completionMode"].as_str(), Some("Indexed"));
    assert_eq!(job["spec"]["completions"].as_i64(), Some(SHARDS as i64));
    let (shard_script, shard_dir) = script(job);
    for (index, line) in plan[..SHARDS].iter().enumerate() {
        let envs = [("JOB_COMPLETION_INDEX", index.to_string())];
        let (printed, status) = stubbed("sh", shard_script, &envs, 0);
        assert_eq!((printed.as_str(), status), (line.as_str(), 0));
        assert_eq!(stubbed("sh", shard_script, &envs, 1).1, 0);
        assert_ne!(stubbed("sh", shard_script, &envs, 2).1, 0);
    }
    let merge = &load("sim/deploy/merge-job.yaml")[0];
    let (merge_script, merge_dir) = script(merge);
    assert_eq!(
        merge_dir, shard_dir,
        "the merge reads where the shards wrote"
    );
    let claim = |job: &Yaml| {
        job["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"]
            .as_str()
            .map(str::to_owned)
    };
    assert_eq!(claim(merge), claim(job));
    let (printed, status) = stubbed("sh", merge_script, &[], 1);
    assert_eq!((printed.as_str(), status), (plan[SHARDS].as_str(), 1));
}
