//! Stream decoder: ConverseStream's events (the frames of its AWS event-stream)
//! → canonical events.

use serde::de::DeserializeOwned;

use crate::{BlockKind, Delta, Frame, ProtocolError, StopReason, StreamDecoder, StreamEvent};

use super::response::{RESPONSE_ID, error_kind, stop_reason, stop_sequence};
use super::wire::{
    BlockDelta, BlockStart, BlockStop, MessageStop, Metadata, WireException, WireUsage,
};

/// The upstream block being streamed.
#[derive(Debug)]
enum Open {
    /// Text, reasoning or a tool call, shown as canonical block `index`.
    Shown { upstream: u64, index: usize, kind: Shown },
    /// Redacted reasoning: a canonical block is whole when it starts, so the data
    /// is held until the upstream block ends.
    Redacted { upstream: u64, data: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    Text,
    Thinking,
    ToolCall,
}

/// Decodes one ConverseStream. Text and reasoning blocks have no
/// `contentBlockStart` in Converse (their first delta opens them), a tool call
/// has one. `Stop` comes once both `messageStop` (the reason) and `metadata` (the
/// usage) are in, after the usage, or at the end of the stream after a
/// `messageStop` alone; a stream that ends before `messageStop` was cut short.
#[derive(Debug, Default)]
pub struct Decoder {
    started: bool,
    open: Option<Open>,
    next_index: usize,
    /// `messageStop`'s reason and matched sequence, once it came.
    stop: Option<(StopReason, Option<String>)>,
    /// `metadata` came.
    metadata: bool,
    /// `Stop` was emitted: the stream's content is over.
    done: bool,
}

impl Decoder {
    /// A decoder for one ConverseStream, before its `messageStart`.
    pub fn new() -> Self {
        Self::default()
    }

    fn start(&mut self, out: &mut Vec<StreamEvent>) {
        if !self.started {
            self.started = true;
            // Converse names neither the response nor the model (see the wire's docs).
            out.push(StreamEvent::Start { id: RESPONSE_ID.to_owned(), model: String::new() });
        }
    }

    fn close(&mut self, out: &mut Vec<StreamEvent>) {
        match self.open.take() {
            Some(Open::Shown { index, .. }) => out.push(StreamEvent::BlockStop { index }),
            Some(Open::Redacted { data, .. }) => {
                let index = self.begin(BlockKind::RedactedThinking { data }, out);
                out.push(StreamEvent::BlockStop { index });
            }
            None => {}
        }
    }

    fn begin(&mut self, kind: BlockKind, out: &mut Vec<StreamEvent>) -> usize {
        let index = self.next_index;
        self.next_index += 1;
        out.push(StreamEvent::BlockStart { index, kind });
        index
    }

    /// The canonical index of upstream block `upstream` as text, or reasoning
    /// with `thinking`: the open one when it is that, else a new one (the open
    /// one closed). A tool call opens with its `contentBlockStart` instead.
    fn shown(&mut self, upstream: u64, thinking: bool, out: &mut Vec<StreamEvent>) -> usize {
        let kind = if thinking { Shown::Thinking } else { Shown::Text };
        if let Some(Open::Shown { upstream: u, index, kind: k }) = &self.open
            && *u == upstream
            && *k == kind
        {
            return *index;
        }
        self.close(out);
        let index = self.begin(if thinking { BlockKind::Thinking } else { BlockKind::Text }, out);
        self.open = Some(Open::Shown { upstream, index, kind });
        index
    }

