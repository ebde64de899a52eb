//! The runtime-state traits can be implemented outside the core, as a shared
//! (Redis) implementation in the store will: permits issued by another health
//! state, in-flight guards released by another counter, and the pipeline uses
//! them as it uses its own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use switchyard_core::breaker::{
    BreakerConfig, BreakerState, Clearance, CredentialKey, Outcome, Permit,
};
use switchyard_core::clock::UnixMs;
use switchyard_core::embed::{Gateway, Generate, Model, Provider};
use switchyard_core::protocol::{Message, Request, Role};
use switchyard_core::record::NullSink;
use switchyard_core::runtime::Runtime;
use switchyard_core::state::{HealthState, InFlightGuard, InFlightState};

/// Admits everything with a ticket of its own and keeps what was reported.
#[derive(Debug, Default)]
struct Recorded {
    issued: Mutex<Vec<(CredentialKey, u64)>>,
    reported: Mutex<Vec<(u64, Outcome)>>,
}

impl HealthState for Recorded {
    fn set_config(&self, _: BreakerConfig) {}
    fn clear(&self, key: &CredentialKey, _: UnixMs) -> Clearance {
        let mut issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        let ticket = 1000 + issued.len() as u64;
        issued.push((key.clone(), ticket));
        Clearance::Allowed(Permit::issued(key.clone(), 7, true, ticket))
    }
    fn report(&self, permit: Permit, outcome: Outcome, _: UnixMs) {
        assert_eq!(permit.epoch, 7, "the permit comes back as issued");
        self.reported.lock().unwrap_or_else(|e| e.into_inner()).push((permit.ticket(), outcome));
    }
    fn abandon(&self, _: Permit) {}
    fn state(&self, _: &CredentialKey, _: UnixMs) -> BreakerState {
        BreakerState::Closed
    }
    fn retain_for_reload(&self, _: &dyn Fn(&CredentialKey) -> bool) {}
    fn snapshot(&self, _: UnixMs) -> Vec<(CredentialKey, BreakerState)> {
        Vec::new()
    }
}

/// One counter for every identity, released through the guard's closure.
#[derive(Debug, Default)]
struct Counted {
    now: Arc<AtomicU64>,
    entered: AtomicU64,
}

impl InFlightState for Counted {
    fn enter(&self, _: &str) -> InFlightGuard {
        self.entered.fetch_add(1, Ordering::SeqCst);
        self.now.fetch_add(1, Ordering::SeqCst);
        let now = Arc::clone(&self.now);
        InFlightGuard::new(move || {
            now.fetch_sub(1, Ordering::SeqCst);
        })
    }
    fn count(&self, _: &str) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
    fn total(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
}

#[tokio::test]
async fn the_pipeline_runs_on_state_implemented_elsewhere() {
    let health = Arc::new(Recorded::default());
    let in_flight = Arc::new(Counted::default());
    let runtime =
        Runtime { health: health.clone(), in_flight: in_flight.clone(), ..Runtime::default() };
    let catalog = Gateway::builder()
        .provider("local", Provider::mock())
        .model(Model::new("echo").deployment("local", "echo"))
        .compile()
        .unwrap();
    let gateway = Gateway::new(catalog, Arc::new(NullSink), runtime).unwrap();
    let request = Request {
        model: "echo".into(),
        messages: vec![Message::text(Role::User, "hi")],
        ..Request::default()
    };
    let answer = gateway.generate(Generate::new(request)).await.unwrap();
    assert_eq!(answer.provider, "local");

    let issued = health.issued.lock().unwrap().clone();
    assert_eq!(issued.len(), 1, "one attempt, one permit: {issued:?}");
    let reported = health.reported.lock().unwrap().clone();
    assert_eq!(reported, [(issued[0].1, Outcome::Success)], "reported with its own ticket");
    assert_eq!(in_flight.entered.load(Ordering::SeqCst), 1);
    assert_eq!(in_flight.now.load(Ordering::SeqCst), 0, "the guard released its count");
}
