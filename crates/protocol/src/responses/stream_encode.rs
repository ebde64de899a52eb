//! Stream encoding: canonical events → a Responses SSE stream.

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::{
    BlockKind, Delta, ErrorBody, Part, Seal, StopReason, StreamEncoder, StreamEvent, Tool, Usage,
    sse,
};

use super::encode::output_text;
use super::response::{
    Shell, call_item, item_id, message_item, now_secs, reasoning_item, response_id, response_json,
    status_for, usage_json,
};
use super::tools::{CallShapes, freeform_text};

/// Response id used when a stream fails or ends before the canonical `Start`.
const FALLBACK_ID: &str = "resp_switchyard";

/// Writes canonical events as a Responses API event stream. Every event carries its
/// `type` (also the SSE `event:` name) and an increasing `sequence_number` from 0.
#[derive(Debug, Default)]
pub struct Encoder {
    seq: u64,
    started: bool,
    done: bool,
    id: String,
    model: String,
    created_at: u64,
    /// Finished output items, for the terminal response object.
    output: Vec<Value>,
    open: Option<OpenItem>,
    stop: Option<StopReason>,
    usage: Usage,
    /// How calls go back: free-form tools as `custom_tool_call`, namespaced ones
    /// with their namespace.
    shapes: CallShapes,
    /// Seals thinking signatures and redacted thinking into `encrypted_content`.
    seal: Option<std::sync::Arc<dyn Seal>>,
}

#[derive(Debug)]
struct OpenItem {
    /// The canonical block index.
    index: usize,
    output_index: usize,
    item_id: String,
    kind: OpenKind,
}

#[derive(Debug)]
enum OpenKind {
    Text {
        text: String,
    },
    ToolCall {
        call_id: String,
        namespace: Option<String>,
        name: String,
        arguments: String,
    },
    /// A free-form tool's call: the arguments (`{"input": ...}`) are held until the
    /// call is complete, then sent as the input text.
    CustomCall {
        call_id: String,
        namespace: Option<String>,
        name: String,
        arguments: String,
    },
    Thinking {
        text: String,
        part_open: bool,
        signature: Option<String>,
    },
    /// Redacted thinking: shown as an empty reasoning item whose sealed
    /// `encrypted_content` gives it back on the next turn.
    Redacted {
        data: String,
    },
}

impl Encoder {
    /// An encoder for a request without free-form or namespaced tools: every
    /// call goes out as a `function_call` item under its canonical name.
    pub fn new() -> Self {
        Self::default()
    }

    /// An encoder for a request that defined `tools` (see
    /// [`encode_response_for`](super::encode_response_for)).
    pub fn for_tools(tools: &[Tool]) -> Self {
        Self { shapes: CallShapes::of(tools), ..Self::default() }
    }

    /// Seal what the upstream needs to continue into the reasoning items
    /// (see [`encode_response_sealed`](super::encode_response_sealed)).
    #[must_use]
    pub fn with_seal(mut self, seal: Option<std::sync::Arc<dyn Seal>>) -> Self {
        self.seal = seal;
        self
    }

    /// A [`BlockKind::Compaction`]: the compaction item carrying `token` (a sealed
    /// summary) as the next output item, shown whole (its text is sealed, so there
    /// are no deltas). Blocks before it stay as they were.
    fn compaction(&mut self, token: &str, out: &mut Vec<u8>) {
        self.ensure_started(out);
        self.close_block(out);
        let output_index = self.output.len();
        let id = super::compaction::compaction_item_id(&self.id, output_index);
        let item = super::compaction::compaction_item(&id, token);
        let added = json!({"output_index": output_index, "item": item});
        self.emit(out, "response.output_item.added", added);
        let done = json!({"output_index": output_index, "item": item});
        self.emit(out, "response.output_item.done", done);
        self.output.push(item);
    }

