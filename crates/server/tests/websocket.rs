//! The Responses WebSocket mode, black box: a real client on `GET /v1/responses`
//! (upgraded), turns as `response.create` events, the answer's events as messages.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::time::Duration;

use common::ws::{self, Next};
use common::*;
use serde_json::{Value, json};
use switchyard_protocol::{ClientFormat, Part};
use switchyard_testkit::{Reply, ReplyBody, Vendor, canned};

fn create(model: &str, input: &str) -> Value {
    json!({"model": model, "input": input})
}

/// The answer's text, decoding the events as the SSE body the POST would stream.
fn text_of(events: &[Value]) -> String {
    let resp = decode_stream(ClientFormat::OpenAiResponses, &ws::as_sse(events));
    resp.content
        .iter()
        .filter_map(|p| if let Part::Text(t) = p { Some(t.text.as_str()) } else { None })
        .collect()
}

fn completed_id(events: &[Value]) -> String {
    let last = events.last().unwrap();
    assert_eq!(last["type"], "response.completed", "{events:?}");
    last["response"]["id"].as_str().unwrap().to_owned()
}

/// Codex's session: turns in sequence on one connection, each translated (no
/// fast path exists for Responses clients), one failing over, each recorded.
#[tokio::test]
async fn turns_in_one_connection_stream_whole_event_sequences_and_are_recorded() {
    let h = Harness::start().await;
    let mut socket = ws::open(&h.base).await;

    let events = ws::turn(&mut socket, create("m-openai", "first")).await;
    let kinds = ws::kinds(&events);
    assert_eq!(kinds[..2], ["response.created", "response.in_progress"], "{kinds:?}");
    assert!(kinds.contains(&"response.output_text.delta"), "{kinds:?}");
    assert_eq!(text_of(&events), "echo: first");
    assert_eq!(events.last().unwrap()["response"]["model"], "m-openai");

    let events = ws::turn(&mut socket, create("m-anthropic", "second")).await;
    assert_eq!(text_of(&events), "echo: second");
    assert_eq!(events.last().unwrap()["response"]["model"], "m-anthropic");

    // m-chain's primary is down: the turn fails over to Anthropic, invisibly.
    h.openai.push(Reply::status(500));
    let events = ws::turn(&mut socket, create("m-chain", "third")).await;
    assert_eq!(text_of(&events), "echo: third");

    assert_eq!(h.openai.request_count(), 2);
    assert_eq!(h.anthropic.request_count(), 2);
    let seen = h.anthropic.received();
    assert_eq!(seen[0].body["stream"], true, "WebSocket turns are streamed upstream");

    let records = tokio::time::timeout(WAIT, h.sink.wait_len(3)).await.unwrap();
    let mut turns: Vec<_> = records
        .iter()
        .map(|r| (r.requested_model.as_str(), r.served_provider.as_deref(), r.status, r.stream))
        .collect();
    turns.sort();
    assert_eq!(
        turns,
        [
            ("m-anthropic", Some("anthropic"), 200, true),
            ("m-chain", Some("anthropic"), 200, true),
            ("m-openai", Some("openai"), 200, true),
        ]
    );
    assert!(records.iter().all(|r| r.client_format == "openai-responses"), "{records:?}");
    let chain = records.iter().find(|r| r.requested_model == "m-chain").unwrap();
    assert!(chain.descriptor.contains("failover"), "{}", chain.descriptor);
}

#[tokio::test]
async fn the_key_is_read_from_every_header_http_takes() {
    let h = Harness::start().await;
    for (name, value) in [("x-api-key", GATEWAY_KEY), ("x-goog-api-key", GATEWAY_KEY)] {
        let mut socket = ws::connect(&h.base, "/v1/responses", &[(name, value)]).await.unwrap();
        let events = ws::turn(&mut socket, create("mock", "hi")).await;
        assert_eq!(text_of(&events), "echo: hi", "{name}");
    }
    // The path without /v1 too, and the scheme in any case (RFC 9110 §11.1).
    let bearer = format!("BEARER {GATEWAY_KEY}");
    let mut socket =
        ws::connect(&h.base, "/responses", &[("authorization", &bearer)]).await.unwrap();
    assert_eq!(text_of(&ws::turn(&mut socket, create("mock", "bare")).await), "echo: bare");
}

