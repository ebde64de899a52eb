//! Line charts as SVG drawn on the server: no chart library, no script. Each
//! chart keeps the numbers it plots, so its page shows them as a table beside
//! it (what a screen reader reads, and what an operator copies).

use std::fmt::Write;

/// Plot area inside the SVG's 1000 × 260 view box.
const LEFT: f64 = 64.0;
const RIGHT: f64 = 990.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 228.0;
/// Colour classes of the stylesheet, in series order.
const CLASSES: [&str; 6] = ["s1", "s2", "s3", "s4", "s5", "s6"];

/// One line: a value per x position (`None`: nothing measured there).
pub(crate) struct Series {
    pub name: String,
    pub class: &'static str,
    pub values: Vec<Option<f64>>,
}

/// A chart and the table of what it plots.
pub(crate) struct Chart {
    /// The element id (tests and links find it by it).
    pub id: &'static str,
    pub title: &'static str,
    /// What a value is (`requests`, `ms`, `USD`, `%`).
    pub unit: &'static str,
    /// The x positions' labels (hours).
    pub xs: Vec<String>,
    pub series: Vec<Series>,
    /// The drawing.
    pub svg: String,
}

impl Chart {
    pub(crate) fn new(
        id: &'static str,
        title: &'static str,
        unit: &'static str,
        xs: Vec<String>,
        lines: Vec<(String, Vec<Option<f64>>)>,
    ) -> Chart {
        let series: Vec<Series> = lines
            .into_iter()
            .enumerate()
            .map(|(i, (name, values))| Series { name, class: CLASSES[i % CLASSES.len()], values })
            .collect();
        let svg = draw(title, &xs, &series);
        Chart { id, title, unit, xs, series, svg }
    }

    /// Series `s` at x position `i`, as a table shows it.
    pub(crate) fn cell(&self, s: &Series, i: usize) -> String {
        match s.values.get(i).copied().flatten() {
            None => "—".to_owned(),
            Some(v) => number(v, self.unit),
        }
    }
}

/// A value with as many decimals as its unit needs.
fn number(v: f64, unit: &str) -> String {
    match unit {
        "USD" if v < 1.0 => format!("{v:.4}"),
        "USD" | "%" => format!("{v:.2}"),
        _ if v.fract() == 0.0 => format!("{v:.0}"),
        _ => format!("{v:.1}"),
    }
}

/// The largest value, rounded up to a number the axis can say plainly
/// (1, 2 or 5 times a power of ten).
fn nice_ceiling(max: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let magnitude = 10f64.powf(max.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * magnitude).find(|c| *c >= max).unwrap_or(max)
}

fn draw(title: &str, xs: &[String], series: &[Series]) -> String {
    let max = series.iter().flat_map(|s| s.values.iter().flatten()).fold(0.0f64, |a, &b| a.max(b));
    let top = nice_ceiling(max);
    let n = xs.len().max(1);
    let x_at = |i: usize| {
        if n == 1 {
            (LEFT + RIGHT) / 2.0
        } else {
            LEFT + (RIGHT - LEFT) * i as f64 / (n - 1) as f64
        }
    };
    let y_at = |v: f64| BOTTOM - (BOTTOM - TOP) * (v / top);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg viewBox="0 0 1000 260" role="img" aria-label="{}" xmlns="http://www.w3.org/2000/svg">"#,
        escape(title)
    );
    // Horizontal grid lines at 0, ½ and the top, with their values.
    for frac in [0.0, 0.5, 1.0] {
        let y = y_at(top * frac);
        let _ = write!(
            svg,
            r#"<line class="axis" x1="{LEFT}" y1="{y:.1}" x2="{RIGHT}" y2="{y:.1}"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 6.0,
            y + 4.0,
            number(top * frac, "")
        );
    }
    // At most 8 x labels, evenly spaced.
    let every = n.div_ceil(8).max(1);
    for (i, label) in xs.iter().enumerate().filter(|(i, _)| i % every == 0 || *i + 1 == n) {
        // The ends' labels are anchored inward, so neither is cut by the frame.
        let anchor = match i {
            0 if n > 1 => "start",
            i if i + 1 == n && n > 1 => "end",
            _ => "middle",
        };
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="250" text-anchor="{anchor}">{}</text>"#,
            x_at(i),
            escape(label)
        );
    }
    for s in series {
        // A gap (no value) breaks the line.
        let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for (i, v) in s.values.iter().enumerate() {
            match v {
                Some(v) => {
                    if let Some(run) = runs.last_mut() {
                        run.push((x_at(i), y_at(*v)));
                    }
                }
                None => runs.push(Vec::new()),
            }
        }
        for run in runs.iter().filter(|r| !r.is_empty()) {
            if run.len() == 1 {
                let (x, y) = run[0];
                let _ =
                    write!(svg, r#"<circle class="{}" cx="{x:.1}" cy="{y:.1}" r="3"/>"#, s.class);
                continue;
            }
            let points: Vec<String> = run.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
            let _ = write!(svg, r#"<polyline class="{}" points="{}"/>"#, s.class, points.join(" "));
        }
    }
    svg.push_str("</svg>");
    svg
}

/// Text for SVG markup.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_tops_are_plain_numbers() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(7.0), 10.0);
        assert_eq!(nice_ceiling(10.0), 10.0);
        assert_eq!(nice_ceiling(11.0), 20.0);
        assert_eq!(nice_ceiling(430.0), 500.0);
        assert_eq!(nice_ceiling(0.013), 0.02);
    }

    #[test]
    fn a_chart_plots_what_its_table_shows() {
        let xs = vec!["10:00".to_owned(), "11:00".to_owned(), "12:00".to_owned()];
        let chart = Chart::new(
            "c",
            "Requests",
            "requests",
            xs,
            vec![
                ("a<b".to_owned(), vec![Some(2.0), None, Some(8.0)]),
                ("c".to_owned(), vec![Some(4.0), Some(6.0), Some(10.0)]),
            ],
        );
        // A gap breaks the first line into two points; the second is one line.
        assert_eq!(chart.svg.matches("<circle").count(), 2);
        assert_eq!(chart.svg.matches("<polyline").count(), 1);
        // The top of the axis is 10: the value 10 sits on it, 0 on the bottom.
        assert!(chart.svg.contains(&format!("{LEFT:.1},{:.1}", BOTTOM - (BOTTOM - TOP) * 0.4)));
        assert!(chart.svg.contains(&format!("{RIGHT:.1},{TOP:.1}")), "{}", chart.svg);
        let (a, c) = (&chart.series[0], &chart.series[1]);
        assert_eq!(chart.cell(a, 1), "—");
        assert_eq!(chart.cell(c, 2), "10");
        assert!(!chart.svg.contains("a<b"), "names are not drawn unescaped");
    }
}
