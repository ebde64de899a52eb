#![allow(clippy::unwrap_used)]
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::otel::{AttemptSpan, Content, Incoming, RequestTrace, Traces};
use crate::record::AttemptRecord;
use switchyard_protocol::{Message, Request, Role, TextBlock, Usage};

fn trace(capture: bool) -> RequestTrace {
    let mut config = crate::otel::tests::config();
    config.capture_content = capture;
    let (traces, _rx) = Traces::for_tests(config.clone(), 1);
    let request = Arc::new(Request {
        system: vec![TextBlock::new("sys")],
        messages: vec![Message::text(Role::User, "h\u{e9}llo ".repeat(20_000))],
        max_tokens: Some(10),
        ..Request::default()
    });
    let mut t =
        RequestTrace::begin(&Incoming::default(), &traces, &config, &request, Instant::now());
    t.ended = Duration::from_millis(900);
    t
}

fn attempt(t: &mut RequestTrace, offset: u64, took: u64) {
    t.attempts.push(AttemptSpan {
        span_id: crate::otel::propagation::new_span_id(),
        offset: Duration::from_millis(offset),
        took: Duration::from_millis(took),
        provider: "openai",
        server: Some(("api.example".into(), 443)),
    });
}

fn record() -> RequestRecord {
    let mut r = RequestRecord::new("req-1", 0);
    r.requested_model = "smart".into();
    r.status = 200;
    r.served_provider = Some("b".into());
    r.upstream_model = Some("up-b".into());
    r.usage = Usage { input_tokens: Some(10), output_tokens: Some(5), ..Usage::default() };
    let mut failed = AttemptRecord::new("a/up-a", "status_500", 100, "primary");
    failed.usage =
        Some(Usage { input_tokens: Some(3), output_tokens: Some(0), ..Usage::default() });
    failed.cost_usd = Some(0.25);
    let mut ok = AttemptRecord::new("b/up-b", "ok", 300, "failover");
    ok.finish_reason = Some("length".into());
    r.attempts = vec![failed, ok];
    // The request's cost counts the failed attempt's too (the guard adds it).
    r.cost_usd = Some(1.25);
    r
}

fn get<'a>(s: &'a Span, key: &str) -> Option<&'a Value> {
    s.attributes.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

#[test]
fn each_attempt_carries_its_own_usage_and_cost() {
    let mut t = trace(false);
    attempt(&mut t, 5, 100);
    attempt(&mut t, 110, 300);
    let spans = build(&record(), &t);
    assert_eq!(spans.len(), 3);
    let (req, first, second) = (&spans[0], &spans[1], &spans[2]);
    assert_eq!(req.kind, Kind::Server);
    assert_eq!(req.end_ns - req.start_ns, 900_000_000);
    assert_eq!(
        get(req, "gen_ai.response.finish_reasons"),
        Some(&Value::Strs(vec!["length".into()]))
    );
    assert_eq!(get(req, "switchyard.cost_usd"), Some(&Value::Double(1.25)));
    assert_eq!(get(req, "gen_ai.usage.cost"), None);
    assert_eq!(first.status, Some((StatusCode::Error, "status_500".into())));
    assert_eq!(get(first, "gen_ai.usage.cost"), Some(&Value::Double(0.25)));
    assert_eq!(get(first, "gen_ai.usage.input_tokens"), Some(&Value::Int(3)));
    assert_eq!(first.start_ns - req.start_ns, 5_000_000);
    assert_eq!(first.end_ns - first.start_ns, 100_000_000);
    // The answering attempt: the request's usage, its cost less the failed one's.
    assert_eq!(second.status, None);
    assert_eq!(get(second, "gen_ai.usage.cost"), Some(&Value::Double(1.0)));
    assert_eq!(get(second, "gen_ai.usage.output_tokens"), Some(&Value::Int(5)));
    assert_eq!(get(second, "server.port"), Some(&Value::Int(443)));
    assert_eq!(get(second, "gen_ai.request.max_tokens"), Some(&Value::Int(10)));
    assert_eq!(second.name, "chat up-b");
    assert!(spans[1..].iter().all(|s| s.parent == Some(req.span_id)));
}

#[test]
fn content_is_cut_to_its_budget_and_stays_valid_json() {
    let mut t = trace(true);
    attempt(&mut t, 5, 100);
    attempt(&mut t, 110, 300);
    if let Some(Content { output, .. }) = &mut t.content {
        output.push_str("the answer");
    }
    let spans = build(&record(), &t);
    assert!(get(&spans[0], "gen_ai.input.messages").is_none());
    assert!(get(&spans[1], "gen_ai.input.messages").is_none(), "only the last attempt");
    let Some(Value::Str(input)) = get(&spans[2], "gen_ai.input.messages") else { panic!() };
    let input: serde_json::Value = serde_json::from_str(input).unwrap();
    let text = input[0]["parts"][0]["content"].as_str().unwrap();
    assert!(text.len() <= MAX_CONTENT && text.len() > MAX_CONTENT - 8, "{}", text.len());
    // The prompt took the whole budget: the answer is there, emptied.
    let Some(Value::Str(output)) = get(&spans[2], "gen_ai.output.messages") else { panic!() };
    let output: serde_json::Value = serde_json::from_str(output).unwrap();
    assert_eq!(output[0]["finish_reason"], "length");
    assert_eq!(output[0]["role"], "assistant");
}

#[test]
fn finish_reasons_use_the_conventions_names() {
    use switchyard_protocol::StopReason as S;
    assert_eq!(finish_reason(S::EndTurn), "stop");
    assert_eq!(finish_reason(S::MaxTokens), "length");
    assert_eq!(finish_reason(S::ToolUse), "tool_call");
    assert_eq!(finish_reason(S::Refusal), "content_filter");
    assert_eq!(finish_reason(S::Error), "error");
}