    fn emit(&mut self, out: &mut Vec<u8>, ty: &str, payload: Value) {
        emit_value(out, &mut self.seq, ty, payload);
    }

    fn snapshot(&self, status: &str, incomplete_reason: Option<&str>, error: Value) -> Value {
        let id = if self.id.is_empty() { FALLBACK_ID } else { &self.id };
        let terminal = status != "in_progress";
        response_json(Shell {
            id,
            model: &self.model,
            created_at: self.created_at,
            status,
            incomplete_reason,
            error,
            output: if terminal { self.output.clone() } else { Vec::new() },
            usage: if terminal { usage_json(&self.usage) } else { None },
        })
    }

    fn start(&mut self, id: &str, model: &str, out: &mut Vec<u8>) {
        self.started = true;
        self.id = response_id(id);
        self.model = model.to_owned();
        self.created_at = now_secs();
        let response = self.snapshot("in_progress", None, Value::Null);
        self.emit(out, "response.created", json!({"response": response.clone()}));
        self.emit(out, "response.in_progress", json!({"response": response}));
    }

    fn ensure_started(&mut self, out: &mut Vec<u8>) {
        if !self.started {
            self.start("", "", out);
        }
    }

    fn open_block(&mut self, index: usize, kind: &BlockKind, out: &mut Vec<u8>) {
        let output_index = self.output.len();
        let (prefix, kind) = match kind {
            BlockKind::Text => ("msg", OpenKind::Text { text: String::new() }),
            BlockKind::Thinking => (
                "rs",
                OpenKind::Thinking { text: String::new(), part_open: false, signature: None },
            ),
            BlockKind::ToolCall { id, name } => {
                let (ns, inner, freeform) = self.shapes.shape(name);
                let (call_id, namespace, name, arguments) =
                    (id.clone(), ns.map(str::to_owned), inner.to_owned(), String::new());
                if freeform {
                    ("ctc", OpenKind::CustomCall { call_id, namespace, name, arguments })
                } else {
                    ("fc", OpenKind::ToolCall { call_id, namespace, name, arguments })
                }
            }
            // Nothing to show; kept only when it can be sealed for the next turn.
            BlockKind::RedactedThinking { data } if self.seal.is_some() => {
                ("rs", OpenKind::Redacted { data: data.clone() })
            }
            BlockKind::RedactedThinking { .. } => return,
            // Shown whole as it starts (`push`), never an open item.
            BlockKind::Compaction { .. } => return,
        };
        let item_id = item_id(prefix, &self.id, output_index);
        let item = match &kind {
            OpenKind::Text { .. } => message_item(&item_id, "in_progress", &[]),
            OpenKind::Thinking { .. } | OpenKind::Redacted { .. } => {
                reasoning_item(&item_id, "", None)
            }
            OpenKind::ToolCall { call_id, namespace, name, .. } => {
                call_item(false, &item_id, call_id, namespace.as_deref(), name, "", "in_progress")
            }
            OpenKind::CustomCall { call_id, namespace, name, .. } => {
                call_item(true, &item_id, call_id, namespace.as_deref(), name, "", "in_progress")
            }
        };
        self.emit(
            out,
            "response.output_item.added",
            json!({"output_index": output_index, "item": item}),
        );
        if matches!(kind, OpenKind::Text { .. }) {
            self.emit(
                out,
                "response.content_part.added",
                json!({
                    "item_id": item_id,
                    "output_index": output_index,
                    "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []},
                }),
            );
        }
        self.open = Some(OpenItem { index, output_index, item_id, kind });
    }

