//! Stream encoder: canonical events → SSE for an Anthropic client.

use crate::{BlockKind, Delta, ErrorBody, StopReason, StreamEncoder, StreamEvent, Usage, sse};

use super::write::{Block, BlockDelta, Event, Message, StopDelta, UsageOut};

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
        let message = Message::start(&self.id, &self.model, &self.usage);
        emit(out, &Event::MessageStart { message });
    }

    fn close_open(&mut self, out: &mut Vec<u8>) {
        if let Some(index) = self.open.take() {
            emit(out, &Event::ContentBlockStop { index });
        }
    }
}

fn emit(out: &mut Vec<u8>, event: &Event<'_>) {
    sse::write_data(out, Some(event.name()), event);
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
                // Compaction is answered in the Responses API only.
                let Some(content_block) = Block::opened(kind) else {
                    return;
                };
                emit(out, &Event::ContentBlockStart { index: *index, content_block });
                self.open = Some(*index);
                self.open_thinking = matches!(kind, BlockKind::Thinking);
            }
            StreamEvent::Delta { delta: Delta::Signature { .. }, .. } if !self.open_thinking => {}
            StreamEvent::Delta { index, delta } => {
                self.ensure_started(out);
                let delta = match delta {
                    Delta::Text { text } => BlockDelta::Text { text },
                    Delta::Thinking { text } => BlockDelta::Thinking { thinking: text },
                    Delta::Signature { signature } => BlockDelta::Signature { signature },
                    Delta::ToolArguments { json } => BlockDelta::InputJson { partial_json: json },
                };
                emit(out, &Event::ContentBlockDelta { index: *index, delta });
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
        let delta = StopDelta {
            stop_reason: reason.to_anthropic(),
            stop_sequence: stop_sequence.as_deref(),
        };
        emit(out, &Event::MessageDelta { delta, usage: UsageOut::of(&self.usage, false) });
        emit(out, &Event::MessageStop);
    }

    fn error(&mut self, err: &ErrorBody, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        self.finished = true;
        sse::write_json(out, Some("error"), &err.to_anthropic());
    }
}
