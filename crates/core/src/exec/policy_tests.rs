use super::*;
use crate::catalog::AttemptPolicy;

fn status(code: u16, retry_after: Option<Duration>) -> Failure {
    Failure::Status { status: code, message: format!("upstream said {code}"), retry_after }
}

fn transport(class: TransportClass) -> Failure {
    Failure::Transport { class, message: "no answer".into() }
}

const LOTS: Duration = Duration::from_secs(600);

#[test]
fn retries_back_off_honour_retry_after_and_give_way_to_failover() {
    let policy = AttemptPolicy::default();
    // 429 is retryable by default: first a retry at the larger of backoff and Retry-After.
    let wait = match next_step(&status(429, Some(Duration::from_secs(2))), &policy, 0, LOTS) {
        Next::Retry(w) => w,
        other => panic!("expected a retry, got {other:?}"),
    };
    assert_eq!(wait, Duration::from_secs(2).max(policy.backoff));
    // Out of retries: fail over (429 is a failover status).
    assert_eq!(next_step(&status(429, None), &policy, policy.max_retries, LOTS), Next::Failover);
    // A wait beyond the deadline fails over instead of sleeping past it.
    assert_eq!(
        next_step(&status(429, Some(Duration::from_secs(30))), &policy, 0, Duration::from_secs(1)),
        Next::Failover
    );
    // The request's own fault is answered at once.
    for code in [400, 413, 422] {
        assert_eq!(next_step(&status(code, None), &policy, 0, LOTS), Next::Terminal, "{code}");
    }
    for code in [401, 403, 404, 500, 502] {
        assert_eq!(next_step(&status(code, None), &policy, 0, LOTS), Next::Failover, "{code}");
    }
    let broken = Failure::BrokenStream("cut".into());
    assert_eq!(next_step(&broken, &policy, 0, LOTS), Next::Failover);
}

#[test]
fn what_the_breaker_hears() {
    assert_eq!(
        health_outcome(&status(429, Some(Duration::from_secs(3)))),
        Some(Outcome::Throttled { retry_after: Some(Duration::from_secs(3)) })
    );
    assert_eq!(health_outcome(&status(401, None)), Some(Outcome::AuthFailure));
    assert_eq!(health_outcome(&status(503, None)), Some(Outcome::Failure { retry_after: None }));
    assert_eq!(health_outcome(&status(400, None)), Some(Outcome::Success), "the provider works");
    assert_eq!(health_outcome(&Failure::Unavailable("no key".into())), None, "never sent");
    assert_eq!(
        health_outcome(&Failure::BrokenStream("cut".into())),
        Some(Outcome::Failure { retry_after: None })
    );
}

#[test]
fn the_client_gets_the_most_informative_failure_in_stable_codes() {
    assert!(rank(&status(400, None)) > rank(&status(503, None)));
    assert!(rank(&status(503, None)) > rank(&Failure::BrokenStream("x".into())));
    assert!(rank(&Failure::BrokenStream("x".into())) > rank(&Failure::Unavailable("x".into())));
    for (f, http, code) in [
        (status(400, None), 400, ErrorCode::UpstreamInvalidRequest),
        (status(429, None), 429, ErrorCode::UpstreamRateLimited),
        (status(401, None), 502, ErrorCode::UpstreamAuthFailed),
        (status(529, None), 503, ErrorCode::UpstreamOverloaded),
        (status(504, None), 504, ErrorCode::UpstreamTimeout),
        (Failure::BrokenStream("x".into()), 502, ErrorCode::UpstreamMalformed),
        (Failure::CircuitOpen("x".into()), 503, ErrorCode::CircuitOpen),
        (transport(TransportClass::Timeout), 504, ErrorCode::UpstreamTimeout),
        (transport(TransportClass::Connect), 502, ErrorCode::UpstreamUnreachable),
        (transport(TransportClass::Reset), 502, ErrorCode::UpstreamUnreachable),
    ] {
        let err = failure_error(&f, "p");
        assert_eq!((err.status(), err.code()), (http, code), "{f:?}");
    }
    // An upstream's own refusal keeps its status, and the kind that status names.
    for (http, kind) in [(413, ErrorKind::RequestTooLarge), (422, ErrorKind::InvalidRequest)] {
        let err = failure_error(&status(http, None), "p");
        assert_eq!((err.status(), err.body().kind), (http, kind));
        assert_eq!(err.code(), ErrorCode::UpstreamInvalidRequest);
    }
}

#[test]
fn an_invalid_structured_answer_fails_over_and_is_no_fault_of_the_deployment() {
    let invalid = Failure::InvalidOutput("the answer is not JSON".into());
    assert_eq!(invalid.outcome(), "invalid_output");
    let policy = AttemptPolicy::default();
    assert_eq!(next_step(&invalid, &policy, 0, LOTS), Next::Failover, "another model may comply");
    assert_eq!(health_outcome(&invalid), Some(Outcome::Success), "the deployment answered");
    assert!(rank(&invalid) > rank(&transport(TransportClass::Reset)));
    assert!(rank(&invalid) < rank(&status(400, None)));
    let err = failure_error(&invalid, "p");
    assert_eq!((err.status(), err.code()), (502, ErrorCode::InvalidStructuredOutput));
    assert_eq!(err.body().message, "p: the answer is not JSON");
}
