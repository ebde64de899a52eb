#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Azure OpenAI through the real server, black box: a deployment of the dated
//! API and the v1 API, each with the resource's key (`api-key`) and with a
//! Microsoft Entra token the gateway got for an app's client secret (the
//! fake's Entra endpoint checks the grant; its routes take only its key or a
//! token it granted, and refuse a deployment route without `api-version`), from
//! the three client formats, whole and streamed. The fake answers in Azure's
//! shape (filter results, a first stream chunk with empty `choices`, `id` and
//! `model`): no client sees any of it, each gets the answer's id and its usage.
//! An answer the filter stopped ends in each client's words, a prompt it
//! refused is the client's 400. A provider's `query` sets the `api-version`;
//! a 429 fails over to OpenAI.

mod common;

use common::*;
use serde_json::{Value, json};
use switchyard_protocol::ClientFormat;
use switchyard_testkit::canned::{CANNED_INPUT_TOKENS, CANNED_OUTPUT_TOKENS};
use switchyard_testkit::{FakeUpstream, Reply, azure};

const DEPLOYMENT: &str = "gpt-4o-prod";

struct Azure {
    h: Harness,
    fake: FakeUpstream,
}

async fn start() -> Azure {
    let fake = FakeUpstream::start_azure().await.unwrap();
    let base = fake.base_url();
    let entra = format!(
        "{{ azure: {{ tenant_id: \"{tenant}\", client_id: \"{client}\", client_secret: \"{secret}\", \
         authority_host: \"{base}\" }} }}",
        tenant = azure::TENANT,
        client = azure::CLIENT_ID,
        secret = azure::CLIENT_SECRET,
    );
    let key = format!("{{ keys: [\"{}\"] }}", azure::API_KEY);
    let providers_extra = format!(
        r#"  az-key:
    wire: azure-openai
    endpoint: "{base}"
    credentials: {key}
  az-entra:
    wire: azure-openai
    endpoint: "{base}"
    credentials: {entra}
  az-v1-key:
    wire: azure-openai-v1
    endpoint: "{base}"
    credentials: {key}
  az-v1-entra:
    wire: azure-openai-v1
    endpoint: "{base}"
    credentials: {entra}
  az-preview:
    wire: azure-openai
    endpoint: "{base}"
    credentials: {key}
    query: {{ api-version: 2025-04-01-preview }}
  az-responses-key:
    wire: azure-openai-responses
    endpoint: "{base}"
    credentials: {key}
  az-responses-entra:
    wire: azure-openai-responses
    endpoint: "{base}"
    credentials: {entra}
"#
    );
    let mut extra_models = String::new();
    for provider in [
        "az-key",
        "az-entra",
        "az-v1-key",
        "az-v1-entra",
        "az-preview",
        "az-responses-key",
        "az-responses-entra",
    ] {
        extra_models.push_str(&format!(
            "  - id: m-{provider}\n    deployments: [{{ provider: {provider}, model: {DEPLOYMENT} }}]\n"
        ));
    }
    extra_models.push_str(&format!(
        "  - id: m-azure-then-openai\n    deployments: [{{ provider: az-key, model: {DEPLOYMENT} }}, \
         {{ provider: openai, model: up-openai }}]\n"
    ));
    let options = Options { providers_extra, extra_models, ..Options::default() };
    Azure { h: Harness::start_with(options).await, fake }
}

fn body(format: ClientFormat, model: &str, text: &str, stream: bool) -> Value {
    let messages = json!([{"role": "user", "content": text}]);
    match format {
        ClientFormat::OpenAiChat => json!({"model": model, "stream": stream,
            "stream_options": {"include_usage": true}, "messages": messages}),
        ClientFormat::Anthropic => {
            json!({"model": model, "stream": stream, "max_tokens": 128, "messages": messages})
        }
        ClientFormat::OpenAiResponses => json!({"model": model, "stream": stream, "input": text}),
        ClientFormat::Gemini => unreachable!("the three formats with a fixed path"),
    }
}

/// Azure's own words, which no client should ever see.
const AZURE_ONLY: [&str; 3] = ["prompt_filter_results", "content_filter_results", "\"severity\""];

