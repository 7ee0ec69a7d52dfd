//! The command line's output files, as a user meets them: `--svg` pictures
//! from every subcommand that runs or reads a history, the `explore
//! --report` page, and outputs that would replace an input.

use super::cli::{finished, refused, sim, words};

/// `--svg` on run, replay, check and scenario writes the swimlane picture,
/// checked as XML, under the same no-replace rule as every other file.
#[test]
fn svg_pictures_come_from_every_subcommand_that_runs_or_reads_a_history() {
    let dir = test_support::ScratchDir::new("sim-svg-");
    let file = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let (code, _, err) = sim(&[
        "run",
        "--seed",
        "1",
        "--svg",
        &file("run.svg"),
        "--jsonl",
        &file("run.jsonl"),
    ]);
    assert_eq!(code, 0, "{err}");
    let run_svg = std::fs::read_to_string(dir.join("run.svg")).unwrap();
    assert!(run_svg.starts_with("<svg ") && run_svg.ends_with("</svg>\n"));
    let (code, _, err) = sim(&["check", &file("run.jsonl"), "--svg", &file("check.svg")]);
    assert_eq!(code, 0, "{err}");
    assert!(
        std::fs::read_to_string(dir.join("check.svg")).unwrap() == run_svg,
        "the history draws the same picture"
    );
    let (code, _, err) = sim(&[
        "replay",
        crate::replay::STALE_RELEASE,
        "--svg",
        &file("fail.svg"),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        std::fs::read_to_string(dir.join("fail.svg"))
            .unwrap()
            .contains("VIOLATED: REL-1")
    );
    refused(
        &["run", "--seed", "2", "--svg", &file("run.svg")],
        "exists; pass --force",
    );
    let scenarios = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/");
    let (one, two) = (
        format!("{scenarios}stop-is-terminal.toml"),
        format!("{scenarios}two-stops-at-once.toml"),
    );
    refused(
        &["scenario", &one, &two, "--svg", &file("x.svg")],
        "name an existing folder",
    );
    let (code, _, err) = sim(&["scenario", &one, &two, "--svg", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let stored = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../snapshots/two-stops-at-once.svg"
    );
    assert!(
        std::fs::read_to_string(dir.join("two-stops-at-once.svg")).unwrap()
            == std::fs::read_to_string(stored).unwrap(),
        "the command draws the snapshot's picture"
    );
}

/// `explore --report DIR` writes a page that works offline: every link
/// resolves to an anchor on it or a file beside it, nothing is fetched, and
/// the picture in it parses.
#[test]
fn explore_report_writes_a_self_contained_page() {
    // The page's folder does not exist yet: the command makes it.
    let scratch = test_support::ScratchDir::new("sim-report-");
    let dir = scratch.join("page");
    let report = dir.to_str().unwrap();
    let args = [
        "explore",
        "--seeds",
        "40",
        "--swarm",
        "--flaw",
        "stale-release",
        "--report",
        report,
    ];
    let (code, _, err) = sim(&args);
    assert_eq!(code, 1, "{err}");
    let page = std::fs::read_to_string(dir.join("index.html")).unwrap();
    for needle in ["<script", "<link", "src=", "@import", "url(http"] {
        assert!(
            !page.contains(needle),
            "the page fetches something: {needle}"
        );
    }
    let external = page.matches("http").count();
    assert_eq!(
        external,
        page.matches("http://www.w3.org/2000/svg").count(),
        "only the SVG namespace"
    );
    for link in page
        .split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
    {
        match link.strip_prefix('#') {
            Some(anchor) => assert!(
                page.contains(&format!("id=\"{anchor}\"")),
                "no anchor {link}"
            ),
            None => assert!(
                dir.join(link).is_file(),
                "{link} does not exist beside the page"
            ),
        }
    }
    let start = page.find("<svg ").expect("the picture is inline");
    let end = page.find("</svg>").unwrap() + "</svg>".len();
    roxmltree::Document::parse(&page[start..end]).expect("the inline picture is XML");
    assert!(
        page.contains("replay &#39;") || page.contains("replay '"),
        "the replay command"
    );
    assert!(page.contains("REL-1"));
    // The first failure explained: the chance band under its picture.
    assert!(page.contains("When it became inevitable"), "{page}");
    assert!(page.contains("fails ") && page.contains("% of the time"));
    let (code, _, err) = sim(&args);
    assert_eq!(code, 2, "a second report does not replace the first");
    assert!(err.contains("exists; pass --force"), "{err}");
    let clean = ["explore", "--seeds", "5", "--report", report, "--force"];
    let (code, _, err) = sim(&clean);
    assert_eq!(code, 0, "{err}");
    let page = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(page.contains("No run failed."));
    assert!(
        !dir.join("first-failure.svg").exists(),
        "the older report's picture is not left beside \"No run failed.\""
    );
}

/// A history is never overwritten by its own picture, a report folder that
/// is a file is refused, and `--partial` judges a history whose last line a
/// dying recorder cut short, saying so.
#[test]
fn check_protects_its_input_and_partial_drops_a_cut_last_line() {
    let dir = test_support::ScratchDir::new("sim-protect-");
    let history = dir.join("h.jsonl");
    let path = history.to_str().unwrap();
    let (code, _, err) = sim(&["run", "--seed", "1", "--jsonl", path]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&history).unwrap();
    refused(
        &["check", path, "--svg", path, "--force"],
        "is an input of this command",
    );
    assert_eq!(
        std::fs::read_to_string(&history).unwrap(),
        text,
        "the history is untouched"
    );
    let cut = dir.join("cut.jsonl");
    std::fs::write(&cut, &text[..text.len() - 40]).unwrap();
    let (code, _, err) = sim(&["check", cut.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    let (code, out, err) = sim(&["check", "--partial", cut.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("its last line is cut off; judged without it"),
        "{out}"
    );
    refused(
        &["explore", "--seeds", "2", "--report", path],
        "is not a folder",
    );
}

/// `explore` refuses an output it could not write before it sweeps (its
/// stdout stays empty, no run was spent), and an output that fails only
/// when written, after the sweep, still leaves the summary printed, names
/// the file and leaves nothing half-written behind.
#[test]
fn explore_checks_its_outputs_before_the_sweep_and_prints_its_summary_whatever_the_files_do() {
    let dir = test_support::ScratchDir::new("sim-outputs-");
    let at = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let sweep = |outputs: &[&str]| {
        let mut args = vec!["explore", "--seeds", "3", "-q"];
        args.extend_from_slice(outputs);
        sim(&args)
    };
    std::fs::create_dir(dir.join("taken")).unwrap();
    std::fs::write(dir.join("taken/index.html"), "an older report").unwrap();
    std::fs::write(dir.join("plain"), "a file, not a folder").unwrap();
    let refused: [(&[&str], &str); 4] = [
        (&["--report", &at("taken")], "exists; pass --force"),
        (&["--report", &at("plain/page")], "is not a folder"),
        (&["--summary", &at("plain")], "exists; pass --force"),
        // Not even root may make a file here: a folder that refuses
        // files, found before the sweep rather than after it.
        (
            &["--report", "/proc/self/sim-report"],
            "cannot make a file in /proc/self",
        ),
    ];
    for (outputs, why) in refused {
        let (code, out, err) = sweep(outputs);
        assert_eq!(code, 2, "{outputs:?}: {err}");
        assert!(err.contains(why), "{outputs:?}: {err}");
        assert!(
            out.is_empty(),
            "{outputs:?} was refused after the sweep:\n{out}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("taken/index.html")).unwrap(),
        "an older report"
    );

    // A file-size limit of zero makes every write to a file fail, as a
    // full disk does, while stdout (a pipe) still works.
    let (code, out, err) = finished(
        std::process::Command::new("sh")
            .args(["-c", "ulimit -f 0 && trap '' XFSZ && exec \"$0\" \"$@\""])
            .arg(env!("CARGO_BIN_EXE_sim"))
            .args(["explore", "--seeds", "3", "-q", "--summary"])
            .arg(at("summary.json")),
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        out.contains("3 runs"),
        "the summary is printed first:\n{out}"
    );
    assert!(
        err.contains("--summary") && err.contains("summary.json") && err.contains("too large"),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        !left
            .iter()
            .any(|name| name.starts_with(".sim-") || name == "summary.json"),
        "left behind: {left:?}"
    );
}

/// A run too large to draw still prints its timeline and verdict (the
/// picture's refusal comes after them), and among several scenario files
/// one too large to draw neither stops the others nor loses the tally.
#[test]
fn a_picture_too_large_to_draw_loses_nothing_else() {
    let dir = test_support::ScratchDir::new("sim-large-");
    let svg = dir.join("run.svg");
    // A clock ten times fast over an hour: some 65,000 events, in 0.4 s.
    let large = words("run --seed 1 --replicas 5 --duration-ms 3600000 --clock-rate 1:0:10000");
    let history = dir.join("run.jsonl");
    let mut args = large.to_vec();
    args.extend(["--svg", svg.to_str().unwrap()]);
    args.extend(["--jsonl", history.to_str().unwrap()]);
    let (code, out, err) = sim(&args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("a picture is drawn for at most"), "{err}");
    assert!(
        out.contains("verdict for seed 1") && out.contains("replay: "),
        "lost: {out:.400}"
    );
    assert!(!svg.exists());
    let (code, out, err) = sim(&[
        "check",
        history.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("a picture is drawn for at most"), "{err}");
    assert!(
        out.contains("0 violations"),
        "the verdict is lost: {out:.400}"
    );

    let heavy = dir.join("heavy.toml");
    std::fs::write(
        &heavy,
        "name = \"heavy\"\ndescription = \"too many events to draw\"\nclauses = [\"FEN-1\"]\n\
         [run]\nseed = 1\nreplicas = 5\nduration_ms = 3600000\n\
         [[run.events]]\nkind = \"clock_rate\"\nreplica = 1\nat_ms = 0\nrate_permille = 10000\n\
         [expect]\n",
    )
    .unwrap();
    let light = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/stop-is-terminal.toml"
    );
    let pictures = dir.join("pictures");
    std::fs::create_dir(&pictures).unwrap();
    let (code, out, err) = sim(&[
        "scenario",
        "-q",
        heavy.to_str().unwrap(),
        light,
        "--svg",
        pictures.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(out.contains("2 as expected, 0 not"), "{out}\n{err}");
    assert!(err.contains("1 picture(s) not written"), "{err}");
    assert!(pictures.join("stop-is-terminal.svg").is_file());
}

/// The command line a report or summary records is quoted as a shell
/// would take it back (a folder named `$(touch x)` stays a name when the
/// line is pasted), and a word that is not UTF-8 does not panic the
/// sweep after its runs (it read the words with `args()`).
#[test]
fn the_recorded_command_line_is_shell_quoted_and_never_panics() {
    use std::os::unix::ffi::OsStrExt;
    let dir = test_support::ScratchDir::new("sim-quoted-");
    let report = dir.join("$(touch PWNED)");
    let (code, _, err) = sim(&[
        "explore",
        "--seeds",
        "2",
        "-q",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let page = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert!(
        page.contains("&#39;") || page.contains("'/"),
        "unquoted: {page:.600}"
    );
    assert!(
        page.contains(&format!("'{}'", report.display()).replace('\'', "&#39;"))
            || page.contains(&format!("'{}'", report.display())),
        "{page:.600}"
    );
    let odd = dir.join(std::ffi::OsStr::from_bytes(b"s\xff.json"));
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(["explore", "--seeds", "2", "-q", "--summary"])
        .arg(&odd)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
