//! The routing engine end to end: breakers, strategies, scopes, context windows,
//! routing hints, metrics and hot reload. Each test name says the rule.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use switchyard_testkit::Reply;

fn chat(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hi"}]})
}

fn header(r: &reqwest::Response, name: &str) -> String {
    r.headers().get(name).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
}

/// Breakers that open after 3 failures and cool down in 300 ms.
fn fast_breakers() -> Options {
    Options {
        gateway_extra: "  breaker: { threshold: 3, half_life_ms: 600000, cooldown_ms: 300, max_cooldown_ms: 300 }\n".into(),
        ..Options::default()
    }
}

async fn metrics(h: &Harness) -> String {
    let r = h.client.get(format!("{}/metrics", h.base)).bearer_auth(GATEWAY_KEY).send().await;
    r.unwrap().text().await.unwrap()
}

#[tokio::test]
async fn breaker_opens_after_repeated_failures_and_one_half_open_probe_closes_it() {
    let h = Harness::start_with(fast_breakers()).await;
    h.openai.push_n(3, Reply::status(500));
    for _ in 0..3 {
        let r = h.post("/v1/chat/completions", &chat("m-chain")).await;
        assert_eq!(header(&r, "x-gateway-provider"), "anthropic");
    }
    // Open: openai is skipped without being contacted.
    let r = h.post("/v1/chat/completions", &chat("m-chain")).await;
    assert_eq!(header(&r, "x-gateway-provider"), "anthropic");
    assert!(
        header(&r, "x-gateway-route").contains("circuit_open:openai"),
        "{}",
        header(&r, "x-gateway-route")
    );
    assert_eq!(h.openai.request_count(), 3);
    assert!(metrics(&h).await.contains("gateway_breaker_state{provider=\"openai\""));

    // After the cooldown (the time under test), exactly one probe is admitted.
    tokio::time::sleep(Duration::from_millis(350)).await;
    h.openai.push(Reply::auto().first_byte_delay(Duration::from_millis(400)));
    let probe = {
        let (client, base) = (h.client.clone(), h.base.clone());
        tokio::spawn(async move {
            client
                .post(format!("{base}/v1/chat/completions"))
                .bearer_auth(GATEWAY_KEY)
                .body(chat("m-chain").to_string())
                .send()
                .await
                .unwrap()
        })
    };
    tokio::time::timeout(WAIT, h.openai.wait_for_requests(4)).await.unwrap();
    let during = h.post("/v1/chat/completions", &chat("m-chain")).await;
    assert_eq!(
        header(&during, "x-gateway-provider"),
        "anthropic",
        "no second probe while one is in flight"
    );
    assert_eq!(h.openai.request_count(), 4);
    let probe = probe.await.unwrap();
    assert_eq!(header(&probe, "x-gateway-provider"), "openai", "the probe succeeded");
    // Closed again: openai serves.
    let after = h.post("/v1/chat/completions", &chat("m-chain")).await;
    assert_eq!(header(&after, "x-gateway-provider"), "openai");
    assert!(!header(&after, "x-gateway-route").contains("circuit_open"));
}

#[tokio::test]
async fn all_open_chains_are_still_tried_in_chain_order() {
    let h = Harness::start_with(fast_breakers()).await;
    h.openai.push_n(3, Reply::status(500));
    h.anthropic.push_n(3, Reply::status(500));
    for _ in 0..3 {
        let r = h.post("/v1/chat/completions", &chat("m-chain")).await;
        assert_eq!(r.status(), 502);
    }
    let r = h.post("/v1/chat/completions", &chat("m-chain")).await;
    assert_eq!(r.status(), 200, "a stuck breaker is never worse than no breaker");
    assert_eq!(header(&r, "x-gateway-provider"), "openai");
    assert!(header(&r, "x-gateway-route").contains("circuit_open:all"));
}

