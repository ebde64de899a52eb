#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Claude from Opus 4.1 on takes `temperature` or `top_p`, not both (a 400 "cannot
//! both be specified for this model" otherwise), and clients send both: GitHub
//! Copilot CLI sends `temperature: 0` and `top_p: 0.95` on every request. Black box:
//! the real server in front of the Anthropic fake, which refuses the pair as the API
//! does, from each client format.

mod common;

use common::*;
use serde_json::{Value, json};
use switchyard_core::RequestRecord;
use switchyard_protocol::ClientFormat;
use switchyard_testkit::Received;

const DROPPED: &str = "top_p: dropped (the model takes temperature or top_p, not both)";
const REFUSED: &str =
    "`temperature` and `top_p` cannot both be specified for this model. Please use only one.";

/// A Claude 4.5 model, and the same model with the catalog saying it takes both (so
/// the pair reaches the fake).
fn options() -> Options {
    Options {
        extra_models: "  - id: m-haiku45\n    deployments: [{ provider: anthropic, model: claude-haiku-4-5 }]\n\
                       \x20 - id: m-both\n    one_sampler: false\n    \
                       deployments: [{ provider: anthropic, model: claude-haiku-4-5 }]\n"
            .into(),
        ..Options::default()
    }
}

/// A request in `format` for `model` with the given sampling settings (`None`: not
/// sent), and the path it goes to.
fn request(
    format: ClientFormat,
    model: &str,
    temperature: Option<f64>,
    top_p: Option<f64>,
) -> (String, Value) {
    let mut body = match format {
        ClientFormat::OpenAiChat => {
            json!({"model": model, "messages": [{"role": "user", "content": "hi"}]})
        }
        ClientFormat::OpenAiResponses => json!({"model": model, "input": "hi"}),
        ClientFormat::Anthropic => json!({"model": model, "max_tokens": 100,
            "messages": [{"role": "user", "content": "hi"}]}),
        ClientFormat::Gemini => json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
    };
    let (t, p, at) = match format {
        // Gemini's settings are in `generationConfig`, under their own names.
        ClientFormat::Gemini => ("temperature", "topP", "/generationConfig"),
        _ => ("temperature", "top_p", ""),
    };
    if temperature.is_some() || top_p.is_some() {
        if format == ClientFormat::Gemini {
            body["generationConfig"] = json!({});
        }
        let target = body.pointer_mut(at).unwrap();
        if let Some(v) = temperature {
            target[t] = json!(v);
        }
        if let Some(v) = top_p {
            target[p] = json!(v);
        }
    }
    let path = match format {
        ClientFormat::Gemini => format!("/v1beta/models/{model}:generateContent"),
        _ => path(format).to_owned(),
    };
    (path, body)
}

/// Send; the status, the answer's text, the record and what the Anthropic fake got.
async fn send(h: &Harness, path: &str, body: &Value) -> (u16, String, RequestRecord, Received) {
    let before = h.anthropic.request_count();
    let r = h.post(path, body).await;
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    let record = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    assert_eq!(h.anthropic.request_count(), before + 1, "{path}: one upstream request");
    let received = h.anthropic.received().last().cloned().unwrap();
    (status, text, record, received)
}

const FORMATS: [ClientFormat; 4] = [
    ClientFormat::OpenAiChat,
    ClientFormat::OpenAiResponses,
    ClientFormat::Anthropic,
    ClientFormat::Gemini,
];

#[tokio::test]
async fn claude_4_5_gets_temperature_without_top_p_from_every_client_format() {
    let h = Harness::start_with(options()).await;
    for format in FORMATS {
        let (path, body) = request(format, "m-haiku45", Some(0.0), Some(0.95));
        let (status, text, rec, got) = send(&h, &path, &body).await;
        assert_eq!(status, 200, "{format:?}: {text}");
        assert_eq!(got.body["temperature"], 0.0, "{format:?}: {}", got.body);
        assert!(got.body.get("top_p").is_none(), "{format:?}: {}", got.body);
        assert!(rec.field_edits.iter().any(|e| e == DROPPED), "{format:?}: {:?}", rec.field_edits);
    }
}

#[tokio::test]
async fn one_sampler_alone_goes_as_sent() {
    let h = Harness::start_with(options()).await;
    for format in FORMATS {
        for (temperature, top_p) in [(None, Some(0.95)), (Some(0.5), None)] {
            let (path, body) = request(format, "m-haiku45", temperature, top_p);
            let (status, text, rec, got) = send(&h, &path, &body).await;
            assert_eq!(status, 200, "{format:?}: {text}");
            assert_eq!(got.body.get("temperature").and_then(Value::as_f64), temperature);
            assert_eq!(got.body.get("top_p").and_then(Value::as_f64), top_p, "{format:?}");
            assert!(rec.field_edits.is_empty(), "{format:?}: {:?}", rec.field_edits);
        }
    }
}

/// The catalog's word beats the inference; here it is wrong, and the fake refuses
/// the pair with the API's 400, which is the client's answer (a 400 is not failed
/// over).
#[tokio::test]
async fn both_samplers_reaching_claude_4_5_are_refused() {
    let h = Harness::start_with(options()).await;
    for format in [ClientFormat::OpenAiChat, ClientFormat::Anthropic] {
        let (path, body) = request(format, "m-both", Some(0.0), Some(0.95));
        let (status, text, rec, got) = send(&h, &path, &body).await;
        assert_eq!(
            (got.body["temperature"].as_f64(), got.body["top_p"].as_f64()),
            (Some(0.0), Some(0.95))
        );
        assert_eq!(status, 400, "{format:?}: {text}");
        assert!(text.contains(REFUSED), "{format:?}: {text}");
        assert!(rec.field_edits.is_empty(), "{format:?}: {:?}", rec.field_edits);
    }
}
