use std::sync::atomic::AtomicBool;

use super::*;
use crate::limits::Limits;
use crate::limits::budget::{self, BudgetMode, Budgeted, Ledger};
use crate::limits::counters::Spent;

/// A backend that is down while `down` is set, else counts locally.
#[derive(Debug, Default)]
struct Flaky {
    down: AtomicBool,
    inner: LocalCounters,
}

impl Counters for Flaky {
    fn name(&self) -> &'static str {
        "flaky"
    }
    fn acquire<'a>(
        &'a self,
        lease: &'a str,
        charges: &'a [Charge],
    ) -> BoxFuture<'a, Result<Acquired, BackendError>> {
        if self.down.load(Ordering::SeqCst) {
            return Box::pin(std::future::ready(Err(BackendError("down".into()))));
        }
        self.inner.acquire(lease, charges)
    }
    fn adjust<'a>(&'a self, c: &'a Charge, d: i64) -> BoxFuture<'a, Result<(), BackendError>> {
        self.inner.adjust(c, d)
    }
    fn release<'a>(
        &'a self,
        l: &'a str,
        k: &'a [String],
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        self.inner.release(l, k)
    }
    fn renew<'a>(
        &'a self,
        l: &'a [(String, String)],
        ttl: u64,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        self.inner.renew(l, ttl)
    }
    fn seed_spend<'a>(
        &'a self,
        k: &'a str,
        s: u64,
        t: u64,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        self.inner.seed_spend(k, s, t)
    }
    fn settle_spend<'a>(
        &'a self,
        c: &'a Charge,
        cost: Option<u64>,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        self.inner.settle_spend(c, cost)
    }
    fn read_spend<'a>(&'a self, k: &'a str) -> BoxFuture<'a, Result<Option<Spent>, BackendError>> {
        self.inner.read_spend(k)
    }
}

fn scoped(scope: &str, limits: Limits) -> Vec<Scoped> {
    vec![Scoped::new(scope, limits)]
}

#[tokio::test]
async fn a_refusal_names_the_limit_and_when_to_retry() {
    let l = Limiter::local();
    let s = scoped("key:k1", Limits::default().rpm(2));
    let first = l.take(&s, 10, &[]).await.expect("1 of 2");
    let status = first.status.expect("limited");
    assert_eq!(status.requests.map(|r| (r.limit, r.remaining)), Some((2, 1)));
    assert_eq!(status.tokens, None);
    l.take(&s, 10, &[]).await.expect("2 of 2");
    let refusal = l.take(&s, 10, &[]).await.expect_err("3 of 2");
    assert_eq!(refusal.code, ErrorCode::RateLimited);
    assert_eq!(refusal.message, "rate limit of key:k1 reached: 2 requests per minute");
    let ms = refusal.retry_after_ms.expect("known");
    assert!(ms > 29_000 && ms <= 30_000, "{ms}");
}

#[tokio::test]
async fn every_scope_is_charged_or_none() {
    let l = Limiter::local();
    let both = vec![
        Scoped::new("user:u", Limits::default().rpm(10)),
        Scoped::new("project:p", Limits::default().tpm(100)),
    ];
    l.take(&both, 80, &[]).await.expect("fits");
    let refusal = l.take(&both, 80, &[]).await.expect_err("the project's tokens are spent");
    assert!(refusal.message.contains("project:p") && refusal.message.contains("100 tokens"));
    // The refused request took nothing from the user: 9 more fit.
    let user = scoped("user:u", Limits::default().rpm(10));
    for _ in 0..9 {
        l.take(&user, 0, &[]).await.expect("fits");
    }
    assert!(l.take(&user, 0, &[]).await.is_err());
}

#[tokio::test]
async fn a_request_larger_than_the_token_limit_never_fits() {
    let l = Limiter::local();
    let refusal =
        l.take(&scoped("key:k", Limits::default().tpm(100)), 101, &[]).await.expect_err("");
    assert_eq!(refusal.retry_after_ms, None);
    assert!(refusal.message.contains("fewer than this request's 101"), "{}", refusal.message);
}

