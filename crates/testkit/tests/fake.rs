//! Self-tests of the fake upstreams over real HTTP.

// Test helpers outside `#[test]` functions count as non-test code to clippy.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_testkit::{FakeUpstream, Reply, ReplyBody, Vendor, canned};

const LIMIT: Duration = Duration::from_secs(10);

async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f).await.expect("timed out")
}

/// reqwest is built with `rustls-no-provider` and refuses to build a client
/// (even for plain http) until a crypto provider is installed.
fn builder() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

fn client() -> reqwest::Client {
    builder().timeout(LIMIT).build().unwrap()
}

async fn post(url: &str, body: &Value) -> reqwest::Response {
    client()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

/// (event name, data) per SSE frame; accepts LF or CRLF framing.
fn parse_sse(text: &str) -> Vec<(Option<String>, String)> {
    text.replace("\r\n", "\n")
        .split("\n\n")
        .filter(|f| !f.is_empty())
        .map(|f| {
            let mut name = None;
            let mut data = None;
            for line in f.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = Some(n.to_owned());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = Some(d.to_owned());
                }
            }
            (name, data.expect("frame without data"))
        })
        .collect()
}

fn json_datas(text: &str) -> Vec<Value> {
    parse_sse(text)
        .into_iter()
        .filter(|(_, d)| d != "[DONE]")
        .map(|(_, d)| serde_json::from_str(&d).unwrap())
        .collect()
}

fn openai_req(model: &str, text: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": text}
    ]})
}

fn anthropic_req(model: &str, text: &str, stream: bool) -> Value {
    json!({"model": model, "max_tokens": 64, "stream": stream, "messages": [
        {"role": "user", "content": [{"type": "text", "text": text}]}
    ]})
}

fn gemini_req(text: &str) -> Value {
    json!({"contents": [{"role": "user", "parts": [{"text": text}]}]})
}

fn openai_url(f: &FakeUpstream) -> String {
    format!("{}/v1/chat/completions", f.base_url())
}

#[tokio::test]
async fn openai_auto_whole_and_streamed() {
    let fake = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    assert!(fake.base_url().starts_with("http://127.0.0.1:"));

    let resp = post(&openai_url(&fake), &openai_req("gpt-x", "hello big world", false)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let v: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "echo: hello big world");
    assert_eq!(v["model"], "gpt-x");
    assert_eq!(v["usage"]["completion_tokens"], canned::CANNED_OUTPUT_TOKENS);
    assert_eq!(
        v,
        match canned::text(Vendor::OpenAi, "gpt-x", "echo: hello big world", false) {
            ReplyBody::Json(v) => v,
            other => panic!("{other:?}"),
        }
    );

    // Also the unprefixed path.
    let url = format!("{}/chat/completions", fake.base_url());
    let resp = post(&url, &openai_req("gpt-y", "again", true)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let text = resp.text().await.unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"));
    let chunks = json_datas(&text);
    let content: String =
        chunks.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).collect();
    assert_eq!(content, "echo: again");
    assert!(chunks.len() > 3, "text should arrive in several deltas");
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], canned::CANNED_INPUT_TOKENS);
    assert_eq!(usage["model"], "gpt-y");
}

#[tokio::test]
async fn openai_echoes_text_parts() {
    let fake = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    let req = json!({"model": "m", "messages": [
        {"role": "user", "content": "old"},
        {"role": "assistant", "content": "x"},
        {"role": "user", "content": [{"type": "text", "text": "new"}]}
    ]});
    let v: Value = post(&openai_url(&fake), &req).await.json_lossy().await;
    assert_eq!(v["choices"][0]["message"]["content"], "echo: new");
}

#[tokio::test]
async fn anthropic_auto_whole_and_streamed() {
    let fake = FakeUpstream::start(Vendor::Anthropic).await.unwrap();
    let url = format!("{}/v1/messages", fake.base_url());

    let v: Value =
        post(&url, &anthropic_req("claude-x", "ping pong", false)).await.json_lossy().await;
    assert_eq!(v["type"], "message");
    assert_eq!(v["content"][0]["text"], "echo: ping pong");
    assert_eq!(v["model"], "claude-x");
    assert_eq!(v["stop_reason"], "end_turn");
    assert_eq!(v["usage"]["cache_read_input_tokens"], canned::CANNED_CACHE_READ_INPUT_TOKENS);

    let resp = post(&url, &anthropic_req("claude-x", "ping pong", true)).await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let frames = parse_sse(&resp.text().await.unwrap());
    let names: Vec<&str> = frames.iter().map(|(n, _)| n.as_deref().unwrap()).collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(names.last(), Some(&"message_stop"));
    let mut text = String::new();
    for (name, data) in &frames {
        let v: Value = serde_json::from_str(data).unwrap();
        assert_eq!(v["type"], name.as_deref().unwrap());
        if let Some(t) = v["delta"]["text"].as_str() {
            text.push_str(t);
        }
        if name.as_deref() == Some("message_delta") {
            assert_eq!(v["delta"]["stop_reason"], "end_turn");
            assert_eq!(v["usage"]["output_tokens"], canned::CANNED_OUTPUT_TOKENS);
        }
    }
    assert_eq!(text, "echo: ping pong");
}