/// A bad key gets the HTTP 401 it would get on POST, before any upgrade.
#[tokio::test]
async fn a_bad_or_missing_key_is_refused_with_401_before_the_upgrade() {
    let h = Harness::start().await;
    for (headers, code) in [
        (vec![("authorization", "Bearer sk-wrong-key-0000000000")], "invalid_api_key"),
        (vec![], "missing_api_key"),
    ] {
        let err = ws::connect(&h.base, "/v1/responses", &headers).await.unwrap_err();
        let tokio_tungstenite::tungstenite::Error::Http(resp) = err else {
            panic!("expected an HTTP refusal, got {err:?}")
        };
        assert_eq!(resp.status(), 401);
        let body: Value = serde_json::from_slice(resp.body().as_deref().unwrap()).unwrap();
        assert_eq!(body["error"]["code"], code);
        assert_eq!(body["error"]["type"], "authentication_error");
    }
    assert_eq!(h.upstream_requests(), 0);
    assert!(h.sink.records().is_empty());

    // A plain GET (no upgrade) is told what the endpoint is.
    let r = h.client.get(format!("{}/v1/responses", h.base)).bearer_auth(GATEWAY_KEY).send().await;
    let r = r.unwrap();
    assert_eq!(r.status(), 426);
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], "websocket_required");
}

/// The status and error code of a refused handshake.
async fn refused(base: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let err = ws::connect(base, "/v1/responses", headers).await.unwrap_err();
    let tokio_tungstenite::tungstenite::Error::Http(resp) = err else {
        panic!("expected an HTTP refusal, got {err:?}")
    };
    let body: Value = serde_json::from_slice(resp.body().as_deref().unwrap()).unwrap();
    (resp.status().as_u16(), body["error"]["code"].as_str().unwrap().to_owned())
}

/// A browser page of another origin cannot open a session, keyed or open (its
/// upgrade is never preflighted, and its answer would be the page's to read); an
/// allowed origin, and a client that sends no `Origin`, can.
#[tokio::test]
async fn only_allowed_origins_may_open_a_session_in_any_mode() {
    let allowed = "  allowed_origins: [\"http://localhost:3000\"]\n".to_owned();
    for open in [false, true] {
        let h = Harness::start_with(Options {
            open,
            gateway_extra: allowed.clone(),
            ..Options::default()
        })
        .await;
        let bearer = format!("Bearer {GATEWAY_KEY}");
        let key: Vec<(&str, &str)> = if open { vec![] } else { vec![("authorization", &bearer)] };
        let with = |origin: Option<&'static str>| {
            let mut headers = key.clone();
            headers.extend(origin.map(|o| ("origin", o)));
            headers
        };
        for origin in ["https://evil.example", "null", "http://localhost:3001"] {
            let (status, code) = refused(&h.base, &with(Some(origin))).await;
            assert_eq!(
                (status, code.as_str()),
                (403, "origin_not_allowed"),
                "open: {open}, {origin}"
            );
        }
        for origin in [None, Some("http://localhost:3000")] {
            let mut socket = ws::connect(&h.base, "/v1/responses", &with(origin)).await.unwrap();
            let events = ws::turn(&mut socket, create("mock", "hello")).await;
            assert_eq!(text_of(&events), "echo: hello", "open: {open}, {origin:?}");
        }
        assert_eq!(h.upstream_requests(), 0);
    }
    // With no list, no browser origin at all.
    let h = Harness::start().await;
    let bearer = format!("Bearer {GATEWAY_KEY}");
    let headers = [("authorization", bearer.as_str()), ("origin", "http://localhost:3000")];
    assert_eq!(refused(&h.base, &headers).await, (403, "origin_not_allowed".to_owned()));
}

