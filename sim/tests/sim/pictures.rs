//! The swimlane pictures as a person would see them: they parse as XML,
//! render to a PNG without error, hold one lane per replica and service,
//! one arrow per call, one bar per lease a replica came to hold, a ring per
//! violation event with its clause, a tooltip on every mark, and are
//! byte-identical for the same seed. The PNGs are left in
//! `target/pictures/` to look at.

use std::path::PathBuf;

use retention_sim::model::{EventKind, OpKind, Outcome};
use retention_sim::report::{parse_token, swimlanes};
use retention_sim::{History, RunSpec, Sim, check};

fn picture(spec: &RunSpec) -> (History, String) {
    let history = Sim::new(spec).run().unwrap();
    let svg = swimlanes(&history, &check(&history));
    (history, svg)
}

/// Elements named `tag` whose class list starts with `class`.
fn count(doc: &roxmltree::Document, tag: &str, class: &str) -> usize {
    doc.descendants()
        .filter(|node| node.has_tag_name(tag))
        .filter(|node| {
            node.attribute("class")
                .is_some_and(|c| c.split(' ').next() == Some(class))
        })
        .count()
}

fn render(svg: &str, name: &str) -> PathBuf {
    let mut options = resvg::usvg::Options::default();
    let fonts = options.fontdb_mut();
    fonts.load_system_fonts();
    fonts.set_sans_serif_family("DejaVu Sans");
    let tree = resvg::usvg::Tree::from_str(svg, &options).expect("the SVG renders");
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    let inked = pixmap
        .pixels()
        .iter()
        .filter(|p| p.red() < 200 || p.blue() < 200)
        .count();
    assert!(
        inked > 5_000,
        "{name}: the picture is nearly blank ({inked} inked pixels)"
    );
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../target/pictures/{name}.png"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    pixmap.save_png(&path).expect("write the PNG");
    path
}

#[test]
fn a_run_picture_has_a_lane_per_actor_an_arrow_per_call_and_a_bar_per_lease() {
    let spec = RunSpec {
        seed: 1,
        ..RunSpec::default()
    };
    let (history, svg) = picture(&spec);
    let doc = roxmltree::Document::parse(&svg).expect("the picture is XML");
    let lanes: Vec<&str> = doc
        .descendants()
        .filter(|node| node.attribute("class") == Some("lane"))
        .filter_map(|node| node.text())
        .collect();
    assert_eq!(lanes, ["r1", "r2", "r3", "lease", "database"]);
    let events =
        |wanted: fn(&EventKind) -> bool| history.events.iter().filter(|e| wanted(&e.kind)).count();
    let calls = events(|kind| matches!(kind, EventKind::Invoke { .. }));
    assert_eq!(
        count(&doc, "line", "call"),
        calls + 7,
        "one arrow per call, seven in the legend"
    );
    let leases = events(|kind| {
        matches!(
            kind,
            EventKind::Return {
                op: OpKind::Acquire | OpKind::Renew,
                outcome: Outcome::Lease(Some(_)),
                ..
            }
        )
    });
    assert_eq!(
        count(&doc, "rect", "bar"),
        leases + 1,
        "one bar per lease held, one in the legend"
    );
    let grants = events(|kind| matches!(kind, EventKind::Granted { .. }));
    assert_eq!(
        count(&doc, "circle", "ok"),
        grants + 1,
        "one mark per grant, one in the legend"
    );
    let commits = events(|kind| matches!(kind, EventKind::Deleted { .. }));
    assert_eq!(count(&doc, "rect", "commit"), commits + 1);
    // Every mark outside the legend says what it stands for.
    let untitled = doc
        .descendants()
        .filter(|node| ["line", "rect", "circle", "path"].contains(&node.tag_name().name()))
        .filter(|node| {
            !node
                .ancestors()
                .any(|a| a.attribute("class") == Some("legend"))
        })
        .filter(|node| !node.ancestors().any(|a| a.has_tag_name("defs")))
        .filter(|node| !matches!(node.attribute("class"), Some("tick" | "band") | None))
        .filter(|node| node.attribute("class") != Some("hit"))
        .filter(|node| {
            let titled = |n: roxmltree::Node| n.children().any(|c| c.has_tag_name("title"));
            !titled(*node)
                && !node
                    .parent()
                    .is_some_and(|g| g.has_tag_name("g") && titled(g))
        })
        .count();
    assert_eq!(untitled, 0, "marks without a tooltip");
    render(&svg, "run-seed-1");
    assert!(
        picture(&spec).1 == svg,
        "the same seed draws the same bytes"
    );
}

#[test]
fn a_failing_run_rings_each_violation_event_with_its_clause() {
    let spec = parse_token(crate::replay::STALE_RELEASE).unwrap();
    let (history, svg) = picture(&spec);
    let verdict = check(&history);
    assert!(!verdict.passed());
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let events: usize = verdict.violations.iter().map(|v| v.events.len()).sum();
    assert_eq!(
        count(&doc, "circle", "violation"),
        events + 1,
        "one legend ring"
    );
    let labels = doc
        .descendants()
        .filter(|node| node.attribute("class") == Some("clause"))
        .filter_map(|node| node.text())
        .collect::<Vec<_>>();
    assert_eq!(labels.len(), verdict.violations.len());
    assert!(labels.iter().all(|label| *label == "REL-1"), "{labels:?}");
    assert!(svg.contains("VIOLATED: REL-1"));
    render(&svg, "stale-release-replay");
}

#[test]
fn a_swarm_run_with_every_fault_renders() {
    for seed in [3, 11, 42] {
        let mut spec = retention_sim::search::swarm(seed, None);
        spec.duration_ms = spec.duration_ms.min(20_000);
        spec.events
            .retain(|e| e.at_ms().is_none_or(|at| at < spec.duration_ms));
        let (_, svg) = picture(&spec);
        roxmltree::Document::parse(&svg).expect("the picture is XML");
        render(&svg, &format!("swarm-seed-{seed}"));
    }
}

/// Every scenario's stored picture renders (the PNGs land in
/// `target/pictures/snapshots/`, to look through).
#[test]
fn every_snapshot_picture_renders() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut rendered = 0;
    for entry in std::fs::read_dir(root.join("snapshots")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "svg") {
            let svg = std::fs::read_to_string(&path).unwrap();
            let name = path.file_stem().unwrap().to_str().unwrap();
            render(&svg, &format!("snapshots/{name}"));
            rendered += 1;
        }
    }
    assert!(rendered >= 40, "only {rendered} pictures");
}

/// The pictures `scenarios/README.md` shows inline render, and every image
/// it links exists.
#[test]
fn the_pictures_the_scenarios_readme_shows_render() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("scenarios/README.md")).unwrap();
    let linked: Vec<&str> = readme
        .split("](../snapshots/")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .collect();
    assert!(
        linked.len() >= 2,
        "the README shows {} pictures",
        linked.len()
    );
    for name in linked {
        let svg = std::fs::read_to_string(root.join("snapshots").join(name))
            .unwrap_or_else(|error| panic!("snapshots/{name}: {error}"));
        render(&svg, name.trim_end_matches(".svg"));
    }
}
