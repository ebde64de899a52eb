//! The Bedrock fake over real HTTP: requests signed with the gateway's own
//! SigV4 signer, streams read with the gateway's own event-stream framer and
//! Converse decoder (so the fake's frames and CRCs are proven by an
//! independent reader).

// Test helpers outside `#[test]` functions count as non-test code to clippy.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use switchyard_core::credentials::aws::{AwsCredentials, sign};
use switchyard_core::util::Secret;
use switchyard_protocol::{
    BlockKind, Delta, Framing, ProtocolError, StopReason, StreamDecoder, StreamEvent,
};
use switchyard_testkit::bedrock::{self, BedrockAuth, eventstream};
use switchyard_testkit::{FakeUpstream, Reply, ReplyBody, Vendor, canned};

const LIMIT: Duration = Duration::from_secs(10);
const MODEL: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
const MODEL_PATH: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1%3A0";

async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f).await.expect("timed out")
}

fn client() -> reqwest::Client {
    // reqwest is built with `rustls-no-provider`: install one, even for http.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().timeout(LIMIT).build().unwrap()
}

fn good_creds() -> AwsCredentials {
    AwsCredentials::new(bedrock::ACCESS_KEY_ID, bedrock::SECRET_ACCESS_KEY, None)
}

fn hello() -> Value {
    json!({"messages": [{"role": "user", "content": [{"text": "hello there"}]}]})
}

/// How a test signs (or mis-signs) one request.
struct Signing {
    creds: AwsCredentials,
    region: &'static str,
    time: SystemTime,
}

impl Default for Signing {
    fn default() -> Self {
        Signing { creds: good_creds(), region: bedrock::REGION, time: SystemTime::now() }
    }
}

/// The headers the gateway's signer adds for a POST of `body` to `url`.
fn signed(url: &str, body: &[u8], s: &Signing) -> Vec<(String, String)> {
    let extra = [("content-type", "application/json")];
    let mut out = sign("POST", url, &extra, body, &s.creds, s.region, "bedrock", s.time).unwrap();
    out.push(("content-type".to_owned(), "application/json".to_owned()));
    out
}

async fn send(url: &str, headers: &[(String, String)], body: Vec<u8>) -> reqwest::Response {
    let mut request = client().post(url).body(body);
    for (k, v) in headers {
        request = request.header(k, v);
    }
    request.send().await.unwrap()
}

/// A signed POST to `/model/{MODEL}/{action}`.
async fn call(fake: &FakeUpstream, action: &str, body: &Value) -> reqwest::Response {
    let url = format!("{}/model/{MODEL_PATH}/{action}", fake.base_url());
    let bytes = body.to_string().into_bytes();
    let headers = signed(&url, &bytes, &Signing::default());
    send(&url, &headers, bytes).await
}

/// Status, `x-amzn-ErrorType` and the body's `message`.
async fn refusal(response: reqwest::Response) -> (u16, String, String) {
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("x-amzn-errortype")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    (status, kind, body["message"].as_str().unwrap_or_default().to_owned())
}

/// The canonical events of a ConverseStream body, read with the gateway's own
/// framer and decoder; `Err` as the decoder reports it.
fn decode(bytes: &[u8]) -> Result<Vec<StreamEvent>, ProtocolError> {
    let mut framer = Framing::AwsEventStream.framer();
    let mut frames = Vec::new();
    // Fed in small pieces, so frames split across reads are joined right.
    for piece in bytes.chunks(7) {
        framer.push(piece, &mut frames).unwrap();
    }
    framer.finish(&mut frames).unwrap();
    let mut decoder = switchyard_protocol::bedrock::Decoder::new();
    let mut events = Vec::new();
    for frame in &frames {
        decoder.push(frame, &mut events)?;
    }
    decoder.finish(&mut events)?;
    Ok(events)
}

