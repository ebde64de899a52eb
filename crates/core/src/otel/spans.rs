//! The spans of one finished request: the request's (kind SERVER, the
//! client's span its parent when it sent one) and one per attempt (kind
//! CLIENT, the request span's children), with the GenAI semantic conventions'
//! attributes (<https://opentelemetry.io/docs/specs/semconv/gen-ai/>).
//!
//! Usage and cost are on the attempt spans only, each attempt's own: backends
//! that add a trace's generations up (Langfuse) then count each token once.
//! The request span carries the request's totals under `switchyard.*`.

use std::borrow::Cow;

use serde_json::{Value as Json, json};
use switchyard_protocol::{Part, Request, Role};

use super::{MAX_CONTENT, RequestTrace, SpanId, TraceId};
use crate::record::RequestRecord;

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Str(Cow<'static, str>),
    Bool(bool),
    Int(i64),
    Double(f64),
    Strs(Vec<String>),
}

impl From<&'static str> for Value {
    fn from(s: &'static str) -> Self {
        Value::Str(Cow::Borrowed(s))
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Str(Cow::Owned(s))
    }
}

/// `SpanKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Server = 2,
    Client = 3,
}

/// `Status.StatusCode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatusCode {
    Error = 2,
}

/// One span, ready to encode.
#[derive(Debug, Clone)]
pub(crate) struct Span {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub parent: Option<SpanId>,
    pub trace_state: Option<String>,
    pub name: String,
    pub kind: Kind,
    pub start_ns: u64,
    pub end_ns: u64,
    pub attributes: Vec<(&'static str, Value)>,
    /// Unset unless it failed.
    pub status: Option<(StatusCode, String)>,
    pub flags: u8,
    /// Whether the parent came from another process (`None`: no parent).
    pub remote_parent: Option<bool>,
}

/// The request's spans, request span first.
pub(crate) fn build(rec: &RequestRecord, trace: &RequestTrace) -> Vec<Span> {
    let end_ns = trace.start_ns.saturating_add(ns(trace.ended));
    let finish = rec.attempts.iter().rev().find_map(|a| a.finish_reason.clone());
    let mut spans = Vec::with_capacity(1 + rec.attempts.len());
    let model = rec.requested_model.as_str();
    let mut attrs: Vec<(&'static str, Value)> = vec![
        ("gen_ai.operation.name", "chat".into()),
        ("gen_ai.request.model", model.to_owned().into()),
        ("switchyard.request_id", rec.id.clone().into()),
        ("switchyard.client_format", Value::Str(rec.client_format.clone())),
        ("http.response.status_code", Value::Int(i64::from(rec.status))),
        ("switchyard.attempts", Value::Int(rec.attempts.len() as i64)),
        ("switchyard.stream", Value::Bool(rec.stream)),
    ];
    let served = rec.served_provider.is_some();
    if let Some(last) = trace.attempts.get(rec.attempts.len().wrapping_sub(1)).filter(|_| served) {
        attrs.push(("gen_ai.provider.name", last.provider.into()));
    }
    push_opt(&mut attrs, "gen_ai.response.model", rec.upstream_model.clone());
    push_opt(&mut attrs, "switchyard.model", rec.resolved_model.clone());
    push_opt(&mut attrs, "switchyard.provider", rec.served_provider.clone());
    push_opt(&mut attrs, "switchyard.route", rec.route_id.clone());
    push_opt(&mut attrs, "switchyard.project", rec.project.clone());
    push_opt(&mut attrs, "user.id", rec.user.clone());
    push_opt(&mut attrs, "session.id", rec.session_id.clone());
    push_opt(&mut attrs, "gen_ai.conversation.id", rec.session_id.clone());
    if let Some(cache) = &rec.cache {
        attrs.push(("switchyard.cache", Value::Str(cache.clone())));
    }
    if !rec.descriptor.is_empty() {
        attrs.push(("switchyard.descriptor", rec.descriptor.clone().into()));
    }
    params(&mut attrs, trace);
    if let Some(f) = &finish {
        attrs.push(("gen_ai.response.finish_reasons", Value::Strs(vec![f.clone()])));
    }
    if served {
        if let Some(n) = rec.usage.input_tokens {
            attrs.push(("switchyard.usage.input_tokens", Value::Int(n as i64)));
        }
        if let Some(n) = rec.usage.output_tokens {
            attrs.push(("switchyard.usage.output_tokens", Value::Int(n as i64)));
        }
    }
    if let Some(c) = rec.cost_usd {
        attrs.push(("switchyard.cost_usd", Value::Double(c)));
    }
    let status = rec.error_code.as_ref().map(|code| {
        attrs.push(("error.type", code.clone().into()));
        (StatusCode::Error, code.clone())
    });
    spans.push(Span {
        trace_id: trace.trace_id,
        span_id: trace.span_id,
        parent: trace.parent,
        trace_state: trace.state.clone(),
        name: format!("chat {model}"),
        kind: Kind::Server,
        start_ns: trace.start_ns,
        end_ns,
        attributes: attrs,
        status,
        flags: trace.flags,
        remote_parent: trace.parent.map(|_| true),
    });
    let last = rec.attempts.len().saturating_sub(1);
    for (i, (a, s)) in rec.attempts.iter().zip(&trace.attempts).enumerate() {
        let ok = a.outcome == "ok";
        let (deployment_provider, upstream_model) =
            a.deployment.split_once('/').unwrap_or((a.deployment.as_str(), ""));
        let start_ns = trace.start_ns.saturating_add(ns(s.offset));
        // A stream's answering attempt lasts until the stream ends.
        let answering = i == last && served;
        let end_ns = if answering && rec.stream { end_ns } else { start_ns + ns(s.took) };
        let mut attrs: Vec<(&'static str, Value)> = vec![
            ("gen_ai.operation.name", "chat".into()),
            ("gen_ai.provider.name", s.provider.into()),
            ("gen_ai.request.model", upstream_model.to_owned().into()),
            ("switchyard.provider", deployment_provider.to_owned().into()),
            ("switchyard.attempt.kind", Value::Str(a.kind.clone())),
            ("switchyard.attempt.outcome", a.outcome.clone().into()),
        ];
        if let Some((host, port)) = &s.server {
            attrs.push(("server.address", host.clone().into()));
            attrs.push(("server.port", Value::Int(i64::from(*port))));
        }
        push_opt(&mut attrs, "switchyard.credential", a.credential.clone());
        params(&mut attrs, trace);
        // The answering attempt's usage and cost are the request's own less
        // what failed attempts reported (each on its own span).
        let (usage, cost) = if answering {
            let failed: f64 = rec.attempts.iter().filter_map(|a| a.cost_usd).sum();
            (Some(rec.usage), rec.cost_usd.map(|c| c - failed))
        } else {
            (a.usage, a.cost_usd)
        };
        if answering {
            push_opt(&mut attrs, "gen_ai.response.model", rec.upstream_model.clone());
        }
        if let Some(f) = &a.finish_reason {
            attrs.push(("gen_ai.response.finish_reasons", Value::Strs(vec![f.clone()])));
        }
        if let Some(u) = usage {
            if let Some(n) = u.input_tokens {
                attrs.push(("gen_ai.usage.input_tokens", Value::Int(n as i64)));
            }
            if let Some(n) = u.output_tokens {
                attrs.push(("gen_ai.usage.output_tokens", Value::Int(n as i64)));
            }
            if let Some(n) = u.cache_read_tokens {
                attrs.push(("gen_ai.usage.cache_read.input_tokens", Value::Int(n as i64)));
            }
            if let Some(n) = u.cache_write_tokens {
                attrs.push(("gen_ai.usage.cache_creation.input_tokens", Value::Int(n as i64)));
            }
        }
        if let Some(c) = cost {
            // No convention names a cost: Langfuse reads `gen_ai.usage.cost`.
            attrs.push(("gen_ai.usage.cost", Value::Double(c)));
            attrs.push(("switchyard.cost_usd", Value::Double(c)));
        }
        // The content goes on the last attempt: the answering one (its input
        // and output), or the last tried.
        if i == last
            && let Some(content) = &trace.content
        {
            content_attributes(
                &mut attrs,
                &content.request,
                answering.then_some(&*content.output),
                finish.as_deref(),
            );
        }
        let status = (!ok).then(|| {
            attrs.push(("error.type", a.outcome.clone().into()));
            (StatusCode::Error, a.outcome.clone())
        });
        spans.push(Span {
            trace_id: trace.trace_id,
            span_id: s.span_id,
            parent: Some(trace.span_id),
            trace_state: trace.state.clone(),
            name: if upstream_model.is_empty() {
                "chat".to_owned()
            } else {
                format!("chat {upstream_model}")
            },
            kind: Kind::Client,
            start_ns,
            end_ns,
            attributes: attrs,
            status,
            flags: trace.flags,
            remote_parent: Some(false),
        });
    }
    spans
}

fn ns(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn push_opt(attrs: &mut Vec<(&'static str, Value)>, key: &'static str, v: Option<String>) {
    if let Some(v) = v.filter(|v| !v.is_empty()) {
        attrs.push((key, v.into()));
    }
}

fn params(attrs: &mut Vec<(&'static str, Value)>, trace: &RequestTrace) {
    let p = trace.params;
    if let Some(n) = p.max_tokens {
        attrs.push(("gen_ai.request.max_tokens", Value::Int(n as i64)));
    }
    if let Some(t) = p.temperature {
        attrs.push(("gen_ai.request.temperature", Value::Double(t)));
    }
    if let Some(t) = p.top_p {
        attrs.push(("gen_ai.request.top_p", Value::Double(t)));
    }
}

/// The finish reason the conventions name for a canonical stop reason.
pub(crate) fn finish_reason(r: switchyard_protocol::StopReason) -> &'static str {
    use switchyard_protocol::StopReason as S;
    match r {
        S::EndTurn | S::StopSequence | S::PauseTurn => "stop",
        S::MaxTokens => "length",
        S::ToolUse => "tool_call",
        S::ContentFilter | S::Refusal => "content_filter",
        S::Error => "error",
    }
}

/// `gen_ai.system_instructions`, `gen_ai.input.messages` and (answered)
/// `gen_ai.output.messages`, as the conventions' JSON, text cut to
/// [`MAX_CONTENT`] bytes in all.
fn content_attributes(
    attrs: &mut Vec<(&'static str, Value)>,
    req: &Request,
    output: Option<&str>,
    finish: Option<&str>,
) {
    let mut budget = MAX_CONTENT;
    let mut text = |s: &str| -> String {
        let cut = cut(s, budget);
        budget -= cut.len();
        cut.to_owned()
    };
    if !req.system.is_empty() {
        let parts: Vec<Json> =
            req.system.iter().map(|s| json!({"type": "text", "content": text(&s.text)})).collect();
        attrs.push(("gen_ai.system_instructions", Json::Array(parts).to_string().into()));
    }
    let mut messages = Vec::with_capacity(req.messages.len());
    for m in &req.messages {
        let mut role = match m.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let mut parts = Vec::new();
        for p in &m.content {
            match p {
                Part::Text(t) => parts.push(json!({"type": "text", "content": text(&t.text)})),
                Part::ToolCall(c) => {
                    let args = text(&c.arguments);
                    let args = serde_json::from_str::<Json>(&args).unwrap_or(Json::String(args));
                    parts.push(
                        json!({"type": "tool_call", "id": c.id, "name": c.name, "arguments": args}),
                    );
                }
                Part::ToolResult(r) => {
                    role = "tool";
                    parts.push(json!({"type": "tool_call_response", "id": r.call_id, "response": text(&r.text())}));
                }
                _ => {}
            }
        }
        messages.push(json!({"role": role, "parts": parts}));
    }
    attrs.push(("gen_ai.input.messages", Json::Array(messages).to_string().into()));
    if let Some(out) = output {
        let mut message =
            json!({"role": "assistant", "parts": [{"type": "text", "content": text(out)}]});
        if let (Some(f), Some(obj)) = (finish, message.as_object_mut()) {
            obj.insert("finish_reason".to_owned(), Json::String(f.to_owned()));
        }
        attrs.push(("gen_ai.output.messages", json!([message]).to_string().into()));
    }
}

/// `s` cut to at most `max` bytes at a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or("")
}

#[cfg(test)]
#[path = "spans_tests.rs"]
mod tests;
