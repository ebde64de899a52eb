use super::*;
use switchyard_store::SeriesPoint;

fn usage(key: Option<&str>, requests: u64, errors: u64) -> UsageRow {
    UsageRow {
        key: key.map(str::to_owned),
        requests,
        errors,
        input_tokens: requests * 10,
        output_tokens: requests,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        cost_usd: Some(requests as f64 * 0.01),
        cost_complete: true,
        p50_ms: 100,
        p95_ms: 200,
        slo_breach_share: 0.0,
    }
}

fn point(hour_ms: i64, key: Option<&str>, requests: u64, errors: u64) -> SeriesPoint {
    SeriesPoint {
        hour_ms,
        usage: usage(key, requests, errors),
        failovers: 1,
        cache_hits: 0,
        ttft_p50_ms: Some(40),
        ttft_p95_ms: Some(80),
    }
}

fn row(key: &str, requests: u64) -> GroupRow {
    GroupRow {
        key: key.to_owned(),
        u: usage(Some(key), requests, 0),
        error_rate: String::new(),
        over_slo: String::new(),
        cost: String::new(),
    }
}

fn line<'a>(chart: &'a Chart, name: &str) -> &'a [Option<f64>] {
    &chart.series.iter().find(|s| s.name == name).unwrap().values
}

#[test]
fn the_busiest_groups_get_lines_and_the_rest_is_the_total_less_them() {
    let h0 = 480_000 * HOUR_MS;
    let now = h0 + HOUR_MS + 5;
    // Seven groups; the page drew the busiest five, "(none)" among them.
    let names = ["a", "b", "c", "(none)", "e", "f", "g"];
    let groups: Vec<GroupRow> =
        names.iter().enumerate().map(|(i, n)| row(n, 100 - i as u64)).collect();
    let series = SeriesOf {
        groups: vec![
            point(h0, Some("a"), 10, 1),
            point(h0, None, 4, 0),
            point(h0 + HOUR_MS, Some("b"), 7, 0),
        ],
        total: vec![point(h0, None, 20, 2), point(h0 + HOUR_MS, None, 9, 0)],
    };
    let charts = charts(&series, h0 + 10, now, &groups);
    let requests = &charts[0];
    assert_eq!(requests.xs.len(), 2);
    assert_eq!(line(requests, "a"), [Some(10.0), Some(0.0)]);
    assert_eq!(line(requests, "(none)"), [Some(4.0), Some(0.0)]);
    assert_eq!(line(requests, "b"), [Some(0.0), Some(7.0)]);
    // The total less the lines drawn.
    assert_eq!(line(requests, "other"), [Some(6.0), Some(2.0)]);
    assert_eq!(requests.series.last().unwrap().name, "other");
    // Tokens, cost and rates are the total's.
    assert_eq!(line(&charts[2], "input"), [Some(200.0), Some(90.0)]);
    let rates = &charts[4];
    assert_eq!(line(rates, "errors"), [Some(10.0), Some(0.0)]);
    assert_eq!(line(rates, "failovers")[1], Some(100.0 / 9.0));
    // TTFT per group drawn, a gap where it had no traffic.
    assert_eq!(line(&charts[1], "a"), [Some(80.0), None]);
}

#[test]
fn no_other_line_when_every_group_is_drawn() {
    let h0 = 480_000 * HOUR_MS;
    let groups = vec![row("a", 3)];
    let series =
        SeriesOf { groups: vec![point(h0, Some("a"), 3, 0)], total: vec![point(h0, None, 3, 0)] };
    let charts = charts(&series, h0, h0 + 1, &groups);
    let names: Vec<&str> = charts[0].series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a"]);
}
