use super::*;

#[test]
fn bounds_read_as_postgresql_prints_them() {
    assert_eq!(
        parse_bound("FOR VALUES FROM ('1790812800000') TO ('1790899200000')"),
        Some((1_790_812_800_000, 1_790_899_200_000))
    );
    assert_eq!(parse_bound("FOR VALUES FROM ('0') TO ('2678400000')"), Some((0, 2_678_400_000)));
    for other in [
        "DEFAULT",
        "FOR VALUES FROM (MINVALUE) TO ('5')",
        "FOR VALUES IN ('a')",
        "FOR VALUES FROM ('1') TO ('x')",
        "",
    ] {
        assert_eq!(parse_bound(other), None, "{other}");
    }
}

#[test]
fn days_are_named_by_their_utc_date() {
    assert_eq!(civil_from_days(0), (1970, 1, 1));
    assert_eq!(civil_from_days(-1), (1969, 12, 31));
    // 2000-02-29 (a leap day in a century year) and the day after.
    assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    assert_eq!(civil_from_days(11_017), (2000, 3, 1));
    assert_eq!(civil_from_days(1_790_812_800_000 / DAY_MS), (2026, 10, 1));
    assert_eq!(day_name("request_records", 20_791), "request_records_p20261204");
    // Every day of a span of years follows the one before it.
    let mut prev = civil_from_days(-800);
    for day in -799..40_000 {
        let (y, m, d) = civil_from_days(day);
        let next_of_prev = d == prev.2 + 1 && (y, m) == (prev.0, prev.1);
        let new_month = d == 1 && ((y == prev.0 && m == prev.1 + 1) || (y == prev.0 + 1 && m == 1));
        assert!(next_of_prev || new_month, "{day}: {prev:?} then {:?}", (y, m, d));
        prev = (y, m, d);
    }
}

#[test]
fn a_partition_overlaps_ranges_it_shares_a_millisecond_with() {
    let day = Partition { name: "p".into(), range: Some((10, 20)), default: false };
    assert!(day.overlaps(10, 20) && day.overlaps(0, 11) && day.overlaps(19, 30));
    assert!(!day.overlaps(0, 10) && !day.overlaps(20, 30));
    let default = Partition { name: "d".into(), range: None, default: true };
    assert!(!default.overlaps(i64::MIN, i64::MAX));
}
