//! Stream decoder: an Anthropic upstream's events (the frames of its SSE stream) →
//! canonical events.

use serde_json::Value;

use crate::{BlockKind, Delta, Frame, ProtocolError, StopReason, StreamDecoder, StreamEvent, util};

use super::wire::{InBlock, WireDelta, WireEvent, WireUsage, at, non_empty};

/// The upstream block being streamed. `canonical` is `None` for a skipped block
/// (server tool use and its results), whose deltas are ignored.
#[derive(Debug, Clone, Copy)]
struct OpenBlock {
    upstream: u64,
    canonical: Option<usize>,
}

/// Decodes an Anthropic event stream. Skipped blocks are renumbered away, so canonical
/// indices count from 0 without gaps.
#[derive(Debug, Default)]
pub struct Decoder {
    started: bool,
    open: Option<OpenBlock>,
    next_index: usize,
    /// Usage so far, in Anthropic's terms (reports are cumulative, merged per field).
    usage: WireUsage,
    stopped: bool,
    done: bool,
}

impl Decoder {
    /// A decoder for one Messages API stream, before its `message_start`.
    pub fn new() -> Self {
        Self::default()
    }

    fn close_open(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some(OpenBlock { canonical: Some(index), .. }) = self.open.take() {
            out.push(StreamEvent::BlockStop { index });
        }
    }

    fn stop(
        &mut self,
        reason: StopReason,
        stop_sequence: Option<String>,
        out: &mut Vec<StreamEvent>,
    ) {
        if !self.stopped {
            self.stopped = true;
            out.push(StreamEvent::Stop { reason, stop_sequence });
        }
    }

    fn usage(&mut self, report: &WireUsage, out: &mut Vec<StreamEvent>) {
        self.usage.merge(report);
        let usage = self.usage.to_canonical();
        if !usage.is_empty() {
            out.push(StreamEvent::Usage { usage });
        }
    }

    fn block_start(
        &mut self,
        upstream: u64,
        block: Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProtocolError> {
        self.close_open(out);
        let block: InBlock = at(block, "content_block_start.content_block")
            .map_err(ProtocolError::MalformedUpstream)?;
        // The kind, and any content the start event already carries.
        let (kind, initial) = match block {
            InBlock::Text { text, .. } => (BlockKind::Text, vec![Delta::Text { text }]),
            InBlock::Thinking { thinking, signature } => (
                BlockKind::Thinking,
                [
                    Some(Delta::Thinking { text: thinking }),
                    non_empty(signature).map(|signature| Delta::Signature { signature }),
                ]
                .into_iter()
                .flatten()
                .collect(),
            ),
            InBlock::RedactedThinking { data } => (BlockKind::RedactedThinking { data }, vec![]),
            InBlock::ToolUse { id, name, input } => {
                // Real streams start with `input: {}` and send the JSON as deltas.
                let initial = match &input {
                    Value::Object(map) if !map.is_empty() => {
                        vec![Delta::ToolArguments { json: util::value_to_arguments(&input) }]
                    }
                    _ => vec![],
                };
                (BlockKind::ToolCall { id, name }, initial)
            }
            InBlock::Image { .. }
            | InBlock::Document { .. }
            | InBlock::ToolResult { .. }
            | InBlock::Other => {
                self.open = Some(OpenBlock { upstream, canonical: None });
                return Ok(());
            }
        };
        let index = self.next_index;
        self.next_index += 1;
        self.open = Some(OpenBlock { upstream, canonical: Some(index) });
        out.push(StreamEvent::BlockStart { index, kind });
        for delta in initial {
            let empty = match &delta {
                Delta::Text { text } | Delta::Thinking { text } => text.is_empty(),
                Delta::Signature { signature } => signature.is_empty(),
                Delta::ToolArguments { json } => json.is_empty(),
            };
            if !empty {
                out.push(StreamEvent::Delta { index, delta });
            }
        }
        Ok(())
    }
}

impl StreamDecoder for Decoder {
    fn push(&mut self, frame: &Frame, out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        let data = frame.data.trim();
        // Nothing after `message_stop` matters; a data-less event is a keep-alive.
        if self.done || data.is_empty() {
            return Ok(());
        }
        let name = frame.event.as_deref().unwrap_or("(unnamed)");
        let mut value: Value = serde_json::from_str(data).map_err(|e| {
            ProtocolError::upstream(format!("`{name}` event data is not JSON: {e}"))
        })?;
        if let (Value::Object(map), Some(event_name)) = (&mut value, &frame.event)
            && !map.contains_key("type")
        {
            map.insert("type".into(), Value::String(event_name.clone()));
        }
        let wire: WireEvent = serde_json::from_value(value)
            .map_err(|e| ProtocolError::upstream(format!("`{name}` event: {e}")))?;

        let needs_start = !matches!(
            wire,
            WireEvent::MessageStart { .. }
                | WireEvent::Ping
                | WireEvent::Error { .. }
                | WireEvent::Other
        );
        if needs_start && !self.started {
            return Err(ProtocolError::upstream(format!("`{name}` event before message_start")));
        }

        match wire {
            WireEvent::MessageStart { message } => {
                if !self.started {
                    self.started = true;
                    out.push(StreamEvent::Start { id: message.id, model: message.model });
                    if let Some(usage) = message.usage {
                        self.usage(&usage, out);
                    }
                }
            }
            WireEvent::ContentBlockStart { index, content_block } => {
                self.block_start(index, content_block, out)?
            }
            WireEvent::ContentBlockDelta { index, delta } => {
                let open = self.open.filter(|open| open.upstream == index).ok_or_else(|| {
                    ProtocolError::upstream(format!("delta for content block {index}, not open"))
                })?;
                let Some(canonical) = open.canonical else { return Ok(()) };
                let delta = match delta {
                    WireDelta::TextDelta { text } => Delta::Text { text },
                    WireDelta::ThinkingDelta { thinking } => Delta::Thinking { text: thinking },
                    WireDelta::SignatureDelta { signature } => Delta::Signature { signature },
                    WireDelta::InputJsonDelta { partial_json } => {
                        Delta::ToolArguments { json: partial_json }
                    }
                    WireDelta::Other => return Ok(()),
                };
                out.push(StreamEvent::Delta { index: canonical, delta });
            }
            WireEvent::ContentBlockStop { index } => {
                if self.open.is_some_and(|open| open.upstream == index) {
                    self.close_open(out);
                }
            }
            WireEvent::MessageDelta { delta, usage } => {
                self.close_open(out);
                if let Some(reason) = delta.stop_reason {
                    self.stop(StopReason::from_anthropic(&reason), delta.stop_sequence, out);
                }
                if let Some(usage) = usage {
                    self.usage(&usage, out);
                }
            }
            WireEvent::MessageStop => {
                self.close_open(out);
                self.stop(StopReason::EndTurn, None, out);
                self.done = true;
            }
            WireEvent::Error { error } => {
                return Err(ProtocolError::UpstreamError {
                    kind: error.kind,
                    message: error.message,
                });
            }
            WireEvent::Ping | WireEvent::Other => {}
        }
        Ok(())
    }

    fn finish(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        if self.done {
            Ok(())
        } else {
            Err(ProtocolError::upstream("stream ended before message_stop"))
        }
    }
}
