//! Stream encoder: canonical events → Gemini SSE.

use crate::model::{BlockKind, Delta, StopReason, ToolCall, Usage};
use crate::sse::{write_data, write_json};
use crate::{ErrorBody, StreamEncoder, StreamEvent};

use super::request::text_part;
use super::response::{response_call_part, response_chunk, thought_part, usage_to_wire};
use super::wire::{UsageMetadata, WirePart};

#[derive(Debug)]
enum EncoderBlock {
    Other,
    Call { id: String, name: String, args: String, signature: Option<String> },
}

/// One chunk per text/thought delta and per whole function call; the chunk with
/// `finishReason` (and the usage) is held until [`StreamEncoder::finish`], since usage
/// may follow `Stop`.
#[derive(Debug, Default)]
pub struct Encoder {
    id: String,
    model: String,
    block: Option<EncoderBlock>,
    usage: Usage,
    stop: Option<StopReason>,
    done: bool,
    /// For a Gemini client: calls carry their canonical ids (see
    /// [`encode_client_response`](super::encode_client_response)).
    client: bool,
}

impl Encoder {
    /// Calls as Gemini writes them (ids as it issues them).
    pub fn new() -> Self {
        Self::default()
    }

    /// For a Gemini client: each call carries its canonical id as `functionCall.id`.
    pub fn for_client() -> Self {
        Self { client: true, ..Self::default() }
    }

    fn emit(
        &self,
        parts: Vec<WirePart>,
        finish: Option<&str>,
        usage: Option<UsageMetadata>,
        out: &mut Vec<u8>,
    ) {
        let chunk = response_chunk(&self.id, &self.model, parts, finish, usage);
        write_data(out, None, &chunk);
    }

    fn flush_call(&mut self, out: &mut Vec<u8>) {
        if let Some(EncoderBlock::Call { id, name, args, signature }) = self.block.take() {
            let call = ToolCall { id, name, arguments: args, signature };
            self.emit(vec![response_call_part(&call, self.client)], None, None, out);
        }
    }
}

impl StreamEncoder for Encoder {
    fn push(&mut self, event: &StreamEvent, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        match event {
            StreamEvent::Start { id, model } => {
                self.id.clone_from(id);
                self.model.clone_from(model);
            }
            StreamEvent::BlockStart { kind, .. } => {
                self.flush_call(out);
                self.block = Some(match kind {
                    BlockKind::ToolCall { id, name } => EncoderBlock::Call {
                        id: id.clone(),
                        name: name.clone(),
                        args: String::new(),
                        signature: None,
                    },
                    _ => EncoderBlock::Other,
                });
            }
            StreamEvent::Delta { delta, .. } => match delta {
                Delta::Text { text } => {
                    if let Some(part) = text_part(text) {
                        self.emit(vec![part], None, None, out);
                    }
                }
                Delta::Thinking { text } => {
                    if let Some(part) = thought_part(text) {
                        self.emit(vec![part], None, None, out);
                    }
                }
                Delta::ToolArguments { json } => {
                    if let Some(EncoderBlock::Call { args, .. }) = &mut self.block {
                        args.push_str(json);
                    }
                }
                Delta::Signature { signature: s } => {
                    if let Some(EncoderBlock::Call { signature, .. }) = &mut self.block {
                        signature.get_or_insert_with(String::new).push_str(s);
                    }
                }
            },
            StreamEvent::BlockStop { .. } => {
                self.flush_call(out);
                self.block = None;
            }
            StreamEvent::Usage { usage } => self.usage.merge(usage),
            StreamEvent::Stop { reason, .. } => {
                self.flush_call(out);
                self.stop = Some(*reason);
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        self.flush_call(out);
        let reason = self.stop.unwrap_or(StopReason::EndTurn).to_gemini();
        self.emit(Vec::new(), Some(reason), usage_to_wire(&self.usage), out);
        self.done = true;
    }

    fn error(&mut self, err: &ErrorBody, out: &mut Vec<u8>) {
        self.done = true;
        write_json(out, None, &err.to_google());
    }
}