#[tokio::test]
async fn every_format_whole_and_streamed_reaches_a_deployment_with_a_key_or_entra() {
    let a = start().await;
    let formats =
        [ClientFormat::OpenAiChat, ClientFormat::Anthropic, ClientFormat::OpenAiResponses];
    for provider in ["az-key", "az-entra", "az-v1-key", "az-v1-entra"] {
        let model = format!("m-{provider}");
        for format in formats {
            for stream in [false, true] {
                let text = format!("hello {provider} from {format:?} stream={stream}");
                let r = a.h.post(path(format), &body(format, &model, &text, stream)).await;
                let status = r.status();
                let seen = r.headers().get("x-gateway-provider").cloned();
                let bytes = r.bytes().await.unwrap();
                let shown = String::from_utf8_lossy(&bytes).into_owned();
                assert_eq!(status, 200, "{provider} {format:?} {stream}: {shown}");
                assert_eq!(seen.unwrap(), provider);
                for word in AZURE_ONLY {
                    assert!(!shown.contains(word), "{provider} {format:?} {stream}: {shown}");
                }
                let got = if stream {
                    decode_stream(format, &bytes)
                } else {
                    decode_whole(format, &bytes)
                };
                assert!(got.text().contains(&text), "{provider} {format:?} {stream}: {shown}");
                // The answer's id, not the empty one of Azure's filter prelude
                // (a Responses client's is the gateway's own, `resp_<request>`).
                let named =
                    if format == ClientFormat::OpenAiResponses { "resp_" } else { "chatcmpl" };
                assert!(got.id.contains(named), "{provider} {format:?} {stream}: {}", got.id);
                assert_eq!(
                    (got.usage.input_tokens, got.usage.output_tokens),
                    (Some(CANNED_INPUT_TOKENS), Some(CANNED_OUTPUT_TOKENS)),
                    "{provider} {format:?} {stream}"
                );
                let rx = a.fake.received().pop().unwrap();
                if provider.ends_with("key") {
                    assert_eq!(rx.header("api-key"), Some(azure::API_KEY));
                    assert!(rx.header("authorization").is_none());
                } else {
                    let auth = rx.header("authorization").unwrap();
                    assert!(auth.starts_with("Bearer eyJ0eXAiOiJKV1Qi.fake-entra-"), "{auth}");
                    assert!(rx.header("api-key").is_none());
                }
                if provider.starts_with("az-v1") {
                    assert_eq!(rx.path, "/openai/v1/chat/completions");
                    assert_eq!(rx.query, None);
                    assert_eq!(rx.body["model"], DEPLOYMENT);
                } else {
                    assert_eq!(
                        rx.path,
                        format!("/openai/deployments/{DEPLOYMENT}/chat/completions")
                    );
                    assert_eq!(rx.query.as_deref(), Some("api-version=2024-10-21"));
                    assert!(rx.body.get("model").is_none(), "{}", rx.body);
                }
                if stream {
                    assert_eq!(rx.body["stream"], true);
                    assert_eq!(rx.body["stream_options"]["include_usage"], true);
                }
            }
        }
    }
    // One grant for the Entra providers' every request (one token each).
    assert_eq!(a.fake.tokens_granted(), 2);
}

#[tokio::test]
async fn the_usage_azure_reports_is_recorded() {
    let a = start().await;
    let r =
        a.h.post("/v1/messages", &body(ClientFormat::Anthropic, "m-az-entra", "usage?", true))
            .await;
    assert_eq!(r.status(), 200);
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let _ = r.bytes().await.unwrap();
    let record = tokio::time::timeout(WAIT, a.h.sink.wait_for(&id)).await.unwrap();
    assert_eq!(
        (record.usage.input_tokens, record.usage.output_tokens),
        (Some(CANNED_INPUT_TOKENS), Some(CANNED_OUTPUT_TOKENS))
    );
    assert!(!record.estimated, "the usage Azure sent, not an estimate");
}

#[tokio::test]
async fn a_providers_query_sets_the_api_version() {
    let a = start().await;
    let r = a
        .h
        .post("/v1/chat/completions", &body(ClientFormat::OpenAiChat, "m-az-preview", "v?", false))
        .await;
    assert_eq!(r.status(), 200);
    let rx = a.fake.received().pop().unwrap();
    assert_eq!(rx.query.as_deref(), Some("api-version=2025-04-01-preview"));
}

#[tokio::test]
async fn a_throttled_deployment_fails_over_to_openai() {
    for (format, stream) in [(ClientFormat::OpenAiChat, true), (ClientFormat::Anthropic, false)] {
        // A fresh gateway each: after a 429 the deployment rests a while.
        let a = start().await;
        a.fake.push(Reply::status(429));
        let before = a.fake.request_count();
        let r =
            a.h.post(path(format), &body(format, "m-azure-then-openai", "throttled?", stream))
                .await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["x-gateway-provider"], "openai");
        let route = r.headers()["x-gateway-route"].to_str().unwrap().to_owned();
        assert!(route.contains("failover:az-key->openai"), "{route}");
        assert_eq!(a.fake.request_count(), before + 1, "Azure was asked first");
        let bytes = r.bytes().await.unwrap();
        let got = if stream { decode_stream(format, &bytes) } else { decode_whole(format, &bytes) };
        assert!(got.text().contains("throttled?"), "{}", got.text());
    }
}