/// A turn refused before its answer starts is an `error` event in the Responses
/// shape with the HTTP status; the connection serves the next turn.
#[tokio::test]
async fn refusals_are_error_events_and_the_connection_stays_open() {
    let rules = "access_rules:\n  - name: no-gemini\n    effect: deny\n    pattern: \"m-gemini\"\n    reason: not approved\n";
    let h = Harness::start_with(Options { rules: rules.into(), ..Options::default() }).await;
    let mut socket = ws::open(&h.base).await;

    let cases = [
        (create("no-such-model", "x"), 404, "model_not_found"),
        (create("m-gemini", "x"), 403, "authz_denied"),
        (
            json!({"input": "x", "previous_response_id": "resp_unknown", "model": "mock"}),
            400,
            "previous_response_not_found",
        ),
        (json!({"model": "mock", "input": 7}), 400, "invalid_request"),
        (
            json!({"model": "mock", "input": [{"type": "item_reference", "id": "x"}]}),
            400,
            "invalid_request",
        ),
    ];
    for (body, status, code) in cases {
        let events = ws::turn(&mut socket, body.clone()).await;
        assert_eq!(events.len(), 1, "{body}: {events:?}");
        let e = &events[0];
        assert_eq!((e["type"].as_str(), e["status"].as_u64()), (Some("error"), Some(status)));
        assert_eq!(e["error"]["code"], code, "{body}: {e}");
        assert!(e["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{e}");
    }
    for raw in ["not json", "[1]", r#"{"type": "session.update"}"#, r#"{"model": "mock"}"#] {
        ws::send_text(&mut socket, raw).await;
        let e = ws::event(&mut socket).await;
        assert_eq!((e["type"].as_str(), e["status"].as_u64()), (Some("error"), Some(400)), "{raw}");
    }
    assert_eq!(h.upstream_requests(), 0);

    let events = ws::turn(&mut socket, create("m-openai", "still here")).await;
    assert_eq!(text_of(&events), "echo: still here");
}

/// Codex on a reused connection sends `previous_response_id` and only the new
/// items; its warm-up is `generate: false`. Both continue the connection's last
/// response, and the upstream sees the whole conversation.
#[tokio::test]
async fn a_connection_continues_its_last_response_and_warm_up() {
    let h = Harness::start().await;
    let mut socket = ws::open(&h.base).await;
    let user = |text: &str| json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]});

    // Warm-up: a response with no output, nothing sent upstream, nothing recorded.
    let mut warm = json!({"model": "m-openai", "instructions": "be brief", "input": [user("one")], "generate": false});
    let events = ws::turn(&mut socket, warm.take()).await;
    assert_eq!(ws::kinds(&events), ["response.created", "response.completed"]);
    assert_eq!(events[1]["response"]["output"], json!([]));
    assert_eq!(h.upstream_requests(), 0);
    let warm_id = completed_id(&events);

    // The first turn continues the warm-up with no new items.
    let events = ws::turn(
        &mut socket,
        json!({"model": "m-openai", "instructions": "be brief", "input": [], "previous_response_id": warm_id}),
    )
    .await;
    assert_eq!(text_of(&events), "echo: one");
    let first_id = completed_id(&events);
    let seen = h.openai.received();
    let roles: Vec<&str> = seen[0].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user"], "{}", seen[0].body);

    // The next adds only the new item; the upstream gets input, answer, new item.
    let events = ws::turn(
        &mut socket,
        json!({"model": "m-openai", "instructions": "be brief", "input": [user("two")], "previous_response_id": first_id}),
    )
    .await;
    assert_eq!(text_of(&events), "echo: two");
    let seen = h.openai.received();
    let messages = seen[1].body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"], "{messages:?}");
    assert!(messages[2].to_string().contains("echo: one"), "{messages:?}");

    // Only the last response can be continued: the warm-up's is gone.
    let events = ws::turn(
        &mut socket,
        json!({"model": "m-openai", "input": [user("three")], "previous_response_id": warm_id}),
    )
    .await;
    assert_eq!(events[0]["error"]["code"], "previous_response_not_found");
    assert_eq!(events[0]["error"]["param"], "previous_response_id");
    assert_eq!(h.openai.request_count(), 2);
    let records = tokio::time::timeout(WAIT, h.sink.wait_len(2)).await.unwrap();
    assert_eq!(records.len(), 2, "the warm-up and the refusal are not requests upstream");
}

/// The body may come nested under `response`, as in OpenAI's realtime events.
#[tokio::test]
async fn the_body_may_be_nested_under_response() {
    let h = Harness::start().await;
    let mut socket = ws::open(&h.base).await;
    ws::send(
        &mut socket,
        &json!({"type": "response.create", "response": create("m-anthropic", "nested")}),
    )
    .await;
    let events = ws::read_turn(&mut socket).await;
    assert_eq!(text_of(&events), "echo: nested");
}

/// Shutdown lets the turn in flight finish, then closes with 1001 (going away);
/// the server's drain waits for the session.
#[tokio::test]
async fn shutdown_finishes_the_turn_then_closes_with_going_away() {
    let mut h = Harness::start().await;
    let mut socket = ws::open(&h.base).await;
    let ReplyBody::Sse(frames) = canned::text(Vendor::OpenAi, "up-openai", "a b c d e f", true)
    else {
        panic!("canned stream is SSE")
    };
    h.openai.push(Reply::sse(frames).chunk_delay(Duration::from_millis(30)));
    ws::send(&mut socket, &json!({"type": "response.create", "model": "m-openai", "input": "x"}))
        .await;
    let first = ws::event(&mut socket).await;
    assert_eq!(first["type"], "response.created");
    h.shutdown();
    let mut events = vec![first];
    events.extend(ws::read_turn(&mut socket).await);
    assert_eq!(text_of(&events), "a b c d e f", "the turn finished after shutdown began");
    match ws::next(&mut socket).await {
        Next::Closed(Some((code, _))) => assert_eq!(code, 1001),
        other => panic!("expected a close frame, got {other:?}"),
    }
    let server = h.server.take().unwrap();
    tokio::time::timeout(WAIT, server).await.unwrap().unwrap().unwrap();
}

