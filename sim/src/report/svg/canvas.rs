//! Writing SVG elements: a fixed style sheet, numbers with one decimal, and
//! text escaped, so the same calls always give the same bytes.

use std::fmt::Write as _;

/// The classes every mark uses, so an element carries only its geometry.
const STYLE: &str = "\
text{font-family:DejaVu Sans,Arial,Helvetica,sans-serif;font-size:10px;fill:#222}\
.title{font-size:13px;font-weight:bold}.lane,.key{font-size:11px;font-weight:bold}\
.small{font-size:8px}.tick{stroke:#ccc;stroke-width:0.5}\
.band{fill:#f6f6f6}.bar{fill:#cfe3ff;stroke:#4a7fc0;stroke-width:0.6}\
.ok{stroke:#2a8a2a;fill:#2a8a2a}.null{stroke:#888;fill:#888}\
.refused{stroke:#e08000;fill:#e08000}.fenced{stroke:#8a2be2;fill:#8a2be2}\
.ambiguous{stroke:#d01010;fill:#d01010}.timedout{stroke:#d01010;fill:#d01010;stroke-dasharray:3 2}\
.open{stroke:#555;fill:#555;stroke-dasharray:1 2}\
.call{stroke-width:1.6;fill:none}\
.pause{fill:#999;opacity:0.25}.crash{fill:#d01010;opacity:0.15}.cut{fill:#0a7d8c;opacity:0.15}\
.held{fill:#e08000;opacity:0.2}.wait{stroke:#e08000;stroke-width:1;stroke-dasharray:2 2;fill:none}\
.uncommitted{fill:none;stroke:#e08000;stroke-width:0.8;stroke-dasharray:3 2}\
.stale{fill:#8a2be2}.life{fill:#4a7fc0;opacity:0.35;stroke:#fff;stroke-width:1}.failing{fill:#d01010}\
.commit{fill:#9fd39f;stroke:#2a8a2a;stroke-width:0.6}\
.stop{fill:#222}.mark{stroke-width:1.2}\
.clock{fill:#fff;stroke:#0a7d8c;stroke-width:1.2}.clocktext{font-size:8px;fill:#0a7d8c}\
.fold{stroke:#888;fill:none;stroke-width:1}.folded{fill:#888;opacity:0.08}\
.hit{stroke:#fff;stroke-opacity:0;stroke-width:8;pointer-events:stroke}\
.violation{fill:none;stroke:#d01010;stroke-width:2}.clause{fill:#d01010;font-weight:bold}";

/// An SVG document being written.
pub struct Canvas {
    out: String,
}

impl Canvas {
    /// A `width` x `height` picture with the style sheet and arrow heads.
    pub fn new(width: f64, height: f64) -> Self {
        let mut out = String::new();
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
             viewBox=\"0 0 {w} {h}\">\n<style>{STYLE}</style>\n<defs>",
            w = n(width),
            h = n(height)
        );
        for class in [
            "ok",
            "null",
            "refused",
            "fenced",
            "ambiguous",
            "timedout",
            "open",
        ] {
            let _ = write!(
                out,
                "<marker id=\"head-{class}\" viewBox=\"0 0 6 6\" refX=\"6\" refY=\"3\" \
                 markerWidth=\"3.5\" markerHeight=\"3.5\" orient=\"auto\">\
                 <path d=\"M0,0L6,3L0,6z\" class=\"{class}\"/></marker>"
            );
        }
        out.push_str("</defs>\n<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n");
        Self { out }
    }

    /// Markup written as given (an overlay's inline-coloured marks).
    pub fn raw(&mut self, markup: &str) {
        self.out.push_str(markup);
    }

    /// Text at (x, y) with `class`.
    pub fn text(&mut self, x: f64, y: f64, class: &str, text: &str) {
        let _ = writeln!(
            self.out,
            "<text x=\"{}\" y=\"{}\" class=\"{class}\">{}</text>",
            n(x),
            n(y),
            escape(text)
        );
    }

    /// Small text inside the bar from `x0` to `x1`, at its left edge, when
    /// the bar is wider than `min_width`: a narrower one would be hidden by
    /// its own label.
    pub fn label_inside(&mut self, (x0, x1): (f64, f64), y: f64, min_width: f64, text: &str) {
        if x1 - x0 > min_width {
            self.text(x0 + 2.0, y, "small", text);
        }
    }

    /// A rectangle; `title`, when given, is its tooltip.
    pub fn rect(&mut self, (x, y, w, h): (f64, f64, f64, f64), class: &str, title: Option<&str>) {
        let _ = write!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"{class}\"",
            n(x),
            n(y),
            n(w.max(0.8)),
            n(h)
        );
        self.close("rect", title);
    }

    /// A line; with `arrow`, ending in the class's arrow head. A line with
    /// a tooltip gets an invisible wide twin in its group, so a thin arrow
    /// zoomed into stays easy to point at.
    pub fn line(
        &mut self,
        from: (f64, f64),
        to: (f64, f64),
        class: &str,
        arrow: Option<&str>,
        title: Option<&str>,
    ) {
        match title {
            Some(title) => {
                let _ = write!(self.out, "<g><title>{}</title>", escape(title));
                self.bare_line(from, to, "hit", None);
                self.out.push_str("/>");
                self.bare_line(from, to, class, arrow);
                self.out.push_str("/></g>\n");
            }
            None => {
                self.bare_line(from, to, class, arrow);
                self.out.push_str("/>\n");
            }
        }
    }

    fn bare_line(&mut self, from: (f64, f64), to: (f64, f64), class: &str, arrow: Option<&str>) {
        let _ = write!(
            self.out,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" class=\"{class}\"",
            n(from.0),
            n(from.1),
            n(to.0),
            n(to.1)
        );
        if let Some(head) = arrow {
            let _ = write!(self.out, " marker-end=\"url(#head-{head})\"");
        }
    }

    /// A circle of radius `r`.
    pub fn circle(&mut self, (x, y): (f64, f64), r: f64, class: &str, title: Option<&str>) {
        let _ = write!(
            self.out,
            "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" class=\"{class}\"",
            n(x),
            n(y),
            n(r)
        );
        self.close("circle", title);
    }

    /// Opens a group of elements with `class`.
    pub fn open_group(&mut self, class: &str) {
        let _ = writeln!(self.out, "<g class=\"{class}\">");
    }

    /// Closes the group opened last.
    pub fn close_group(&mut self) {
        self.out.push_str("</g>\n");
    }

    /// A path in SVG path syntax.
    pub fn path(&mut self, d: &str, class: &str, title: Option<&str>) {
        let _ = write!(self.out, "<path d=\"{d}\" class=\"{class}\"");
        self.close("path", title);
    }

    fn close(&mut self, element: &str, title: Option<&str>) {
        match title {
            Some(title) => {
                let _ = writeln!(self.out, "><title>{}</title></{element}>", escape(title));
            }
            None => self.out.push_str("/>\n"),
        }
    }

    /// The finished document.
    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

/// A coordinate with at most one decimal.
pub fn n(value: f64) -> String {
    let rounded = (value * 10.0).round() / 10.0;
    if rounded.fract() == 0.0 {
        format!("{rounded:.0}")
    } else {
        format!("{rounded:.1}")
    }
}

fn escape(text: &str) -> String {
    // XML 1.0 has no way to write most control characters, even escaped;
    // a hand-edited history may hold them.
    let text: String = text
        .chars()
        .map(|c| match c {
            '\n' | '\t' => c,
            c if c.is_control() || c == '\u{fffe}' || c == '\u{ffff}' => '\u{fffd}',
            c => c,
        })
        .collect();
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
