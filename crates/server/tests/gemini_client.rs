#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Gemini as a client format, black box: the real server in front of the four
//! strict fakes (OpenAI Chat, Anthropic, Gemini, Bedrock Converse), driven as
//! Google's SDKs and Gemini CLI drive Gemini's API (the model and the method in the
//! path, the key in `x-goog-api-key` or `?key=`).

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use switchyard_testkit::canned::{self, ECHO_PREFIX};
use switchyard_testkit::{Received, Reply, ReplyBody, Vendor};

const VENDORS: [Vendor; 4] = [Vendor::OpenAi, Vendor::Anthropic, Vendor::Gemini, Vendor::Bedrock];
const TOOL: &str = "get_weather";
const ARGS: &str = r#"{"city":"Paris"}"#;

/// How a request carries the gateway key.
#[derive(Clone, Copy)]
enum Key<'a> {
    Header(&'a str),
    Query(&'a str),
    None,
}

/// `POST /v1beta/models/{model}:{method}` (`alt=sse` for a stream).
async fn call(
    h: &Harness,
    model: &str,
    method: &str,
    body: &Value,
    key: Key<'_>,
) -> (u16, Vec<u8>) {
    let mut url = format!("{}/v1beta/models/{model}:{method}", h.base);
    let mut query = Vec::new();
    if method == "streamGenerateContent" {
        query.push("alt=sse".to_owned());
    }
    if let Key::Query(k) = key {
        query.push(format!("key={k}"));
    }
    if !query.is_empty() {
        url = format!("{url}?{}", query.join("&"));
    }
    let mut req = h.client.post(url).header("content-type", "application/json");
    if let Key::Header(k) = key {
        req = req.header("x-goog-api-key", k);
    }
    let resp = req.body(body.to_string()).send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.bytes().await.unwrap().to_vec())
}

async fn generate(h: &Harness, model: &str, stream: bool, body: &Value) -> (u16, Vec<u8>) {
    let method = if stream { "streamGenerateContent" } else { "generateContent" };
    call(h, model, method, body, Key::Header(GATEWAY_KEY)).await
}

async fn get(h: &Harness, path: &str, key: Key<'_>) -> (u16, Value) {
    let mut url = format!("{}{path}", h.base);
    if let Key::Query(k) = key {
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str(&format!("key={k}"));
    }
    let mut req = h.client.get(url);
    if let Key::Header(k) = key {
        req = req.header("x-goog-api-key", k);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// The chunks of an answer: the one body, or each SSE event's JSON, read as
/// Google's SDKs read a stream (each event a `data:` line after optional
/// whitespace, nothing else), so a stream they would choke on fails here.
fn chunks(bytes: &[u8], stream: bool) -> Vec<Value> {
    let text = String::from_utf8_lossy(bytes).into_owned();
    if !stream {
        return vec![serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))];
    }
    let mut out = Vec::new();
    let mut rest = text.as_str();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return out;
        }
        let Some(data) = rest.strip_prefix("data: ") else {
            panic!("a Google SDK stops reading at {rest:?}\nin {text:?}")
        };
        let end = ["\n\n", "\r\n\r\n"]
            .iter()
            .filter_map(|sep| data.find(sep))
            .min()
            .unwrap_or_else(|| panic!("unterminated event in {text:?}"));
        out.push(serde_json::from_str(&data[..end]).unwrap_or_else(|e| panic!("{e}: {text}")));
        rest = &data[end..];
    }
}

/// Every part the answer's chunks hold, in order.
fn parts(chunks: &[Value]) -> Vec<Value> {
    chunks
        .iter()
        .flat_map(|c| {
            c["candidates"][0]["content"]["parts"].as_array().cloned().unwrap_or_default()
        })
        .collect()
}

fn text_of(parts: &[Value]) -> String {
    parts.iter().filter_map(|p| p["text"].as_str()).collect()
}

fn user(text: &str) -> Value {
    json!({"role": "user", "parts": [{"text": text}]})
}

fn tools() -> Value {
    json!([{"functionDeclarations": [{
        "name": TOOL, "description": "Current weather in a city",
        "parametersJsonSchema": {"type": "object", "properties": {"city": {"type": "string"}}}
    }]}])
}