    fn delta(
        &mut self,
        event: BlockDelta,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProtocolError> {
        let upstream = event.content_block_index;
        let delta = event.delta;
        if let Some(text) = delta.text.filter(|t| !t.is_empty()) {
            let index = self.shown(upstream, false, out);
            out.push(StreamEvent::Delta { index, delta: Delta::Text { text } });
        }
        if let Some(tool) = delta.tool_use.filter(|t| !t.input.is_empty()) {
            let Some(Open::Shown { upstream: u, index, kind: Shown::ToolCall }) = &self.open else {
                return Err(ProtocolError::upstream(format!(
                    "a toolUse delta for content block {upstream}, which is no open tool call"
                )));
            };
            if *u != upstream {
                return Err(ProtocolError::upstream(format!(
                    "a toolUse delta for content block {upstream}, not the one open ({u})"
                )));
            }
            out.push(StreamEvent::Delta {
                index: *index,
                delta: Delta::ToolArguments { json: tool.input },
            });
        }
        if let Some(reasoning) = delta.reasoning_content {
            if let Some(text) = reasoning.text.filter(|t| !t.is_empty()) {
                let index = self.shown(upstream, true, out);
                out.push(StreamEvent::Delta { index, delta: Delta::Thinking { text } });
            }
            if let Some(signature) = reasoning.signature.filter(|s| !s.is_empty()) {
                let index = self.shown(upstream, true, out);
                out.push(StreamEvent::Delta { index, delta: Delta::Signature { signature } });
            }
            if let Some(data) = reasoning.redacted_content {
                match &mut self.open {
                    Some(Open::Redacted { upstream: u, data: held }) if *u == upstream => {
                        held.push_str(&data)
                    }
                    _ => {
                        self.close(out);
                        self.open = Some(Open::Redacted { upstream, data });
                    }
                }
            }
        }
        Ok(())
    }

    /// `Stop`, once `messageStop` and `metadata` are both in (or `finish` says
    /// no more is coming).
    fn stop_if(&mut self, ready: bool, out: &mut Vec<StreamEvent>) {
        if let (false, true, Some((reason, stop_sequence))) = (self.done, ready, &self.stop) {
            out.push(StreamEvent::Stop { reason: *reason, stop_sequence: stop_sequence.clone() });
            self.done = true;
        }
    }
}

/// An event's payload as `T`, naming the event where it does not fit.
fn payload<T: DeserializeOwned>(name: &str, data: &str) -> Result<T, ProtocolError> {
    serde_json::from_str(data).map_err(|e| ProtocolError::upstream(format!("`{name}` event: {e}")))
}

/// The error a stream's exception `name` (its `:exception-type`) with
/// payload `data` ends the stream with.
pub(super) fn exception(name: &str, data: &str) -> ProtocolError {
    let e: WireException = serde_json::from_str(data).unwrap_or_default();
    let message = e.message.or(e.original_message).unwrap_or_default();
    ProtocolError::UpstreamError {
        kind: error_kind(name).to_owned(),
        message: if message.is_empty() { name.to_owned() } else { format!("{name}: {message}") },
    }
}

impl StreamDecoder for Decoder {
    fn push(&mut self, frame: &Frame, out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        let Some(name) = frame.event.as_deref() else { return Ok(()) };
        let data = match frame.data.trim() {
            "" => "{}",
            data => data,
        };
        // Nothing after the answer ended matters, not even an exception: the
        // answer is whole.
        if self.done {
            return Ok(());
        }
        // A ConverseStream's events and exceptions share one namespace (see
        // `crate::frame::event_stream`): every exception's name ends so.
        if name.ends_with("Exception") {
            return Err(exception(name, data));
        }
        match name {
            "messageStart" => self.start(out),
            "contentBlockStart" => {
                let event: BlockStart = payload(name, data)?;
                self.start(out);
                self.close(out);
                // Only a tool call starts so; a start of another kind opens nothing
                // (its deltas open what they carry).
                if let Some(call) = event.start.and_then(|s| s.tool_use) {
                    let kind = BlockKind::ToolCall { id: call.tool_use_id, name: call.name };
                    let index = self.begin(kind, out);
                    self.open = Some(Open::Shown {
                        upstream: event.content_block_index,
                        index,
                        kind: Shown::ToolCall,
                    });
                }
            }
            "contentBlockDelta" => {
                let event: BlockDelta = payload(name, data)?;
                self.start(out);
                self.delta(event, out)?;
            }
            "contentBlockStop" => {
                let event: BlockStop = payload(name, data)?;
                let open = match &self.open {
                    Some(Open::Shown { upstream, .. } | Open::Redacted { upstream, .. }) => {
                        Some(*upstream)
                    }
                    None => None,
                };
                if open == Some(event.content_block_index) {
                    self.close(out);
                }
            }
            "messageStop" => {
                let event: MessageStop = payload(name, data)?;
                self.start(out);
                self.close(out);
                let reason = event.stop_reason.as_deref().map_or(StopReason::EndTurn, stop_reason);
                let sequence = stop_sequence(event.additional_model_response_fields.as_ref());
                self.stop = Some((reason, sequence));
                self.stop_if(self.metadata, out);
            }
            "metadata" => {
                let event: Metadata = payload(name, data)?;
                self.start(out);
                let usage = event.usage.map(WireUsage::to_canonical).unwrap_or_default();
                if !usage.is_empty() {
                    out.push(StreamEvent::Usage { usage });
                }
                self.metadata = true;
                self.stop_if(true, out);
            }
            // An event this decoder does not know carries nothing it could show.
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        if self.stop.is_none() {
            return Err(ProtocolError::upstream("stream ended before messageStop"));
        }
        self.close(out);
        self.stop_if(true, out);
        Ok(())
    }
}