#[tokio::test]
async fn tokens_are_reconciled_and_leases_released_when_given_back() {
    let l = Limiter::local();
    let s = scoped("key:k", Limits::default().tpm(100).concurrent(1));
    let r = l.take(&s, 90, &[]).await.expect("fits");
    assert!(l.take(&s, 5, &[]).await.is_err(), "one at once");
    let used = Usage { input_tokens: Some(10), output_tokens: Some(5), ..Usage::default() };
    l.give_back(r, &used, None).await;
    // 85 of the 90 came back: 85 fit again, and the slot is free.
    let r = l.take(&s, 85, &[]).await.expect("reconciled");
    // Unknown usage keeps the reservation.
    l.give_back(r, &Usage::default(), None).await;
    assert!(l.take(&s, 1, &[]).await.is_err(), "the unreported 85 stay taken");
}

#[tokio::test]
async fn the_failure_modes() {
    let flaky = Arc::new(Flaky::default());
    flaky.down.store(true, Ordering::SeqCst);
    let closed = Limiter::new(flaky.clone(), LimiterConfig::default());
    let s = scoped("key:k", Limits::default().rpm(4));
    let refusal = closed.take(&s, 0, &[]).await.expect_err("fails closed");
    assert_eq!(refusal.code, ErrorCode::LimitsUnavailable);
    // Unlimited requests do not need the backend at all.
    closed.take(&[], 0, &[]).await.expect("nothing to count");

    let config = LimiterConfig {
        on_unavailable: FailureMode::LocalShare,
        expected_instances: 2,
        ..LimiterConfig::default()
    };
    let shared = Limiter::new(flaky.clone(), config);
    shared.take(&s, 0, &[]).await.expect("1 of the local share of 2");
    shared.take(&s, 0, &[]).await.expect("2 of 2");
    assert!(shared.take(&s, 0, &[]).await.is_err(), "this instance's half of 4 is spent");
    // Back: the shared counters count again (they saw none of the above).
    flaky.down.store(false, Ordering::SeqCst);
    for _ in 0..4 {
        shared.take(&s, 0, &[]).await.expect("the backend's 4");
    }
    assert!(shared.take(&s, 0, &[]).await.is_err());
}

#[tokio::test]
async fn leases_held_by_requests_in_flight_are_renewed() {
    let config = LimiterConfig { lease_ttl: Duration::from_millis(60), ..LimiterConfig::default() };
    let l = Limiter::new(Arc::new(LocalCounters::default()), config);
    let s = scoped("key:k", Limits::default().concurrent(1));
    let held = l.take(&s, 0, &[]).await.expect("free");
    // Several TTLs later the slot is still taken: the ticker renewed it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(l.take(&s, 0, &[]).await.is_err(), "renewed while held");
    l.give_back(held, &Usage::default(), None).await;
    l.take(&s, 0, &[]).await.expect("released");
}

fn budget(scope: &str, limit_usd: f64, mode: BudgetMode, reserve_usd: f64) -> Budgeted {
    let period = budget::Period::Month;
    Budgeted {
        scope: budget::BudgetScope::parse(scope).unwrap(),
        names: Vec::new(),
        spec: budget::BudgetSpec {
            scope: budget::BudgetScope::parse(scope).unwrap(),
            limit_usd,
            period,
            mode,
            max_reservation_usd: 1.0,
            lower_max_tokens: false,
        },
        window: period.window(crate::clock::UnixMs::now()),
        reserve_usd,
    }
}