#[tokio::test]
async fn a_429_throttles_only_that_credential_and_does_not_open_the_breaker() {
    let h = Harness::start_with(fast_breakers()).await;
    // Three 429s with a long Retry-After: failover each time (wait > cap), credential throttled.
    h.openai.push_n(3, Reply::status(429).retry_after(3600));
    let r = h.post("/v1/chat/completions", &chat("m-chain")).await;
    assert_eq!(header(&r, "x-gateway-provider"), "anthropic");
    let r = h.post("/v1/chat/completions", &chat("m-chain")).await;
    let route = header(&r, "x-gateway-route");
    assert!(route.contains("throttled:openai"), "throttled until its Retry-After: {route}");
    assert!(!route.contains("circuit_open"), "a throttle is not an open circuit: {route}");
    assert!(metrics(&h).await.contains(
        "gateway_upstream_failovers_total{from=\"openai\",to=\"anthropic\",reason=\"status_429\"}"
    ));
}

#[tokio::test]
async fn cost_strategy_tries_the_cheapest_deployment_first() {
    let routes = r#"routes:
  - name: Cheap first
    match: "m-exp"
    provider: openai
    strategy: cost
    fallbacks: [{ provider: anthropic, model: m-cheap }]
"#;
    let extra = "  - id: m-exp\n    deployments: [{ provider: openai, model: up-exp }]\n    pricing: { input: 10, output: 30 }\n  - id: m-cheap\n    deployments: [{ provider: anthropic, model: up-cheap }]\n    pricing: { input: 0.1, output: 0.3 }\n";
    let h = Harness::start_with(Options {
        routes: routes.into(),
        extra_models: extra.into(),
        ..Options::default()
    })
    .await;
    let r = h.post("/v1/chat/completions", &chat("m-exp")).await;
    assert_eq!(header(&r, "x-gateway-provider"), "anthropic");
    let route = header(&r, "x-gateway-route");
    assert!(route.contains("strategy:cost") && route.starts_with("route:cheap-first-"), "{route}");
    assert_eq!(h.anthropic.received()[0].body["model"], "up-cheap");
    assert!(metrics(&h).await.contains("gateway_deployment_selected_total{route=\"cheap-first-"));
}

#[tokio::test]
async fn weighted_strategy_never_picks_a_deployment_with_an_open_breaker_first() {
    let routes = r#"routes:
  - name: Spread
    match: "m-chain"
    provider: openai
    weight: 1000
    strategy: weighted
    fallbacks: [{ provider: anthropic, weight: 1 }]
"#;
    let mut o = fast_breakers();
    o.routes = routes.into();
    let h = Harness::start_with(o).await;
    h.openai.push_n(3, Reply::status(500));
    for _ in 0..3 {
        h.post("/v1/chat/completions", &chat("m-chain")).await;
    }
    for _ in 0..5 {
        let r = h.post("/v1/chat/completions", &chat("m-chain")).await;
        assert_eq!(header(&r, "x-gateway-provider"), "anthropic");
        assert!(header(&r, "x-gateway-route").contains("strategy:weighted"));
    }
    assert_eq!(h.openai.request_count(), 3);
}

#[tokio::test]
async fn context_window_skips_small_models_uses_context_fallbacks_or_refuses() {
    let routes = r#"routes:
  - name: Small with fallback
    match: "m-small"
    provider: openai
    context_fallbacks: [m-anthropic]
"#;
    let extra = "  - id: m-small\n    deployments: [{ provider: openai, model: up-small }]\n    context_window: 50\n    max_output_tokens: 100\n    pricing: { input: 1, output: 1 }\n  - id: m-small-alone\n    deployments: [{ provider: openai, model: up-small }]\n    context_window: 50\n";
    let h = Harness::start_with(Options {
        routes: routes.into(),
        extra_models: extra.into(),
        ..Options::default()
    })
    .await;
    let long = "word ".repeat(100); // ~125 estimated tokens
    let body = |model: &str| json!({"model": model, "max_tokens": 5000, "messages": [{"role": "user", "content": long}]});

    let r = h.post("/v1/chat/completions", &body("m-small")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-gateway-provider"), "anthropic");
    assert!(header(&r, "x-gateway-route").contains("context_window:m-small->m-anthropic"));

    let r = h.post("/v1/messages", &body("m-small-alone")).await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "context_window_exceeded");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("125") && msg.contains("50") && msg.contains("m-small-alone"), "{msg}");
    assert_eq!(h.openai.request_count(), 0, "nothing sent, nothing billed");

    // A short request fits, and max_tokens above the model's ceiling is clamped.
    let r = h.post("/v1/chat/completions", &json!({"model": "m-small", "max_tokens": 5000, "messages": [{"role": "user", "content": "hi"}]})).await;
    assert_eq!(header(&r, "x-gateway-provider"), "openai");
    assert_eq!(h.openai.received()[0].body["max_tokens"], 100);
}