fn text_of(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Delta { delta: Delta::Text { text }, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_signed_converse_gets_the_canned_answer_and_the_model_is_recorded_decoded() {
    let fake = FakeUpstream::start(Vendor::Bedrock).await.unwrap();
    let response = call(&fake, "converse", &hello()).await;
    assert_eq!(response.status(), 200);
    let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(body["output"]["message"]["role"], "assistant");
    assert_eq!(body["output"]["message"]["content"][0]["text"], "echo: hello there");
    assert_eq!(body["stopReason"], "end_turn");
    assert_eq!(body["usage"]["inputTokens"], canned::CANNED_INPUT_TOKENS);
    assert_eq!(body["usage"]["cacheReadInputTokens"], canned::CANNED_CACHE_READ_INPUT_TOKENS);
    assert_eq!(body["usage"]["cacheWriteInputTokens"], canned::CANNED_CACHE_CREATION_INPUT_TOKENS);
    assert_eq!(body["usage"]["totalTokens"], 11 + 7 + 3 + 2);
    assert_eq!(body["metrics"]["latencyMs"], bedrock::answer::LATENCY_MS);
    // The gateway's own parser reads it.
    let parsed = switchyard_protocol::bedrock::parse_response(body.to_string().as_bytes());
    assert!(parsed.is_ok(), "{parsed:?}");

    let seen = within(fake.wait_for_requests(1)).await;
    assert_eq!(seen[0].path, format!("/model/{MODEL_PATH}/converse"));
    assert_eq!(seen[0].bedrock_model().as_deref(), Some(MODEL));
}

#[tokio::test]
async fn temporary_credentials_verify_with_their_signed_session_token() {
    let fake = FakeUpstream::start(Vendor::Bedrock).await.unwrap();
    let url = format!("{}/model/{MODEL_PATH}/converse?x=1%202", fake.base_url());
    let body = hello().to_string().into_bytes();
    let creds = AwsCredentials::new(
        bedrock::ACCESS_KEY_ID,
        bedrock::SECRET_ACCESS_KEY,
        Some(Secret::new("FwoGZXIvYXdzEXAMPLE+token/==")),
    );
    let headers = signed(&url, &body, &Signing { creds, ..Signing::default() });
    assert!(headers.iter().any(|(k, _)| k == "x-amz-security-token"));
    assert_eq!(send(&url, &headers, body).await.status(), 200);
}

#[tokio::test]
async fn what_aws_refuses_in_a_signature_is_refused_with_its_error_type() {
    let fake = FakeUpstream::start(Vendor::Bedrock).await.unwrap();
    let url = format!("{}/model/{MODEL_PATH}/converse", fake.base_url());
    let body = hello().to_string().into_bytes();
    let stale = SystemTime::now() - Duration::from_secs(6 * 60);
    let ahead = SystemTime::now() + Duration::from_secs(6 * 60);
    let cases = [
        (
            Signing {
                creds: AwsCredentials::new(bedrock::ACCESS_KEY_ID, "not-the-secret", None),
                ..Signing::default()
            },
            "InvalidSignatureException",
            "does not match",
        ),
        (
            Signing {
                creds: AwsCredentials::new("AKIDSOMEONEELSE", bedrock::SECRET_ACCESS_KEY, None),
                ..Signing::default()
            },
            "UnrecognizedClientException",
            "security token",
        ),
        (Signing { time: stale, ..Signing::default() }, "InvalidSignatureException", "expired"),
        (Signing { time: ahead, ..Signing::default() }, "InvalidSignatureException", "expired"),
        (
            Signing { region: "eu-west-1", ..Signing::default() },
            "InvalidSignatureException",
            "scoped",
        ),
    ];
    for (signing, kind, says) in cases {
        let headers = signed(&url, &body, &signing);
        let (status, got, message) = refusal(send(&url, &headers, body.clone()).await).await;
        assert_eq!((status, got.as_str()), (403, kind), "{message}");
        assert!(message.contains(says), "{message}");
    }
    // A date within the five minutes is fine.
    let recent =
        Signing { time: SystemTime::now() - Duration::from_secs(4 * 60), ..Signing::default() };
    assert_eq!(send(&url, &signed(&url, &body, &recent), body.clone()).await.status(), 200);

    // A byte changed after signing.
    let headers = signed(&url, &body, &Signing::default());
    let mut changed = body.clone();
    changed[20] ^= 1;
    let (status, kind, _) = refusal(send(&url, &headers, changed).await).await;
    assert_eq!((status, kind.as_str()), (403, "InvalidSignatureException"));

    // `host` left out of the signed headers.
    let unsigned_host: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| match k.as_str() {
            "authorization" => (
                k.clone(),
                v.replace("SignedHeaders=content-type;host;", "SignedHeaders=content-type;"),
            ),
            _ => (k.clone(), v.clone()),
        })
        .collect();
    assert_ne!(unsigned_host, headers, "the test removed host from SignedHeaders");
    let (status, kind, message) = refusal(send(&url, &unsigned_host, body.clone()).await).await;
    assert_eq!((status, kind.as_str()), (403, "InvalidSignatureException"));
    assert!(message.contains("host is not signed"), "{message}");

    // No credentials at all.
    let (status, kind, _) = refusal(send(&url, &[], body).await).await;
    assert_eq!((status, kind.as_str()), (403, "MissingAuthenticationTokenException"));

    // All were recorded, refused or not.
    assert_eq!(fake.request_count(), 9);
}

#[tokio::test]
async fn a_bedrock_api_key_is_accepted_only_when_configured() {
    let fake = FakeUpstream::start(Vendor::Bedrock).await.unwrap();
    let url = format!("{}/model/{MODEL_PATH}/converse", fake.base_url());
    let body = hello().to_string().into_bytes();
    let bearer = |key: &str| vec![("authorization".to_owned(), format!("Bearer {key}"))];
    assert_eq!(send(&url, &bearer(bedrock::API_KEY), body.clone()).await.status(), 200);
    let (status, kind, _) = refusal(send(&url, &bearer("ABSKwrong"), body.clone()).await).await;
    assert_eq!((status, kind.as_str()), (403, "UnrecognizedClientException"));

    let auth = BedrockAuth::sigv4("AKIDMINE", "my-secret", "eu-central-1");
    let strict = FakeUpstream::start_bedrock(auth).await.unwrap();
    let url = format!("{}/model/{MODEL_PATH}/converse", strict.base_url());
    let (status, _, _) = refusal(send(&url, &bearer(bedrock::API_KEY), body.clone()).await).await;
    assert_eq!(status, 403);
    let mine = Signing {
        creds: AwsCredentials::new("AKIDMINE", "my-secret", None),
        region: "eu-central-1",
        time: SystemTime::now(),
    };
    assert_eq!(send(&url, &signed(&url, &body, &mine), body).await.status(), 200);
}

#[tokio::test]
async fn other_paths_answer_404_in_bedrock_s_shape_and_take_no_reply() {
    let fake = FakeUpstream::start(Vendor::Bedrock).await.unwrap();
    fake.push(Reply::status(500));
    for path in ["/model/m/predict", "/v1/chat/completions", "/model/m/converse/extra"] {
        let url = format!("{}{path}", fake.base_url());
        let body = hello().to_string().into_bytes();
        let (status, kind, message) =
            refusal(send(&url, &signed(&url, &body, &Signing::default()), body).await).await;
        assert_eq!((status, kind.as_str()), (404, "UnknownOperationException"), "{path}");
        assert!(message.contains(path), "{message}");
    }
    assert_eq!(fake.script_len(), 1);
}

#[tokio::test]
async fn a_body_converse_refuses_is_a_validation_exception_and_keeps_the_script() {
    let fake = FakeUpstream::start(Vendor::Bedrock).await.unwrap();
    fake.push(Reply::status(500));
    let body = json!({"messages": [{"role": "assistant", "content": [{"text": "hi"}]}]});
    let (status, kind, message) = refusal(call(&fake, "converse", &body).await).await;
    assert_eq!((status, kind.as_str()), (400, "ValidationException"));
    assert!(message.contains("must start with a user message"), "{message}");
    assert_eq!(fake.script_len(), 1);
    assert_eq!(call(&fake, "converse", &hello()).await.status(), 500);
}

#[tokio::test]
async fn a_stream_decodes_into_the_expected_canonical_events() {
    let fake = FakeUpstream::start(Vendor::Bedrock).await.unwrap();
    let response = call(&fake, "converse-stream", &hello()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], canned::EVENT_STREAM);
    let events = decode(&response.bytes().await.unwrap()).unwrap();
    assert!(matches!(&events[0], StreamEvent::Start { .. }), "{events:?}");
    assert!(
        events.contains(&StreamEvent::BlockStart { index: 0, kind: BlockKind::Text }),
        "{events:?}"
    );
    assert_eq!(text_of(&events), "echo: hello there");
    let usage = events.iter().find_map(|e| match e {
        StreamEvent::Usage { usage } => Some(*usage),
        _ => None,
    });
    let usage = usage.expect("a usage event");
    assert_eq!(usage.output_tokens, Some(canned::CANNED_OUTPUT_TOKENS));
    assert_eq!(usage.cache_read_tokens, Some(canned::CANNED_CACHE_READ_INPUT_TOKENS));
    assert_eq!(usage.cache_write_tokens, Some(canned::CANNED_CACHE_CREATION_INPUT_TOKENS));
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Stop { reason: StopReason::EndTurn, stop_sequence: None })
    );
}

