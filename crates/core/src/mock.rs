//! The built-in `mock` provider: deterministic, free, no network. It answers
//! `echo: <last user text>`; when the request forces a tool (`tool_choice` required or
//! a named tool) it calls that tool with `{}`; when reasoning is on it adds a short
//! thinking block. Latency (`latency_ms`) is applied before the answer and between
//! streamed chunks.

use std::time::Duration;

use switchyard_protocol::{
    Part, Request, Response, Role, StopReason, StreamEvent, TextBlock, ToolCall, ToolChoice, Usage,
    response_to_events,
};
use tokio::sync::mpsc;

use crate::estimate;

/// The mock's answer to `req`. `id` is the request id (so answers are traceable).
pub fn answer(req: &Request, model: &str, id: &str) -> Response {
    let last_user = req
        .messages
        .iter()
        .rev()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| m.content.iter().rev())
        .find_map(|p| match p {
            Part::Text(t) => Some(t.text.as_str()),
            Part::ToolResult(r) => r.content.iter().find_map(|c| match c {
                Part::Text(t) => Some(t.text.as_str()),
                _ => None,
            }),
            _ => None,
        })
        .unwrap_or("");
    let mut content = Vec::new();
    if req.reasoning.as_ref().is_some_and(|r| r.enabled) {
        content
            .push(Part::Thinking { text: "The user wants an echo.".to_owned(), signature: None });
    }
    let forced = match &req.tool_choice {
        Some(ToolChoice::Tool { name }) => Some(name.clone()),
        Some(ToolChoice::Required) => req.tools.first().map(|t| t.name.clone()),
        _ => None,
    };
    let stop_reason = if let Some(name) = forced {
        content.push(Part::ToolCall(ToolCall {
            id: format!("call_mock_{}", id.trim_start_matches("req_")),
            name,
            arguments: "{}".to_owned(),
            signature: None,
        }));
        StopReason::ToolUse
    } else {
        content.push(Part::Text(TextBlock::new(format!("echo: {last_user}"))));
        StopReason::EndTurn
    };
    let out_bytes: usize = content
        .iter()
        .map(|p| match p {
            Part::Text(t) => t.text.len(),
            Part::Thinking { text, .. } => text.len(),
            Part::ToolCall(c) => c.arguments.len() + c.name.len(),
            _ => 0,
        })
        .sum();
    Response {
        id: format!("mock-{id}"),
        model: model.to_owned(),
        content,
        stop_reason: Some(stop_reason),
        stop_sequence: None,
        usage: Usage {
            input_tokens: Some(estimate::input_tokens(req)),
            output_tokens: Some(estimate::output_tokens(out_bytes)),
            cache_read_tokens: Some(0),
            cache_write_tokens: Some(0),
            reasoning_tokens: None,
        },
    }
}

/// Stream the answer as canonical events, text split at word boundaries, paced by
/// `latency`. Stops early when the receiver goes away.
pub fn stream(resp: Response, latency: Duration) -> mpsc::Receiver<StreamEvent> {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        for ev in response_to_events(&resp) {
            let pieces = match &ev {
                StreamEvent::Delta { index, delta: switchyard_protocol::Delta::Text { text } } => {
                    split_words(text)
                        .into_iter()
                        .map(|w| StreamEvent::Delta {
                            index: *index,
                            delta: switchyard_protocol::Delta::Text { text: w },
                        })
                        .collect()
                }
                _ => vec![ev],
            };
            for p in pieces {
                let is_delta = matches!(p, StreamEvent::Delta { .. });
                if tx.send(p).await.is_err() {
                    return;
                }
                if is_delta && !latency.is_zero() {
                    tokio::time::sleep(latency).await;
                }
            }
        }
    });
    rx
}

fn split_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        cur.push(c);
        if c == ' ' {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_protocol::{Message, ResponseAccumulator, Tool};

    #[test]
    fn echoes_the_last_user_text_deterministically() {
        let req = Request {
            messages: vec![Message::text(Role::User, "hello there")],
            ..Request::default()
        };
        let a = answer(&req, "mock-echo", "req_1");
        assert_eq!(a, answer(&req, "mock-echo", "req_1"));
        assert_eq!(a.content, vec![Part::Text(TextBlock::new("echo: hello there"))]);
        assert_eq!(a.usage.input_tokens, Some(3));
    }

    #[test]
    fn calls_a_forced_tool() {
        let req = Request {
            messages: vec![Message::text(Role::User, "x")],
            tools: vec![Tool {
                name: "lookup".into(),
                description: None,
                parameters: serde_json::json!({"type": "object"}),
                strict: None,
                cache_control: None,
                freeform: None,
                namespace: None,
            }],
            tool_choice: Some(ToolChoice::Required),
            ..Request::default()
        };
        let a = answer(&req, "m", "req_2");
        assert!(matches!(&a.content[0], Part::ToolCall(c) if c.name == "lookup"));
        assert_eq!(a.stop_reason, Some(StopReason::ToolUse));
    }

    #[tokio::test]
    async fn streams_the_same_answer() {
        let req =
            Request { messages: vec![Message::text(Role::User, "a b c")], ..Request::default() };
        let whole = answer(&req, "m", "r");
        let mut rx = stream(whole.clone(), Duration::ZERO);
        let mut acc = ResponseAccumulator::default();
        let mut deltas = 0;
        while let Some(ev) = rx.recv().await {
            deltas += usize::from(matches!(ev, StreamEvent::Delta { .. }));
            acc.push(&ev);
        }
        assert_eq!(deltas, 4, "split per word");
        assert_eq!(acc.finish(), whole);
    }
}