#[tokio::test]
async fn routing_hints_narrow_the_chain_and_are_never_forwarded() {
    let h = Harness::start().await;
    let mut body = chat("m-chain");
    body["switchyard"] = json!({"only": ["anthropic"]});
    let r = h.post("/v1/chat/completions", &body).await;
    assert_eq!(header(&r, "x-gateway-provider"), "anthropic");

    body["switchyard"] = json!({"ignore": ["anthropic"]});
    let r = h.post("/v1/chat/completions", &body).await;
    assert_eq!(header(&r, "x-gateway-provider"), "openai");
    assert!(
        h.openai.received()[0].body.get("switchyard").is_none(),
        "the extension field is never forwarded"
    );

    body["switchyard"] = json!({"only": ["gemini"]});
    let r = h.post("/v1/chat/completions", &body).await;
    assert_eq!(r.status(), 400);
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], "no_candidate");

    h.openai.push(Reply::status(500));
    body["switchyard"] = json!({"allow_fallbacks": false});
    let r = h.post("/v1/chat/completions", &body).await;
    assert_eq!(r.status(), 502);
    assert_eq!(h.anthropic.request_count(), 1, "no fallback was used");

    body["switchyard"] = json!({"max_price": {"input": 0.5}});
    let r = h.post("/v1/chat/completions", &body).await;
    assert_eq!(r.status(), 400, "m-chain costs 1.0 input: over the limit");

    body["switchyard"] = json!({"bogus": 1});
    let r = h.post("/v1/chat/completions", &body).await;
    assert_eq!(r.status(), 400);
}

#[tokio::test]
async fn a_cost_ceiling_per_thousand_tokens_skips_dearer_and_unpriced_models() {
    let h = Harness::start().await;
    let ask = |model: &str, hints: Value| {
        let mut body = chat(model);
        body["switchyard"] = hints;
        body
    };
    // m-openai costs 1.0 input and 2.0 output per million: 0.002 per thousand at most.
    let r = h
        .post("/v1/chat/completions", &ask("m-openai", json!({"max_cost_per_1k_tokens": 0.002})))
        .await;
    assert_eq!(r.status(), 200);
    let r = h
        .post("/v1/chat/completions", &ask("m-openai", json!({"max_cost_per_1k_tokens": 0.0015})))
        .await;
    assert_eq!(r.status(), 400, "output at 0.002 a thousand is over 0.0015");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "no_candidate");
    assert!(body["error"]["message"].as_str().unwrap().contains("max_cost_per_1k_tokens"));
    // Unpriced: rejected under a ceiling, unless the request allows unknown costs.
    let r = h
        .post("/v1/chat/completions", &ask("mock-echo", json!({"max_cost_per_1k_tokens": 1.0})))
        .await;
    assert_eq!(r.status(), 400);
    let allow = json!({"max_cost_per_1k_tokens": 1.0, "unknown_cost": "allow"});
    let r = h.post("/v1/chat/completions", &ask("mock-echo", allow)).await;
    assert_eq!(r.status(), 200);
    for bad in [json!(-1.0), json!("cheap")] {
        let r = h
            .post("/v1/chat/completions", &ask("m-openai", json!({"max_cost_per_1k_tokens": bad})))
            .await;
        assert_eq!(r.status(), 400, "{bad}");
        assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], "invalid_request");
    }
}