#[tokio::test]
async fn reasoning_and_a_tool_call_stream_as_claude_on_bedrock_sends_them() {
    let fake = FakeUpstream::start(Vendor::Bedrock).await.unwrap();
    let ReplyBody::Frames(frames, ct) = canned::reasoning_then_tool_call(
        Vendor::Bedrock,
        MODEL,
        "let me look",
        "read",
        r#"{"path":"/tmp/a"}"#,
        true,
    ) else {
        panic!("Bedrock streams binary frames");
    };
    fake.push(Reply::frames(frames, ct));
    let events =
        decode(&call(&fake, "converse-stream", &hello()).await.bytes().await.unwrap()).unwrap();
    let deltas: Vec<&Delta> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Delta { delta, .. } => Some(delta),
            _ => None,
        })
        .collect();
    let thinking: String = deltas
        .iter()
        .filter_map(|d| match d {
            Delta::Thinking { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, "let me look");
    assert!(deltas.contains(&&Delta::Signature {
        signature: canned::ANTHROPIC_THINKING_SIGNATURE.to_owned()
    }));
    let kind = BlockKind::ToolCall {
        id: bedrock::answer::TOOL_USE_ID.to_owned(),
        name: "read".to_owned(),
    };
    assert!(
        events.iter().any(|e| matches!(e, StreamEvent::BlockStart { kind: k, .. } if *k == kind)),
        "{events:?}"
    );
    let args: String = deltas
        .iter()
        .filter_map(|d| match d {
            Delta::ToolArguments { json } => Some(json.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(args, r#"{"path":"/tmp/a"}"#);
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Stop { reason: StopReason::ToolUse, stop_sequence: None })
    );

    // Not streamed: the same content as Converse blocks.
    let ReplyBody::Json(body) =
        canned::reasoning_then_tool_call(Vendor::Bedrock, MODEL, "hm", "read", "{}", false)
    else {
        panic!("JSON");
    };
    let content = &body["output"]["message"]["content"];
    assert_eq!(content[0]["reasoningContent"]["reasoningText"]["text"], "hm");
    assert_eq!(content[1]["toolUse"]["toolUseId"], bedrock::answer::TOOL_USE_ID);
    assert_eq!(body["stopReason"], "tool_use");
}

#[tokio::test]
async fn scripted_errors_carry_bedrock_s_error_types() {
    let fake = FakeUpstream::start(Vendor::Bedrock).await.unwrap();
    fake.push(Reply::status(429));
    fake.push(Reply::status(503));
    fake.push(Reply::error(424, "the model failed"));
    fake.push(Reply::status(500));
    for (kind, says) in [
        ("ThrottlingException", "429"),
        ("ServiceUnavailableException", "503"),
        ("ModelErrorException", "the model failed"),
        ("InternalServerException", "500"),
    ] {
        let (_, got, message) = refusal(call(&fake, "converse-stream", &hello()).await).await;
        assert_eq!(got, kind);
        assert!(message.contains(says), "{message}");
    }
    // The gateway maps the type (as it reads it from the header) to its kind.
    assert_eq!(
        switchyard_protocol::bedrock::error_kind("ThrottlingException"),
        switchyard_protocol::bedrock::error_kind("throttlingException")
    );
}

#[tokio::test]
async fn an_exception_mid_stream_is_an_exception_message() {
    let fake = FakeUpstream::start(Vendor::Bedrock).await.unwrap();
    fake.push(Reply::event_stream(vec![
        eventstream::event("messageStart", &json!({"role": "assistant"})),
        eventstream::event(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 0, "delta": {"text": "par"}}),
        ),
        eventstream::exception("modelStreamErrorException", "the model stopped"),
    ]));
    let bytes = call(&fake, "converse-stream", &hello()).await.bytes().await.unwrap();
    match decode(&bytes) {
        Err(ProtocolError::UpstreamError { message, .. }) => {
            assert!(message.contains("the model stopped"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn scripted_faults_apply_to_bedrock_streams() {
    let fake = FakeUpstream::start(Vendor::Bedrock).await.unwrap();
    // Cut after three frames: the client's body fails, the frames before are whole.
    fake.push(Reply::auto().break_after(3));
    let response = call(&fake, "converse-stream", &hello()).await;
    assert_eq!(response.status(), 200);
    let mut response = response;
    let mut got = Vec::new();
    let failed = loop {
        match response.chunk().await {
            Ok(Some(chunk)) => got.extend_from_slice(&chunk),
            Ok(None) => break false,
            Err(_) => break true,
        }
    };
    assert!(failed, "the body must break");
    let mut framer = Framing::AwsEventStream.framer();
    let mut frames = Vec::new();
    framer.push(&got, &mut frames).unwrap();
    assert_eq!(frames.len(), 3);

    // Delayed and paced.
    fake.push(
        Reply::auto()
            .first_byte_delay(Duration::from_millis(150))
            .chunk_delay(Duration::from_millis(5)),
    );
    let started = std::time::Instant::now();
    let bytes = call(&fake, "converse-stream", &hello()).await.bytes().await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(text_of(&decode(&bytes).unwrap()), "echo: hello there");

    // A hang: the client gives up.
    fake.push(Reply::hang());
    let url = format!("{}/model/{MODEL_PATH}/converse", fake.base_url());
    let body = hello().to_string().into_bytes();
    let headers = signed(&url, &body, &Signing::default());
    let mut request = client().post(&url).timeout(Duration::from_millis(200)).body(body);
    for (k, v) in &headers {
        request = request.header(k, v);
    }
    assert!(request.send().await.unwrap_err().is_timeout());
    within(fake.wait_idle()).await;
}