    fn delta(&mut self, index: usize, delta: &Delta, out: &mut Vec<u8>) {
        let Some(open) = &mut self.open else { return };
        if open.index != index {
            return;
        }
        let (item_id, output_index) = (open.item_id.as_str(), open.output_index);
        let seq = &mut self.seq;
        let piece = |ty, delta| DeltaEvent {
            ty,
            sequence_number: 0,
            item_id,
            output_index,
            content_index: None,
            summary_index: None,
            delta,
            logprobs: None,
        };
        match (&mut open.kind, delta) {
            (OpenKind::Text { text }, Delta::Text { text: d }) if !d.is_empty() => {
                text.push_str(d);
                let event = DeltaEvent {
                    content_index: Some(0),
                    logprobs: Some([]),
                    ..piece("response.output_text.delta", d)
                };
                emit_delta(out, seq, event);
            }
            (OpenKind::ToolCall { arguments, .. }, Delta::ToolArguments { json: d })
                if !d.is_empty() =>
            {
                arguments.push_str(d);
                emit_delta(out, seq, piece("response.function_call_arguments.delta", d));
            }
            (OpenKind::CustomCall { arguments, .. }, Delta::ToolArguments { json: d }) => {
                arguments.push_str(d);
            }
            (OpenKind::Thinking { signature, .. }, Delta::Signature { signature: s }) => {
                signature.get_or_insert_with(String::new).push_str(s);
            }
            (OpenKind::Thinking { text, part_open, .. }, Delta::Thinking { text: d })
                if !d.is_empty() =>
            {
                text.push_str(d);
                if !std::mem::replace(part_open, true) {
                    emit_value(
                        out,
                        seq,
                        "response.reasoning_summary_part.added",
                        json!({
                            "item_id": item_id,
                            "output_index": output_index,
                            "summary_index": 0,
                            "part": {"type": "summary_text", "text": ""},
                        }),
                    );
                }
                let event = DeltaEvent {
                    summary_index: Some(0),
                    ..piece("response.reasoning_summary_text.delta", d)
                };
                emit_delta(out, seq, event);
            }
            // Signatures are Anthropic-only; mismatched or empty deltas carry nothing.
            _ => {}
        }
    }

    fn close_block(&mut self, out: &mut Vec<u8>) {
        let Some(OpenItem { output_index, item_id, kind, .. }) = self.open.take() else { return };
        let item = match kind {
            OpenKind::Text { text } => {
                self.emit(
                    out,
                    "response.output_text.done",
                    json!({
                        "item_id": item_id,
                        "output_index": output_index,
                        "content_index": 0,
                        "text": text,
                        "logprobs": [],
                    }),
                );
                self.emit(
                    out,
                    "response.content_part.done",
                    json!({
                        "item_id": item_id,
                        "output_index": output_index,
                        "content_index": 0,
                        "part": output_text(&text),
                    }),
                );
                message_item(&item_id, "completed", &[&text])
            }
            OpenKind::ToolCall { call_id, namespace, name, arguments } => {
                self.emit(
                    out,
                    "response.function_call_arguments.done",
                    json!({
                        "item_id": item_id,
                        "output_index": output_index,
                        "name": name,
                        "arguments": arguments,
                    }),
                );
                let ns = namespace.as_deref();
                call_item(false, &item_id, &call_id, ns, &name, &arguments, "completed")
            }
            OpenKind::CustomCall { call_id, namespace, name, arguments } => {
                let input = freeform_text(&arguments);
                if !input.is_empty() {
                    self.emit(
                        out,
                        "response.custom_tool_call_input.delta",
                        json!({"item_id": item_id, "output_index": output_index, "delta": input}),
                    );
                }
                self.emit(
                    out,
                    "response.custom_tool_call_input.done",
                    json!({"item_id": item_id, "output_index": output_index, "input": input}),
                );
                call_item(
                    true,
                    &item_id,
                    &call_id,
                    namespace.as_deref(),
                    &name,
                    &input,
                    "completed",
                )
            }
            OpenKind::Redacted { data } => {
                let part = Part::RedactedThinking { data };
                let sealed =
                    self.seal.as_deref().and_then(|s| crate::continuity::seal_part(s, &part));
                reasoning_item(&item_id, "", sealed.as_deref())
            }
            OpenKind::Thinking { text, part_open, signature } => {
                if part_open {
                    self.emit(
                        out,
                        "response.reasoning_summary_text.done",
                        json!({
                            "item_id": item_id,
                            "output_index": output_index,
                            "summary_index": 0,
                            "text": text,
                        }),
                    );
                    self.emit(
                        out,
                        "response.reasoning_summary_part.done",
                        json!({
                            "item_id": item_id,
                            "output_index": output_index,
                            "summary_index": 0,
                            "part": {"type": "summary_text", "text": text},
                        }),
                    );
                }
                let sealed = match (self.seal.as_deref(), signature) {
                    (Some(seal), Some(signature)) => {
                        let part =
                            Part::Thinking { text: text.clone(), signature: Some(signature) };
                        crate::continuity::seal_part(seal, &part)
                    }
                    _ => None,
                };
                reasoning_item(&item_id, &text, sealed.as_deref())
            }
        };
        self.emit(
            out,
            "response.output_item.done",
            json!({"output_index": output_index, "item": item}),
        );
        self.output.push(item);
    }
}