#[tokio::test]
async fn gemini_auto_whole_sse_and_array() {
    let fake = FakeUpstream::start(Vendor::Gemini).await.unwrap();
    let base = format!("{}/v1beta/models/gemini-x", fake.base_url());

    let v: Value =
        post(&format!("{base}:generateContent"), &gemini_req("sun")).await.json_lossy().await;
    assert_eq!(v["candidates"][0]["content"]["parts"][0]["text"], "echo: sun");
    assert_eq!(v["candidates"][0]["finishReason"], "STOP");
    assert_eq!(v["modelVersion"], "gemini-x");

    let resp =
        post(&format!("{base}:streamGenerateContent?alt=sse"), &gemini_req("sun and moon")).await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let raw = resp.text().await.unwrap();
    assert!(raw.contains("\r\n\r\n"), "Gemini frames end with CRLF");
    let chunks = json_datas(&raw);
    assert!(chunks.len() > 1);
    let text: String = chunks
        .iter()
        .filter_map(|c| c["candidates"][0]["content"]["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(text, "echo: sun and moon");
    let last = chunks.last().unwrap();
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert_eq!(last["usageMetadata"]["candidatesTokenCount"], canned::CANNED_OUTPUT_TOKENS);

    // Without alt=sse Gemini streams one JSON array.
    let resp = post(&format!("{base}:streamGenerateContent"), &gemini_req("sun")).await;
    assert_eq!(resp.headers()["content-type"], "application/json");
    let arr: Value = resp.json_lossy().await;
    assert_eq!(arr.as_array().unwrap().len(), 2);

    let seen = fake.received();
    assert_eq!(seen[1].query.as_deref(), Some("alt=sse"));
    assert_eq!(seen[1].path, "/v1beta/models/gemini-x:streamGenerateContent");
}

#[tokio::test]
async fn counting_routes_answer_a_count_of_the_body_and_refuse_what_the_apis_refuse() {
    let anthropic = FakeUpstream::start(Vendor::Anthropic).await.unwrap();
    let url = format!("{}/v1/messages/count_tokens", anthropic.base_url());
    let body = json!({"model": "claude-x", "messages": [{"role": "user", "content": "hi"}]});
    let resp = post(&url, &body).await;
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json_lossy().await;
    assert_eq!(v, json!({"input_tokens": canned::counted_tokens(&body)}));
    // A generation's settings are refused, in Anthropic's shape, taking no reply.
    anthropic.push(Reply::status(503));
    let resp = post(&url, &anthropic_req("claude-x", "hi", false)).await;
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json_lossy().await;
    assert_eq!(v["error"]["message"], "max_tokens: Extra inputs are not permitted");
    // Scripted replies are served on the counting route too.
    assert_eq!(post(&url, &body).await.status(), 503);

    let gemini = FakeUpstream::start(Vendor::Gemini).await.unwrap();
    let url = format!("{}/v1beta/models/gemini-x:countTokens", gemini.base_url());
    let whole = json!({"generateContentRequest": {"model": "models/gemini-x",
        "contents": gemini_req("sun")["contents"].clone(),
        "systemInstruction": {"parts": [{"text": "be brief"}]}}});
    let v: Value = post(&url, &whole).await.json_lossy().await;
    assert_eq!(v, json!({"totalTokens": canned::counted_tokens(&whole)}));
    let v: Value = post(&url, &gemini_req("sun")).await.json_lossy().await;
    assert_eq!(v["totalTokens"], canned::counted_tokens(&gemini_req("sun")));
    assert!(canned::counted_tokens(&whole) > canned::counted_tokens(&gemini_req("sun")));
    // A generation body is not a counting body.
    let mut bad = gemini_req("sun");
    bad["systemInstruction"] = json!({"parts": [{"text": "be brief"}]});
    assert_eq!(post(&url, &bad).await.status(), 400);
}

#[tokio::test]
async fn script_then_default() {
    let fake = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    fake.push(Reply::json(json!({"n": 1})));
    fake.push_n(2, Reply::json(json!({"n": 2})).with_status(201));
    fake.set_default(Reply::json(json!({"n": "default"})));
    assert_eq!(fake.script_len(), 3);
    let url = openai_url(&fake);
    let req = openai_req("m", "x", false);
    let mut got = Vec::new();
    for _ in 0..5 {
        let r = post(&url, &req).await;
        let status = r.status().as_u16();
        let v: Value = r.json_lossy().await;
        got.push((status, v["n"].clone()));
    }
    assert_eq!(
        got,
        [
            (200, json!(1)),
            (201, json!(2)),
            (201, json!(2)),
            (200, json!("default")),
            (200, json!("default"))
        ]
    );
    assert_eq!(fake.request_count(), 5);
}

#[tokio::test]
async fn a_chooser_answers_past_the_script_by_arrival_number_and_request() {
    let fake = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    fake.push(Reply::json(json!({"n": "scripted"})));
    fake.set_chooser(|n, received| {
        let model = received.body["model"].as_str().unwrap_or("").to_owned();
        Reply::json(json!({"n": n, "model": model})).with_status(if n % 2 == 0 { 200 } else { 503 })
    });
    let url = openai_url(&fake);
    let mut got = Vec::new();
    for model in ["a", "b", "c"] {
        let r = post(&url, &openai_req(model, "x", false)).await;
        let status = r.status().as_u16();
        let v: Value = r.json_lossy().await;
        got.push((status, v["n"].clone(), v["model"].clone()));
    }
    // The script first (arrival 0); then the chooser, numbered from the start.
    assert_eq!(
        got,
        [
            (200, json!("scripted"), Value::Null),
            (503, json!(1), json!("b")),
            (200, json!(2), json!("c")),
        ]
    );
}

#[tokio::test]
async fn status_replies_in_vendor_shape() {
    for vendor in [Vendor::OpenAi, Vendor::Anthropic, Vendor::Gemini] {
        let fake = FakeUpstream::start(vendor).await.unwrap();
        fake.push(Reply::status(429).retry_after(2));
        fake.push(Reply::error(503, "down for lunch"));
        let (url, req) = match vendor {
            Vendor::OpenAi => (openai_url(&fake), openai_req("m", "x", true)),
            Vendor::Anthropic => {
                (format!("{}/v1/messages", fake.base_url()), anthropic_req("m", "x", true))
            }
            Vendor::Gemini => (
                format!("{}/v1beta/models/g:streamGenerateContent?alt=sse", fake.base_url()),
                gemini_req("x"),
            ),
            Vendor::Bedrock => unreachable!("Bedrock is tested in tests/bedrock.rs"),
        };
        let r = post(&url, &req).await;
        assert_eq!(r.status(), 429);
        assert_eq!(r.headers()["retry-after"], "2");
        assert_eq!(r.headers()["content-type"], "application/json");
        let v: Value = r.json_lossy().await;
        assert_eq!(v, canned::error_body(vendor, 429, "fake upstream error 429"));
        match vendor {
            Vendor::OpenAi => assert_eq!(v["error"]["code"], "rate_limit_exceeded"),
            Vendor::Anthropic => {
                assert_eq!(v["type"], "error");
                assert_eq!(v["error"]["type"], "rate_limit_error");
            }
            Vendor::Gemini => {
                assert_eq!(v["error"]["code"], 429);
                assert_eq!(v["error"]["status"], "RESOURCE_EXHAUSTED");
            }
            Vendor::Bedrock => unreachable!("Bedrock is tested in tests/bedrock.rs"),
        }
        let r = post(&url, &req).await;
        assert_eq!(r.status(), 503);
        let v: Value = r.json_lossy().await;
        // All three shapes keep the message at error.message.
        assert_eq!(v["error"]["message"], "down for lunch");
    }
}

#[tokio::test]
async fn unknown_paths_404_without_consuming_script() {
    let fake = FakeUpstream::start(Vendor::Gemini).await.unwrap();
    fake.push(Reply::json(json!({"scripted": true})));
    let r = post(&format!("{}/v1/chat/completions", fake.base_url()), &json!({})).await;
    assert_eq!(r.status(), 404);
    let v: Value = r.json_lossy().await;
    assert_eq!(v["error"]["status"], "NOT_FOUND");
    let r = client()
        .get(format!("{}/v1beta/models/g:generateContent", fake.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(fake.script_len(), 1);
    let v: Value =
        post(&format!("{}/v1beta/models/g:generateContent", fake.base_url()), &gemini_req("x"))
            .await
            .json_lossy()
            .await;
    assert_eq!(v["scripted"], true);
    assert_eq!(fake.request_count(), 3);

    let fake = FakeUpstream::start(Vendor::Anthropic).await.unwrap();
    let r = post(&openai_url(&fake), &json!({})).await;
    assert_eq!(r.status(), 404);
    let v: Value = r.json_lossy().await;
    assert_eq!(v["error"]["type"], "not_found_error");
}

#[tokio::test]
async fn scripted_canned_bodies_are_served_verbatim() {
    let fake = FakeUpstream::start(Vendor::Anthropic).await.unwrap();
    let body = canned::tool_call(Vendor::Anthropic, "c", "weather", r#"{"q":"x"}"#, true);
    let ReplyBody::Sse(frames) = body.clone() else { panic!("stream expected") };
    fake.push(Reply::from(body));
    fake.push(Reply::sse(vec![
        "event: message_start\ndata: {}\n\n".to_owned(),
        canned::malformed_frame(),
    ]));
    fake.push(Reply::raw("not json at all", "text/plain").with_status(502));
    let url = format!("{}/v1/messages", fake.base_url());
    let req = anthropic_req("c", "x", true);
    assert_eq!(post(&url, &req).await.text().await.unwrap(), frames.concat());
    let text = post(&url, &req).await.text().await.unwrap();
    assert!(text.ends_with("data: {not json\n\n"));
    let r = post(&url, &req).await;
    assert_eq!(r.status(), 502);
    assert_eq!(r.headers()["content-type"], "text/plain");
    assert_eq!(r.text().await.unwrap(), "not json at all");
}

#[tokio::test]
async fn break_after_truncates() {
    let fake = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    fake.push(Reply::auto().break_after(2));
    fake.push(Reply::json(json!({"a": "long enough body"})).break_after(1));
    fake.push(Reply::auto().break_after(100));
    let url = openai_url(&fake);

    // Streamed: the first two frames arrive, then the body fails.
    let mut r = post(&url, &openai_req("m", "one two three four", true)).await;
    assert_eq!(r.status(), 200);
    let mut got = Vec::new();
    let err = loop {
        match r.chunk().await {
            Ok(Some(c)) => got.extend_from_slice(&c),
            Ok(None) => panic!("body ended cleanly"),
            Err(e) => break e,
        }
    };
    assert!(err.is_body() || err.is_decode(), "{err:?}");
    let got = String::from_utf8(got).unwrap();
    assert_eq!(parse_sse(&got).len(), 2);

    // Not streamed: half the JSON, then the body fails.
    let r = post(&url, &openai_req("m", "x", false)).await;
    assert!(r.bytes().await.is_err());

    // More frames allowed than exist: everything arrives, still no clean end.
    let r = post(&url, &openai_req("m", "x", true)).await;
    assert!(r.text().await.is_err());
}

#[tokio::test]
async fn hold_streams_stops_a_stream_mid_way_until_released() {
    let fake = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    fake.hold_streams(2);
    let url = openai_url(&fake);
    let mut r = post(&url, &openai_req("m", "one two three", true)).await;
    let mut got = Vec::new();
    while got.windows(2).filter(|w| w == b"\n\n").count() < 2 {
        got.extend_from_slice(&within(r.chunk()).await.unwrap().unwrap());
    }
    // A whole answer is not held.
    let whole: Value = post(&url, &openai_req("m", "x", false)).await.json_lossy().await;
    assert_eq!(whole["choices"][0]["message"]["content"], "echo: x");
    assert_eq!(fake.in_flight(), 1, "the held stream is still in flight");
    fake.release_streams();
    while let Some(c) = within(r.chunk()).await.unwrap() {
        got.extend_from_slice(&c);
    }
    let text: String = json_datas(&String::from_utf8(got).unwrap())
        .iter()
        .filter_map(|v| v["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, "echo: one two three");
}

#[tokio::test]
async fn first_byte_delay_lets_later_requests_pass() {
    let fake = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    fake.push(Reply::json(json!({"slow": true})).first_byte_delay(Duration::from_secs(2)));
    let url = openai_url(&fake);
    let slow = tokio::spawn({
        let url = url.clone();
        async move { post(&url, &openai_req("m", "x", false)).await.json_lossy().await }
    });
    within(fake.wait_for_requests(1)).await;
    let fast: Value = post(&url, &openai_req("m", "quick", false)).await.json_lossy().await;
    assert_eq!(fast["choices"][0]["message"]["content"], "echo: quick");
    assert!(!slow.is_finished(), "the delayed reply came back first");
    assert_eq!(fake.in_flight(), 1);
    let slow = within(slow).await.unwrap();
    assert_eq!(slow["slow"], true);
}

#[tokio::test]
async fn chunk_delay_still_delivers_everything() {
    let fake = FakeUpstream::start(Vendor::Gemini).await.unwrap();
    fake.set_default(Reply::auto().chunk_delay(Duration::from_millis(20)));
    let url = format!("{}/v1beta/models/g:streamGenerateContent?alt=sse", fake.base_url());
    let text = post(&url, &gemini_req("a b c")).await.text().await.unwrap();
    assert_eq!(json_datas(&text).len(), 4);
}

#[tokio::test]
async fn hang_ends_when_client_goes_away() {
    let fake = FakeUpstream::start(Vendor::Anthropic).await.unwrap();
    fake.push(Reply::hang());
    let url = format!("{}/v1/messages", fake.base_url());
    let r = builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap()
        .post(&url)
        .body(anthropic_req("c", "x", false).to_string())
        .send()
        .await;
    assert!(r.unwrap_err().is_timeout());
    // The handler noticed the client leaving.
    within(fake.wait_idle()).await;
    assert_eq!(fake.in_flight(), 0);
    // And the fake still serves.
    let r = post(&url, &anthropic_req("c", "x", false)).await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn hang_ends_when_fake_is_dropped() {
    let fake = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    fake.push(Reply::hang());
    let url = openai_url(&fake);
    let pending = tokio::spawn(async move {
        client().post(&url).body(openai_req("m", "x", false).to_string()).send().await
    });
    within(fake.wait_for_requests(1)).await;
    drop(fake);
    // Either a 503 or a closed connection, but promptly.
    if let Ok(r) = within(pending).await.unwrap() {
        assert_eq!(r.status(), 503);
    }
}

#[tokio::test]
async fn wait_for_requests_wakes_on_arrival() {
    let fake = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    let waiter = tokio::spawn({
        let fake = fake.clone();
        async move { fake.wait_for_requests(3).await }
    });
    let url = openai_url(&fake);
    for i in 0..3 {
        post(&url, &openai_req("m", &format!("n{i}"), false)).await;
    }
    let seen = within(waiter).await.unwrap();
    assert_eq!(seen.len(), 3);
    let texts: Vec<&Value> = seen.iter().map(|r| &r.body["messages"][1]["content"]).collect();
    assert_eq!(texts, [&json!("n0"), &json!("n1"), &json!("n2")]);
    // Already satisfied: resolves at once.
    assert_eq!(within(fake.wait_for_requests(2)).await.len(), 3);
}

#[tokio::test]
async fn received_records_the_request() {
    let fake = FakeUpstream::start(Vendor::Gemini).await.unwrap();
    let url =
        format!("{}/v1beta/models/gemini-z:streamGenerateContent?alt=sse&key=abc", fake.base_url());
    client()
        .post(&url)
        .header("X-Goog-Api-Key", "secret")
        .header("content-type", "application/json")
        .body(gemini_req("hi").to_string())
        .send()
        .await
        .unwrap();
    client().post(&url).body("not json").send().await.unwrap();
    let seen = fake.received();
    assert_eq!(seen.len(), 2);
    let r = &seen[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1beta/models/gemini-z:streamGenerateContent");
    assert_eq!(r.query.as_deref(), Some("alt=sse&key=abc"));
    assert_eq!(r.header("x-goog-api-key"), Some("secret"));
    assert_eq!(r.header("X-GOOG-API-KEY"), Some("secret"));
    assert!(r.headers.iter().any(|(k, _)| k == "x-goog-api-key"));
    assert_eq!(r.body, gemini_req("hi"));
    assert_eq!(r.raw, gemini_req("hi").to_string().as_bytes());
    assert_eq!(seen[1].body, Value::Null);
    assert_eq!(seen[1].raw, "not json".as_bytes());
}

#[tokio::test]
async fn recording_can_be_turned_off() {
    let fake = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    let url = openai_url(&fake);
    post(&url, &openai_req("m", "kept", false)).await;
    fake.set_recording(false);
    let v: Value = post(&url, &openai_req("m", "not kept", false)).await.json_lossy().await;
    assert_eq!(v["choices"][0]["message"]["content"], "echo: not kept");
    assert_eq!(fake.request_count(), 2);
    assert_eq!(within(fake.wait_for_requests(2)).await.len(), 1);
    fake.clear_received();
    assert!(fake.received().is_empty());
    assert_eq!(fake.request_count(), 2);
}

// ---------------------------------------------------------------------------
// The scripted tool loop (`tool_loop`): a call of a declared tool, then its result quoted

use switchyard_testkit::tool_loop;

/// One assistant answer of any vendor, whole or streamed, put together.
#[derive(Debug, Default)]
struct Turn {
    thinking: String,
    /// Anthropic: the thinking block's; Gemini: the call part's `thoughtSignature`.
    signature: Option<String>,
    text: String,
    /// (id, name, arguments); Gemini calls have no id.
    call: Option<(String, String, Value)>,
}

fn shell_schema(prop: &str) -> Value {
    json!({"type": "object", "properties": {prop: {"type": "string"}, "description": {"type": "string"},
           "timeout": {"type": "number"}}, "required": [prop, "description"]})
}

const PROMPT: &str = "please run the TOOL_LOOP";

/// The first request of a loop: the prompt, and tools the way each client declares
/// them (a read tool first, so the shell is chosen by name, not position).
fn loop_request(vendor: Vendor, stream: bool, thinking: bool) -> Value {
    let read = json!({"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]});
    match vendor {
        Vendor::OpenAi => {
            let mut r = openai_req("gpt-x", PROMPT, stream);
            r["tools"] = json!([
                {"type": "function", "function": {"name": "read_file", "parameters": read}},
                {"type": "function", "function": {"name": "exec_command", "parameters": shell_schema("cmd")}}
            ]);
            if thinking {
                r["reasoning_effort"] = json!("high");
            }
            r
        }
        Vendor::Anthropic => {
            let mut r = anthropic_req("claude-x", PROMPT, stream);
            r["tools"] = json!([
                {"name": "Read", "input_schema": read},
                {"type": "web_search_20250305", "name": "web_search"},
                {"name": "Bash", "input_schema": shell_schema("command")}
            ]);
            if thinking {
                r["thinking"] = json!({"type": "enabled", "budget_tokens": 1024});
            }
            r
        }
        Vendor::Gemini => {
            let mut r = gemini_req(PROMPT);
            r["tools"] = json!([{"functionDeclarations": [
                {"name": "read_file", "parametersJsonSchema": read},
                {"name": "run_shell_command", "parameters": shell_schema("command")}
            ]}]);
            if thinking {
                r["generationConfig"] = json!({"thinkingConfig": {"includeThoughts": true}});
            }
            r
        }
        Vendor::Bedrock => unreachable!("Bedrock is tested in tests/bedrock.rs"),
    }
}

fn loop_url(fake: &FakeUpstream, stream: bool) -> String {
    match fake.vendor() {
        Vendor::OpenAi => openai_url(fake),
        Vendor::Anthropic => format!("{}/v1/messages", fake.base_url()),
        Vendor::Gemini if stream => {
            format!("{}/v1beta/models/gemini-3-x:streamGenerateContent?alt=sse", fake.base_url())
        }
        Vendor::Gemini => format!("{}/v1beta/models/gemini-3-x:generateContent", fake.base_url()),
        Vendor::Bedrock => unreachable!("Bedrock is tested in tests/bedrock.rs"),
    }
}

/// Sends `body`, expects 200, and puts the answer together.
async fn turn(fake: &FakeUpstream, stream: bool, body: &Value) -> Turn {
    let resp = post(&loop_url(fake, stream), body).await;
    assert_eq!(resp.status(), 200, "{body}");
    let text = resp.text().await.unwrap();
    let pieces =
        if stream { json_datas(&text) } else { vec![serde_json::from_str(&text).unwrap()] };
    let mut t = Turn::default();
    let mut args = String::new();
    for v in &pieces {
        match fake.vendor() {
            Vendor::OpenAi => {
                let m =
                    if stream { &v["choices"][0]["delta"] } else { &v["choices"][0]["message"] };
                t.thinking += m["reasoning_content"].as_str().unwrap_or("");
                t.text += m["content"].as_str().unwrap_or("");
                if let Some(call) = m["tool_calls"].as_array().and_then(|c| c.first()) {
                    if let Some(name) = call["function"]["name"].as_str() {
                        t.call =
                            Some((call["id"].as_str().unwrap().into(), name.into(), Value::Null));
                    }
                    args += call["function"]["arguments"].as_str().unwrap_or("");
                }
            }
            Vendor::Anthropic => {
                let blocks = match v["content"].as_array() {
                    Some(blocks) => blocks.clone(),
                    None => v.get("content_block").into_iter().cloned().collect(),
                };
                for b in blocks.iter().chain(v.get("delta")) {
                    t.thinking += b["thinking"].as_str().unwrap_or("");
                    t.text += b["text"].as_str().unwrap_or("");
                    args += b["partial_json"].as_str().unwrap_or("");
                    if let Some(sig) = b["signature"].as_str().filter(|s| !s.is_empty()) {
                        t.signature = Some(sig.into());
                    }
                    if b["type"] == "tool_use" {
                        let id = b["id"].as_str().unwrap().into();
                        t.call = Some((id, b["name"].as_str().unwrap().into(), b["input"].clone()));
                    }
                }
            }
            Vendor::Gemini => {
                for p in v["candidates"][0]["content"]["parts"].as_array().unwrap() {
                    let text = p["text"].as_str().unwrap_or("");
                    if p["thought"] == true {
                        t.thinking += text
                    } else {
                        t.text += text
                    }
                    if let Some(sig) = p["thoughtSignature"].as_str() {
                        t.signature = Some(sig.into());
                    }
                    if let Some(call) = p.get("functionCall") {
                        let name = call["name"].as_str().unwrap().into();
                        t.call = Some((String::new(), name, call["args"].clone()));
                    }
                }
            }
            Vendor::Bedrock => unreachable!("Bedrock is tested in tests/bedrock.rs"),
        }
    }
    if let Some((_, _, input)) = &mut t.call
        && !args.is_empty()
    {
        *input = serde_json::from_str(&args).unwrap();
    }
    t
}

/// `request` with the answer `t` and the tool's `output` appended, as the client
/// sends it back.
fn with_result(vendor: Vendor, mut request: Value, t: &Turn, output: &str) -> Value {
    let (id, name, args) = t.call.clone().unwrap();
    match vendor {
        Vendor::OpenAi => {
            let m = request["messages"].as_array_mut().unwrap();
            m.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
                "function": {"name": name, "arguments": args.to_string()}}]}));
            m.push(json!({"role": "tool", "tool_call_id": id, "content": output}));
        }
        Vendor::Anthropic => {
            let mut blocks = Vec::new();
            if let Some(sig) = &t.signature {
                blocks.push(json!({"type": "thinking", "thinking": t.thinking, "signature": sig}));
            }
            blocks.push(json!({"type": "tool_use", "id": id, "name": name, "input": args}));
            let m = request["messages"].as_array_mut().unwrap();
            m.push(json!({"role": "assistant", "content": blocks}));
            m.push(json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": [{"type": "text", "text": output}]},
                {"type": "text", "text": "<system-reminder>not a new prompt</system-reminder>"}
            ]}));
        }
        Vendor::Gemini => {
            let mut call = json!({"functionCall": {"name": name, "args": args}});
            if let Some(sig) = &t.signature {
                call["thoughtSignature"] = sig.as_str().into();
            }
            let c = request["contents"].as_array_mut().unwrap();
            c.push(json!({"role": "model", "parts": [call]}));
            c.push(json!({"role": "user", "parts": [
                {"functionResponse": {"name": name, "response": {"output": output}}}]}));
        }
        Vendor::Bedrock => unreachable!("Bedrock is tested in tests/bedrock.rs"),
    }
    request
}

#[tokio::test]
async fn tool_loop_calls_the_shell_then_quotes_its_result_on_every_wire() {
    for vendor in [Vendor::OpenAi, Vendor::Anthropic, Vendor::Gemini] {
        let fake = FakeUpstream::start(vendor).await.unwrap();
        for stream in [false, true] {
            for thinking in [false, true] {
                let case = format!("{vendor:?} stream={stream} thinking={thinking}");
                let first = loop_request(vendor, stream, thinking);
                let t = within(turn(&fake, stream, &first)).await;
                let (id, name, args) =
                    t.call.clone().unwrap_or_else(|| panic!("{case}: no call: {t:?}"));
                let (shell, prop) = match vendor {
                    Vendor::OpenAi => ("exec_command", "cmd"),
                    Vendor::Anthropic => ("Bash", "command"),
                    Vendor::Gemini => ("run_shell_command", "command"),
                    Vendor::Bedrock => unreachable!("Bedrock is tested in tests/bedrock.rs"),
                };
                assert_eq!(name, shell, "{case}");
                // The schema's required properties, and nothing it does not ask for.
                assert_eq!(
                    args,
                    json!({prop: tool_loop::COMMAND, "description": "Prints the switchyard tool-loop marker"}),
                    "{case}"
                );
                assert_eq!(t.text, "", "{case}: a call without prose");
                match vendor {
                    Vendor::OpenAi => assert_eq!(id, canned::OPENAI_TOOL_CALL_ID),
                    Vendor::Anthropic => assert_eq!(id, canned::ANTHROPIC_TOOL_USE_ID),
                    Vendor::Gemini => {}
                    Vendor::Bedrock => unreachable!("Bedrock is tested in tests/bedrock.rs"),
                }
                let thought = if thinking { tool_loop::THINKING } else { "" };
                assert_eq!(t.thinking.trim_end(), thought, "{case}");
                let signature = match vendor {
                    Vendor::Anthropic if thinking => Some(canned::ANTHROPIC_THINKING_SIGNATURE),
                    Vendor::Gemini => Some(tool_loop::GEMINI_THOUGHT_SIGNATURE),
                    _ => None,
                };
                assert_eq!(t.signature.as_deref(), signature, "{case}");

                let second = with_result(vendor, first, &t, "switchyard-tool-ok\n");
                let done = within(turn(&fake, stream, &second)).await;
                assert_eq!(
                    done.text,
                    format!("{}{}", tool_loop::RESULT_PREFIX, tool_loop::MARKER),
                    "{case}"
                );
                assert!(done.call.is_none() && done.thinking.is_empty(), "{case}: {done:?}");
            }
        }
    }
}

#[tokio::test]
async fn tool_loop_histories_are_still_validated() {
    // Anthropic with thinking on: the call's turn sent back without its thinking.
    let fake = FakeUpstream::start(Vendor::Anthropic).await.unwrap();
    let first = loop_request(Vendor::Anthropic, false, true);
    let mut t = within(turn(&fake, false, &first)).await;
    t.signature = None;
    let resp = post(&loop_url(&fake, false), &with_result(Vendor::Anthropic, first, &t, "x")).await;
    assert_eq!(resp.status(), 400);
    assert!(resp.text().await.unwrap().contains("Expected `thinking` or `redacted_thinking`"));

    // Gemini 3: the call sent back without its signature. Gemini 2.5 takes it.
    let fake = FakeUpstream::start(Vendor::Gemini).await.unwrap();
    let first = loop_request(Vendor::Gemini, false, false);
    let mut t = within(turn(&fake, false, &first)).await;
    t.signature = None;
    let unsigned = with_result(Vendor::Gemini, first, &t, "x");
    let resp = post(&loop_url(&fake, false), &unsigned).await;
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json_lossy().await;
    assert_eq!(v["error"]["status"], "INVALID_ARGUMENT");
    assert!(v["error"]["message"].as_str().unwrap().contains("missing a thought_signature"));
    let url = format!("{}/v1beta/models/gemini-2.5-flash:generateContent", fake.base_url());
    let v: Value = post(&url, &unsigned).await.json_lossy().await;
    assert_eq!(v["candidates"][0]["content"]["parts"][0]["text"], "tool result: x");
}

#[tokio::test]
async fn tool_loop_needs_its_trigger_tools_and_a_usable_tool() {
    let fake = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    // No tools: the echo.
    let v: Value =
        post(&openai_url(&fake), &openai_req("m", PROMPT, false)).await.json_lossy().await;
    assert_eq!(v["choices"][0]["message"]["content"], format!("echo: {PROMPT}"));
    // Tools but no trigger: the echo.
    let mut r = loop_request(Vendor::OpenAi, false, false);
    r["messages"][1]["content"] = json!("just chat");
    let v: Value = post(&openai_url(&fake), &r).await.json_lossy().await;
    assert_eq!(v["choices"][0]["message"]["content"], "echo: just chat");
    // Only a read tool: it reads the path the prompt names; without one, the answer says why.
    r["tools"] = json!([{"type": "function", "function": {"name": "read_file", "parameters":
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]);
    r["messages"][1]["content"] = json!("TOOL_LOOP /tmp/marker.txt");
    let v: Value = post(&openai_url(&fake), &r).await.json_lossy().await;
    let call = &v["choices"][0]["message"]["tool_calls"][0]["function"];
    assert_eq!(call["name"], "read_file");
    assert_eq!(call["arguments"], r#"{"path":"/tmp/marker.txt"}"#);
    r["messages"][1]["content"] = json!("TOOL_LOOP");
    let v: Value = post(&openai_url(&fake), &r).await.json_lossy().await;
    let text = v["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(text.contains("no shell tool") && text.contains("read_file"), "{text}");
}

/// `Response::json` needs reqwest's `json` feature; parse by hand instead.
trait JsonLossy {
    async fn json_lossy(self) -> Value;
}

impl JsonLossy for reqwest::Response {
    async fn json_lossy(self) -> Value {
        serde_json::from_slice(&self.bytes().await.unwrap()).unwrap()
    }
}

/// A scripted canned answer dressed for Azure comes back in Azure's shape, as
/// the fake's own echo does: the prompt's filter results first (a chunk with
/// empty `choices`, or beside the whole answer's), each choice's after.
#[tokio::test]
async fn an_azure_fake_serves_a_dressed_canned_answer_in_azures_shape() {
    use switchyard_testkit::azure;
    let fake = FakeUpstream::start_azure().await.unwrap();
    let url = format!(
        "{}/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
        fake.base_url()
    );
    let messages = json!([{"role": "user", "content": "weather?"}]);
    for stream in [false, true] {
        let answer = canned::tool_call(Vendor::OpenAi, "gpt-4o", "get_weather", "{}", stream);
        fake.push(Reply::from(azure::dress(answer)));
        let body = json!({"messages": messages, "stream": stream});
        let request = client()
            .post(&url)
            .header("api-key", azure::API_KEY)
            .header("content-type", "application/json")
            .body(body.to_string());
        let r = within(request.send()).await.unwrap();
        assert_eq!(r.status(), 200);
        let text = within(r.text()).await.unwrap();
        if stream {
            let first = text.split("\n\n").next().unwrap().strip_prefix("data: ").unwrap();
            let first: Value = serde_json::from_str(first).unwrap();
            assert_eq!(first["choices"], json!([]), "{text}");
            assert!(first["prompt_filter_results"].is_array(), "{text}");
            assert!(text.contains("content_filter_results"), "{text}");
            assert!(text.contains("get_weather"), "{text}");
            assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
        } else {
            let whole: Value = serde_json::from_str(&text).unwrap();
            assert!(whole["prompt_filter_results"].is_array(), "{whole}");
            assert!(whole["choices"][0]["content_filter_results"].is_object(), "{whole}");
            assert_eq!(whole["choices"][0]["finish_reason"], "tool_calls", "{whole}");
        }
    }
}