/// The upstream's last request, within [`WAIT`].
async fn last_request(h: &Harness, v: Vendor, before: usize) -> Received {
    let got = tokio::time::timeout(WAIT, h.fake(v).wait_for_requests(before + 1)).await.unwrap();
    got.last().cloned().unwrap()
}

// ---------------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------------

/// A text turn, whole and streamed, on every upstream wire: the answer in Gemini's
/// shape naming the model as asked, usage as `usageMetadata`; the upstream called
/// in its own shape, a Gemini upstream with the client's own bytes (no `model` in
/// the body: it is in the URL).
#[tokio::test]
async fn text_turns_on_every_wire() {
    let h = Harness::start().await;
    let body = json!({
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [user("hello gemini")],
        "generationConfig": {"temperature": 0.5, "maxOutputTokens": 256},
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
    });
    for v in VENDORS {
        for stream in [false, true] {
            let at = format!("{v:?} stream={stream}");
            let before = h.fake(v).request_count();
            let (status, bytes) = generate(&h, catalog_model(v), stream, &body).await;
            assert_eq!(status, 200, "{at}: {}", String::from_utf8_lossy(&bytes));
            let chunks = chunks(&bytes, stream);
            let parts = parts(&chunks);
            assert_eq!(text_of(&parts), format!("{ECHO_PREFIX}hello gemini"), "{at}");
            let last = chunks.last().unwrap();
            assert_eq!(last["candidates"][0]["finishReason"], "STOP", "{at}: {last}");
            assert!(last["usageMetadata"]["promptTokenCount"].as_u64() > Some(0), "{at}: {last}");
            for c in &chunks {
                if !c["modelVersion"].is_null() {
                    assert_eq!(c["modelVersion"], catalog_model(v), "{at}: the model as asked");
                }
            }
            let rx = last_request(&h, v, before).await;
            let up = upstream_model(v);
            match v {
                Vendor::Gemini => {
                    let method = if stream { "streamGenerateContent" } else { "generateContent" };
                    assert_eq!(rx.path, format!("/v1beta/models/{up}:{method}"), "{at}");
                    assert_eq!(rx.raw, body.to_string().as_bytes(), "{at}: the client's bytes");
                    assert_eq!(rx.header("x-goog-api-key"), Some(GEMINI_KEY), "{at}");
                }
                Vendor::OpenAi => {
                    assert_eq!(rx.body["model"], up, "{at}");
                    assert_eq!(rx.body["messages"][0]["role"], "system", "{at}");
                    assert_eq!(rx.body["max_completion_tokens"], 256, "{at}: {}", rx.body);
                }
                Vendor::Anthropic => {
                    assert_eq!(rx.body["model"], up, "{at}");
                    assert_eq!(rx.body["system"][0]["text"], "Be brief.", "{at}: {}", rx.body);
                    assert_eq!(rx.body["max_tokens"], 256, "{at}");
                }
                Vendor::Bedrock => {
                    // Converse: the model and the stream in the path, signed.
                    let action = if stream { "converse-stream" } else { "converse" };
                    let model = up.replace(':', "%3A");
                    assert_eq!(rx.path, format!("/model/{model}/{action}"), "{at}");
                    assert!(rx.body.get("model").is_none(), "{at}: {}", rx.body);
                    let auth = rx.header("authorization").unwrap_or_default();
                    assert!(auth.starts_with("AWS4-HMAC-SHA256 Credential="), "{at}: {auth}");
                    assert_eq!(rx.body["system"], json!([{"text": "Be brief."}]), "{at}");
                    assert_eq!(
                        rx.body["messages"],
                        json!([{"role": "user", "content": [{"text": "hello gemini"}]}]),
                        "{at}"
                    );
                    let config = &rx.body["inferenceConfig"];
                    assert_eq!(config["maxTokens"], 256, "{at}: {}", rx.body);
                    assert_eq!(config["temperature"], 0.5, "{at}: {}", rx.body);
                }
            }
            // Only the wires that say it in the body (Gemini and Bedrock by the path).
            let flagged = match v {
                Vendor::OpenAi | Vendor::Anthropic => stream,
                Vendor::Gemini | Vendor::Bedrock => false,
            };
            assert_eq!(rx.body["stream"].as_bool().unwrap_or(false), flagged, "{at}");
        }
    }
    let rec = h.sink.records();
    assert!(rec.iter().all(|r| r.client_format == "gemini"), "{rec:?}");
}

