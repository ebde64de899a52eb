//! Stream encoder: canonical events → chat completion chunks for an OpenAI client.

use crate::sse;
use crate::{BlockKind, Delta, ErrorBody, StreamEncoder, StreamEvent, Usage};

use super::response::now_secs;
use super::write::{CallDelta, Chunk, ChunkChoice, ChunkDelta, FunctionDelta, UsageOut};

/// Canonical events → Chat Completions chunks, then `[DONE]`. Usage is sent in a
/// final chunk with `choices: []` only when the client asked for it
/// (`stream_options.include_usage`), as OpenAI does: clients that read
/// `choices[0]` of every chunk break on that chunk otherwise.
#[derive(Debug, Default)]
pub struct Encoder {
    id: String,
    model: String,
    created: u64,
    /// Canonical block index → OpenAI tool_calls index.
    tool_index: Vec<(usize, usize)>,
    usage: Usage,
    include_usage: bool,
    finished: bool,
}

impl Encoder {
    /// `include_usage`: the client's `stream_options.include_usage`.
    pub fn new(include_usage: bool) -> Self {
        Self { created: now_secs(), include_usage, ..Self::default() }
    }

    fn chunk(&self, delta: ChunkDelta<'_>, finish_reason: Option<&'static str>, out: &mut Vec<u8>) {
        let choices = [ChunkChoice { index: 0, delta, finish_reason, logprobs: None }];
        self.write(&choices, None, out);
    }

    fn write(&self, choices: &[ChunkChoice<'_>], usage: Option<UsageOut>, out: &mut Vec<u8>) {
        let chunk = Chunk {
            id: &self.id,
            object: "chat.completion.chunk",
            created: self.created,
            model: &self.model,
            choices,
            usage,
        };
        sse::write_data(out, None, &chunk);
    }
}

impl StreamEncoder for Encoder {
    fn push(&mut self, event: &StreamEvent, out: &mut Vec<u8>) {
        match event {
            StreamEvent::Start { id, model } => {
                self.id.clone_from(id);
                self.model.clone_from(model);
                let delta = ChunkDelta {
                    role: Some("assistant"),
                    content: Some(""),
                    ..ChunkDelta::default()
                };
                self.chunk(delta, None, out);
            }
            StreamEvent::BlockStart { index, kind: BlockKind::ToolCall { id, name } } => {
                let tool = self.tool_index.len();
                self.tool_index.push((*index, tool));
                let call = CallDelta {
                    index: tool,
                    id: Some(id),
                    kind: Some("function"),
                    function: FunctionDelta { name: Some(name), arguments: "" },
                };
                self.chunk(
                    ChunkDelta { tool_calls: Some([call]), ..ChunkDelta::default() },
                    None,
                    out,
                );
            }
            StreamEvent::BlockStart { .. } | StreamEvent::BlockStop { .. } => {}
            StreamEvent::Delta { index, delta } => match delta {
                Delta::Text { text } => self.chunk(
                    ChunkDelta { content: Some(text), ..ChunkDelta::default() },
                    None,
                    out,
                ),
                Delta::Thinking { text } => self.chunk(
                    ChunkDelta { reasoning_content: Some(text), ..ChunkDelta::default() },
                    None,
                    out,
                ),
                Delta::Signature { .. } => {}
                Delta::ToolArguments { json: args } => {
                    let tool = self
                        .tool_index
                        .iter()
                        .find(|(block, _)| block == index)
                        .map(|(_, t)| *t)
                        .unwrap_or(0);
                    let call = CallDelta {
                        index: tool,
                        id: None,
                        kind: None,
                        function: FunctionDelta { name: None, arguments: args },
                    };
                    self.chunk(
                        ChunkDelta { tool_calls: Some([call]), ..ChunkDelta::default() },
                        None,
                        out,
                    );
                }
            },
            StreamEvent::Usage { usage } => self.usage.merge(usage),
            StreamEvent::Stop { reason, .. } => {
                self.chunk(ChunkDelta::default(), Some(reason.to_openai()), out)
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        if self.include_usage && !self.usage.is_empty() {
            self.write(&[], Some(UsageOut::of(&self.usage)), out);
        }
        sse::write_event(out, None, "[DONE]");
    }

    fn error(&mut self, err: &ErrorBody, out: &mut Vec<u8>) {
        self.finished = true;
        sse::write_json(out, None, &err.to_openai());
    }
}

/// Whether one stream event's data is the chunk that carries only the usage
/// (`choices: []` and a `usage` object), which OpenAI sends when the request has
/// `stream_options.include_usage`. The gateway asks for it to meter a stream; a
/// client that did not is passed the stream without it. Found by scanning the
/// bytes (the data has already been decoded, so it is known to be JSON).
pub fn is_usage_only_chunk(data: &[u8]) -> bool {
    let field = |key| crate::util::top_level_value(data, key).and_then(|r| data.get(r));
    let no_choices = field("choices")
        .is_some_and(|c| c.iter().filter(|b| !b.is_ascii_whitespace()).eq(b"[]".iter()));
    no_choices && field("usage").is_some_and(|u| u.first() == Some(&b'{'))
}
