//! Stream decoder: Gemini SSE (`streamGenerateContent?alt=sse`) → canonical events.

use serde_json::Value;

use crate::model::{BlockKind, Delta};
use crate::{Frame, ProtocolError, StreamDecoder, StreamEvent};

use super::response::{
    Piece, blocked, classify, response_call, response_id, stop_reason, upstream_error,
    usage_from_wire,
};
use super::wire::{FunctionCall, WireResponse};

#[derive(Debug, Clone, Copy)]
struct OpenBlock {
    index: usize,
    thought: bool,
}

/// Each SSE `data` is a whole `GenerateContentResponse`; text and thought parts are
/// deltas of the open block of their kind, each `functionCall` is a whole block.
#[derive(Debug, Default)]
pub struct Decoder {
    started: bool,
    response_id: String,
    open: Option<OpenBlock>,
    next_index: usize,
    calls: usize,
    done: bool,
}

impl Decoder {
    /// A decoder for one `streamGenerateContent` stream, before its first chunk.
    pub fn new() -> Self {
        Self::default()
    }

    fn chunk(&mut self, wire: &WireResponse, out: &mut Vec<StreamEvent>) {
        if !self.started {
            self.started = true;
            self.response_id = response_id(wire.response_id.as_deref());
            out.push(StreamEvent::Start {
                id: self.response_id.clone(),
                model: wire.model_version.clone().unwrap_or_default(),
            });
        }
        let candidate = wire.candidates.first();
        // Usage before the chunk's content: the first chunk already carries the
        // prompt count, and clients that read it early (Anthropic's message_start)
        // then see it.
        if let Some(usage) = wire.usage_metadata.as_ref().map(usage_from_wire)
            && !usage.is_empty()
        {
            out.push(StreamEvent::Usage { usage });
        }
        if !self.done {
            for part in candidate.and_then(|c| c.content.as_ref()).iter().flat_map(|c| &c.parts) {
                match classify(part) {
                    Some(Piece::Text(text)) => self.text(text, false, out),
                    Some(Piece::Thought(text)) => self.text(text, true, out),
                    Some(Piece::Call(call, signature)) => self.call(call, signature, out),
                    None => {}
                }
            }
        }
        if self.done {
            return;
        }
        let reason = match candidate {
            Some(c) => c.finish_reason.as_deref().map(|r| stop_reason(r, self.calls > 0)),
            None => blocked(wire),
        };
        if let Some(reason) = reason {
            self.close(out);
            out.push(StreamEvent::Stop { reason, stop_sequence: None });
            self.done = true;
        }
    }

    fn text(&mut self, text: &str, thought: bool, out: &mut Vec<StreamEvent>) {
        let index = match self.open {
            Some(open) if open.thought == thought => open.index,
            _ => {
                self.close(out);
                let index =
                    self.begin(if thought { BlockKind::Thinking } else { BlockKind::Text }, out);
                self.open = Some(OpenBlock { index, thought });
                index
            }
        };
        let text = text.to_owned();
        let delta = if thought { Delta::Thinking { text } } else { Delta::Text { text } };
        out.push(StreamEvent::Delta { index, delta });
    }

    fn call(&mut self, call: &FunctionCall, signature: Option<&str>, out: &mut Vec<StreamEvent>) {
        self.close(out);
        let call = response_call(call, signature, &self.response_id, self.calls);
        self.calls += 1;
        let index = self.begin(BlockKind::ToolCall { id: call.id, name: call.name }, out);
        out.push(StreamEvent::Delta {
            index,
            delta: Delta::ToolArguments { json: call.arguments },
        });
        if let Some(signature) = call.signature {
            out.push(StreamEvent::Delta { index, delta: Delta::Signature { signature } });
        }
        out.push(StreamEvent::BlockStop { index });
    }

    fn begin(&mut self, kind: BlockKind, out: &mut Vec<StreamEvent>) -> usize {
        let index = self.next_index;
        self.next_index += 1;
        out.push(StreamEvent::BlockStart { index, kind });
        index
    }

    fn close(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some(open) = self.open.take() {
            out.push(StreamEvent::BlockStop { index: open.index });
        }
    }
}

impl StreamDecoder for Decoder {
    fn push(&mut self, frame: &Frame, out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        let data = frame.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let value: Value = serde_json::from_str(data).map_err(|e| {
            ProtocolError::upstream(format!("gemini stream chunk is not JSON: {e}"))
        })?;
        if let Some(err) = upstream_error(&value) {
            return Err(err);
        }
        let wire: WireResponse = serde_json::from_value(value)
            .map_err(|e| ProtocolError::upstream(format!("gemini stream chunk: {e}")))?;
        self.chunk(&wire, out);
        Ok(())
    }

    fn finish(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        if self.done {
            Ok(())
        } else {
            Err(ProtocolError::upstream("stream ended before finishReason"))
        }
    }
}