#[tokio::test]
async fn the_fake_is_as_strict_as_azure() {
    let a = start().await;
    let base = a.fake.base_url();
    let chat = json!({"messages": [{"role": "user", "content": "hi"}]});
    let deployment = format!("{base}/openai/deployments/{DEPLOYMENT}/chat/completions");
    let send = |url: String, key: Option<&str>, bearer: Option<&str>| {
        let mut req = client().post(url).json(&chat);
        if let Some(k) = key {
            req = req.header("api-key", k);
        }
        if let Some(b) = bearer {
            req = req.bearer_auth(b);
        }
        req.send()
    };
    // No api-version on a deployment route.
    let r = send(deployment.clone(), Some(azure::API_KEY), None).await.unwrap();
    assert_eq!(r.status(), 400);
    let err: Value = r.json().await.unwrap();
    assert!(err["error"]["message"].as_str().unwrap().contains("api-version"), "{err}");
    let versioned = format!("{deployment}?api-version=2024-10-21");
    // A wrong key, a token it never granted, nothing.
    for (key, bearer) in [(Some("wrong"), None), (None, Some("eyJ.forged")), (None, None)] {
        let r = send(versioned.clone(), key, bearer).await.unwrap();
        assert_eq!(r.status(), 401, "{key:?} {bearer:?}");
    }
    // Its answer, in Azure's shape.
    let r = send(versioned, Some(azure::API_KEY), None).await.unwrap();
    assert_eq!(r.status(), 200);
    let answer: Value = r.json().await.unwrap();
    assert!(answer["prompt_filter_results"].is_array(), "{answer}");
    assert!(answer["choices"][0]["content_filter_results"].is_object(), "{answer}");
    // The v1 API refuses a dated version.
    let r = send(
        format!("{base}/openai/v1/chat/completions?api-version=2024-10-21"),
        Some(azure::API_KEY),
        None,
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 400);
}

#[tokio::test]
async fn an_answer_the_filter_stopped_ends_in_each_clients_words() {
    let a = start().await;
    let cases = [
        (ClientFormat::OpenAiChat, "\"finish_reason\":\"content_filter\""),
        (ClientFormat::Anthropic, "\"stop_reason\":\"refusal\""),
    ];
    for (format, want) in cases {
        a.fake.push(Reply::sse(azure::filtered_stream("gpt-4o-2024-11-20", "Once upon")));
        let r = a.h.post(path(format), &body(format, "m-az-key", "a story", true)).await;
        assert_eq!(r.status(), 200);
        let bytes = r.bytes().await.unwrap();
        let shown = String::from_utf8_lossy(&bytes).into_owned();
        assert!(shown.contains(want), "{format:?}: {shown}");
        for word in AZURE_ONLY {
            assert!(!shown.contains(word), "{format:?}: {shown}");
        }
        let got = decode_stream(format, &bytes);
        assert_eq!(got.text(), "Once upon");
        assert!(got.id.contains("AZfiltered"), "{format:?}: {}", got.id);
    }
}

#[tokio::test]
async fn a_prompt_the_filter_refuses_is_the_clients_error() {
    let a = start().await;
    a.fake.push(Reply::json(azure::prompt_filtered_body()).with_status(400));
    let r =
        a.h.post("/v1/chat/completions", &body(ClientFormat::OpenAiChat, "m-az-key", "x", false))
            .await;
    let status = r.status();
    let text = r.text().await.unwrap();
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("content management policy"), "{text}");
    assert!(!text.contains("ResponsibleAIPolicyViolation"), "{text}");
}

#[tokio::test]
async fn the_responses_api_on_azure_takes_every_format_and_codexs_own_body() {
    let a = start().await;
    let formats =
        [ClientFormat::OpenAiChat, ClientFormat::Anthropic, ClientFormat::OpenAiResponses];
    for provider in ["az-responses-key", "az-responses-entra"] {
        let model = format!("m-{provider}");
        for format in formats {
            for stream in [false, true] {
                let label = format!("{provider} {format:?} {stream}");
                let text = format!("hello {label}");
                let mut sent = body(format, &model, &text, stream);
                if format == ClientFormat::OpenAiResponses {
                    // Codex's own fields: kept as they are (the same-format fast path).
                    sent["store"] = json!(false);
                    sent["prompt_cache_key"] = json!("session-1");
                }
                let r = a.h.post(path(format), &sent).await;
                let status = r.status();
                let bytes = r.bytes().await.unwrap();
                let shown = String::from_utf8_lossy(&bytes).into_owned();
                assert_eq!(status, 200, "{label}: {shown}");
                let got = if stream {
                    decode_stream(format, &bytes)
                } else {
                    decode_whole(format, &bytes)
                };
                assert!(got.text().contains(&text), "{label}: {shown}");
                assert_eq!(got.usage.output_tokens, Some(CANNED_OUTPUT_TOKENS), "{label}");
                let rx = a.fake.received().pop().unwrap();
                assert_eq!(rx.path, azure::RESPONSES_PATH, "{label}");
                assert_eq!(rx.query, None, "{label}");
                assert_eq!(rx.body["model"], DEPLOYMENT, "{label}");
                assert!(rx.body.get("input").is_some(), "{label}: a Responses body: {}", rx.body);
                assert_eq!(rx.body["store"], false, "{label}: stateless");
                if format == ClientFormat::OpenAiResponses {
                    assert_eq!(rx.body["prompt_cache_key"], "session-1", "{label}");
                }
                if provider.ends_with("key") {
                    assert_eq!(rx.header("api-key"), Some(azure::API_KEY), "{label}");
                } else {
                    let auth = rx.header("authorization").unwrap();
                    assert!(auth.starts_with("Bearer eyJ0eXAiOiJKV1Qi.fake-entra-"), "{auth}");
                }
            }
        }
    }
}