#[tokio::test]
async fn per_project_chains_follow_the_project_header() {
    let routes = r#"routes:
  - name: Chain by project
    match: "m-chain"
    provider: openai
    by_scope:
      dimension: project
      chains:
        storefront: { provider: anthropic }
"#;
    let h = Harness::start_with(Options { routes: routes.into(), ..Options::default() }).await;
    let send = |project: Option<&'static str>| {
        let mut req = h
            .client
            .post(format!("{}/v1/chat/completions", h.base))
            .bearer_auth(GATEWAY_KEY)
            .body(chat("m-chain").to_string());
        if let Some(p) = project {
            req = req.header("x-switchyard-project", p);
        }
        req.send()
    };
    let r = send(Some("storefront")).await.unwrap();
    assert_eq!(header(&r, "x-gateway-provider"), "anthropic");
    assert!(header(&r, "x-gateway-route").contains("scope:project=storefront"));
    let id = header(&r, "x-request-id");
    assert_eq!(
        tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap().project.as_deref(),
        Some("storefront")
    );

    let r = send(Some("elsewhere")).await.unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], "scope_not_routed");
    let r = send(None).await.unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(h.openai.request_count(), 0);
}

#[tokio::test]
async fn metrics_expose_requests_failovers_latency_and_in_flight() {
    let h = Harness::start().await;
    h.openai.push(Reply::status(502));
    h.post("/v1/chat/completions", &chat("m-chain")).await;
    h.post(
        "/v1/messages",
        &json!({"model": "mock", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]}),
    )
    .await;
    let m = metrics(&h).await;
    for needle in [
        "gateway_requests_total{format=\"openai-chat\",status=\"200\"}",
        "gateway_requests_total{format=\"anthropic\",status=\"200\"}",
        "gateway_upstream_failovers_total{from=\"openai\",to=\"anthropic\",reason=\"status_502\"}",
        "gateway_request_duration_seconds_bucket",
        "gateway_attempt_duration_seconds_bucket{provider=\"openai\"",
        "gateway_time_to_first_token_seconds_bucket",
        "gateway_requests_in_flight",
    ] {
        assert!(m.contains(needle), "missing {needle} in\n{m}");
    }
    assert!(!m.contains(GATEWAY_KEY) && !m.contains(OPENAI_KEY));
}

#[tokio::test]
async fn reload_swaps_the_config_and_keeps_breaker_state() {
    let (h, file, reloader) = Harness::start_from_file(fast_breakers()).await;
    h.openai.push_n(3, Reply::status(500));
    for _ in 0..3 {
        h.post("/v1/chat/completions", &chat("m-chain")).await;
    }
    let mut o = fast_breakers();
    o.extra_models = "  - id: m-new\n    deployments: [{ provider: mock }]\n".into();
    file.write(&h.yaml(&o));
    reloader.reload_now().await.unwrap();
    let r = h.post("/v1/chat/completions", &chat("m-new")).await;
    assert_eq!(r.status(), 200, "the new model is served");
    let r = h.post("/v1/chat/completions", &chat("m-chain")).await;
    assert!(
        header(&r, "x-gateway-route").contains("circuit_open:openai"),
        "breaker state survived the reload"
    );
    assert_eq!(h.openai.request_count(), 3);
}

#[tokio::test]
async fn an_invalid_reload_is_rejected_and_the_old_config_keeps_serving() {
    let (h, file, reloader) = Harness::start_from_file(Options::default()).await;
    file.write("models:\n  - id: x\n    deployments: [{ provider: nowhere }]\n");
    let err = reloader.reload_now().await.unwrap_err();
    assert!(err.contains("model_registry_invalid") && err.contains("nowhere"), "{err}");
    let r = h.post("/v1/chat/completions", &chat("m-openai")).await;
    assert_eq!(r.status(), 200);
    assert!(metrics(&h).await.contains("gateway_config_reloads_total{result=\"error\"}"));
}

