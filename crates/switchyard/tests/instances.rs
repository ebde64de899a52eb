//! Three gateway processes on one Redis behave as one: a deployment's rate and
//! concurrency limits and a budget hold across them exactly, counted on Redis's
//! clock, identical cacheable requests make one upstream call, and a crashed
//! instance's concurrency slots come back within their lease. And
//! when Redis stops, each follows its configured failure mode, then recovers.
//! Needs Redis (`SWITCHYARD_TEST_REDIS_URL`; CI sets it and requires it) and, for
//! the outage, `redis-server` on the PATH to run a server of the test's own.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use switchyard_testkit::{FakeUpstream, Reply, Vendor};

const UPSTREAM_KEY: &str = "sk-instances-upstream-000000000001";

fn config(fake: &str, redis: &str, prefix: &str, state_extra: &str) -> String {
    format!(
        r#"
storage: {{ url: none }}
state:
  backend: redis
  redis: {{ url: "{redis}", prefix: "{prefix}", timeout_ms: 2000 }}
{state_extra}
providers:
  openai: {{ wire: openai-chat, endpoint: "{fake}/v1", credentials: {{ keys: ["{UPSTREAM_KEY}"] }} }}
models:
  - id: m-rpm
    deployments: [{{ provider: openai, model: up-rpm, limits: {{ rpm: 10 }} }}]
  - id: m-conc
    deployments: [{{ provider: openai, model: up-conc, limits: {{ concurrent: 2 }} }}]
  - id: m-one
    deployments: [{{ provider: openai, model: up-one, limits: {{ concurrent: 1 }} }}]
  - id: m-cached
    cache: {{ ttl_ms: 60000 }}
    deployments: [{{ provider: openai, model: up-cached }}]
  # No prices: a request reserves the budget's cap and keeps it (cost unknown).
  - id: m-unpriced
    deployments: [{{ provider: openai, model: up-unpriced }}]
"#
    )
}

