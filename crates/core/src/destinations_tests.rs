use super::*;

fn ok(total_ms: f64) -> Observation {
    Observation { ended: Ended::Success, total_ms, ttft_ms: None, output_tokens: None }
}

fn state() -> Arc<dyn DestinationState> {
    Arc::new(Destinations::default())
}

#[test]
fn a_window_counts_outcomes_and_cancellations_are_no_errors() {
    let d = Destinations::default();
    let now = UnixMs(10_000_000);
    for ms in [100.0, 200.0, 300.0] {
        d.observe("a", ok(ms), now);
    }
    d.observe("a", Observation { ended: Ended::Error, ..ok(50.0) }, now);
    d.observe("a", Observation { ended: Ended::Cancelled, ..ok(9_000.0) }, now);
    let s = d.summary("a", now);
    assert_eq!((s.samples, s.successes, s.errors, s.cancellations), (5, 3, 1, 1));
    assert_eq!(s.error_rate, Some(0.25));
    // Latencies are the answered attempts' only: not the error's 50, not the
    // cancellation's 9,000.
    assert_eq!((s.p50_ms, s.p95_ms), (Some(200.0), Some(300.0)));
    assert_eq!(d.summary("b", now), Summary::default());
}

#[test]
fn percentiles_are_nearest_rank() {
    let d = Destinations::default();
    let now = UnixMs(10_000_000);
    for ms in 1..=100 {
        d.observe("a", ok(f64::from(ms)), now);
    }
    let s = d.summary("a", now);
    assert_eq!((s.p50_ms, s.p95_ms), (Some(50.0), Some(95.0)));
}

#[test]
fn the_window_is_bounded_in_time_and_in_samples() {
    let d = Destinations::default();
    let t0 = UnixMs(10_000_000);
    d.observe("a", ok(1_000.0), t0);
    d.observe("a", ok(10.0), UnixMs(t0.0 + WINDOW_MS));
    // The first is still in the window at its edge, and out of it one ms later.
    assert_eq!(d.summary("a", UnixMs(t0.0 + WINDOW_MS)).samples, 2);
    let later = d.summary("a", UnixMs(t0.0 + WINDOW_MS + 1));
    assert_eq!((later.samples, later.p95_ms), (1, Some(10.0)));
    for _ in 0..SAMPLES + 10 {
        d.observe("b", ok(1.0), t0);
    }
    assert_eq!(d.summary("b", t0).samples as usize, SAMPLES);
    // A window with nothing left in it is not listed.
    assert_eq!(
        d.all(UnixMs(t0.0 + 2 * WINDOW_MS + 1)).into_iter().map(|(id, _)| id).collect::<Vec<_>>(),
        Vec::<String>::new()
    );
}

#[test]
fn ttft_and_output_speed_come_from_answered_streams() {
    let d = Destinations::default();
    let now = UnixMs(10_000_000);
    // 100 tokens in the 2 s after a 500 ms first token: 50 tokens a second.
    let stream = Observation {
        ended: Ended::Success,
        total_ms: 2_500.0,
        ttft_ms: Some(500.0),
        output_tokens: Some(100),
    };
    d.observe("a", stream, now);
    // A whole answer: 30 tokens over its whole second.
    d.observe("a", Observation { output_tokens: Some(30), ..ok(1_000.0) }, now);
    d.observe("a", Observation { output_tokens: Some(30), ..ok(1_000.0) }, now);
    let s = d.summary("a", now);
    assert_eq!(s.ttft_p95_ms, Some(500.0));
    assert_eq!(s.tokens_per_s, Some(30.0));
}

#[test]
fn a_watch_dropped_unended_is_a_cancellation_and_a_forgotten_one_nothing() {
    let state = state();
    Watch::start(&state, "a".into()).end(Ended::Success, None, Some(3));
    drop(Watch::start(&state, "a".into()));
    Watch::start(&state, "a".into()).forget();
    let s = state.summary("a", UnixMs::now());
    assert_eq!((s.samples, s.successes, s.cancellations), (2, 1, 1));
}

#[test]
fn retain_forgets_what_a_reload_removed() {
    let d = Destinations::default();
    let now = UnixMs(10_000_000);
    d.observe("keep", ok(1.0), now);
    d.observe("gone", ok(1.0), now);
    d.retain(&|id| id == "keep");
    let ids: Vec<String> = d.all(now).into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, ["keep"]);
}

#[test]
fn merged_windows_sum_counts_and_weigh_figures_by_answers() {
    let one = Summary {
        samples: 4,
        successes: 3,
        errors: 1,
        p95_ms: Some(100.0),
        tokens_per_s: Some(10.0),
        ..Summary::default()
    };
    let two = Summary {
        samples: 2,
        successes: 1,
        cancellations: 1,
        p95_ms: Some(300.0),
        ..Summary::default()
    };
    let m = merge(&[one, two]);
    assert_eq!((m.samples, m.successes, m.errors, m.cancellations), (6, 4, 1, 1));
    assert_eq!((m.error_rate, m.p95_ms), (Some(0.2), Some(150.0)));
    // Only the first knows a speed.
    assert_eq!((m.tokens_per_s, m.p50_ms), (Some(10.0), None));
    assert_eq!(merge(&[]), Summary::default());
}

#[test]
fn shared_windows_merge_this_instances_with_the_others() {
    let shared = SharedDestinations::default();
    let now = UnixMs(10_000_000);
    shared.observe("a", ok(100.0), now);
    let theirs = Summary { samples: 1, successes: 1, p95_ms: Some(300.0), ..Summary::default() };
    shared.set_others([("a".to_owned(), theirs), ("b".to_owned(), theirs)]);
    assert_eq!(shared.summary("a", now).p95_ms, Some(200.0));
    assert_eq!(shared.local(now).len(), 1, "only its own are published");
    let ids: Vec<String> = shared.all(now).into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, ["a", "b"]);
    shared.retain(&|id| id == "a");
    assert_eq!(shared.summary("b", now), Summary::default());
}