/// An idle session closes at once when shutdown begins.
#[tokio::test]
async fn shutdown_closes_an_idle_session() {
    let mut h = Harness::start().await;
    let mut socket = ws::open(&h.base).await;
    assert_eq!(text_of(&ws::turn(&mut socket, create("mock", "hi")).await), "echo: hi");
    h.shutdown();
    match ws::next(&mut socket).await {
        Next::Closed(Some((code, _))) => assert_eq!(code, 1001),
        other => panic!("expected a close frame, got {other:?}"),
    }
    let server = h.server.take().unwrap();
    tokio::time::timeout(WAIT, server).await.unwrap().unwrap().unwrap();
}

#[tokio::test]
async fn a_binary_message_closes_with_unsupported_data() {
    let h = Harness::start().await;
    let mut socket = ws::open(&h.base).await;
    ws::send_binary(&mut socket, b"\x00\x01").await;
    match ws::next(&mut socket).await {
        Next::Closed(Some((code, _))) => assert_eq!(code, 1003),
        other => panic!("expected a close frame, got {other:?}"),
    }
}

/// A message over `max_body_bytes` is refused as the POST would be (413), and the
/// session goes on.
#[tokio::test]
async fn a_message_over_the_body_limit_is_a_413_event() {
    let h = Harness::start_with(Options { max_body_bytes: 4096, ..Options::default() }).await;
    let mut socket = ws::open(&h.base).await;
    let events = ws::turn(&mut socket, create("mock", &"x".repeat(5000))).await;
    assert_eq!(events[0]["status"], 413);
    assert_eq!(events[0]["error"]["code"], "request_too_large");
    assert_eq!(text_of(&ws::turn(&mut socket, create("mock", "small")).await), "echo: small");
}

/// A refused event quotes only the start of what it refused: a huge event type
/// or response id must not come back whole.
#[tokio::test]
async fn refusals_quote_a_huge_event_only_in_part() {
    let h = Harness::start_with(Options { max_body_bytes: 4 << 20, ..Options::default() }).await;
    let mut socket = ws::open(&h.base).await;
    let huge = "t".repeat(1 << 20);
    for event in [
        json!({"type": huge}),
        json!({"type": "response.create", "model": "mock", "input": "x", "previous_response_id": huge}),
    ] {
        ws::send(&mut socket, &event).await;
        let e = ws::event(&mut socket).await;
        assert_eq!((e["type"].as_str(), e["status"].as_u64()), (Some("error"), Some(400)));
        let text = e.to_string();
        assert!(text.len() < 2048, "a {} byte error event", text.len());
        assert!(text.contains("tttt\u{2026}"), "{text}");
    }
}

/// A client that closes mid-turn cancels the upstream call, as a disconnect does
/// over HTTP; the record says so.
#[tokio::test]
async fn closing_mid_turn_cancels_the_upstream_call() {
    let h = Harness::start().await;
    let mut frames = vec![
        "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"first\"}}]}\n\n".to_owned(),
    ];
    for _ in 0..200 {
        frames.push("data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" more\"}}]}\n\n".to_owned());
    }
    h.openai.push(Reply::sse(frames).chunk_delay(Duration::from_millis(50)));
    let mut socket = ws::open(&h.base).await;
    ws::send(&mut socket, &json!({"type": "response.create", "model": "m-openai", "input": "x"}))
        .await;
    loop {
        let e = ws::event(&mut socket).await;
        if e["type"] == "response.output_text.delta" {
            break;
        }
    }
    assert_eq!(h.openai.in_flight(), 1);
    ws::close(&mut socket).await;
    tokio::time::timeout(WAIT, h.openai.wait_idle()).await.expect("upstream call cancelled");
    let records = tokio::time::timeout(WAIT, h.sink.wait_len(1)).await.unwrap();
    assert_eq!(records[0].status, 499);
    assert_eq!(records[0].error_code.as_deref(), Some("client_closed_request"));
}

/// A response stored over HTTP (`store: true`) is continued on a connection
/// that never saw it, as a reconnecting client does.
#[tokio::test]
async fn a_connection_continues_a_stored_response() {
    let h = Harness::start().await;
    let first = json!({"model": "m-openai", "input": "remember seven", "store": true});
    let stored: Value = h.post("/v1/responses", &first).await.json().await.unwrap();
    let id = stored["id"].as_str().unwrap().to_owned();
    let mut socket = ws::open(&h.base).await;
    let next = json!({"model": "m-openai", "input": "which number?", "previous_response_id": id});
    let events = ws::turn(&mut socket, next).await;
    assert_eq!(text_of(&events), "echo: which number?", "{events:?}");
    let sent = h.openai.received().last().unwrap().body.to_string();
    assert!(sent.contains("remember seven") && sent.contains("echo: remember seven"), "{sent}");
    // An id stored nowhere is still refused.
    let other = ws::turn(
        &mut socket,
        json!({"model": "m-openai", "input": "x", "previous_response_id": "resp_someone_elses"}),
    )
    .await;
    assert_eq!(other[0]["error"]["code"], "previous_response_not_found");
}
