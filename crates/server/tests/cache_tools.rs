//! Prompt-cache fidelity, server tools and everything Codex sends, end to end: the
//! real server on 127.0.0.1:0 in front of the strict fakes (which refuse any
//! top-level field their API does not define, as the APIs do).
//!
//! - `prompt_cache_key`, `safety_identifier`, `service_tier`, `store` reach the
//!   OpenAI-compatible upstream as the client sent them, and are mapped or dropped
//!   for the others with the record saying which.
//! - A hosted tool goes first to deployments that run it, fallbacks included
//!   (never to Bedrock: Converse runs none);
//!   offered to a model that cannot run it, it is left out and the answer says so
//!   (`x-switchyard-dropped-tools`, the record, `/metrics`); required (forced),
//!   or under `unrunnable_server_tools: refuse`, the client gets a 400 naming
//!   the tool and nothing is sent.
//! - `anthropic-beta` flags reach Anthropic unchanged, or only those the catalog
//!   lists for an Anthropic-compatible provider.
//! - Codex's `additional_tools` items become tools; Claude Code's session id goes
//!   into the record, never as a user.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use serde_json::{Value, json};
use switchyard_core::RequestRecord;
use switchyard_testkit::{Received, Reply, Vendor};

/// Deployments for the server-tool cases: a model whose first deployment runs no
/// server tools, one whose primary fails over past a deployment that runs none to
/// one that was declared to, an Anthropic-compatible provider taking one beta,
/// deployments narrowed to no server tools, and strict (`refuse`) ones.
fn options() -> Options {
    Options {
        providers_extra: r#"
  compat: { wire: anthropic, endpoint: "{anthropic}", credentials: { keys: ["sk-compat-0004"] }, anthropic_betas: [context-management-2025-06-27] }
  searcher: { wire: openai-chat, endpoint: "{openai}/v1", credentials: { keys: ["sk-oa-searcher-0005"] }, server_tools: [web_search] }
  bare: { wire: anthropic, endpoint: "{anthropic}", credentials: { keys: ["sk-bare-0006"] }, server_tools: [] }
"#
        .into(),
        extra_models: r#"
  - id: m-search
    deployments: [{ provider: openai, model: up-plain }, { provider: anthropic, model: up-a }]
  - id: m-bedrock-search
    deployments: [{ provider: bedrock, model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0" }, { provider: anthropic, model: up-a }]
  - id: m-search-failover
    deployments:
      - { provider: anthropic, model: up-a }
      - { provider: openai, model: up-plain }
      - { provider: gemini, model: up-g, server_tools: [web_search] }
  - id: m-chat-search
    deployments: [{ provider: gemini, model: up-g, server_tools: [] }, { provider: searcher, model: up-search }]
  - id: m-compat
    deployments: [{ provider: compat, model: up-compat }]
  - id: m-bare
    deployments: [{ provider: bare, model: up-bare }]
  - id: m-g-bare
    deployments: [{ provider: gemini, model: up-g-bare, server_tools: [] }]
  - id: m-strict
    unrunnable_server_tools: refuse
    deployments: [{ provider: openai, model: up-plain }]
  - id: r-strict-x
    deployments: [{ provider: openai, model: up-plain }]
  - id: m-strict-search
    unrunnable_server_tools: refuse
    deployments: [{ provider: openai, model: up-plain }, { provider: anthropic, model: up-a }]
"#
        .into(),
        routes: r#"
routes:
  - { name: strict, match: "r-strict-*", provider: openai, model: up-plain, unrunnable_server_tools: refuse }
"#
        .into(),
        ..Options::default()
    }
}

/// Send; expect `status`; the record, and the last request `vendor`'s fake got from it.
async fn send(
    h: &Harness,
    path: &str,
    body: &Value,
    headers: &[(&str, &str)],
    status: u16,
    vendor: Vendor,
) -> (Value, RequestRecord, Option<Received>) {
    let fake = h.fake(vendor);
    let before = fake.request_count();
    let r = h.post_with(path, body, headers).await;
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let got = r.status().as_u16();
    let text = r.text().await.unwrap();
    assert_eq!(got, status, "{path} {}: {text}", body["model"]);
    let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let record = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    let received =
        (fake.request_count() > before).then(|| fake.received().last().cloned()).flatten();
    (answer, record, received)
}

fn responses_body(model: &str, extra: Value) -> Value {
    let mut body = json!({"model": model, "input": [{"role": "user", "content": "hello"}]});
    if let (Value::Object(b), Value::Object(e)) = (&mut body, extra) {
        b.extend(e);
    }
    body
}

const SETTINGS: [&str; 5] =
    ["prompt_cache_key", "prompt_cache_retention", "safety_identifier", "service_tier", "store"];

#[tokio::test]
async fn cache_and_tier_settings_reach_openai_and_are_recorded_where_dropped() {
    let h = Harness::start().await;
    let settings = json!({
        "prompt_cache_key": "codex-conv-0199a7f2", "prompt_cache_retention": "24h",
        "safety_identifier": "sha256-of-alice", "service_tier": "default", "store": true
    });
    for stream in [false, true] {
        let mut extra = settings.clone();
        extra["stream"] = json!(stream);

        let body = responses_body("m-openai", extra.clone());
        let (_, rec, rx) = send(&h, "/v1/responses", &body, &[], 200, Vendor::OpenAi).await;
        let up = rx.expect("openai got the request").body;
        for field in SETTINGS {
            assert_eq!(
                up[field], settings[field],
                "stream={stream}: {field} reaches OpenAI as sent"
            );
        }
        assert!(rec.field_edits.is_empty(), "{:?}", rec.field_edits);

        let (_, rec, rx) = send(
            &h,
            "/v1/responses",
            &responses_body("m-anthropic", extra.clone()),
            &[],
            200,
            Vendor::Anthropic,
        )
        .await;
        let up = rx.expect("anthropic got the request").body;
        assert_eq!(
            up["service_tier"], "standard_only",
            "OpenAI's default tier is Anthropic's standard"
        );
        assert_eq!(up["metadata"], json!({"user_id": "sha256-of-alice"}));
        for field in ["prompt_cache_key", "prompt_cache_retention", "safety_identifier", "store"] {
            assert!(up.get(field).is_none(), "{field} reached Anthropic");
        }
        assert_eq!(
            rec.field_edits,
            [
                "prompt_cache_key: dropped",
                "prompt_cache_retention: dropped",
                "store: dropped",
                "safety_identifier: -> metadata.user_id",
                "service_tier: default -> standard_only",
            ],
            "stream={stream}"
        );

        // Gemini and Converse have a field for none of them.
        for vendor in [Vendor::Gemini, Vendor::Bedrock] {
            let body = responses_body(catalog_model(vendor), extra.clone());
            let (_, rec, rx) = send(&h, "/v1/responses", &body, &[], 200, vendor).await;
            let up = rx.expect("the upstream got the request").body;
            let sent = up.to_string();
            for field in SETTINGS {
                assert!(up.get(field).is_none(), "{field} reached {vendor:?}");
            }
            for value in ["codex-conv-0199a7f2", "sha256-of-alice"] {
                assert!(!sent.contains(value), "{vendor:?}: {value} went upstream: {sent}");
            }
            let dropped: Vec<String> = SETTINGS.iter().map(|f| format!("{f}: dropped")).collect();
            let mut got = rec.field_edits.clone();
            got.sort();
            let mut want = dropped;
            want.sort();
            assert_eq!(got, want, "{vendor:?} stream={stream}");
        }
    }

    // `store: false` is the client's word too: never rewritten, never added.
    let body = responses_body("m-openai", json!({"store": false}));
    let (_, _, rx) = send(&h, "/v1/responses", &body, &[], 200, Vendor::OpenAi).await;
    assert_eq!(rx.unwrap().body["store"], false);
    let (_, _, rx) =
        send(&h, "/v1/responses", &responses_body("m-openai", json!({})), &[], 200, Vendor::OpenAi)
            .await;
    assert!(rx.unwrap().body.get("store").is_none(), "no store invented");

    // A Chat client's settings, translated to Anthropic: recorded the same way.
    let chat = json!({"model": "m-anthropic", "messages": [{"role": "user", "content": "hi"}],
                      "prompt_cache_key": "k1", "service_tier": "priority"});
    let (_, rec, rx) = send(&h, "/v1/chat/completions", &chat, &[], 200, Vendor::Anthropic).await;
    assert_eq!(rx.unwrap().body["service_tier"], "auto");
    assert_eq!(rec.field_edits, ["prompt_cache_key: dropped", "service_tier: priority -> auto"]);
}

#[tokio::test]
async fn a_hosted_tool_goes_first_where_it_runs_fallbacks_included() {
    let h = Harness::start_with(options()).await;
    let web_search = json!({"tools": [{"type": "web_search", "user_location": {"type": "approximate", "country": "FR"}}]});

    // The plain OpenAI-compatible deployment comes first in the chain, but
    // Anthropic runs the search: it goes there.
    let body = responses_body("m-search", web_search.clone());
    let openai_before = h.openai.request_count();
    let (_, rec, rx) = send(&h, "/v1/responses", &body, &[], 200, Vendor::Anthropic).await;
    let tools = rx.expect("anthropic got it").body["tools"].clone();
    assert_eq!(
        tools,
        json!([{"type": "web_search_20250305", "name": "web_search",
                "user_location": {"type": "approximate", "country": "FR"}}])
    );
    assert_eq!(h.openai.request_count(), openai_before, "not sent where it cannot run");
    assert!(rec.field_edits.iter().all(|e| !e.contains("dropped (the deployment")), "{rec:?}");

    // Claude on Bedrock is the same model, but Converse runs no hosted tool: the
    // search goes to Anthropic's API, Bedrock is never tried.
    let body = responses_body("m-bedrock-search", web_search.clone());
    let bedrock_before = h.bedrock.request_count();
    let (_, rec, rx) = send(&h, "/v1/responses", &body, &[], 200, Vendor::Anthropic).await;
    let tools = rx.expect("anthropic got it").body["tools"].clone();
    assert_eq!(tools[0]["type"], "web_search_20250305", "{tools}");
    assert_eq!(h.bedrock.request_count(), bedrock_before, "not sent where it cannot run");
    let tried: Vec<&str> = rec.attempts.iter().map(|a| a.deployment.as_str()).collect();
    assert_eq!(tried, ["anthropic/up-a"]);

    // Failover tries the deployments that run it before one that does not.
    h.anthropic.push(Reply::status(500));
    let body = responses_body("m-search-failover", web_search.clone());
    let (_, rec, rx) = send(&h, "/v1/responses", &body, &[], 200, Vendor::Gemini).await;
    let up = rx.expect("gemini got it").body;
    assert_eq!(up["tools"], json!([{"googleSearch": {}}]));
    assert_eq!(h.openai.request_count(), openai_before, "the plain fallback is never tried");
    assert_eq!(rec.served_provider.as_deref(), Some("gemini"));
    let tried: Vec<&str> = rec.attempts.iter().map(|a| a.deployment.as_str()).collect();
    assert_eq!(tried, ["anthropic/up-a", "gemini/up-g"]);

    // An OpenAI-compatible deployment declared to search gets Chat's own form,
    // after a Gemini deployment narrowed to no server tools.
    let body = responses_body("m-chat-search", web_search.clone());
    let gemini_before = h.gemini.request_count();
    let (_, _, rx) = send(&h, "/v1/responses", &body, &[], 200, Vendor::OpenAi).await;
    let up = rx.expect("the searcher got it").body;
    assert_eq!(up["model"], "up-search");
    assert_eq!(
        up["web_search_options"],
        json!({"user_location": {"type": "approximate", "approximate": {"country": "FR"}}})
    );
    assert_eq!(h.gemini.request_count(), gemini_before, "gemini/up-g runs no search");

    // A Gemini deployment runs what the Gemini API runs: an Anthropic client's
    // search and code execution become Google's.
    let claude = |model: &str| {
        json!({"model": model, "max_tokens": 256, "messages": [{"role": "user", "content": "search"}],
               "tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
                         {"type": "code_execution_20250825", "name": "code_execution"}]})
    };
    let (_, _, rx) =
        send(&h, "/v1/messages", &claude("m-anthropic"), &[], 200, Vendor::Anthropic).await;
    assert_eq!(rx.unwrap().body["tools"], claude("m-anthropic")["tools"], "as they came");
    let (_, rec, rx) =
        send(&h, "/v1/messages", &claude("m-gemini"), &[], 200, Vendor::Gemini).await;
    assert_eq!(rx.unwrap().body["tools"], json!([{"googleSearch": {}}, {"codeExecution": {}}]));
    assert!(rec.field_edits.is_empty(), "{:?}", rec.field_edits);

    // The same from a Chat client, and to a later deployment of the chain.
    let chat = json!({"model": "m-chat-search", "messages": [{"role": "user", "content": "hi"}],
                      "web_search_options": {"search_context_size": "low"}});
    let (_, _, rx) = send(&h, "/v1/chat/completions", &chat, &[], 200, Vendor::OpenAi).await;
    let up = rx.unwrap().body;
    assert_eq!(
        (up["model"].as_str(), &up["web_search_options"]),
        (Some("up-search"), &chat["web_search_options"])
    );
}

/// The answer's status, the dropped-tools header, its body, its record and the
/// last request `vendor`'s fake got from it.
async fn served(
    h: &Harness,
    path: &str,
    body: &Value,
    vendor: Vendor,
) -> (u16, Option<String>, String, RequestRecord, Option<Received>) {
    let fake = h.fake(vendor);
    let before = fake.request_count();
    let r = h.post_with(path, body, &[]).await;
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let status = r.status().as_u16();
    let dropped = r.headers().get(DROPPED).map(|v| v.to_str().unwrap().to_owned());
    let text = r.text().await.unwrap();
    let record = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    let received =
        (fake.request_count() > before).then(|| fake.received().last().cloned()).flatten();
    (status, dropped, text, record, received)
}

const DROPPED: &str = "x-switchyard-dropped-tools";

/// Codex declares OpenAI's `web_search` on every request; Claude Code and Chat
/// clients declare theirs. Offered to a model none of whose deployments runs it,
/// it is left out (on the fast path, out of the client's own body), and the
/// answer, the record and `/metrics` say so; whole and streamed alike.
#[tokio::test]
async fn an_offered_tool_nothing_runs_is_left_out_and_said_so() {
    let h = Harness::start_with(options()).await;
    let function = json!({"type": "function", "name": "shell", "parameters": {"type": "object"}});
    let codex = |model: &str| {
        responses_body(
            model,
            json!({"tools": [function, {"type": "web_search"}], "tool_choice": "auto"}),
        )
    };
    let claude = |model: &str| {
        json!({"model": model, "max_tokens": 256, "messages": [{"role": "user", "content": "hi"}],
               "tools": [{"name": "lookup", "input_schema": {"type": "object"}},
                         {"type": "web_search_20250305", "name": "web_search"}],
               "tool_choice": {"type": "auto"}})
    };
    let chat = |model: &str| {
        json!({"model": model, "messages": [{"role": "user", "content": "hi"}],
               "web_search_options": {}})
    };
    // (what, endpoint, body, the fake it goes to): fast path and translated.
    let cases: [(&str, &str, Value, Vendor); 9] = [
        ("codex to chat", "/v1/responses", codex("m-openai"), Vendor::OpenAi),
        ("codex to gemini", "/v1/responses", codex("m-g-bare"), Vendor::Gemini),
        ("claude, own body", "/v1/messages", claude("m-bare"), Vendor::Anthropic),
        ("claude to chat", "/v1/messages", claude("m-openai"), Vendor::OpenAi),
        ("chat, own body", "/v1/chat/completions", chat("m-openai"), Vendor::OpenAi),
        ("chat to gemini", "/v1/chat/completions", chat("m-g-bare"), Vendor::Gemini),
        // Converse runs no hosted tool at all.
        ("codex to bedrock", "/v1/responses", codex("m-bedrock"), Vendor::Bedrock),
        ("claude to bedrock", "/v1/messages", claude("m-bedrock"), Vendor::Bedrock),
        ("chat to bedrock", "/v1/chat/completions", chat("m-bedrock"), Vendor::Bedrock),
    ];
    for (label, path, body, vendor) in cases {
        for stream in [false, true] {
            let mut body = body.clone();
            body["stream"] = json!(stream);
            let (status, dropped, text, rec, rx) = served(&h, path, &body, vendor).await;
            let label = format!("{label}, stream={stream}");
            assert_eq!(status, 200, "{label}: {text}");
            assert_eq!(dropped.as_deref(), Some("web_search"), "{label}");
            assert!(text.contains("echo"), "{label}: answered: {text}");
            let edit = rec.field_edits.iter().find(|e| e.contains("dropped (the deployment"));
            assert!(
                edit.is_some_and(|e| e.contains("web_search")),
                "{label}: {:?}",
                rec.field_edits
            );
            let up = rx.unwrap_or_else(|| panic!("{label}: nothing sent")).body;
            let sent = up.to_string();
            for gone in ["web_search", "googleSearch"] {
                assert!(!sent.contains(gone), "{label}: {gone} reached the upstream: {sent}");
            }
            // The client's own tool and its choice stay.
            match label.split(',').next().unwrap_or_default() {
                "codex to chat" => {
                    assert_eq!(up["tools"][0]["function"]["name"], "shell", "{label}");
                    assert_eq!(up["tool_choice"], "auto", "{label}");
                }
                "claude, own body" => {
                    assert_eq!(up["tools"], json!([claude("m")["tools"][0]]), "{label}");
                    assert_eq!(up["tool_choice"], json!({"type": "auto"}), "{label}");
                }
                "codex to bedrock" | "claude to bedrock" => {
                    let name = if label.starts_with("codex") { "shell" } else { "lookup" };
                    let config = &up["toolConfig"];
                    assert_eq!(config["tools"].as_array().map(Vec::len), Some(1), "{label}: {up}");
                    assert_eq!(config["tools"][0]["toolSpec"]["name"], name, "{label}");
                    assert_eq!(config["toolChoice"], json!({"auto": {}}), "{label}");
                }
                "chat to bedrock" => {
                    assert!(up.get("toolConfig").is_none(), "{label}: no tools are left: {up}");
                }
                _ => {}
            }
        }
    }

    // Counted by tool and model.
    let metrics = h
        .client
        .get(format!("{}/metrics", h.base))
        .bearer_auth(GATEWAY_KEY)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line = metrics
        .lines()
        .find(|l| {
            l.starts_with("gateway_dropped_tools_total")
                && l.contains("model=\"m-openai\"")
                && l.contains("tool=\"web_search\"")
        })
        .unwrap_or_else(|| panic!("no counter: {metrics}"));
    let count: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(count >= 6.0, "{line}");
}

/// A tool the request requires (forced by `tool_choice`, or the only tools a
/// required call could use) is never left out: where nothing runs it, 400
/// `unsupported_tool` names it and the model, and nothing is sent upstream.
#[tokio::test]
async fn a_required_tool_is_refused_where_nothing_runs_it() {
    let h = Harness::start_with(options()).await;
    let codex = |model: &str, choice: Value| {
        responses_body(model, json!({"tools": [{"type": "web_search"}], "tool_choice": choice}))
    };
    let claude = |model: &str, choice: Value| {
        json!({"model": model, "max_tokens": 256, "messages": [{"role": "user", "content": "hi"}],
               "tools": [{"type": "web_search_20250305", "name": "web_search"}],
               "tool_choice": choice})
    };
    let tool = json!({"type": "tool", "name": "web_search"});
    let cases = [
        ("/v1/responses", codex("m-openai", json!({"type": "web_search"}))),
        ("/v1/responses", codex("m-openai", json!("required"))),
        // Gemini runs the search but cannot be made to.
        ("/v1/responses", codex("m-gemini", json!({"type": "web_search"}))),
        ("/v1/messages", claude("m-openai", tool.clone())),
        ("/v1/messages", claude("m-bare", tool.clone())),
        ("/v1/messages", claude("m-bare", json!({"type": "any"}))),
        // Converse runs no hosted tool: forced, it is refused before Bedrock.
        ("/v1/responses", codex("m-bedrock", json!({"type": "web_search"}))),
        ("/v1/responses", codex("m-bedrock", json!("required"))),
        ("/v1/messages", claude("m-bedrock", tool.clone())),
    ];
    for (path, body) in cases {
        for stream in [false, true] {
            let mut body = body.clone();
            body["stream"] = json!(stream);
            let before = h.upstream_requests();
            let r = h.post_with(path, &body, &[]).await;
            let status = r.status().as_u16();
            let answer: Value = r.json().await.unwrap();
            let label = format!("{path} {} {}: {answer}", body["model"], body["tool_choice"]);
            assert_eq!(status, 400, "{label}");
            assert_eq!(h.upstream_requests(), before, "{label}: sent");
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("web_search") && message.contains(body["model"].as_str().unwrap()),
                "{label}"
            );
            if path == "/v1/responses" {
                assert_eq!(answer["error"]["code"], "unsupported_tool", "{label}");
            } else {
                assert_eq!(answer["error"]["type"], "invalid_request_error", "{label}");
            }
        }
    }

    // Forced where it runs, it is forced there.
    let (_, _, rx) = send(
        &h,
        "/v1/responses",
        &codex("m-search", json!({"type": "web_search"})),
        &[],
        200,
        Vendor::Anthropic,
    )
    .await;
    assert_eq!(rx.unwrap().body["tool_choice"], json!({"type": "tool", "name": "web_search"}));
    let (_, _, rx) =
        send(&h, "/v1/messages", &claude("m-search", tool.clone()), &[], 200, Vendor::Anthropic)
            .await;
    assert_eq!(rx.unwrap().body["tool_choice"], tool);
}