impl StreamEncoder for Encoder {
    fn push(&mut self, event: &StreamEvent, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        match event {
            StreamEvent::Start { id, model } => {
                if !self.started {
                    self.start(id, model, out);
                }
            }
            StreamEvent::BlockStart { kind: BlockKind::Compaction { sealed }, .. } => {
                self.compaction(sealed, out);
            }
            StreamEvent::BlockStart { index, kind } => {
                self.ensure_started(out);
                self.close_block(out);
                self.open_block(*index, kind, out);
            }
            StreamEvent::Delta { index, delta } => self.delta(*index, delta, out),
            StreamEvent::BlockStop { index } => {
                if self.open.as_ref().is_some_and(|o| o.index == *index) {
                    self.close_block(out);
                }
            }
            StreamEvent::Usage { usage } => self.usage.merge(usage),
            StreamEvent::Stop { reason, .. } => self.stop = Some(*reason),
        }
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        self.ensure_started(out);
        self.close_block(out);
        self.done = true;
        let (status, reason) = status_for(self.stop);
        let response = self.snapshot(status, reason, Value::Null);
        let ty = if status == "incomplete" { "response.incomplete" } else { "response.completed" };
        self.emit(out, ty, json!({"response": response}));
    }

    fn error(&mut self, err: &ErrorBody, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        self.done = true;
        if !self.started {
            self.created_at = now_secs();
        }
        self.emit(
            out,
            "error",
            json!({"code": err.code, "message": err.message, "param": err.param}),
        );
        let error = json!({"code": err.code, "message": err.message});
        let response = self.snapshot("failed", None, error);
        self.emit(out, "response.failed", json!({"response": response}));
    }
}

/// One event: `payload`'s fields, with its `type` and the next `sequence_number`.
fn emit_value(out: &mut Vec<u8>, seq: &mut u64, ty: &str, payload: Value) {
    let mut event = match payload {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    event.insert("type".into(), json!(ty));
    event.insert("sequence_number".into(), json!(*seq));
    *seq += 1;
    sse::write_json(out, Some(ty), &Value::Object(event));
}

/// A delta: the event a stream sends per chunk, so written typed (no `Value`).
#[derive(Serialize)]
struct DeltaEvent<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    sequence_number: u64,
    item_id: &'a str,
    output_index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_index: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary_index: Option<usize>,
    delta: &'a str,
    /// `[]` on a text delta (the SDKs type it as required there).
    #[serde(skip_serializing_if = "Option::is_none")]
    logprobs: Option<[(); 0]>,
}

fn emit_delta(out: &mut Vec<u8>, seq: &mut u64, event: DeltaEvent<'_>) {
    let event = DeltaEvent { sequence_number: *seq, ..event };
    *seq += 1;
    sse::write_data(out, Some(event.ty), &event);
}
