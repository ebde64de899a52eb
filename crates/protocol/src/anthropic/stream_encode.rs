//! Stream encoder: canonical events → SSE for an Anthropic client.

use serde_json::{Value, json};

use crate::{BlockKind, Delta, ErrorBody, StopReason, StreamEncoder, StreamEvent, Usage, sse};

use super::response::usage_json;

/// Encodes canonical events as an Anthropic event stream.
///
/// `message_start` is held until the first block (or the stop) so that usage reported
/// before it lands in `message_start.usage`. The stop and the final usage may arrive in
/// either order, so both are kept and sent as `message_delta` + `message_stop` by
/// [`StreamEncoder::finish`].
#[derive(Debug, Default)]
pub struct Encoder {
    id: String,
    model: String,
    started: bool,
    open: Option<usize>,
    /// The open block is thinking: the only kind a signature belongs to here (a
    /// Gemini call's signature stays with the gateway).
    open_thinking: bool,
    usage: Usage,
    stop: Option<(StopReason, Option<String>)>,
    finished: bool,
}

impl Encoder {
    /// An encoder for one stream to an Anthropic client, before its first event.
    pub fn new() -> Self {
        Self::default()
    }

    fn ensure_started(&mut self, out: &mut Vec<u8>) {
        if self.started {
            return;
        }
        self.started = true;
        let message = json!({
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": usage_json(&self.usage, true),
        });
        emit(out, "message_start", json!({"type": "message_start", "message": message}));
    }

    fn close_open(&mut self, out: &mut Vec<u8>) {
        if let Some(index) = self.open.take() {
            emit(out, "content_block_stop", json!({"type": "content_block_stop", "index": index}));
        }
    }
}

fn emit(out: &mut Vec<u8>, name: &str, data: Value) {
    sse::write_json(out, Some(name), &data);
}

impl StreamEncoder for Encoder {
    fn push(&mut self, event: &StreamEvent, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        match event {
            StreamEvent::Start { id, model } => {
                if !self.started {
                    self.id.clone_from(id);
                    self.model.clone_from(model);
                }
            }
            StreamEvent::BlockStart { index, kind } => {
                self.ensure_started(out);
                self.close_open(out);
                let block = match kind {
                    BlockKind::Text => json!({"type": "text", "text": ""}),
                    BlockKind::Thinking => json!({"type": "thinking", "thinking": ""}),
                    BlockKind::RedactedThinking { data } => {
                        json!({"type": "redacted_thinking", "data": data})
                    }
                    BlockKind::ToolCall { id, name } => {
                        json!({"type": "tool_use", "id": id, "name": name, "input": {}})
                    }
                    // Compaction is answered in the Responses API only.
                    BlockKind::Compaction { .. } => return,
                };
                emit(
                    out,
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index, "content_block": block}),
                );
                self.open = Some(*index);
                self.open_thinking = matches!(kind, BlockKind::Thinking);
            }
            StreamEvent::Delta { delta: Delta::Signature { .. }, .. } if !self.open_thinking => {}
            StreamEvent::Delta { index, delta } => {
                self.ensure_started(out);
                let delta = match delta {
                    Delta::Text { text } => json!({"type": "text_delta", "text": text}),
                    Delta::Thinking { text } => json!({"type": "thinking_delta", "thinking": text}),
                    Delta::Signature { signature } => {
                        json!({"type": "signature_delta", "signature": signature})
                    }
                    Delta::ToolArguments { json } => {
                        json!({"type": "input_json_delta", "partial_json": json})
                    }
                };
                emit(
                    out,
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": delta}),
                );
            }
            StreamEvent::BlockStop { index } => {
                if self.open == Some(*index) {
                    self.close_open(out);
                }
            }
            StreamEvent::Usage { usage } => self.usage.merge(usage),
            StreamEvent::Stop { reason, stop_sequence } => {
                self.ensure_started(out);
                self.close_open(out);
                self.stop = Some((*reason, stop_sequence.clone()));
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        self.ensure_started(out);
        self.close_open(out);
        self.finished = true;
        let (reason, stop_sequence) = self.stop.take().unwrap_or((StopReason::EndTurn, None));
        emit(
            out,
            "message_delta",
            json!({
                "type": "message_delta",
                "delta": {"stop_reason": reason.to_anthropic(), "stop_sequence": stop_sequence},
                "usage": usage_json(&self.usage, false),
            }),
        );
        emit(out, "message_stop", json!({"type": "message_stop"}));
    }

    fn error(&mut self, err: &ErrorBody, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        self.finished = true;
        emit(out, "error", err.to_anthropic());
    }
}
