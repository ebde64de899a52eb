//! Three gateway processes on one Redis share their breakers: one opened
//! through one instance is respected by the others within a second (they fail
//! over to the next deployment without calling the upstream), and after the
//! cooldown exactly one probe reaches the upstream across the three. Needs Redis (`SWITCHYARD_TEST_REDIS_URL`; CI
//! sets it and requires it).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use switchyard_testkit::{FakeUpstream, Reply, Vendor};

const UPSTREAM_KEY: &str = "sk-shared-health-upstream-00000000001";
/// The breaker's cooldown in this test.
const COOLDOWN: Duration = Duration::from_secs(2);

fn config(fake: &str, redis: &str, prefix: &str) -> String {
    let cooldown = COOLDOWN.as_millis();
    format!(
        r#"
storage: {{ url: none }}
gateway:
  metrics_listen: "127.0.0.1:0"
  breaker: {{ threshold: 1, cooldown_ms: {cooldown}, max_cooldown_ms: {cooldown} }}
state:
  backend: redis
  redis: {{ url: "{redis}", prefix: "{prefix}", timeout_ms: 500 }}
providers:
  openai: {{ wire: openai-chat, endpoint: "{fake}/v1", credentials: {{ keys: ["{UPSTREAM_KEY}"] }} }}
  mock: {{ wire: mock }}
# In order: openai first, the mock when openai fails or its breaker is open.
models:
  - id: m
    deployments: [{{ provider: openai, model: up }}, {{ provider: mock }}]
"#
    )
}

const CHAT: &str = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;

struct Instance {
    _gateway: Gateway,
    addr: String,
    metrics: String,
}

fn start(n: usize, config: &str) -> Vec<Instance> {
    (0..n)
        .map(|i| {
            let gateway = Gateway::start_with(&format!("shared-health-{i}"), &[], Some(config));
            gateway.wait_for("breakers and latency are shared on Redis");
            let listening = gateway.wait_for("switchyard listening");
            let addr = listening["fields"]["listen"].as_str().unwrap().to_owned();
            let metrics = gateway.wait_for("/metrics served without a key");
            let metrics = metrics["fields"]["listen"].as_str().unwrap().to_owned();
            Instance { _gateway: gateway, addr, metrics }
        })
        .collect()
}

/// The instance's breaker gauge for the openai credential (2: open), if shown.
fn breaker(i: &Instance) -> Option<u32> {
    let text = get(&i.metrics, "/metrics", &i.metrics);
    text.lines()
        .find(|l| l.starts_with("gateway_breaker_state{provider=\"openai\""))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

fn chat(i: &Instance) -> u16 {
    post(&i.addr, "/v1/chat/completions", CHAT, &[]).0
}

#[test]
fn a_breaker_opened_through_one_instance_is_respected_by_all_with_one_probe() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some((redis, prefix)) = rt.block_on(switchyard_store::testing::redis()) else { return };
    let fake = rt.block_on(FakeUpstream::start(Vendor::OpenAi)).unwrap();
    fake.set_default(Reply::status(500));
    let fleet = start(3, &config(&fake.base_url(), &redis, &prefix));

    // One failure through instance 0 opens its breaker (threshold 1); the
    // request fails over to the mock.
    assert_eq!(chat(&fleet[0]), 200);
    assert_eq!(fake.request_count(), 1);
    let opened = Instant::now();
    assert_eq!(breaker(&fleet[0]), Some(2));

    // Instances 1 and 2 show it open within a second, and fail over without
    // calling the upstream.
    for i in &fleet[1..] {
        while breaker(i) != Some(2) {
            assert!(opened.elapsed() < Duration::from_secs(1), "not shared within a second");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    eprintln!("shared with both others in {:?}", opened.elapsed());
    for i in &fleet[1..] {
        assert_eq!(chat(i), 200);
    }
    assert_eq!(fake.request_count(), 1, "the others never called the upstream");

    // After the cooldown, bursts at all three: exactly one probe reaches the
    // (still failing) upstream, and its failure reopens the breaker everywhere.
    let deadline = Instant::now() + WAIT;
    while fake.request_count() == 1 {
        assert!(Instant::now() < deadline, "no probe after the cooldown");
        let bursts: Vec<_> = (0..9)
            .map(|n| {
                let addr = fleet[n % 3].addr.clone();
                std::thread::spawn(move || post(&addr, "/v1/chat/completions", CHAT, &[]).0)
            })
            .collect();
        for b in bursts {
            assert_eq!(b.join().unwrap(), 200);
        }
    }
    assert_eq!(fake.request_count(), 2, "one probe across the three");
    let reopened = Instant::now();
    for _ in 0..3 {
        for i in &fleet {
            assert_eq!(chat(i), 200);
        }
    }
    assert_eq!(fake.request_count(), 2, "reopened: nothing more reaches the upstream");

    // The upstream recovers: after the new cooldown one probe succeeds and
    // closes the breaker; within a second every instance sends to it again.
    fake.set_default(Reply::auto());
    let deadline = reopened + COOLDOWN + WAIT;
    let mut n = 0;
    while fake.request_count() == 2 {
        assert!(Instant::now() < deadline, "never probed again");
        assert_eq!(chat(&fleet[n % 3]), 200);
        n += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(fake.request_count(), 3, "one probe");
    let closed = Instant::now();
    for i in &fleet {
        loop {
            let before = fake.request_count();
            assert_eq!(chat(i), 200);
            if fake.request_count() > before {
                break;
            }
            assert!(closed.elapsed() < Duration::from_secs(1), "closed everywhere within a second");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