/// A deployment's output ceiling reaches a Gemini upstream inside the client's own
/// body (`generationConfig.maxOutputTokens`), the rest as the client wrote it, and
/// still no `model` in the body.
#[tokio::test]
async fn the_output_ceiling_is_kept_on_the_fast_path() {
    let extra = "  - id: m-gemini-capped\n    max_output_tokens: 100\n    \
                 deployments: [{ provider: gemini, model: up-gemini }]\n";
    let h = Harness::start_with(Options { extra_models: extra.into(), ..Options::default() }).await;
    let body = json!({"contents": [user("hi")],
        "generationConfig": {"temperature": 0.2, "maxOutputTokens": 5000},
        "cachedContent": "cachedContents/abc"});
    let (status, bytes) = generate(&h, "m-gemini-capped", false, &body).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let rx = last_request(&h, Vendor::Gemini, 0).await;
    assert_eq!(
        rx.body,
        json!({"contents": [user("hi")], "cachedContent": "cachedContents/abc",
               "generationConfig": {"temperature": 0.2, "maxOutputTokens": 100}})
    );
}

/// A Gemini client's Google Search is a hosted tool like any other format's:
/// taken out of its own body for a deployment that does not run it (and said
/// so), and declared as Anthropic's web search for a Claude deployment.
#[tokio::test]
async fn a_gemini_clients_google_search_goes_where_it_can_run_and_nowhere_else() {
    let extra = "  - id: m-gemini-bare\n    max_output_tokens: 100\n    \
                 deployments: [{ provider: gemini, model: up-gemini, server_tools: [] }]\n";
    let h = Harness::start_with(Options { extra_models: extra.into(), ..Options::default() }).await;
    let body = json!({"contents": [user("news?")], "tools": [{"googleSearch": {}}],
        "generationConfig": {"temperature": 0.2, "maxOutputTokens": 5000}});
    let (status, bytes) = generate(&h, "m-gemini-bare", false, &body).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let rx = last_request(&h, Vendor::Gemini, 0).await;
    // Still a Gemini body: no `model` (Gemini refuses unknown fields), the
    // deployment's ceiling nested where Gemini reads it, the search gone.
    assert_eq!(
        rx.body,
        json!({"contents": [user("news?")],
               "generationConfig": {"temperature": 0.2, "maxOutputTokens": 100}})
    );
    let before = h.fake(Vendor::Anthropic).request_count();
    let (status, bytes) = generate(&h, "m-anthropic", false, &body).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let rx = last_request(&h, Vendor::Anthropic, before).await;
    let tools = rx.body["tools"].as_array().cloned().unwrap_or_default();
    assert!(
        tools.iter().any(|t| t["type"].as_str().is_some_and(|t| t.starts_with("web_search"))),
        "declared as Anthropic's web search: {}",
        rx.body
    );
}

/// A stream whose upstream pauses gets keep-alives a Google SDK reads past (an
/// SSE comment would stall it: it reads only `data:` lines), translated and
/// passed through.
#[tokio::test]
async fn keepalives_are_ones_google_sdks_skip() {
    let h = Harness::start_with(Options { keepalive_ms: 100, ..Options::default() }).await;
    for v in [Vendor::OpenAi, Vendor::Gemini] {
        let ReplyBody::Sse(frames) = canned::text(v, upstream_model(v), "slow and steady", true)
        else {
            panic!("canned stream is SSE")
        };
        h.fake(v).push(Reply::sse(frames).chunk_delay(Duration::from_millis(250)));
        let (status, bytes) =
            generate(&h, catalog_model(v), true, &json!({"contents": [user("x")]})).await;
        assert_eq!(status, 200);
        let text = String::from_utf8_lossy(&bytes);
        // An event ends with an empty line; a keep-alive is one more.
        assert!(text.replace('\r', "").contains("\n\n\n"), "{v:?}: no keep-alive in {text:?}");
        assert_eq!(text_of(&parts(&chunks(&bytes, true))), "slow and steady", "{v:?}");
    }
}

