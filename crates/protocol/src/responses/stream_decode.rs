//! Stream decoding: a Responses SSE stream → canonical events.

use serde::Deserialize;
use serde_json::Value;

use crate::{BlockKind, Delta, Frame, Part, ProtocolError, StopReason, StreamDecoder, StreamEvent};

use super::response::{out_item_parts, stop_from_status};
use super::wire::{OutItem, SUMMARY_SEPARATOR, WireError, WireResponse, WireUsage};

/// Turns a Responses API event stream into canonical events. Items are assumed to be
/// sequential (as OpenAI sends them). Items whose content never streamed (an upstream
/// that only sends `output_item.done`, or only `response.completed`) are rebuilt from
/// the finished item, so nothing is lost. A reasoning item's `encrypted_content`
/// (in its `output_item.done`) becomes its thinking block's signature, tagged with
/// the upstream's family ([`crate::continuity::tag_reasoning`]).
#[derive(Debug)]
pub struct Decoder {
    family: &'static str,
    started: bool,
    terminal: bool,
    blocks: Blocks,
    item: Option<DecItem>,
}

/// Canonical block numbering.
#[derive(Debug, Default)]
struct Blocks {
    next: usize,
    any: bool,
    saw_tool_call: bool,
}

impl Blocks {
    fn start(&mut self, kind: BlockKind, out: &mut Vec<StreamEvent>) -> usize {
        let index = self.next;
        self.next += 1;
        self.any = true;
        if matches!(kind, BlockKind::ToolCall { .. }) {
            self.saw_tool_call = true;
        }
        out.push(StreamEvent::BlockStart { index, kind });
        index
    }

    /// Emit whole parts as complete blocks.
    fn emit_parts(&mut self, parts: Vec<Part>, out: &mut Vec<StreamEvent>) {
        for part in parts {
            let (kind, deltas) = match part {
                Part::Text(t) => (BlockKind::Text, vec![Delta::Text { text: t.text }]),
                Part::Thinking { text, signature } => {
                    let text = Some(text).filter(|t| !t.is_empty());
                    let deltas = text
                        .map(|text| Delta::Thinking { text })
                        .into_iter()
                        .chain(signature.map(|signature| Delta::Signature { signature }))
                        .collect();
                    (BlockKind::Thinking, deltas)
                }
                Part::ToolCall(c) => (
                    BlockKind::ToolCall { id: c.id, name: c.name },
                    vec![Delta::ToolArguments { json: c.arguments }],
                ),
                _ => continue,
            };
            let index = self.start(kind, out);
            out.extend(deltas.into_iter().map(|delta| StreamEvent::Delta { index, delta }));
            out.push(StreamEvent::BlockStop { index });
        }
    }
}

/// The output item being streamed.
#[derive(Debug)]
enum DecItem {
    Message {
        /// The open text block (one per content part).
        open: Option<usize>,
        emitted: bool,
    },
    FunctionCall {
        index: usize,
        got_arguments: bool,
    },
    Reasoning {
        open: Option<usize>,
        /// A new summary part began after text was streamed: a separator is due.
        new_part: bool,
    },
    Other,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::for_family(super::FAMILY)
    }
}