fn chat(model: &str) -> String {
    format!(r#"{{"model":"{model}","messages":[{{"role":"user","content":"hi"}}]}}"#)
}

struct Fleet {
    gateways: Vec<Gateway>,
    addrs: Vec<String>,
}

fn fleet(n: usize, name: &str, config: &str) -> Fleet {
    let mut gateways = Vec::new();
    let mut addrs = Vec::new();
    for i in 0..n {
        let gw = Gateway::start_with(&format!("{name}-{i}"), &[], Some(config));
        let listening = gw.wait_for("switchyard listening");
        addrs.push(listening["fields"]["listen"].as_str().unwrap().to_owned());
        gateways.push(gw);
    }
    Fleet { gateways, addrs }
}

/// Send one request per entry of `targets` (an instance's address) at once;
/// the statuses, in order.
fn burst(targets: &[String], model: &str) -> Vec<u16> {
    let threads: Vec<_> = targets
        .iter()
        .map(|addr| {
            let (addr, body) = (addr.clone(), chat(model));
            std::thread::spawn(move || post(&addr, "/v1/chat/completions", &body, &[]).0)
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

#[test]
fn three_instances_admit_a_deployments_limits_exactly_once_between_them() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some((redis, prefix)) = rt.block_on(switchyard_store::testing::redis()) else { return };
    let fake = rt.block_on(FakeUpstream::start(Vendor::OpenAi)).unwrap();
    let f = fleet(3, "exact", &config(&fake.base_url(), &redis, &prefix, ""));

    // 30 at once against 10 per minute, spread over the three: 10 pass.
    let targets: Vec<String> = (0..30).map(|i| f.addrs[i % 3].clone()).collect();
    let statuses = burst(&targets, "m-rpm");
    let ok = statuses.iter().filter(|s| **s == 200).count();
    let limited = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!((ok, limited), (10, 20), "{statuses:?}");
    assert_eq!(fake.request_count(), 10, "the upstream saw exactly the limit");

    // Two slots between the three: two slow answers hold them, and everything
    // sent meanwhile, to any instance, is refused.
    fake.push_n(2, Reply::auto().first_byte_delay(Duration::from_secs(5)));
    let slow: Vec<_> = (0..2)
        .map(|i| {
            let (addr, body) = (f.addrs[i].clone(), chat("m-conc"));
            std::thread::spawn(move || post(&addr, "/v1/chat/completions", &body, &[]).0)
        })
        .collect();
    rt.block_on(async {
        tokio::time::timeout(WAIT, fake.wait_for_requests(12)).await.unwrap();
    });
    let targets: Vec<String> = (0..9).map(|i| f.addrs[i % 3].clone()).collect();
    let refused = burst(&targets, "m-conc");
    assert!(refused.iter().all(|s| *s == 429), "{refused:?}");
    for t in slow {
        assert_eq!(t.join().unwrap(), 200);
    }
    assert_eq!(fake.peak_in_flight(), 2, "concurrency at the upstream never passed the limit");
    drop(f);
}

#[test]
fn three_instances_hold_a_budget_to_one_reservation_per_request() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some((redis, prefix)) = rt.block_on(switchyard_store::testing::redis()) else { return };
    let fake = rt.block_on(FakeUpstream::start(Vendor::OpenAi)).unwrap();
    let budget = "budgets:\n  - { scope: gateway, limit_usd: 1.0, period: month, max_reservation_usd: 0.25 }\n";
    let f =
        fleet(3, "budget", &format!("{}{budget}", config(&fake.base_url(), &redis, &prefix, "")));
    // A budget of $1 and reservations of $0.25 (no prices: each request keeps
    // its reservation as uncertain spend): 12 at once over the three are
    // admitted 4 times, the rest refused with 402, never past the budget.
    let targets: Vec<String> = (0..12).map(|i| f.addrs[i % 3].clone()).collect();
    let statuses = burst(&targets, "m-unpriced");
    let ok = statuses.iter().filter(|s| **s == 200).count();
    let spent = statuses.iter().filter(|s| **s == 402).count();
    assert_eq!((ok, spent), (4, 8), "{statuses:?}");
    assert_eq!(fake.request_count(), 4);
}

#[test]
fn three_instances_make_one_upstream_call_for_identical_cacheable_requests() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some((redis, prefix)) = rt.block_on(switchyard_store::testing::redis()) else { return };
    let fake = rt.block_on(FakeUpstream::start(Vendor::OpenAi)).unwrap();
    let f = fleet(3, "coalesce", &config(&fake.base_url(), &redis, &prefix, ""));
    // The first call answers slowly, so that the others arrive while it is in
    // flight, on every instance. Whenever each arrives (during the call: it
    // waits for the call's answer; after: the answer is kept), none calls.
    fake.push(Reply::auto().first_byte_delay(Duration::from_secs(2)));
    let targets: Vec<String> = (0..9).map(|i| f.addrs[i % 3].clone()).collect();
    let threads: Vec<_> = targets
        .into_iter()
        .map(|addr| {
            std::thread::spawn(move || post(&addr, "/v1/chat/completions", &chat("m-cached"), &[]))
        })
        .collect();
    let answers: Vec<(u16, String)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(answers.iter().all(|(s, _)| *s == 200), "{answers:?}");
    let content = |answer: &str| {
        let (_, body) = answer.split_once("\r\n\r\n").unwrap();
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        v["choices"][0]["message"]["content"].clone()
    };
    let first = content(&answers[0].1);
    assert!(answers.iter().all(|(_, a)| content(a) == first), "one answer for all");
    assert_eq!(fake.request_count(), 1, "K identical requests, one upstream call");
    // One answer came from upstream; every other was that call's (or, arriving
    // after it, the kept answer).
    let said = |a: &str, v: &str| a.to_ascii_lowercase().contains(&format!("x-gateway-cache: {v}"));
    let misses = answers.iter().filter(|(_, a)| said(a, "miss")).count();
    let shared = answers.iter().filter(|(_, a)| said(a, "coalesced") || said(a, "hit")).count();
    assert_eq!((misses, shared), (1, 8), "{answers:?}");
    drop(f);
}

#[test]
fn a_crashed_instances_concurrency_slot_comes_back_within_its_lease() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some((redis, prefix)) = rt.block_on(switchyard_store::testing::redis()) else { return };
    let fake = rt.block_on(FakeUpstream::start(Vendor::OpenAi)).unwrap();
    let short = "  lease_ttl_ms: 1500\n";
    let f = fleet(2, "crash", &config(&fake.base_url(), &redis, &prefix, short));
    // Instance 0 takes the one slot with a slow answer, then dies holding it.
    fake.push(Reply::auto().first_byte_delay(Duration::from_secs(60)));
    let addr = f.addrs[0].clone();
    let _held =
        std::thread::spawn(move || post(&addr, "/v1/chat/completions", &chat("m-one"), &[]));
    rt.block_on(async {
        tokio::time::timeout(WAIT, fake.wait_for_requests(1)).await.unwrap();
    });
    // Held across instances while its holder lives (renewed every third of the TTL).
    assert_eq!(burst(&[f.addrs[1].clone()], "m-one"), [429]);
    f.gateways[0].signal("KILL");
    // No one gives it back: it lapses by its TTL, on Redis's clock.
    until(200, || post(&f.addrs[1], "/v1/chat/completions", &chat("m-one"), &[]).0);
    drop(f);
}

/// A Redis server of this test's own, on a free port, that it can stop.
struct OwnRedis {
    child: Child,
    port: u16,
}

