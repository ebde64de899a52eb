//! Stream decoder: an upstream's chat completion chunks → canonical events.

use serde_json::Value;

use crate::{BlockKind, Delta, Frame, ProtocolError, StopReason, StreamDecoder, StreamEvent};

use super::wire::WireChunk;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    Thinking,
    /// A tool call, with the upstream's tool index.
    Tool(usize),
}

/// Upstream Chat Completions stream → canonical events.
#[derive(Debug, Default)]
pub struct Decoder {
    started: bool,
    open: Option<(Open, usize)>,
    next_index: usize,
    stopped: bool,
    done: bool,
}

impl Decoder {
    /// A decoder for one Chat Completions stream, before its first chunk.
    pub fn new() -> Self {
        Self::default()
    }

    fn open(&mut self, kind: Open, block: BlockKind, out: &mut Vec<StreamEvent>) -> usize {
        if let Some((current, index)) = self.open {
            if current == kind {
                return index;
            }
            out.push(StreamEvent::BlockStop { index });
        }
        let index = self.next_index;
        self.next_index += 1;
        self.open = Some((kind, index));
        out.push(StreamEvent::BlockStart { index, kind: block });
        index
    }

    fn close(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some((_, index)) = self.open.take() {
            out.push(StreamEvent::BlockStop { index });
        }
    }
}

impl StreamDecoder for Decoder {
    fn push(&mut self, frame: &Frame, out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        let data = frame.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: WireChunk = serde_json::from_str(data)
            .map_err(|e| ProtocolError::upstream(format!("chat completion chunk: {e}")))?;
        if let Some(err) = chunk.error {
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("upstream reported an error")
                .to_owned();
            let kind = err
                .get("type")
                .or_else(|| err.get("code"))
                .and_then(Value::as_str)
                .unwrap_or("api_error")
                .to_owned();
            return Err(ProtocolError::UpstreamError { kind, message });
        }
        // A chunk that carries nothing of the answer before it starts (Azure's
        // first: its prompt's filter results, `choices: []`, an empty `id` and
        // `model`) does not start the stream: its id would be the answer's.
        if !self.started && chunk.choices.is_empty() && chunk.usage.is_none() {
            return Ok(());
        }
        if !self.started {
            self.started = true;
            out.push(StreamEvent::Start { id: chunk.id, model: chunk.model });
        }
        for choice in chunk.choices.into_iter().take(1) {
            if let Some(delta) = choice.delta {
                let reasoning = delta.reasoning_content.or(delta.reasoning);
                if let Some(text) = reasoning.filter(|t| !t.is_empty()) {
                    let index = self.open(Open::Thinking, BlockKind::Thinking, out);
                    out.push(StreamEvent::Delta { index, delta: Delta::Thinking { text } });
                }
                let text = match (delta.content, delta.refusal) {
                    (Some(c), _) if !c.is_empty() => Some(c),
                    (_, Some(r)) if !r.is_empty() => Some(r),
                    _ => None,
                };
                if let Some(text) = text {
                    let index = self.open(Open::Text, BlockKind::Text, out);
                    out.push(StreamEvent::Delta { index, delta: Delta::Text { text } });
                }
                for call in delta.tool_calls {
                    let tool_index = call.index.unwrap_or(0);
                    let (name, args) = match call.function {
                        Some(f) => (f.name, f.arguments),
                        None => (None, None),
                    };
                    let is_new = !matches!(self.open, Some((Open::Tool(i), _)) if i == tool_index);
                    let index = if is_new {
                        let kind = BlockKind::ToolCall {
                            id: call.id.unwrap_or_default(),
                            name: name.unwrap_or_default(),
                        };
                        self.open(Open::Tool(tool_index), kind, out)
                    } else {
                        self.next_index - 1
                    };
                    if let Some(json) = args.filter(|a| !a.is_empty()) {
                        out.push(StreamEvent::Delta {
                            index,
                            delta: Delta::ToolArguments { json },
                        });
                    }
                }
            }
            if let Some(reason) = choice.finish_reason
                && !self.stopped
            {
                self.close(out);
                self.stopped = true;
                out.push(StreamEvent::Stop {
                    reason: StopReason::from_openai(&reason),
                    stop_sequence: None,
                });
            }
        }
        if let Some(usage) = chunk.usage {
            out.push(StreamEvent::Usage { usage: usage.canonical() });
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        if !self.stopped {
            if !self.done {
                return Err(ProtocolError::upstream("stream ended before a finish_reason"));
            }
            self.close(out);
            self.stopped = true;
            out.push(StreamEvent::Stop { reason: StopReason::EndTurn, stop_sequence: None });
        }
        Ok(())
    }
}
