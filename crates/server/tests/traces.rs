//! OpenTelemetry traces, end to end: the gateway between a client that sends
//! (or does not send) a W3C `traceparent`, fake upstreams that record what
//! they were sent, and a fake OTLP collector (HTTP/protobuf and gRPC) that
//! decodes and checks what it receives.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use serde_json::json;
use switchyard_testkit::Reply;
use switchyard_testkit::otlp::{AttrValue, CollectedSpan, FakeCollector, Fault};

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

fn client_traceparent() -> String {
    format!("00-{TRACE_ID}-{CLIENT_SPAN}-01")
}

/// The harness with traces exported to `endpoint` over `protocol`, and more
/// `telemetry:` keys.
async fn start(endpoint: &str, protocol: &str, extra: &str) -> Harness {
    let top_level = format!(
        "telemetry:\n  otlp: {{ endpoint: \"{endpoint}\", protocol: {protocol}, headers: {{ authorization: \"Basic cGs6c2s=\" }} }}\n  service_name: sy-test\n  flush_ms: 10\n{extra}"
    );
    Harness::start_with(Options { top_level, ..Options::default() }).await
}

fn chat(model: &str, stream: bool) -> serde_json::Value {
    json!({
        "model": model,
        "stream": stream,
        "max_tokens": 64,
        "temperature": 0.5,
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "secret prompt"}],
    })
}

/// The `traceparent` fields an upstream received: (trace id, parent, flags).
fn sent_parent(fake: &switchyard_testkit::FakeUpstream) -> (String, String, String) {
    let seen = fake.received();
    let last = seen.last().expect("the upstream was called");
    let tp = last.header("traceparent").expect("a traceparent was sent");
    let parts: Vec<&str> = tp.split('-').collect();
    assert_eq!(parts.len(), 4, "{tp}");
    assert_eq!(parts[0], "00");
    (parts[1].to_owned(), parts[2].to_owned(), parts[3].to_owned())
}

async fn spans(c: &FakeCollector, n: usize) -> Vec<CollectedSpan> {
    tokio::time::timeout(WAIT, c.wait_for_spans(n)).await.expect("spans exported")
}

fn server_span(spans: &[CollectedSpan]) -> &CollectedSpan {
    let s: Vec<_> = spans.iter().filter(|s| s.kind == 2).collect();
    assert_eq!(s.len(), 1, "one request span: {spans:#?}");
    s[0]
}

fn client_spans(spans: &[CollectedSpan]) -> Vec<&CollectedSpan> {
    let mut s: Vec<_> = spans.iter().filter(|s| s.kind == 3).collect();
    s.sort_by_key(|s| s.start_ns);
    s
}

fn int(s: &CollectedSpan, key: &str) -> i64 {
    s.attr(key).and_then(AttrValue::as_int).unwrap_or_else(|| panic!("{key} on {}", s.name))
}

