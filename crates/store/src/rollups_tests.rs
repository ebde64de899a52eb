use super::*;

#[test]
fn buckets_are_eight_per_doubling_and_their_bounds_hold_them() {
    assert_eq!((bucket(0), bucket(1), bucket(2), bucket(4)), (0, 1, 9, 17));
    let mut last = 0;
    for ms in 1..200_000i64 {
        let b = bucket(ms);
        assert!(b >= last, "monotone at {ms}");
        last = b;
        let top = upper(b);
        // The bucket's bound holds it, and is less than 9.1% above it.
        assert!(top >= ms as u64 && (top as f64) < ms as f64 * 1.091 + 1.0, "{ms}: {b} {top}");
        assert_eq!(bucket(top as i64), b, "{ms}: the bound is in the bucket");
    }
    // The last bucket holds everything from its start on.
    assert_eq!(bucket(i64::MAX), MAX_BUCKET);
    assert_eq!(bucket(upper(MAX_BUCKET) as i64), MAX_BUCKET);
}

fn histogram(cells: &[(i64, i64)]) -> Histogram {
    let mut h = Histogram::default();
    for (b, n) in cells {
        h.add(*b, *n);
    }
    h
}

fn entry(model: &'static str, total_ms: i64, ttft_ms: Option<i64>) -> Entry<'static> {
    Entry {
        group: Group { hour_ms: 0, model, provider: "p", project: "", user: "", key_prefix: "" },
        sums: Sums { requests: 1, input_tokens: 10, total_ms_sum: total_ms, ..Sums::default() },
        total_ms,
        ttft_ms,
    }
}

#[test]
fn a_batch_sums_by_fine_row_with_its_histograms_in_key_order() {
    let rollup = Rollup::of([
        entry("b", 100, Some(10)),
        entry("a", 100, None),
        entry("b", 100, Some(11)),
        entry("b", 5_000, None),
    ]);
    let models: Vec<&str> = rollup.fine.iter().map(|(k, _)| k.texts[0]).collect();
    assert_eq!(models, ["a", "b"]);
    let (key, b) = &rollup.fine[1];
    assert_eq!(
        (key.ints.as_slice(), key.texts.as_slice()),
        (&[0][..], &["b", "p", "", "", ""][..])
    );
    assert_eq!((b.sums.requests, b.sums.input_tokens, b.sums.total_ms_sum), (3, 30, 5_200));
    assert_eq!(b.latency, histogram(&[(bucket(100), 2), (bucket(5_000), 1)]));
    assert_eq!(b.ttft, histogram(&[(bucket(10), 1), (bucket(11), 1)]));
}

#[test]
fn percentiles_and_the_slo_are_read_to_the_bucket() {
    // 100 requests: 90 of 100 ms, 10 of 8 s.
    let reading = Reading {
        sums: Sums { requests: 100, costed: 100, cost_usd: 1.5, ..Sums::default() },
        buckets: histogram(&[(bucket(8_000), 10), (bucket(100), 90)]),
        values: Vec::new(),
    };
    let row = reading.row(Some("m".into()), 5_000);
    assert_eq!((row.p50_ms, row.p95_ms), (upper(bucket(100)), upper(bucket(8_000))));
    assert!(row.p50_ms >= 100 && row.p95_ms >= 8_000);
    assert_eq!(row.slo_breach_share, 0.1);
    assert!(row.cost_complete);
    assert_eq!(row.cost_usd, Some(1.5));
    // No costs known: unknown, not zero.
    let none = Reading {
        sums: Sums { requests: 1, ..Sums::default() },
        buckets: histogram(&[(1, 1)]),
        values: Vec::new(),
    };
    let row = none.row(None, 5_000);
    assert_eq!((row.cost_usd, row.cost_complete), (None, false));
}

#[test]
fn records_alone_give_exact_percentiles_and_join_a_histogram_by_bucket() {
    let exact = Reading {
        sums: Sums { requests: 4, ..Sums::default() },
        buckets: Histogram::default(),
        values: vec![300, 100, 10_000, 200],
    };
    let row = exact.row(None, 5_000);
    assert_eq!((row.p50_ms, row.p95_ms, row.slo_breach_share), (200, 10_000, 0.25));
    let mixed = Reading {
        sums: Sums { requests: 4, ..Sums::default() },
        buckets: histogram(&[(bucket(100), 3)]),
        values: vec![10_000],
    };
    let row = mixed.row(None, 5_000);
    assert_eq!((row.p50_ms, row.p95_ms), (upper(bucket(100)), upper(bucket(10_000))));
    assert_eq!(row.slo_breach_share, 0.25);
}

#[test]
fn a_batch_sums_by_slice_each_dimension_by_hour_and_day() {
    let at = |hour_ms: i64, model: &'static str, key: &'static str, total_ms: i64| Entry {
        group: Group { hour_ms, model, provider: "p", project: "", user: "u", key_prefix: key },
        sums: Sums { requests: 1, input_tokens: 10, ..Sums::default() },
        total_ms,
        ttft_ms: Some(total_ms / 2),
    };
    let day = 20_000 * DAY_MS;
    let rollup = Rollup::of([
        at(day, "a", "k1", 100),
        at(day + HOUR_MS, "a", "k2", 100),
        at(day + HOUR_MS, "b", "k1", 900),
    ]);
    let find = |span_ms: i64, dimension: &str, start_ms: i64, value: &str| {
        let key = RowKey { ints: vec![span_ms, start_ms], texts: vec![dimension, value] };
        rollup.slices.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone())
    };
    // All the traffic: an hour each, one day with the three.
    let all = find(DAY_MS, "", day, "").unwrap();
    assert_eq!((all.sums.requests, all.sums.input_tokens), (3, 30));
    assert_eq!(all.latency, histogram(&[(bucket(100), 2), (bucket(900), 1)]));
    assert_eq!(all.ttft, histogram(&[(bucket(50), 2), (bucket(450), 1)]));
    assert_eq!(find(HOUR_MS, "", day + HOUR_MS, "").unwrap().sums.requests, 2);
    // One dimension at a time; a missing value is "" (the project here).
    assert_eq!(find(DAY_MS, "model", day, "a").unwrap().sums.requests, 2);
    assert_eq!(find(HOUR_MS, "key", day + HOUR_MS, "k1").unwrap().sums.requests, 1);
    assert_eq!(find(DAY_MS, "key", day, "k1").unwrap().sums.requests, 2);
    assert_eq!(find(DAY_MS, "project", day, "").unwrap().sums.requests, 3);
    assert_eq!(find(DAY_MS, "user", day, "u").unwrap().sums.requests, 3);
    assert!(find(DAY_MS, "key", day + HOUR_MS, "k1").is_none(), "a day starts at midnight");
    // In key order, each slice once.
    let keys: Vec<_> = rollup.slices.iter().map(|(k, _)| k.clone()).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(keys, sorted);
    // 2 hours (all, model, provider, project, user, key: 1+2+1+1+1+2 in the
    // second, 6 in the first) and a day (1+2+1+1+1+2).
    assert_eq!(rollup.slices.len(), 6 + 8 + 8);
}