/// `unrunnable_server_tools: refuse`, on a model or on a route, keeps the
/// refusal for a tool the request only offers.
#[tokio::test]
async fn refuse_mode_refuses_offered_tools_nothing_runs() {
    let h = Harness::start_with(options()).await;
    let codex = |model: &str| responses_body(model, json!({"tools": [{"type": "web_search"}]}));
    for model in ["m-strict", "r-strict-x"] {
        let before = h.upstream_requests();
        let (answer, rec, _) =
            send(&h, "/v1/responses", &codex(model), &[], 400, Vendor::OpenAi).await;
        assert_eq!(answer["error"]["code"], "unsupported_tool", "{model}");
        assert_eq!(rec.error_code.as_deref(), Some("unsupported_tool"));
        assert_eq!(h.upstream_requests(), before, "{model}: sent");
    }
    // Where something runs it, refuse mode changes nothing.
    let (_, _, rx) =
        send(&h, "/v1/responses", &codex("m-strict-search"), &[], 200, Vendor::Anthropic).await;
    assert!(rx.is_some());
}

/// Codex over WebSocket: the turn is answered without the tool, and its record
/// says so (a WebSocket turn has no response headers).
#[tokio::test]
async fn codex_over_websocket_is_answered_without_the_tool() {
    let h = Harness::start_with(options()).await;
    let mut socket = common::ws::open(&h.base).await;
    let events = common::ws::turn(
        &mut socket,
        json!({"model": "m-openai", "input": "hello", "tools": [{"type": "web_search"}]}),
    )
    .await;
    assert_eq!(events.last().unwrap()["type"], "response.completed", "{events:?}");
    let text = events.iter().filter_map(|e| e["delta"].as_str()).collect::<String>();
    assert_eq!(text, "echo: hello");
    let up = h.openai.received().last().cloned().unwrap().body;
    assert!(up.get("web_search_options").is_none(), "{up}");
    let records = tokio::time::timeout(WAIT, h.sink.wait_len(1)).await.unwrap();
    let edits = &records[0].field_edits;
    assert!(edits.iter().any(|e| e.contains("web_search") && e.contains("dropped")), "{edits:?}");
}