#[tokio::test]
async fn http_protobuf_continues_the_clients_trace_with_genai_attributes() {
    let collector = FakeCollector::start().await.unwrap();
    let h = start(&collector.http_endpoint(), "http/protobuf", "").await;
    let tp = client_traceparent();
    let r = h
        .post_with(
            "/v1/chat/completions",
            &chat("m-openai", false),
            &[("traceparent", &tp), ("tracestate", "vendor=abc")],
        )
        .await;
    assert_eq!(r.status(), 200);
    let spans = spans(&collector, 2).await;
    assert_eq!(spans.len(), 2, "{spans:#?}");
    let req = server_span(&spans);
    let attempts = client_spans(&spans);
    assert_eq!(attempts.len(), 1);
    let attempt = attempts[0];

    // The upstream continues the same trace, its parent the attempt's span.
    let (trace, parent, flags) = sent_parent(&h.openai);
    assert_eq!(trace, TRACE_ID);
    assert_eq!(parent, attempt.span_id);
    assert_eq!(flags, "01");
    assert_eq!(h.openai.received().last().unwrap().header("tracestate"), Some("vendor=abc"));

    // One trace: client span → request span → attempt span.
    for s in &spans {
        assert_eq!(s.trace_id, TRACE_ID);
        assert_eq!(s.trace_state, "vendor=abc");
        assert_eq!(s.protocol, "http");
        assert_eq!(s.resource["service.name"], AttrValue::Str("sy-test".into()));
    }
    assert_eq!(req.parent_span_id.as_deref(), Some(CLIENT_SPAN));
    assert_eq!(attempt.parent_span_id.as_deref(), Some(req.span_id.as_str()));
    assert!(req.start_ns <= attempt.start_ns && attempt.end_ns <= req.end_ns);
    // The parent is remote for the request span, local for the attempt's.
    assert_eq!(req.flags, 0x301);
    assert_eq!(attempt.flags, 0x101);

    assert_eq!(req.name, "chat m-openai");
    assert_eq!(req.str("gen_ai.operation.name"), Some("chat"));
    assert_eq!(req.str("gen_ai.request.model"), Some("m-openai"));
    assert_eq!(req.str("gen_ai.response.model"), Some("up-openai"));
    assert_eq!(req.str("gen_ai.provider.name"), Some("openai"));
    assert_eq!(
        req.str("switchyard.request_id"),
        r.headers().get("x-request-id").and_then(|v| v.to_str().ok())
    );
    assert_eq!(int(req, "http.response.status_code"), 200);
    assert_eq!(req.status_code, 0);

    assert_eq!(attempt.name, "chat up-openai");
    assert_eq!(attempt.str("gen_ai.provider.name"), Some("openai"));
    assert_eq!(attempt.str("gen_ai.request.model"), Some("up-openai"));
    assert_eq!(attempt.str("gen_ai.response.model"), Some("up-openai"));
    assert_eq!(int(attempt, "gen_ai.usage.input_tokens"), 11);
    assert_eq!(int(attempt, "gen_ai.usage.output_tokens"), 7);
    assert_eq!(int(attempt, "gen_ai.request.max_tokens"), 64);
    assert_eq!(attempt.attr("gen_ai.request.temperature").and_then(AttrValue::as_f64), Some(0.5));
    assert_eq!(
        attempt.attr("gen_ai.response.finish_reasons"),
        Some(&AttrValue::Array(vec![AttrValue::Str("stop".into())]))
    );
    let cost = attempt.attr("gen_ai.usage.cost").and_then(AttrValue::as_f64).unwrap();
    assert!((cost - (11.0 * 1.0 + 7.0 * 2.0) / 1e6).abs() < 1e-12, "{cost}");
    assert_eq!(attempt.attr("switchyard.cost_usd").and_then(AttrValue::as_f64), Some(cost));
    assert_eq!(attempt.str("server.address"), Some("127.0.0.1"));
    // Usage is on the attempt only: a backend summing the trace counts it once.
    assert!(req.attr("gen_ai.usage.input_tokens").is_none());

    // Content is not exported unless enabled.
    for s in &spans {
        for key in ["gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"]
        {
            assert!(s.attr(key).is_none(), "{key} on {}", s.name);
        }
        assert!(!format!("{:?}", s.attributes).contains("secret prompt"));
    }
    // The configured headers go with the export (Langfuse's Basic auth).
    let exports = collector.exports();
    assert!(exports[0].headers.iter().any(|(k, v)| k == "authorization" && v == "Basic cGs6c2s="));
    // The record keeps each attempt's start and finish reason.
    let rec = h.sink.records().pop().unwrap();
    assert_eq!(rec.attempts[0].finish_reason.as_deref(), Some("stop"));
    assert!(rec.attempts[0].started_ms <= rec.total_ms);
}

#[tokio::test]
async fn grpc_exports_a_stream_with_content_when_enabled() {
    let collector = FakeCollector::start().await.unwrap();
    let h = start(&collector.grpc_endpoint(), "grpc", "  capture_content: true\n").await;
    let r = h.post("/v1/chat/completions", &chat("m-anthropic", true)).await;
    assert_eq!(r.status(), 200);
    let body = r.bytes().await.unwrap();
    assert!(String::from_utf8_lossy(&body).contains("[DONE]"));
    let spans = spans(&collector, 2).await;
    let req = server_span(&spans);
    let attempt = client_spans(&spans)[0];
    assert!(spans.iter().all(|s| s.protocol == "grpc"));
    // No client context: a new trace, the request span its root.
    assert_eq!(req.parent_span_id, None);
    assert_eq!(req.flags, 0x01);
    let (trace, parent, _) = sent_parent(&h.anthropic);
    assert_eq!(
        (trace.as_str(), parent.as_str()),
        (req.trace_id.as_str(), attempt.span_id.as_str())
    );
    assert_eq!(attempt.str("gen_ai.provider.name"), Some("anthropic"));
    assert_eq!(req.attr("switchyard.stream"), Some(&AttrValue::Bool(true)));
    assert!(attempt.attr("gen_ai.usage.output_tokens").is_some());
    assert!(attempt.attr("gen_ai.response.finish_reasons").is_some());
    // The answering stream's span lasts until the stream ended.
    assert_eq!(attempt.end_ns, req.end_ns);

    let input: serde_json::Value =
        serde_json::from_str(attempt.str("gen_ai.input.messages").unwrap()).unwrap();
    assert_eq!(input[0]["role"], "user");
    assert_eq!(input[0]["parts"][0], json!({"type": "text", "content": "secret prompt"}));
    let system: serde_json::Value =
        serde_json::from_str(attempt.str("gen_ai.system_instructions").unwrap()).unwrap();
    assert_eq!(system, json!([{"type": "text", "content": "be brief"}]));
    let output: serde_json::Value =
        serde_json::from_str(attempt.str("gen_ai.output.messages").unwrap()).unwrap();
    assert_eq!(output[0]["role"], "assistant");
    assert!(output[0]["parts"][0]["content"].as_str().unwrap().contains("secret prompt"));
    assert!(req.attr("gen_ai.input.messages").is_none(), "content once, on the attempt");
}

