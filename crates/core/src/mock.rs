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

/// The mock's embeddings: one vector per input, in order, `dimensions` long
/// (8 unless asked), each a deterministic function of its input (the same text
/// always gives the same vector) scaled to unit length; input tokens estimated.
pub fn embeddings(
    req: &switchyard_protocol::embeddings::EmbedRequest,
    model: &str,
) -> switchyard_protocol::embeddings::EmbedResponse {
    use switchyard_protocol::embeddings::{EmbedInput, EmbedResponse};
    let dims = req.dimensions.map_or(8, |d| d.clamp(1, 4096) as usize);
    let mut tokens = 0u64;
    let vectors = req
        .inputs
        .iter()
        .map(|input| {
            // FNV-1a over the input, then xorshift for each value.
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            let mut eat = |b: u8| h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            match input {
                EmbedInput::Text(t) => {
                    tokens += estimate::output_tokens(t.len()).max(1);
                    t.bytes().for_each(&mut eat);
                }
                EmbedInput::Tokens(ids) => {
                    tokens += ids.len() as u64;
                    ids.iter().flat_map(|id| id.to_le_bytes()).for_each(&mut eat);
                }
            }
            let mut v: Vec<f32> = (0..dims)
                .map(|_| {
                    h ^= h << 13;
                    h ^= h >> 7;
                    h ^= h << 17;
                    (h >> 40) as f32 / (1u64 << 23) as f32 - 1.0
                })
                .collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            if norm > 0.0 {
                v.iter_mut().for_each(|x| *x /= norm);
            }
            v
        })
        .collect();
    EmbedResponse { model: model.to_owned(), vectors, input_tokens: Some(tokens) }
}

/// A 1×1 PNG: what the mock draws.
pub const MOCK_PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// The mock's images: `n` copies of a 1×1 PNG, its prompt as the revised one.
pub fn images(
    req: &switchyard_protocol::images::ImageRequest,
) -> switchyard_protocol::images::ImageResponse {
    use switchyard_protocol::images::{Image, ImageResponse};
    let image = Image {
        b64: MOCK_PNG_B64.to_owned(),
        mime: "image/png".to_owned(),
        revised_prompt: Some(req.prompt.clone()),
    };
    ImageResponse { images: vec![image; req.n as usize], input_tokens: None, output_tokens: None }
}

/// The mock's media job, done at once: a deterministic link named after its
/// model and prompt, and the `duration` it was asked for (5 seconds unless
/// it said), so a per-second price meters it.
pub fn job(
    upstream_model: &str,
    input: &serde_json::Map<String, serde_json::Value>,
) -> serde_json::Value {
    use std::hash::{Hash, Hasher};
    let prompt = input.get("prompt").and_then(serde_json::Value::as_str).unwrap_or("");
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (upstream_model, prompt).hash(&mut h);
    let duration = input.get("duration").cloned().unwrap_or_else(|| serde_json::json!(5));
    serde_json::json!({
        "video": {
            "url": format!("mock://media/{:016x}.mp4", h.finish()),
            "content_type": "video/mp4",
        },
        "duration": duration,
        "prompt": prompt,
    })
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

    #[test]
    fn embeddings_are_one_unit_vector_per_input_and_the_same_for_the_same_text() {
        use switchyard_protocol::embeddings::{EmbedInput, EmbedRequest};
        let text = |t: &str| EmbedInput::Text(t.into());
        let req = EmbedRequest {
            inputs: vec![text("a"), text("b"), text("a"), EmbedInput::Tokens(vec![1, 2])],
            dimensions: Some(16),
            ..EmbedRequest::default()
        };
        let r = embeddings(&req, "m");
        assert_eq!(r.vectors.len(), 4);
        assert_eq!(r.vectors[0], r.vectors[2]);
        assert_ne!(r.vectors[0], r.vectors[1]);
        for v in &r.vectors {
            assert_eq!(v.len(), 16);
            let norm: f32 = v.iter().map(|x| x * x).sum();
            assert!((norm - 1.0).abs() < 1e-4, "{norm}");
        }
        assert_eq!(r.input_tokens, Some(1 + 1 + 1 + 2));
    }
}