#[test]
fn histograms_are_stored_as_text_and_read_in_any_order() {
    let h = histogram(&[(90, 3), (0, 1), (200, 12)]);
    assert_eq!(h.encode(), "0:1 90:3 200:12");
    assert_eq!(Histogram::decode(&h.encode()).unwrap(), h);
    assert_eq!(Histogram::decode("").unwrap(), Histogram::default());
    // SQLite's group_concat keeps no order; a bucket twice adds up.
    assert_eq!(Histogram::decode("200:12  90:1 0:1 90:2").unwrap(), h);
    for bad in ["90", "90:x", "a:1", "90:1,2"] {
        assert!(matches!(Histogram::decode(bad), Err(StoreError::Corrupt(_))), "{bad}");
    }
    let mut merged = h.clone();
    merged.merge(&histogram(&[(90, 1), (5, 2)]));
    assert_eq!(merged.encode(), "0:1 5:2 90:4 200:12");
    assert_eq!((merged.count(), merged.above(90)), (19, 12));
}

#[test]
fn upserts_add_sums_then_write_the_merged_histograms() {
    for table in [&FINE, &SLICES] {
        for sqlite in [true, false] {
            for rows in [1, 8, 64] {
                let (first, second) = (table.add_sql(sqlite, rows), table.set_sql(sqlite, rows));
                let count = |sql: &str| {
                    if sqlite { sql.matches('?').count() } else { sql.matches('$').count() }
                };
                let cols = table.columns();
                assert_eq!((count(first), count(second)), (rows * cols, rows * cols));
                let name = table.name;
                assert!(first.contains(&format!("requests = {name}.requests + excluded.requests")));
                assert!(!first.contains("latency = "), "the first leaves the histograms alone");
                assert!(first.ends_with("latency, ttft"), "{first}");
                assert!(first.contains(" RETURNING "), "{first}");
                assert!(second.ends_with("latency = excluded.latency, ttft = excluded.ttft"));
                assert!(!second.contains("requests = "), "the second adds nothing");
            }
        }
    }
    assert_eq!((FINE.columns(), SLICES.columns()), (6 + 13 + 2, 4 + 13 + 2));
}

#[test]
fn a_returned_row_is_matched_by_its_key() {
    let key = RowKey { ints: vec![7, 8], texts: vec!["model", "a b"] };
    assert_eq!(key.joined(), "7\u{1f}8\u{1f}model\u{1f}a b");
    // Text with the separator cannot stand for another key's columns: keys
    // are gateway-made names (models, ids, prefixes), never control bytes.
    assert_ne!(key.joined(), RowKey { ints: vec![7, 8], texts: vec!["model a", "b"] }.joined());
}