#[tokio::test]
async fn a_failover_has_a_span_per_attempt_the_first_in_error() {
    let collector = FakeCollector::start().await.unwrap();
    let h = start(&collector.http_endpoint(), "http/protobuf", "").await;
    // 500 is not retried on the same deployment: the next candidate follows.
    h.openai.push(Reply::status(500));
    let r = h.post("/v1/chat/completions", &chat("m-chain", false)).await;
    assert_eq!(r.status(), 200);
    let spans = spans(&collector, 3).await;
    let req = server_span(&spans);
    let attempts = client_spans(&spans);
    assert_eq!(attempts.len(), 2, "{spans:#?}");
    let (first, second) = (attempts[0], attempts[1]);
    assert_eq!(first.status_code, 2);
    assert_eq!(first.str("error.type"), Some("status_500"));
    assert_eq!(first.str("gen_ai.request.model"), Some("up-primary"));
    assert!(first.attr("gen_ai.usage.cost").is_none());
    assert_eq!(second.status_code, 0);
    assert_eq!(second.str("switchyard.attempt.kind"), Some("failover"));
    assert_eq!(second.str("gen_ai.provider.name"), Some("anthropic"));
    assert!(first.end_ns <= second.start_ns);
    for a in &attempts {
        assert_eq!(a.parent_span_id.as_deref(), Some(req.span_id.as_str()));
    }
    // Each upstream was told its own attempt's span.
    assert_eq!(sent_parent(&h.openai).1, first.span_id);
    assert_eq!(sent_parent(&h.anthropic).1, second.span_id);
    assert_eq!(req.status_code, 0);
    assert_eq!(int(req, "switchyard.attempts"), 2);
    let rec = h.sink.records().pop().unwrap();
    assert!(rec.attempts[0].started_ms <= rec.attempts[1].started_ms);
}

#[tokio::test]
async fn a_failed_request_is_an_error_span() {
    let collector = FakeCollector::start().await.unwrap();
    let h = start(&collector.http_endpoint(), "http/protobuf", "").await;
    h.openai.push(Reply::status(400));
    let r = h.post("/v1/chat/completions", &chat("m-openai", false)).await;
    assert_eq!(r.status(), 400);
    let spans = spans(&collector, 2).await;
    let req = server_span(&spans);
    assert_eq!(req.status_code, 2);
    assert!(req.attr("error.type").is_some());
    assert_eq!(int(req, "http.response.status_code"), 400);
    assert_eq!(client_spans(&spans)[0].str("error.type"), Some("status_400"));
}

#[tokio::test]
async fn an_invalid_traceparent_is_ignored_and_a_new_trace_begins() {
    let collector = FakeCollector::start().await.unwrap();
    let h = start(&collector.http_endpoint(), "http/protobuf", "").await;
    // Uppercase hex is not valid; nor is an all-zero trace id.
    for bad in [
        format!("00-{}-{CLIENT_SPAN}-01", TRACE_ID.to_uppercase()),
        format!("00-{}-{CLIENT_SPAN}-01", "0".repeat(32)),
    ] {
        let r = h
            .post_with(
                "/v1/chat/completions",
                &chat("m-openai", false),
                &[("traceparent", &bad), ("tracestate", "a=b")],
            )
            .await;
        assert_eq!(r.status(), 200);
    }
    let spans = spans(&collector, 4).await;
    for s in &spans {
        assert_ne!(s.trace_id, TRACE_ID);
        assert_ne!(s.trace_id, "0".repeat(32));
        assert_eq!(s.trace_state, "", "tracestate goes with an invalid traceparent");
    }
    let roots: Vec<_> = spans.iter().filter(|s| s.kind == 2).collect();
    assert_eq!(roots.len(), 2);
    assert!(roots.iter().all(|s| s.parent_span_id.is_none()));
    assert_ne!(roots[0].trace_id, roots[1].trace_id);
    let last = h.openai.received().pop().unwrap();
    assert!(last.header("tracestate").is_none());
    assert!(roots.iter().any(|r| sent_parent(&h.openai).0 == r.trace_id));
}