#[tokio::test]
async fn a_budget_reserves_refuses_and_settles_against_the_cost() {
    let l = Limiter::local();
    let b = [budget("project:p", 1.0, BudgetMode::Enforce, 0.4)];
    let first = l.take(&[], 0, &b).await.expect("0.4 of 1");
    let second = l.take(&[], 0, &b).await.expect("0.8 of 1");
    let refusal = l.take(&[], 0, &b).await.expect_err("1.2 of 1");
    assert_eq!(refusal.code, ErrorCode::BudgetExceeded);
    assert_eq!(refusal.message, "the budget of project:p is spent: $1.00 per month");
    assert_eq!(refusal.retry_after_ms, None, "no retry: the period must end");
    // Settled at its metered cost, the first frees most of its reservation.
    l.give_back(first, &Usage::default(), Some(0.1)).await;
    let third = l.take(&[], 0, &b).await.expect("0.1 + 0.4 + 0.4 of 1");
    // A request whose cost is unknown keeps its reservation, as uncertain spend.
    l.give_back(second, &Usage::default(), None).await;
    l.give_back(third, &Usage::default(), Some(0.3)).await;
    let spent = l.inner.backend.read_spend(&b[0].key()).await.unwrap().unwrap();
    assert_eq!((spent.spent, spent.reserved, spent.uncertain), (400_000, 0, 400_000));
    assert!(l.take(&[], 0, &b).await.is_err(), "0.8 + 0.4 > 1");
}

#[tokio::test]
async fn a_budget_in_warn_mode_never_refuses_and_names_the_breach() {
    let l = Limiter::local();
    let b = [budget("gateway", 1.0, BudgetMode::Warn, 0.6)];
    let r = l.take(&[], 0, &b).await.expect("0.6 of 1");
    assert!(r.over_budget.is_empty());
    let r = l.take(&[], 0, &b).await.expect("warn mode admits 1.2 of 1");
    assert_eq!(r.over_budget, ["gateway"]);
}

/// Spend recorded before this counter existed.
#[derive(Debug)]
struct Spent90;

impl Ledger for Spent90 {
    fn spent<'a>(&'a self, _: &'a Budgeted) -> BoxFuture<'a, Result<f64, BackendError>> {
        Box::pin(std::future::ready(Ok(0.9)))
    }
}

#[tokio::test]
async fn a_budget_counter_starts_from_the_ledger_not_from_zero() {
    let l = Limiter::local().with_ledger(Arc::new(Spent90));
    let b = [budget("user:u", 1.0, BudgetMode::Enforce, 0.2)];
    assert!(l.take(&[], 0, &b).await.is_err(), "0.9 spent + 0.2 > 1");
    let small = [budget("user:u", 1.0, BudgetMode::Enforce, 0.1)];
    l.take(&[], 0, &small).await.expect("0.9 + 0.1 fits");
}

/// Records at fixed times: the spend since a window's start is theirs.
#[derive(Debug)]
struct Records(Vec<(u64, f64)>);

impl Ledger for Records {
    fn spent<'a>(&'a self, b: &'a Budgeted) -> BoxFuture<'a, Result<f64, BackendError>> {
        let since = b.window.start.0;
        let sum = self.0.iter().filter(|(t, _)| *t >= since).map(|(_, c)| c).sum();
        Box::pin(std::future::ready(Ok(sum)))
    }
}

#[tokio::test]
async fn a_rolling_budget_counts_the_last_hours_and_lets_old_spend_go() {
    const HOUR: u64 = 3_600_000;
    let period = budget::Period::Rolling { hours: 24 };
    let at = |ms: u64| {
        let mut b = budget("gateway", 1.0, BudgetMode::Enforce, 0.3);
        b.spec.period = period;
        b.window = period.window(crate::clock::UnixMs(ms));
        [b]
    };
    let t0 = 1_000 * HOUR;
    // $0.8 was spent an hour before t0.
    let l = Limiter::local().with_ledger(Arc::new(Records(vec![(t0 - HOUR, 0.8)])));
    let refusal = l.take(&[], 0, &at(t0)).await.expect_err("0.8 + 0.3 > 1");
    assert_eq!(refusal.message, "the budget of gateway is spent: $1.00 in any 24 hours");
    // 22 hours later it is still in the window.
    assert!(l.take(&[], 0, &at(t0 + 22 * HOUR)).await.is_err());
    // A day after it was spent it has left: the next step's counter starts
    // from the records still in the window.
    let held = l.take(&[], 0, &at(t0 + 24 * HOUR)).await.expect("the old spend left");
    l.give_back(held, &Usage::default(), Some(0.3)).await;
}