#[tokio::test]
async fn anthropic_beta_flags_reach_anthropic_unchanged_or_as_the_catalog_lists() {
    let h = Harness::start_with(options()).await;
    let betas = "context-management-2025-06-27, fine-grained-tool-streaming-2025-05-14";
    let headers = [("anthropic-beta", betas), ("anthropic-version", "2023-06-01")];
    let claude = |model: &str| json!({"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]});
    let (_, rec, rx) =
        send(&h, "/v1/messages", &claude("m-anthropic"), &headers, 200, Vendor::Anthropic).await;
    assert_eq!(rx.unwrap().header("anthropic-beta"), Some(betas));
    assert!(rec.field_edits.is_empty(), "{:?}", rec.field_edits);

    let (_, rec, rx) =
        send(&h, "/v1/messages", &claude("m-compat"), &headers, 200, Vendor::Anthropic).await;
    assert_eq!(rx.unwrap().header("anthropic-beta"), Some("context-management-2025-06-27"));
    assert_eq!(rec.field_edits, ["anthropic-beta: dropped fine-grained-tool-streaming-2025-05-14"]);

    let (_, rec, _) =
        send(&h, "/v1/messages", &claude("m-openai"), &headers, 200, Vendor::OpenAi).await;
    assert_eq!(rec.field_edits, [format!("anthropic-beta: dropped {betas}")]);
}

/// Codex (for some models) declares its tools in an `additional_tools` input item;
/// they reach every wire as tools, and the first request is answered.
#[tokio::test]
async fn codex_additional_tools_are_taken() {
    let h = Harness::start().await;
    let body = json!({
        "model": "m-openai", "store": false, "stream": true,
        "input": [
            {"type": "additional_tools", "role": "developer", "tools": [
                {"type": "namespace", "name": "collab", "tools": [
                    {"type": "function", "name": "send_message", "strict": false,
                     "parameters": {"type": "object", "properties": {"to": {"type": "string"}}}}
                ]},
                {"type": "custom", "name": "exec", "format": {"type": "text"}}
            ]},
            {"role": "user", "content": "send a test message"}
        ],
        "tool_choice": "auto", "parallel_tool_calls": false
    });
    for (model, vendor) in [
        ("m-openai", Vendor::OpenAi),
        ("m-anthropic", Vendor::Anthropic),
        ("m-gemini", Vendor::Gemini),
        ("m-bedrock", Vendor::Bedrock),
    ] {
        let mut body = body.clone();
        body["model"] = json!(model);
        let (_, _, rx) = send(&h, "/v1/responses", &body, &[], 200, vendor).await;
        let up = rx.expect("the upstream got it").body;
        let names: Vec<String> = match vendor {
            Vendor::OpenAi => up["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect(),
            Vendor::Anthropic => up["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect(),
            Vendor::Gemini => up["tools"][0]["functionDeclarations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect(),
            Vendor::Bedrock => up["toolConfig"]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["toolSpec"]["name"].as_str().unwrap().to_owned())
                .collect(),
        };
        assert_eq!(names, ["collab__send_message", "exec"], "{model}");
    }
}

#[tokio::test]
async fn claude_codes_session_goes_into_the_record_never_as_a_user() {
    let h = Harness::start().await;
    let session = "5b0c8a3e-1b2c-4d5e-8f90-0a1b2c3d4e5f";
    let legacy = format!("user_{}_account__session_{session}", "ab".repeat(32));
    let json_form =
        json!({"device_id": "3f4a", "account_uuid": "", "session_id": session}).to_string();
    for (user_id, model, vendor) in [
        (legacy.as_str(), "m-anthropic", Vendor::Anthropic),
        (json_form.as_str(), "m-openai", Vendor::OpenAi),
    ] {
        let body = json!({"model": model, "max_tokens": 64, "metadata": {"user_id": user_id},
                          "messages": [{"role": "user", "content": "hi"}]});
        let (_, rec, rx) = send(&h, "/v1/messages", &body, &[], 200, vendor).await;
        assert_eq!(rec.session_id.as_deref(), Some(session), "{model}");
        // The gateway's user is the key's (a static key has none): the client's
        // user id makes no user or tenant.
        assert_eq!(rec.user, None);
        assert_eq!(rec.project, None);
        assert!(rx.is_some());
    }
    let body = json!({"model": "m-anthropic", "max_tokens": 64, "metadata": {"user_id": "alice"},
                      "messages": [{"role": "user", "content": "hi"}]});
    let (_, rec, _) = send(&h, "/v1/messages", &body, &[], 200, Vendor::Anthropic).await;
    assert_eq!(rec.session_id, None, "a plain user id names no session");
}
