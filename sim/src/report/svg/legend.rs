//! The legend under the lanes: what each colour and mark means.

use super::canvas::Canvas;

/// The legend's height.
pub const HEIGHT: f64 = 104.0;

/// Draws the legend with its top at `y`.
pub fn draw(canvas: &mut Canvas, y: f64) {
    canvas.open_group("legend");
    let mut x = 12.0;
    canvas.text(x, y + 12.0, "key", "calls:");
    x += 44.0;
    for (class, label) in [
        ("ok", "ok"),
        ("null", "null lease"),
        ("refused", "refused"),
        ("fenced", "fenced"),
        ("ambiguous", "ambiguous"),
        ("timedout", "timed out"),
        ("open", "never answered"),
    ] {
        canvas.line(
            (x, y + 8.0),
            (x + 22.0, y + 8.0),
            &format!("call {class}"),
            Some(class),
            None,
        );
        canvas.text(x + 26.0, y + 12.0, "small", label);
        x += 30.0 + 6.0 * label.len() as f64;
    }
    let y = y + 26.0;
    let mut x = 12.0;
    canvas.text(x, y + 12.0, "key", "marks:");
    x += 44.0;
    swatch(
        canvas,
        (x, y),
        "bar",
        "lease a replica believes it holds (#token)",
    );
    x += 220.0;
    swatch(canvas, (x, y), "pause", "paused");
    x += 70.0;
    swatch(canvas, (x, y), "crash", "crashed");
    x += 74.0;
    swatch(canvas, (x, y), "cut", "cut off");
    x += 72.0;
    canvas.path(&format!("M{},{}l-4,-6h8z", x + 4.0, y + 11.0), "stop", None);
    canvas.text(x + 12.0, y + 12.0, "small", "stop() called / resolved");
    x += 130.0;
    canvas.circle((x + 4.0, y + 8.0), 3.5, "ok", None);
    canvas.text(x + 12.0, y + 12.0, "small", "grant");
    x += 50.0;
    swatch(canvas, (x, y), "commit", "delete, fence to commit");
    x += 140.0;
    canvas.line((x, y + 8.0), (x + 22.0, y + 8.0), "wait", None, None);
    canvas.text(x + 26.0, y + 12.0, "small", "waits for the lease row");
    x += 140.0;
    swatch(canvas, (x, y), "held", "rows held by another client");
    let y = y + 22.0;
    let mut x = 56.0;
    canvas.rect((x, y + 5.0, 22.0, 6.0), "life", None);
    canvas.text(
        x + 26.0,
        y + 12.0,
        "small",
        "a lease's life at the service, grant to expiry or replacement",
    );
    x += 290.0;
    canvas.rect((x + 8.0, y + 5.0, 6.0, 6.0), "ok", None);
    canvas.rect((x + 16.0, y + 5.0, 6.0, 6.0), "null", None);
    canvas.text(
        x + 26.0,
        y + 12.0,
        "small",
        "release (grey: cleared nothing)",
    );
    x += 170.0;
    canvas.line(
        (x + 11.0, y + 2.0),
        (x + 11.0, y + 14.0),
        "mark null",
        None,
        None,
    );
    canvas.text(
        x + 16.0,
        y + 12.0,
        "small",
        "a term's end, with how it ended",
    );
    x += 170.0;
    swatch(canvas, (x, y), "uncommitted", "a delete rolled back");
    x += 120.0;
    super::markers::clock_mark(canvas, (x + 6.0, y - 6.0), "", None);
    canvas.text(
        x + 14.0,
        y + 12.0,
        "small",
        "clock stepped (+/- s) or rate (x)",
    );
    x += 160.0;
    canvas.text(
        x,
        y + 12.0,
        "small",
        "rows in a replica's lane: acquire, release, renew, delete",
    );
    let y = y + 20.0;
    canvas.circle((18.0, y + 6.0), 6.0, "violation", None);
    canvas.text(
        30.0,
        y + 10.0,
        "small",
        "an event of a violation, with its clause; x: refused, stale fence (purple), \
         rolled back (orange), aborted (red); a folded break: time with nothing in it; \
         hover a mark for its timeline line",
    );
    canvas.close_group();
}

/// A box of `class` with `label` to its right, on the row at `y`.
fn swatch(canvas: &mut Canvas, (x, y): (f64, f64), class: &str, label: &str) {
    canvas.rect((x, y + 3.0, 22.0, 10.0), class, None);
    canvas.text(x + 26.0, y + 12.0, "small", label);
}