impl OwnRedis {
    fn start(port: u16) -> Option<OwnRedis> {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let deadline = Instant::now() + WAIT;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start on {port}");
            std::thread::yield_now();
        }
        Some(OwnRedis { child, port })
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.stop();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Retry `f` until it gives `want`, within [`WAIT`].
fn until(want: u16, mut f: impl FnMut() -> u16) {
    let deadline = Instant::now() + WAIT;
    loop {
        if f() == want {
            return;
        }
        assert!(Instant::now() < deadline, "never answered {want}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn redis_stopped_gives_each_failure_mode_and_redis_back_gives_shared_limits_back() {
    if Command::new("redis-server").arg("--version").output().is_err() {
        if std::env::var("SWITCHYARD_REQUIRE_REDIS").is_ok_and(|v| v == "1") {
            panic!("SWITCHYARD_REQUIRE_REDIS=1 but redis-server is not on the PATH");
        }
        eprintln!("SKIPPED: the Redis outage test needs redis-server on the PATH");
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(FakeUpstream::start(Vendor::OpenAi)).unwrap();
    let mut redis = OwnRedis::start(free_port()).unwrap();
    let url = format!("redis://127.0.0.1:{}", redis.port);
    let closed = fleet(1, "closed", &config(&fake.base_url(), &url, "o", ""));
    let share = "  on_unavailable: local_share\n  expected_instances: 5\n";
    let shared = fleet(1, "share", &config(&fake.base_url(), &url, "o", share));
    let (closed_addr, shared_addr) = (&closed.addrs[0], &shared.addrs[0]);
    assert_eq!(burst(std::slice::from_ref(closed_addr), "m-rpm"), [200]);

    redis.stop();
    // Fail closed: refused, 503 in the caller's format, not a hang.
    let (status, answer) = post(closed_addr, "/v1/chat/completions", &chat("m-rpm"), &[]);
    assert_eq!(status, 503, "{answer}");
    assert!(answer.contains("limits_unavailable"), "{answer}");
    // A local share: 10 per minute over 5 instances is 2 here.
    let statuses = burst(&vec![shared_addr.clone(); 4], "m-rpm");
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 2, "{statuses:?}");
    shared.gateways[0].wait_for("rate-limit backend unavailable");

    // Redis back (empty, as after a restart): both count on it again.
    let _redis = OwnRedis::start(redis.port).unwrap();
    until(200, || post(closed_addr, "/v1/chat/completions", &chat("m-rpm"), &[]).0);
    // (Its local share is spent for the next half minute: a 200 is Redis's.)
    until(200, || post(shared_addr, "/v1/chat/completions", &chat("m-rpm"), &[]).0);
    shared.gateways[0].wait_for("rate-limit backend answers again");
}

/// A Chat client's tool loop with thinking on Claude, its two turns on two
/// instances: the client cannot carry Claude's signed thinking, so the first
/// instance keeps it by the tool call's id (on Redis, with `state.backend:
/// redis`) and the second finds it there and puts it back in front of the
/// call; thinking stays on rather than being dropped.
#[test]
fn a_tool_loops_next_turn_on_another_instance_keeps_its_signed_thinking() {
    use serde_json::{Value, json};
    use switchyard_testkit::canned;

    const THINKING: &str = "thinking it over";
    const MODEL: &str = "claude-sonnet-4-5-20250929";
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some((redis, prefix)) = rt.block_on(switchyard_store::testing::redis()) else { return };
    let fake = rt.block_on(FakeUpstream::start(Vendor::Anthropic)).unwrap();
    let config = format!(
        r#"
storage: {{ url: none }}
state:
  backend: redis
  redis: {{ url: "{redis}", prefix: "{prefix}", timeout_ms: 2000 }}
providers:
  anthropic: {{ wire: anthropic, endpoint: "{}", credentials: {{ keys: ["{UPSTREAM_KEY}"] }} }}
models:
  - id: m-claude
    deployments: [{{ provider: anthropic, model: {MODEL} }}]
"#,
        fake.base_url()
    );
    let f = fleet(2, "continuity", &config);
    fake.push(
        canned::reasoning_then_tool_call(
            Vendor::Anthropic,
            MODEL,
            THINKING,
            "get_weather",
            r#"{"city":"Paris"}"#,
            false,
        )
        .into(),
    );
    let tools = json!([{"type": "function", "function": {"name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"]}}}]);
    let user = json!({"role": "user", "content": "the weather in Paris?"});
    let body = |answer: &str| -> Value {
        serde_json::from_str(answer.split_once("\r\n\r\n").unwrap().1).unwrap()
    };

    let first = json!({"model": "m-claude", "reasoning_effort": "medium", "tools": tools,
        "messages": [user]});
    let (status, answer) = post(&f.addrs[0], "/v1/chat/completions", &first.to_string(), &[]);
    assert_eq!(status, 200, "{answer}");
    let call = body(&answer)["choices"][0]["message"]["tool_calls"][0].clone();
    assert!(call["id"].is_string(), "{answer}");

    // The next turn, as a Chat client sends it, to the other instance.
    let second = json!({"model": "m-claude", "reasoning_effort": "medium", "tools": tools,
        "messages": [user,
            {"role": "assistant", "content": null, "reasoning_content": THINKING,
             "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": "18C"}]});
    let (status, answer) = post(&f.addrs[1], "/v1/chat/completions", &second.to_string(), &[]);
    assert_eq!(status, 200, "{answer}");
    let sent = fake.received().pop().unwrap();
    assert!(sent.body["thinking"].is_object(), "thinking stays on: {}", sent.body);
    assert_eq!(
        sent.body["messages"][1]["content"][0],
        json!({"type": "thinking", "thinking": THINKING,
            "signature": canned::ANTHROPIC_THINKING_SIGNATURE}),
        "the signed thinking, back in front of the call: {}",
        sent.body
    );
    drop(f);
}