#[tokio::test]
async fn without_telemetry_the_clients_traceparent_is_passed_on() {
    let h = Harness::start().await;
    let tp = client_traceparent();
    let r = h
        .post_with(
            "/v1/chat/completions",
            &chat("m-openai", false),
            &[("traceparent", &tp), ("tracestate", "k=v")],
        )
        .await;
    assert_eq!(r.status(), 200);
    let seen = h.openai.received().pop().unwrap();
    assert_eq!(seen.header("traceparent"), Some(tp.as_str()));
    assert_eq!(seen.header("tracestate"), Some("k=v"));
    // And nothing is made up for a client that sent none.
    let r = h.post("/v1/chat/completions", &chat("m-openai", false)).await;
    assert_eq!(r.status(), 200);
    assert!(h.openai.received().pop().unwrap().header("traceparent").is_none());
}

#[tokio::test]
async fn an_unsampled_client_trace_is_propagated_not_exported() {
    let collector = FakeCollector::start().await.unwrap();
    let h = start(&collector.http_endpoint(), "http/protobuf", "").await;
    let tp = format!("00-{TRACE_ID}-{CLIENT_SPAN}-00");
    let r = h
        .post_with("/v1/chat/completions", &chat("m-openai", false), &[("traceparent", &tp)])
        .await;
    assert_eq!(r.status(), 200);
    let (trace, parent, flags) = sent_parent(&h.openai);
    assert_eq!((trace.as_str(), flags.as_str()), (TRACE_ID, "00"));
    assert_ne!(parent, CLIENT_SPAN, "the gateway's attempt span is the parent");
    // A sampled request after it is exported; the unsampled one never was.
    let r = h.post("/v1/chat/completions", &chat("m-openai", false)).await;
    assert_eq!(r.status(), 200);
    let spans = spans(&collector, 2).await;
    assert!(spans.iter().all(|s| s.trace_id != TRACE_ID));
}

#[tokio::test]
async fn a_refused_export_is_retried() {
    let collector = FakeCollector::start().await.unwrap();
    collector.fail_next(&[Fault::Unavailable]);
    let h = start(&collector.grpc_endpoint(), "grpc", "").await;
    let r = h.post("/v1/chat/completions", &chat("m-openai", false)).await;
    assert_eq!(r.status(), 200);
    let spans = spans(&collector, 2).await;
    assert_eq!(spans.len(), 2);
    let exports = collector.exports();
    assert_eq!(exports.len(), 2);
    assert!(!exports[0].accepted && exports[1].accepted);
}

#[tokio::test]
async fn a_stalled_collector_neither_blocks_nor_fails_requests() {
    let collector = FakeCollector::start().await.unwrap();
    collector.hang();
    let h =
        start(&collector.http_endpoint(), "http/protobuf", "  queue_size: 1\n  batch_size: 1\n")
            .await;
    for _ in 0..6 {
        let r = h.post("/v1/chat/completions", &chat("m-openai", false)).await;
        assert_eq!(r.status(), 200);
    }
    // One export hangs, one request waits in the queue: the rest were dropped.
    let traces = h.state.gateway.runtime.traces.as_ref().unwrap();
    assert!(traces.dropped() >= 4, "{}", traces.dropped());
    tokio::time::timeout(WAIT, collector.wait_for_exports(1)).await.unwrap();
}

#[tokio::test]
async fn a_collector_that_is_down_does_not_fail_requests() {
    // Nothing listens on port 1.
    let h = start("http://127.0.0.1:1/v1/traces", "http/protobuf", "").await;
    for stream in [false, true] {
        let r = h.post("/v1/chat/completions", &chat("m-openai", stream)).await;
        assert_eq!(r.status(), 200);
        r.bytes().await.unwrap();
    }
    assert_eq!(h.sink.records().len(), 2);
}

#[tokio::test]
async fn shutdown_exports_what_is_queued() {
    let collector = FakeCollector::start().await.unwrap();
    // Batches would wait a minute: only the shutdown's flush sends them.
    let top_level = format!(
        "telemetry:\n  otlp: {{ endpoint: \"{}\" }}\n  flush_ms: 60000\n",
        collector.http_endpoint()
    );
    let mut h = Harness::start_with(Options { top_level, ..Options::default() }).await;
    let r = h.post("/v1/chat/completions", &chat("m-openai", false)).await;
    assert_eq!(r.status(), 200);
    assert!(collector.spans().is_empty());
    let task = h.traces.take().unwrap();
    tokio::time::timeout(WAIT, task.shutdown()).await.unwrap();
    assert_eq!(collector.spans().len(), 2);
}
