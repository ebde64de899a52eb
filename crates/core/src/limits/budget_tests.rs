use super::*;

fn at(y: u64, m: u64, d: u64, hour: u64) -> UnixMs {
    UnixMs(days_from_civil(y, m, d) * DAY_MS + hour * 3_600_000)
}

#[test]
fn calendar_periods_in_utc() {
    let now = at(2026, 12, 2, 15); // a Wednesday
    let day = Period::Day.window(now);
    assert_eq!(
        (day.id.as_str(), day.start, day.end),
        ("d2026-12-02", at(2026, 12, 2, 0), at(2026, 12, 3, 0))
    );
    let week = Period::Week.window(now);
    assert_eq!(
        (week.id.as_str(), week.start, week.end),
        ("w2026-11-30", at(2026, 11, 30, 0), at(2026, 12, 7, 0))
    );
    let month = Period::Month.window(now);
    assert_eq!(
        (month.id.as_str(), month.start, month.end),
        ("m2026-12", at(2026, 12, 1, 0), at(2027, 1, 1, 0))
    );
    // A leap February, and a Monday is its own week's start.
    let feb = Period::Month.window(at(2028, 2, 29, 23));
    assert_eq!((feb.start, feb.end), (at(2028, 2, 1, 0), at(2028, 3, 1, 0)));
    assert_eq!(Period::Week.window(at(2026, 11, 30, 0)).id, "w2026-11-30");
    assert_eq!(civil(0), (1970, 1, 1));
}

#[test]
fn scopes_parse_and_print_alike() {
    for s in ["gateway", "key:k_1", "user:a@example.com", "project:research"] {
        assert_eq!(BudgetScope::parse(s).unwrap().to_string(), s);
    }
    for bad in ["", "team:x", "user:", "gateway:x"] {
        assert_eq!(BudgetScope::parse(bad), None, "{bad}");
    }
}

#[test]
fn micros_round_up_and_refuse_nonsense() {
    assert_eq!(micros(0.000_000_1), 1);
    assert_eq!(micros(30.0), 30_000_000);
    assert_eq!(micros(-1.0), 0);
    assert_eq!(micros(f64::NAN), 0);
}

#[test]
fn a_rolling_window_moves_in_24_steps() {
    let p = Period::Rolling { hours: 24 };
    let now = at(2026, 12, 2, 18);
    let w = p.window(now);
    // An hour a step: the current hour and the 23 before it.
    assert_eq!(w.end.0 - w.start.0, 24 * 3_600_000);
    assert!(w.start.0 <= now.0 - 23 * 3_600_000 && now.0 < w.end.0);
    assert!(w.id.starts_with("r24h-"), "{}", w.id);
    // The next step has a counter of its own.
    assert_ne!(p.window(UnixMs(now.0 + 3_600_000)).id, w.id);
    assert_eq!(p.label(), "rolling 24h");
    // A 30-day window moves by 30 hours.
    let month = Period::Rolling { hours: 720 }.window(now);
    assert_eq!(month.end.0 - month.start.0, 720 * 3_600_000);
}
