//! Library mode, black box: a gateway in-process in front of test-kit fakes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use switchyard_core::embed::{Gateway, Generate};
use switchyard_core::exec::RequestRouting;
use switchyard_core::protocol::{Delta, ErrorCode, Message, Request, Role, StreamEvent};
use switchyard_testkit::{FakeUpstream, Reply, Vendor};

async fn gateway() -> (Gateway, FakeUpstream, FakeUpstream) {
    switchyard_core::install_crypto_provider();
    let a = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    let b = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    let yaml = format!(
        "storage: {{ url: none }}\nproviders:\n  a: {{ wire: openai-chat, endpoint: \"{}/v1\", credentials: {{ keys: [ka-0000000001] }} }}\n  b: {{ wire: openai-chat, endpoint: \"{}/v1\", credentials: {{ keys: [kb-0000000001] }} }}\nmodels:\n  - {{ id: one, deployments: [{{ provider: a, model: up-one }}] }}\n  - {{ id: two, deployments: [{{ provider: b, model: up-two }}] }}\n",
        a.base_url(),
        b.base_url()
    );
    (Gateway::from_yaml("t.yaml", &yaml, &|_| None).unwrap(), a, b)
}

fn ask(model: &str) -> Request {
    Request {
        model: model.into(),
        messages: vec![Message::text(Role::User, "hi")],
        ..Request::default()
    }
}

#[tokio::test]
async fn invalid_model_ids_are_typed_errors_never_panics() {
    let (gw, ..) = gateway().await;
    for bad in [String::new(), "x".repeat(257), "a\nb".into()] {
        let err = gw.generate(Generate::new(ask(&bad))).await.unwrap_err();
        assert_eq!((err.status(), err.code()), (400, ErrorCode::InvalidModel), "{bad:?}");
    }
    let routing =
        RequestRouting { fallbacks: vec!["bad\u{0}".into()], ..RequestRouting::default() };
    let err = gw.generate(Generate { request: ask("one"), routing, ..Generate::default() }).await;
    assert_eq!(err.unwrap_err().code(), ErrorCode::InvalidModel);
}

#[tokio::test]
async fn request_fallbacks_and_bounds_apply() {
    let (gw, a, b) = gateway().await;
    // The request's fallback serves when its model's only deployment fails.
    a.push(Reply::status(500));
    let routing = RequestRouting { fallbacks: vec!["two".into()], ..RequestRouting::default() };
    let answer = gw
        .generate(Generate { request: ask("one"), routing, ..Generate::default() })
        .await
        .unwrap();
    assert_eq!((answer.provider.as_str(), answer.attempts.len()), ("b", 2));
    // max_fallbacks: 0 keeps to the model's own candidates.
    a.push(Reply::status(500));
    let routing = RequestRouting {
        fallbacks: vec!["two".into()],
        max_fallbacks: Some(0),
        ..RequestRouting::default()
    };
    let err = gw.generate(Generate { request: ask("one"), routing, ..Generate::default() }).await;
    assert_eq!(err.unwrap_err().status(), 502);
    assert_eq!(b.request_count(), 1, "the fallback was not tried");
    // An attempt timeout shorter than the upstream's first byte fails the attempt.
    a.push(Reply::auto().first_byte_delay(Duration::from_secs(5)));
    let routing = RequestRouting {
        attempt_timeout: Some(Duration::from_millis(100)),
        ..RequestRouting::default()
    };
    let err = gw.generate(Generate { request: ask("one"), routing, ..Generate::default() }).await;
    assert_eq!(err.unwrap_err().code(), ErrorCode::UpstreamTimeout);
}

#[tokio::test]
async fn many_gateways_live_in_one_process() {
    let (one, a1, _) = gateway().await;
    let (two, a2, _) = gateway().await;
    one.generate(Generate::new(ask("one"))).await.unwrap();
    two.generate(Generate::new(ask("one"))).await.unwrap();
    two.generate(Generate::new(ask("one"))).await.unwrap();
    assert_eq!((a1.request_count(), a2.request_count()), (1, 2));
}

#[tokio::test]
async fn a_library_stream_ends_with_its_attempts_and_usage() {
    // `_b`, not `_`: the fallback's fake must outlive the request.
    let (gw, a, _b) = gateway().await;
    a.push(Reply::status(500));
    let routing = RequestRouting { fallbacks: vec!["two".into()], ..RequestRouting::default() };
    let mut stream =
        gw.stream(Generate { request: ask("one"), routing, ..Generate::default() }).await.unwrap();
    assert_eq!(stream.provider, "b");
    assert!(stream.attempts().is_none(), "the record comes with the end");
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        if let StreamEvent::Delta { delta: Delta::Text { text: t }, .. } = event.unwrap() {
            text.push_str(&t);
        }
    }
    assert!(!text.is_empty());
    let attempts = stream.attempts().unwrap();
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0].deployment, "a/up-one");
    assert_eq!(attempts[0].outcome, "status_500");
    let usage = stream.usage().unwrap();
    assert!(usage.output_tokens.unwrap() > 0);
}