#[tokio::test]
async fn a_file_change_is_picked_up_by_the_watcher() {
    let (h, file, _reloader) = Harness::start_from_file(Options::default()).await;
    let o = Options {
        extra_models: "  - id: m-watched\n    deployments: [{ provider: mock }]\n".into(),
        ..Options::default()
    };
    file.write(&h.yaml(&o));
    tokio::time::timeout(WAIT, async {
        loop {
            if h.post("/v1/chat/completions", &chat("m-watched")).await.status() == 200 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the watcher reloaded the renamed file");
}

#[tokio::test]
async fn reloading_100_times_under_load_loses_no_request_and_keeps_breaker_state() {
    // A cooldown longer than the test, so the breaker stays open throughout.
    let slow_breakers = || {
        Options {
        gateway_extra: "  breaker: { threshold: 3, half_life_ms: 600000, cooldown_ms: 600000, max_cooldown_ms: 600000 }\n".into(),
        ..Options::default()
    }
    };
    let (h, file, reloader) = Harness::start_from_file(slow_breakers()).await;
    h.openai.push_n(3, Reply::status(500));
    for _ in 0..3 {
        h.post("/v1/chat/completions", &chat("m-chain")).await;
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut load = Vec::new();
    for worker in 0..4 {
        let (client, base, stop) = (h.client.clone(), h.base.clone(), stop.clone());
        load.push(tokio::spawn(async move {
            let (mut ok, mut failed) = (0u32, Vec::new());
            let model = if worker % 2 == 0 { "mock" } else { "m-anthropic" };
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let r = client
                    .post(format!("{base}/v1/chat/completions"))
                    .bearer_auth(GATEWAY_KEY)
                    .body(chat(model).to_string())
                    .send()
                    .await;
                match r {
                    Ok(r) if r.status() == 200 => ok += 1,
                    Ok(r) => failed.push(r.status().to_string()),
                    Err(e) => failed.push(e.to_string()),
                }
            }
            (ok, failed)
        }));
    }
    // A fixed number of reloads, paced every 100 ms so the load runs between
    // them: counted, not timed, so a slow machine cannot fail it.
    let n = 100u32;
    for generation in 0..n {
        let mut o = slow_breakers();
        o.extra_models =
            format!("  - id: m-gen-{generation}\n    deployments: [{{ provider: mock }}]\n");
        file.write(&h.yaml(&o));
        reloader.reload_now().await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut total = 0;
    for l in load {
        let (ok, failed) = l.await.unwrap();
        assert!(failed.is_empty(), "requests failed during reloads: {failed:?}");
        total += ok;
    }
    assert!(total > 0);
    let r = h.post("/v1/chat/completions", &chat("m-chain")).await;
    assert!(
        header(&r, "x-gateway-route").contains("circuit_open:openai"),
        "breaker state kept through {n} reloads"
    );
}

#[tokio::test]
async fn access_rules_deny_in_the_callers_format_audit_it_and_never_fail_over_to_a_denied_model() {
    let rules = r#"access_rules:
  - name: no-gemini
    effect: deny
    pattern: "m-gemini"
    reason: Gemini is not approved for this team
"#;
    let extra = "  - id: m-then-gemini\n    deployments: [{ provider: openai, model: up-first }]\n    pricing: { input: 1, output: 1 }\n    fallbacks: [m-gemini]\n";
    let h = Harness::start_with(Options {
        rules: rules.into(),
        extra_models: extra.into(),
        ..Options::default()
    })
    .await;
    let r = h.post("/v1/messages", &json!({"model": "m-gemini", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]})).await;
    assert_eq!(r.status(), 403);
    let id = header(&r, "x-request-id");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "permission_error");
    assert_eq!(
        v["error"]["message"],
        "authz denied [no-gemini]: Gemini is not approved for this team"
    );
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    assert_eq!((rec.status, rec.error_code.as_deref()), (403, Some("authz_denied")));

    // An allowed primary never fails over to the denied model.
    h.openai.push(Reply::status(500));
    let r = h.post("/v1/chat/completions", &chat("m-then-gemini")).await;
    assert_eq!(r.status(), 502);
    assert!(
        header(&r, "x-gateway-route").is_empty()
            || !header(&r, "x-gateway-route").contains("gemini")
    );
    assert_eq!(h.gemini.request_count(), 0);
}

#[tokio::test]
async fn governance_requirements_skip_deployments_that_do_not_meet_them() {
    // `eu` (european, no_retain) is served by the anthropic fake.
    let providers = "  eu: { wire: anthropic, endpoint: \"{anthropic}\", credentials: { keys: [sk-eu-0123456789] }, governance: { european: true, no_retain: true } }\n";
    let routes = r#"routes:
  - name: EU only
    match: "m-eu"
    provider: eu
    requires: { european: true }
"#;
    // m-eu's own fallback model runs on openai (not european): filtered at dispatch.
    let extra = "  - id: m-eu\n    deployments: [{ provider: eu, model: up-eu }]\n    pricing: { input: 1, output: 1 }\n    fallbacks: [m-openai]\n";
    let o = Options {
        routes: routes.into(),
        extra_models: extra.into(),
        providers_extra: providers.into(),
        ..Options::default()
    };
    let h = Harness::start_with(o).await;
    let r = h.post("/v1/chat/completions", &chat("m-eu")).await;
    assert_eq!(r.status(), 200);
    assert!(
        header(&r, "x-gateway-route").contains("governance:openai!european"),
        "{}",
        header(&r, "x-gateway-route")
    );
    assert_eq!(h.anthropic.received()[0].body["model"], "up-eu");

    h.anthropic.push(Reply::status(500));
    let r = h.post("/v1/chat/completions", &chat("m-eu")).await;
    assert_eq!(r.status(), 502, "the non-european fallback is never contacted");
    let id = header(&r, "x-request-id");
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    assert!(rec.descriptor.contains("governance:openai!european"), "{}", rec.descriptor);
    assert_eq!(h.openai.request_count(), 0);
}

/// The counter `gateway_requests_total{format,status}` as a number (0 if absent).
fn requests_total(metrics: &str, format: &str, status: &str) -> u64 {
    let needle = format!("gateway_requests_total{{format=\"{format}\",status=\"{status}\"}} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(needle.as_str()))
        .map_or(0, |v| v.trim().parse::<f64>().unwrap() as u64)
}

#[tokio::test]
async fn a_stream_broken_after_its_first_content_is_a_failure_everywhere() {
    let mut o = fast_breakers();
    o.gateway_extra =
        "  breaker: { threshold: 2, half_life_ms: 600000, cooldown_ms: 60000, max_cooldown_ms: 60000 }\n"
            .into();
    let h = Harness::start_with(o).await;
    let switchyard_testkit::ReplyBody::Sse(frames) = switchyard_testkit::canned::text(
        switchyard_testkit::Vendor::OpenAi,
        "up-primary",
        "one two three four",
        true,
    ) else {
        panic!("canned stream is SSE")
    };
    let before = requests_total(&metrics(&h).await, "anthropic", "stream_error");
    let body = json!({"model": "m-chain", "max_tokens": 8, "stream": true,
        "messages": [{"role": "user", "content": "x"}]});
    for _ in 0..2 {
        // Role chunk, then content: cut after the second content frame.
        h.openai.push(Reply::sse(frames.clone()).break_after(3));
        let r = h.post("/v1/messages", &body).await;
        assert_eq!(header(&r, "x-gateway-provider"), "openai");
        let text = r.text().await.unwrap();
        assert!(text.contains("event: error"), "{text}");
    }
    let records = tokio::time::timeout(WAIT, h.sink.wait_len(2)).await.unwrap();
    for rec in &records {
        assert_eq!(rec.error_code.as_deref(), Some("upstream_malformed"));
        assert_eq!(rec.attempts.len(), 1);
        assert_eq!(rec.attempts[0].outcome, "broken_stream", "the attempt agrees with the record");
    }
    let after = requests_total(&metrics(&h).await, "anthropic", "stream_error");
    assert!(after >= before + 2, "counted as failed: {before} -> {after}\n{}", metrics(&h).await);
    // Two failures opened the primary's breaker: the next request goes straight
    // to the fallback.
    let r = h.post("/v1/chat/completions", &chat("m-chain")).await;
    assert_eq!(header(&r, "x-gateway-provider"), "anthropic");
    assert!(header(&r, "x-gateway-route").contains("circuit_open:openai"));
    assert_eq!(h.openai.request_count(), 2);
}
