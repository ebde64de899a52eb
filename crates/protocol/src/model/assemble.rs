//! Between a whole [`Response`] and the stream of [`StreamEvent`]s that carries
//! it: rebuilt from events ([`ResponseAccumulator`]) and cut into them
//! ([`response_to_events`]).

use super::*;

/// Rebuilds a complete [`Response`] from canonical stream events. Used to check that
/// stream and non-stream translation agree, and by adapters that only stream.
#[derive(Debug, Default)]
pub struct ResponseAccumulator {
    id: String,
    model: String,
    content: Vec<Part>,
    stop_reason: Option<StopReason>,
    stop_sequence: Option<String>,
    usage: Usage,
}

impl ResponseAccumulator {
    /// Take one event. A delta for a block that never started is ignored.
    pub fn push(&mut self, event: &StreamEvent) {
        match event {
            StreamEvent::Start { id, model } => {
                self.id.clone_from(id);
                self.model.clone_from(model);
            }
            StreamEvent::BlockStart { kind, .. } => self.content.push(match kind {
                BlockKind::Text => Part::Text(TextBlock::default()),
                BlockKind::Thinking => Part::Thinking { text: String::new(), signature: None },
                BlockKind::RedactedThinking { data } => {
                    Part::RedactedThinking { data: data.clone() }
                }
                BlockKind::ToolCall { id, name } => Part::ToolCall(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: String::new(),
                    signature: None,
                }),
                BlockKind::Compaction { sealed } => Part::Compaction { sealed: sealed.clone() },
            }),
            StreamEvent::Delta { index, delta } => {
                let Some(part) = self.content.get_mut(*index) else { return };
                match (part, delta) {
                    (Part::Text(t), Delta::Text { text }) => t.text.push_str(text),
                    (Part::Thinking { text: t, .. }, Delta::Thinking { text }) => t.push_str(text),
                    (Part::Thinking { signature, .. }, Delta::Signature { signature: s }) => {
                        signature.get_or_insert_with(String::new).push_str(s)
                    }
                    (Part::ToolCall(call), Delta::ToolArguments { json }) => {
                        call.arguments.push_str(json)
                    }
                    (Part::ToolCall(call), Delta::Signature { signature: s }) => {
                        call.signature.get_or_insert_with(String::new).push_str(s)
                    }
                    _ => {}
                }
            }
            StreamEvent::BlockStop { .. } => {}
            StreamEvent::Usage { usage } => self.usage.merge(usage),
            StreamEvent::Stop { reason, stop_sequence } => {
                self.stop_reason = Some(*reason);
                self.stop_sequence.clone_from(stop_sequence);
            }
        }
    }

    /// The response the events added up to (empty fields where no event said).
    pub fn finish(self) -> Response {
        Response {
            id: self.id,
            model: self.model,
            content: self.content,
            stop_reason: self.stop_reason,
            stop_sequence: self.stop_sequence,
            usage: self.usage,
        }
    }
}

/// Turns a complete response into the canonical event sequence (for adapters that
/// answer whole, such as the mock, when the client asked for a stream).
pub fn response_to_events(resp: &Response) -> Vec<StreamEvent> {
    let mut out = vec![StreamEvent::Start { id: resp.id.clone(), model: resp.model.clone() }];
    // A whole response knows its usage up front: report it first, as Anthropic does
    // in `message_start`, so every client format can show it as early as possible.
    if !resp.usage.is_empty() {
        out.push(StreamEvent::Usage { usage: resp.usage });
    }
    let mut index = 0;
    for part in &resp.content {
        let (kind, delta) = match part {
            Part::Text(t) => (BlockKind::Text, Some(Delta::Text { text: t.text.clone() })),
            Part::Thinking { text, .. } => {
                (BlockKind::Thinking, Some(Delta::Thinking { text: text.clone() }))
            }
            Part::RedactedThinking { data } => {
                (BlockKind::RedactedThinking { data: data.clone() }, None)
            }
            Part::Compaction { sealed } => (BlockKind::Compaction { sealed: sealed.clone() }, None),
            Part::ToolCall(c) => (
                BlockKind::ToolCall { id: c.id.clone(), name: c.name.clone() },
                Some(Delta::ToolArguments { json: c.arguments.clone() }),
            ),
            Part::Image(_)
            | Part::Document(_)
            | Part::ToolResult(_)
            | Part::Untranslatable { .. } => continue,
        };
        out.push(StreamEvent::BlockStart { index, kind });
        if let Some(delta) = delta {
            out.push(StreamEvent::Delta { index, delta });
        }
        if let Part::Thinking { signature: Some(signature), .. }
        | Part::ToolCall(ToolCall { signature: Some(signature), .. }) = part
        {
            out.push(StreamEvent::Delta {
                index,
                delta: Delta::Signature { signature: signature.clone() },
            });
        }
        out.push(StreamEvent::BlockStop { index });
        index += 1;
    }
    out.push(StreamEvent::Stop {
        reason: resp.stop_reason.unwrap_or(StopReason::EndTurn),
        stop_sequence: resp.stop_sequence.clone(),
    });
    out
}