impl Decoder {
    /// A decoder for one Responses API stream, before its `response.created`.
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder for a stream of an upstream of `family` (the tag its encrypted
    /// reasoning gets).
    pub fn for_family(family: &'static str) -> Self {
        Self { family, started: false, terminal: false, blocks: Blocks::default(), item: None }
    }

    fn ensure_started(&mut self, resp: Option<&WireResponse>, out: &mut Vec<StreamEvent>) {
        if !self.started {
            self.started = true;
            out.push(StreamEvent::Start {
                id: resp.and_then(|r| r.id.clone()).unwrap_or_default(),
                model: resp.and_then(|r| r.model.clone()).unwrap_or_default(),
            });
        }
    }

    /// Close the current item; `done` is the finished item when the wire sent it.
    fn close_item(&mut self, done: Option<OutItem>, out: &mut Vec<StreamEvent>) {
        match (self.item.take(), done) {
            (Some(DecItem::Message { open, emitted }), done) => {
                if let Some(index) = open {
                    out.push(StreamEvent::BlockStop { index });
                }
                if !emitted && let Some(done) = done {
                    self.blocks.emit_parts(out_item_parts(done, self.family), out);
                }
            }
            (Some(DecItem::FunctionCall { index, got_arguments }), done) => {
                let json = match done {
                    Some(OutItem::FunctionCall(call) | OutItem::CustomToolCall(call)) => {
                        call.arguments()
                    }
                    _ => String::new(),
                };
                if !got_arguments && !json.is_empty() {
                    out.push(StreamEvent::Delta { index, delta: Delta::ToolArguments { json } });
                }
                out.push(StreamEvent::BlockStop { index });
            }
            (Some(DecItem::Reasoning { open, .. }), done) => match open {
                Some(index) => {
                    // The summary streamed; the encrypted reasoning comes whole with
                    // the finished item.
                    if let Some(OutItem::Reasoning { encrypted_content: Some(token), .. }) = done
                        && !token.is_empty()
                    {
                        let signature = crate::continuity::tag_reasoning(self.family, &token);
                        out.push(StreamEvent::Delta {
                            index,
                            delta: Delta::Signature { signature },
                        });
                    }
                    out.push(StreamEvent::BlockStop { index });
                }
                None => {
                    if let Some(done) = done {
                        self.blocks.emit_parts(out_item_parts(done, self.family), out);
                    }
                }
            },
            (Some(DecItem::Other), _) => {}
            (None, Some(done)) => self.blocks.emit_parts(out_item_parts(done, self.family), out),
            (None, None) => {}
        }
    }

    fn text_delta(&mut self, text: String, out: &mut Vec<StreamEvent>) {
        if let Some(DecItem::Message { open, emitted }) = &mut self.item {
            let index = match open {
                Some(index) => *index,
                None => {
                    *emitted = true;
                    *open.insert(self.blocks.start(BlockKind::Text, out))
                }
            };
            out.push(StreamEvent::Delta { index, delta: Delta::Text { text } });
        }
    }

    fn thinking_delta(&mut self, text: String, out: &mut Vec<StreamEvent>) {
        if text.is_empty() {
            return;
        }
        if let Some(DecItem::Reasoning { open, new_part }) = &mut self.item {
            let index = match open {
                Some(index) => {
                    if std::mem::take(new_part) {
                        out.push(StreamEvent::Delta {
                            index: *index,
                            delta: Delta::Thinking { text: SUMMARY_SEPARATOR.to_owned() },
                        });
                    }
                    *index
                }
                None => {
                    *new_part = false;
                    *open.insert(self.blocks.start(BlockKind::Thinking, out))
                }
            };
            out.push(StreamEvent::Delta { index, delta: Delta::Thinking { text } });
        }
    }

    fn terminal_event(
        &mut self,
        ty: &str,
        value: &Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProtocolError> {
        let resp = wire_response(value)?;
        self.ensure_started(Some(&resp), out);
        self.close_item(None, out);
        let output = resp.output.unwrap_or_default();
        let has_tool_call = output
            .iter()
            .any(|i| matches!(i, OutItem::FunctionCall(_) | OutItem::CustomToolCall(_)));
        if !self.blocks.any {
            // Nothing streamed: take the content from the final response.
            for item in output {
                self.blocks.emit_parts(out_item_parts(item, self.family), out);
            }
        }
        let usage = resp.usage.as_ref().map(WireUsage::to_usage).unwrap_or_default();
        if !usage.is_empty() {
            out.push(StreamEvent::Usage { usage });
        }
        let status = if ty == "response.incomplete" { "incomplete" } else { "completed" };
        let reason = resp.incomplete_details.as_ref().and_then(|d| d.reason.as_deref());
        let reason = stop_from_status(status, reason, has_tool_call || self.blocks.saw_tool_call)
            .unwrap_or(StopReason::EndTurn);
        out.push(StreamEvent::Stop { reason, stop_sequence: None });
        self.terminal = true;
        Ok(())
    }
}

fn wire_response(event: &Value) -> Result<WireResponse, ProtocolError> {
    match event.get("response") {
        None | Some(Value::Null) => Ok(WireResponse::default()),
        Some(resp) => WireResponse::deserialize(resp).map_err(ProtocolError::upstream),
    }
}

fn wire_item(event: &Value) -> Result<Option<OutItem>, ProtocolError> {
    match event.get("item") {
        None | Some(Value::Null) => Ok(None),
        Some(item) => OutItem::deserialize(item).map(Some).map_err(ProtocolError::upstream),
    }
}

fn str_field(event: &Value, key: &str) -> String {
    event.get(key).and_then(Value::as_str).unwrap_or_default().to_owned()
}

impl StreamDecoder for Decoder {
    fn push(&mut self, frame: &Frame, out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        let data = frame.data.trim();
        if self.terminal || data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let value: Value = serde_json::from_str(data).map_err(ProtocolError::upstream)?;
        if !value.is_object() {
            return Err(ProtocolError::upstream("stream event is not a JSON object"));
        }
        let ty = match value.get("type").and_then(Value::as_str) {
            Some(ty) => ty.to_owned(),
            None => frame.event.clone().unwrap_or_default(),
        };
        match ty.as_str() {
            "response.created" | "response.in_progress" | "response.queued" => {
                let resp = wire_response(&value)?;
                self.ensure_started(Some(&resp), out);
            }
            "response.output_item.added" => {
                self.ensure_started(None, out);
                self.close_item(None, out);
                self.item = match wire_item(&value)? {
                    Some(OutItem::Message { .. }) => {
                        Some(DecItem::Message { open: None, emitted: false })
                    }
                    Some(OutItem::FunctionCall(call)) => {
                        let index = self.blocks.start(call.block(), out);
                        let json = call.arguments();
                        let got_arguments = !json.is_empty();
                        if got_arguments {
                            out.push(StreamEvent::Delta {
                                index,
                                delta: Delta::ToolArguments { json },
                            });
                        }
                        Some(DecItem::FunctionCall { index, got_arguments })
                    }
                    // Its input arrives whole with the finished item (the deltas are
                    // raw text, not argument JSON).
                    Some(OutItem::CustomToolCall(call)) => {
                        let index = self.blocks.start(call.block(), out);
                        Some(DecItem::FunctionCall { index, got_arguments: false })
                    }
                    Some(OutItem::Reasoning { .. }) => {
                        Some(DecItem::Reasoning { open: None, new_part: false })
                    }
                    Some(OutItem::Other) | None => Some(DecItem::Other),
                };
            }
            "response.content_part.added" => {
                let ty = value.get("part").and_then(|p| p.get("type")).and_then(Value::as_str);
                if let Some(DecItem::Message { open, emitted }) = &mut self.item
                    && matches!(ty, Some("output_text" | "refusal"))
                {
                    if let Some(index) = open.take() {
                        out.push(StreamEvent::BlockStop { index });
                    }
                    *emitted = true;
                    *open = Some(self.blocks.start(BlockKind::Text, out));
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                self.text_delta(str_field(&value, "delta"), out);
            }
            "response.content_part.done" => {
                if let Some(DecItem::Message { open, .. }) = &mut self.item
                    && let Some(index) = open.take()
                {
                    out.push(StreamEvent::BlockStop { index });
                }
            }
            "response.function_call_arguments.delta" | "response.function_call_arguments.done" => {
                let done = ty.ends_with(".done");
                let json = str_field(&value, if done { "arguments" } else { "delta" });
                if let Some(DecItem::FunctionCall { index, got_arguments }) = &mut self.item
                    && !json.is_empty()
                    && !(done && *got_arguments)
                {
                    *got_arguments = true;
                    out.push(StreamEvent::Delta {
                        index: *index,
                        delta: Delta::ToolArguments { json },
                    });
                }
            }
            "response.reasoning_summary_part.added" => {
                if let Some(DecItem::Reasoning { open: Some(_), new_part }) = &mut self.item {
                    *new_part = true;
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                self.thinking_delta(str_field(&value, "delta"), out);
            }
            "response.output_item.done" => {
                let item = wire_item(&value)?;
                self.close_item(item, out);
            }
            "response.completed" | "response.incomplete" => {
                self.terminal_event(&ty, &value, out)?;
            }
            "response.failed" => {
                let resp = wire_response(&value)?;
                let error = resp.error.unwrap_or(WireError { code: None, message: None });
                return Err(error.into_upstream("response_failed"));
            }
            "error" => {
                // `{type:"error", code, message, param}`; tolerate a nested `error` object.
                let error = value.get("error").filter(|e| e.is_object()).unwrap_or(&value);
                let error = WireError::deserialize(error).map_err(ProtocolError::upstream)?;
                return Err(error.into_upstream("error"));
            }
            // Everything else (done markers, annotations, hosted-tool progress, …) carries
            // nothing the canonical stream needs.
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        if self.terminal {
            Ok(())
        } else {
            Err(ProtocolError::upstream("the stream ended before response.completed"))
        }
    }
}