/// A valid 1×1 PNG.
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// An inline image and a thinking budget, whole and streamed, on every wire: the
/// image reaches the upstream as its own kind of image block, the budget as its
/// own reasoning setting, and the answer's thinking comes back as thought parts
/// before the text.
#[tokio::test]
async fn an_image_and_thinking_on_every_wire() {
    let h = Harness::start().await;
    let body = json!({
        "contents": [{"role": "user", "parts": [
            {"text": "what is in this image?"},
            {"inlineData": {"mimeType": "image/png", "data": PNG_B64}},
        ]}],
        "generationConfig": {"maxOutputTokens": 8192,
            "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 2048}},
    });
    for v in VENDORS {
        for stream in [false, true] {
            let at = format!("{v:?} stream={stream}");
            let answer =
                canned::reasoning_then_text(v, upstream_model(v), "pondering", "a dot", stream);
            h.fake(v).push(answer.into());
            let before = h.fake(v).request_count();
            let (status, bytes) = generate(&h, catalog_model(v), stream, &body).await;
            assert_eq!(status, 200, "{at}: {}", String::from_utf8_lossy(&bytes));
            let parts = parts(&chunks(&bytes, stream));
            let thought: String = parts
                .iter()
                .filter(|p| p["thought"] == true)
                .filter_map(|p| p["text"].as_str())
                .collect();
            assert_eq!(thought, "pondering", "{at}: {parts:?}");
            let said: String = parts
                .iter()
                .filter(|p| p["thought"] != true)
                .filter_map(|p| p["text"].as_str())
                .collect();
            assert_eq!(said, "a dot", "{at}: {parts:?}");
            let rx = last_request(&h, v, before).await;
            let b = &rx.body;
            match v {
                Vendor::Gemini => {
                    assert_eq!(rx.raw, body.to_string().as_bytes(), "{at}: as sent");
                }
                Vendor::OpenAi => {
                    let url = &b["messages"][0]["content"][1]["image_url"]["url"];
                    assert_eq!(
                        url,
                        &json!(format!("data:image/png;base64,{PNG_B64}")),
                        "{at}: {b}"
                    );
                    assert!(b["reasoning_effort"].is_string(), "{at}: {b}");
                }
                Vendor::Anthropic => {
                    let source = &b["messages"][0]["content"][1]["source"];
                    assert_eq!(
                        source,
                        &json!({"type": "base64", "media_type": "image/png", "data": PNG_B64}),
                        "{at}: {b}"
                    );
                    assert_eq!(
                        b["thinking"],
                        json!({"type": "enabled", "budget_tokens": 2048}),
                        "{at}: {b}"
                    );
                    assert_eq!(b["max_tokens"], 8192, "{at}: {b}");
                }
                Vendor::Bedrock => {
                    assert_eq!(
                        b["messages"][0]["content"],
                        json!([{"text": "what is in this image?"},
                               {"image": {"format": "png", "source": {"bytes": PNG_B64}}}]),
                        "{at}: {b}"
                    );
                    assert_eq!(
                        b["additionalModelRequestFields"]["thinking"],
                        json!({"type": "enabled", "budget_tokens": 2048}),
                        "{at}: {b}"
                    );
                    assert_eq!(b["inferenceConfig"]["maxTokens"], 8192, "{at}: {b}");
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------

/// The id a functionResponse gives the call it answers, as Gemini CLI does: the
/// call's own id, or one it makes up for a call without one.
fn response_id(call: &Value) -> Value {
    call["id"].as_str().map_or_else(|| json!(format!("{TOOL}-1700000000000-4f2a")), |id| json!(id))
}

/// A tool round trip on every wire, whole and streamed: the call comes back in
/// Gemini's shape; the next request, carrying the call as it came and its
/// `functionResponse`, is taken by the strict upstream with the call and its result
/// paired. A history begun on one wire continues on every other.
#[tokio::test]
async fn a_tool_round_trip_on_every_wire() {
    let h = Harness::start().await;
    for first in VENDORS {
        for stream in [false, true] {
            let at = format!("{first:?} stream={stream}");
            let fake = h.fake(first);
            fake.push(canned::tool_call(first, upstream_model(first), TOOL, ARGS, stream).into());
            let question = json!({"contents": [user("weather in Paris?")], "tools": tools()});
            let (status, bytes) = generate(&h, catalog_model(first), stream, &question).await;
            assert_eq!(status, 200, "{at}: {}", String::from_utf8_lossy(&bytes));
            let chunks = chunks(&bytes, stream);
            let parts = parts(&chunks);
            let call_part = parts
                .iter()
                .find(|p| p.get("functionCall").is_some())
                .unwrap_or_else(|| panic!("{at}: no call in {parts:?}"))
                .clone();
            let fc = &call_part["functionCall"];
            assert_eq!(fc["name"], TOOL, "{at}");
            assert_eq!(fc["args"], json!({"city": "Paris"}), "{at}");
            if first != Vendor::Gemini {
                // The id the client sends back with the call and its result.
                assert!(fc["id"].is_string(), "{at}: {fc}");
            }
            let last = chunks.last().unwrap();
            assert_eq!(last["candidates"][0]["finishReason"], "STOP", "{at}");

            let history = json!({"tools": tools(), "contents": [
                user("weather in Paris?"),
                {"role": "model", "parts": [call_part]},
                {"role": "user", "parts": [{"functionResponse": {
                    "id": response_id(fc), "name": TOOL, "response": {"output": "18C"}}}]},
            ]});
            for next in VENDORS {
                let at = format!("{at} then {next:?}");
                let before = h.fake(next).request_count();
                let (status, bytes) = generate(&h, catalog_model(next), stream, &history).await;
                assert_eq!(status, 200, "{at}: {}", String::from_utf8_lossy(&bytes));
                let rx = last_request(&h, next, before).await;
                let b = &rx.body;
                match next {
                    Vendor::OpenAi => {
                        let id = &b["messages"][1]["tool_calls"][0]["id"];
                        assert!(id.is_string(), "{at}: {b}");
                        assert_eq!(&b["messages"][2]["tool_call_id"], id, "{at}: {b}");
                        assert!(b["messages"][2]["content"].to_string().contains("18C"), "{at}");
                    }
                    Vendor::Anthropic => {
                        let id = &b["messages"][1]["content"][0]["id"];
                        assert!(id.is_string(), "{at}: {b}");
                        assert_eq!(&b["messages"][2]["content"][0]["tool_use_id"], id, "{at}: {b}");
                    }
                    Vendor::Gemini => {
                        assert_eq!(rx.raw, history.to_string().as_bytes(), "{at}: as sent");
                    }
                    Vendor::Bedrock => {
                        // Blocks (a `toolConfig` goes), the result first in its
                        // user turn and paired with the call by id.
                        assert_eq!(b["toolConfig"]["tools"][0]["toolSpec"]["name"], TOOL, "{at}");
                        let call = &b["messages"][1]["content"][0]["toolUse"];
                        assert_eq!(call["name"], TOOL, "{at}: {b}");
                        assert_eq!(call["input"], json!({"city": "Paris"}), "{at}: {b}");
                        let id = &call["toolUseId"];
                        assert!(id.is_string(), "{at}: {b}");
                        let result = &b["messages"][2]["content"][0]["toolResult"];
                        assert_eq!(&result["toolUseId"], id, "{at}: {b}");
                        assert!(result["content"].to_string().contains("18C"), "{at}: {b}");
                    }
                }
            }
        }
    }
}

/// Gemini CLI's thinking on a Claude upstream through a tool loop: the answer's
/// thought parts carry no signature, so the gateway keeps the signed thinking by
/// the call's id, and puts it back in front of the call when the call comes back
/// (the strict Anthropic fake refuses a loop with thinking on whose thinking was
/// lost); on Claude by Bedrock the same, as Converse's `reasoningContent`.
#[tokio::test]
async fn thinking_survives_a_tool_round_trip_on_claude() {
    let h = Harness::start().await;
    let thinking = json!({"thinkingConfig": {"includeThoughts": true, "thinkingBudget": 2048},
                          "maxOutputTokens": 8192});
    for (v, stream) in
        [Vendor::Anthropic, Vendor::Bedrock].map(|v| [(v, false), (v, true)]).concat()
    {
        let at = format!("{v:?} stream={stream}");
        h.fake(v).push(
            canned::reasoning_then_tool_call(
                v,
                upstream_model(v),
                "let me look",
                TOOL,
                ARGS,
                stream,
            )
            .into(),
        );
        let question = json!({"contents": [user("weather?")], "tools": tools(),
                              "generationConfig": thinking});
        let (status, bytes) = generate(&h, catalog_model(v), stream, &question).await;
        assert_eq!(status, 200, "{at}: {}", String::from_utf8_lossy(&bytes));
        let parts = parts(&chunks(&bytes, stream));
        assert!(parts.iter().any(|p| p["thought"] == true), "{at}: {parts:?}");
        // Gemini CLI sends its history without the thoughts.
        let model_parts: Vec<Value> =
            parts.iter().filter(|p| p.get("functionCall").is_some()).cloned().collect();
        let fc = &model_parts[0]["functionCall"];
        let history = json!({"tools": tools(), "generationConfig": thinking, "contents": [
            user("weather?"),
            {"role": "model", "parts": model_parts},
            {"role": "user", "parts": [{"functionResponse": {
                "id": response_id(fc), "name": TOOL, "response": {"output": "18C"}}}]},
        ]});
        let before = h.fake(v).request_count();
        let (status, bytes) = generate(&h, catalog_model(v), stream, &history).await;
        assert_eq!(status, 200, "{at}: {}", String::from_utf8_lossy(&bytes));
        let rx = last_request(&h, v, before).await;
        let assistant = &rx.body["messages"][1]["content"];
        let (thinking, block) = match v {
            Vendor::Anthropic => {
                assert_eq!(assistant[0]["type"], "thinking", "{at}: {assistant}");
                assert_eq!(assistant[1]["type"], "tool_use", "{at}: {assistant}");
                (&rx.body["thinking"], &assistant[0])
            }
            Vendor::Bedrock => {
                assert!(assistant[1]["toolUse"].is_object(), "{at}: {assistant}");
                (
                    &rx.body["additionalModelRequestFields"]["thinking"],
                    &assistant[0]["reasoningContent"]["reasoningText"],
                )
            }
            Vendor::OpenAi | Vendor::Gemini => unreachable!("Claude wires only"),
        };
        assert_eq!(thinking["type"], "enabled", "{at}: {}", rx.body);
        assert_eq!(block["signature"], canned::ANTHROPIC_THINKING_SIGNATURE, "{at}: {assistant}");
    }
}

// ---------------------------------------------------------------------------------
// countTokens, models, keys, errors
// ---------------------------------------------------------------------------------

/// `:countTokens` answers `{"totalTokens": N}` for every wire, for a bare body and
/// one wrapped in `generateContentRequest`: counted by the Anthropic, Gemini and
/// Bedrock upstreams' own endpoints (whose fakes refuse a body not of their
/// format), estimated for OpenAI-chat (whose wire states no counting endpoint).
#[tokio::test]
async fn count_tokens_answers_in_geminis_shape() {
    let h = Harness::start().await;
    let contents = json!([user("how many tokens is this sentence, roughly?")]);
    for v in VENDORS {
        for body in [
            json!({"contents": contents}),
            json!({"generateContentRequest": {"model": format!("models/{}", catalog_model(v)), "contents": contents}}),
        ] {
            let (status, bytes) =
                call(&h, catalog_model(v), "countTokens", &body, Key::Header(GATEWAY_KEY)).await;
            assert_eq!(status, 200, "{v:?}: {}", String::from_utf8_lossy(&bytes));
            let answer: Value = serde_json::from_slice(&bytes).unwrap();
            let n = answer["totalTokens"].as_u64().unwrap_or(0);
            assert!(n > 5, "{v:?} {body}: {answer}");
        }
    }
    assert_eq!(
        h.upstream_requests(),
        6,
        "two counts each on Anthropic, Gemini and Bedrock, none on OpenAI"
    );
    let (status, bytes) =
        call(&h, "m-nope", "countTokens", &json!({"contents": contents}), Key::Header(GATEWAY_KEY))
            .await;
    let err: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!((status, err["error"]["status"].as_str()), (404, Some("NOT_FOUND")), "{err}");
}

/// `GET /v1beta/models` lists what the caller can reach in Gemini's shape, paged;
/// `GET /v1beta/models/{id}` answers one (hidden ones too), or Google's 404.
#[tokio::test]
async fn models_in_geminis_shape() {
    let h = Harness::start().await;
    let (status, list) = get(&h, "/v1beta/models", Key::Header(GATEWAY_KEY)).await;
    assert_eq!(status, 200, "{list}");
    let names: Vec<&str> =
        list["models"].as_array().unwrap().iter().filter_map(|m| m["name"].as_str()).collect();
    assert!(names.contains(&"models/m-openai") && names.contains(&"models/m-gemini"), "{names:?}");
    assert!(!names.contains(&"models/m-hidden"), "hidden models are not listed");
    // The same models the other formats' lists show.
    let openai: Value = h
        .client
        .get(format!("{}/v1/models", h.base))
        .bearer_auth(GATEWAY_KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<String> = openai["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("models/{}", m["id"].as_str().unwrap()))
        .collect();
    assert_eq!(names, ids);
    let first = &list["models"][0];
    assert_eq!(
        first["supportedGenerationMethods"],
        json!(["generateContent", "streamGenerateContent", "countTokens"])
    );
    assert!(list.get("nextPageToken").is_none(), "{list}");

    // Two at a time, to the end, by nextPageToken.
    let mut paged = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let path = match &token {
            None => "/v1beta/models?pageSize=2".to_owned(),
            Some(t) => format!("/v1beta/models?pageSize=2&pageToken={t}"),
        };
        let (status, page) = get(&h, &path, Key::Query(GATEWAY_KEY)).await;
        assert_eq!(status, 200, "{page}");
        let models = page["models"].as_array().unwrap();
        assert!(models.len() <= 2);
        paged.extend(models.iter().filter_map(|m| m["name"].as_str().map(str::to_owned)));
        match page["nextPageToken"].as_str() {
            Some(t) => token = Some(t.to_owned()),
            None => break,
        }
    }
    assert_eq!(paged, names);

    for path in ["/v1beta/models/m-gemini", "/v1beta/models/models/m-gemini"] {
        let (status, m) = get(&h, path, Key::Header(GATEWAY_KEY)).await;
        assert_eq!((status, &m["name"]), (200, &json!("models/m-gemini")), "{path}: {m}");
    }
    let (status, m) = get(&h, "/v1beta/models/m-hidden", Key::Header(GATEWAY_KEY)).await;
    assert_eq!(status, 200, "{m}");
    let (status, err) = get(&h, "/v1beta/models/m-nope", Key::Header(GATEWAY_KEY)).await;
    assert_eq!(status, 404);
    assert_eq!(err["error"]["code"], 404);
    assert_eq!(err["error"]["status"], "NOT_FOUND");
    assert_eq!(err["error"]["details"][0]["reason"], "model_not_found", "{err}");
    let (status, err) = get(&h, "/v1beta/models?pageSize=x", Key::Header(GATEWAY_KEY)).await;
    assert_eq!((status, &err["error"]["status"]), (400, &json!("INVALID_ARGUMENT")), "{err}");
}

/// The key in `x-goog-api-key` or `?key=`; a missing or refused one gets Google's
/// error shape (401, `UNAUTHENTICATED`), on every endpoint.
#[tokio::test]
async fn keys_by_header_or_query_and_refusals_in_googles_shape() {
    let h = Harness::start().await;
    let body = json!({"contents": [user("hi")]});
    for key in [Key::Header(GATEWAY_KEY), Key::Query(GATEWAY_KEY)] {
        let (status, bytes) = call(&h, "m-openai", "generateContent", &body, key).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
        let (status, bytes) = call(&h, "m-openai", "streamGenerateContent", &body, key).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
        assert_eq!(get(&h, "/v1beta/models", key).await.0, 200);
    }
    let before = h.upstream_requests();
    for key in
        [Key::Header("sk-gw-wrong-key-000000"), Key::Query("sk-gw-wrong-key-000000"), Key::None]
    {
        for method in ["generateContent", "streamGenerateContent", "countTokens"] {
            let (status, bytes) = call(&h, "m-openai", method, &body, key).await;
            let err: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(status, 401, "{method}: {err}");
            assert_eq!(err["error"]["code"], 401, "{err}");
            assert_eq!(err["error"]["status"], "UNAUTHENTICATED", "{err}");
            assert!(err["error"]["message"].is_string(), "{err}");
        }
        for path in ["/v1beta/models", "/v1beta/models/m-openai"] {
            let (status, err) = get(&h, path, key).await;
            assert_eq!(
                (status, &err["error"]["status"]),
                (401, &json!("UNAUTHENTICATED")),
                "{err}"
            );
        }
    }
    assert_eq!(h.upstream_requests(), before, "a refused key reaches no upstream");
}

/// Unknown endpoints and methods under `/v1beta`, and the stream form not served,
/// answer in Google's shape.
#[tokio::test]
async fn unknown_endpoints_answer_in_googles_shape() {
    let h = Harness::start().await;
    let body = json!({"contents": [user("hi")]});
    let (status, bytes) =
        call(&h, "m-openai", "generateAnswer", &body, Key::Header(GATEWAY_KEY)).await;
    let err: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!((status, &err["error"]["status"]), (404, &json!("NOT_FOUND")), "{err}");
    for path in ["/v1beta/files", "/v1beta/cachedContents/x"] {
        let (status, err) = get(&h, path, Key::Header(GATEWAY_KEY)).await;
        assert_eq!((status, &err["error"]["status"]), (404, &json!("NOT_FOUND")), "{path}: {err}");
    }
    let resp = h
        .client
        .delete(format!("{}/v1beta/models/m-openai", h.base))
        .header("x-goog-api-key", GATEWAY_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["status"], "NOT_FOUND", "{err}");
    // A stream without `alt=sse` would be one JSON array: refused, not mis-served.
    let resp = h
        .client
        .post(format!("{}/v1beta/models/m-openai:streamGenerateContent", h.base))
        .header("x-goog-api-key", GATEWAY_KEY)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["status"], "INVALID_ARGUMENT", "{err}");
    assert!(err["error"]["message"].as_str().unwrap().contains("alt=sse"), "{err}");
    // A body that is not Gemini's.
    let (status, bytes) =
        call(&h, "m-openai", "generateContent", &json!({"contents": 3}), Key::Header(GATEWAY_KEY))
            .await;
    let err: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!((status, &err["error"]["status"]), (400, &json!("INVALID_ARGUMENT")), "{err}");
    assert_eq!(err["error"]["details"][0]["reason"], "invalid_request", "{err}");
}

/// Captured log output.
#[derive(Clone, Default)]
struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl LogBuffer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// A key in `?key=` never reaches the logs, at trace level, whether it is taken or
/// refused, on every `/v1beta` endpoint (unknown ones too), nor the records.
#[tokio::test]
async fn query_keys_never_reach_the_logs() {
    const REFUSED: &str = "sk-gw-refused-query-key-9876";
    let logs = LogBuffer::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter("trace")
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);

    let h = Harness::start().await;
    let body = json!({"contents": [user("hi")]});
    for key in [GATEWAY_KEY, REFUSED] {
        for v in VENDORS {
            for method in ["generateContent", "streamGenerateContent", "countTokens"] {
                call(&h, catalog_model(v), method, &body, Key::Query(key)).await;
            }
        }
        call(&h, "m-nope", "generateContent", &body, Key::Query(key)).await;
        call(&h, "m-openai", "embedContent", &body, Key::Query(key)).await;
        for path in ["/v1beta/models", "/v1beta/models/m-openai", "/v1beta/files"] {
            get(&h, path, Key::Query(key)).await;
        }
    }
    // The failing upstream's error, with the request logged on its way.
    h.openai.push(Reply::error(500, "upstream broke"));
    call(&h, "m-openai", "generateContent", &body, Key::Query(GATEWAY_KEY)).await;
    let text = logs.text();
    assert!(text.contains("request refused"), "the logs were captured: {text}");
    for key in [GATEWAY_KEY, REFUSED] {
        assert!(!text.contains(key), "a query key was logged:\n{text}");
    }
    for rec in h.sink.records() {
        let rec = format!("{rec:?}");
        assert!(!rec.contains(GATEWAY_KEY) && !rec.contains(REFUSED), "{rec}");
    }
}
