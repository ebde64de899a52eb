//! Structured output modes: how a request's JSON schema (a `json_schema`
//! response format) is asked of each deployment, and what the gateway checks.
//!
//! - `native`: the schema goes upstream in the wire's own structured-output
//!   field; only deployments whose model declares `structured_output` may serve
//!   (the others are filtered out before any attempt).
//! - `prompted`: the schema goes into the system prompt as an instruction, the
//!   `response_format` is not sent, and the gateway validates the answer
//!   ([`schema`]). A whole answer that is not JSON matching the schema fails
//!   its attempt (`invalid_output`), which fails over; the one that passes
//!   reaches the client as its bare JSON text (a Markdown fence taken off). A
//!   stream is forwarded as it comes (never held whole) and checked when it
//!   ends: an invalid one ends with an error event instead, since its content
//!   is already the client's.
//! - `auto` (the default): native where the model declares the capability
//!   (or declares no capabilities at all, as before these modes), prompted
//!   where it declares capabilities without it.
//!
//! A route sets the mode (`routes[].structured_output`), a request's routing
//! hints override it (`"switchyard": {"structured_output": "prompted"}`).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use switchyard_protocol::{
    BlockKind, Delta, Part, Request, Response, ResponseFormat, StreamEvent, TextBlock,
};

use crate::catalog::Capabilities;

pub mod schema;

/// How a JSON-schema response format is asked for (a route's
/// `structured_output`, a request's hint).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredMode {
    /// The provider's own structured output, on capable deployments only.
    Native,
    /// The schema in the system prompt, the answer validated by the gateway,
    /// on every deployment.
    Prompted,
    /// Native where the model supports it, prompted elsewhere.
    #[default]
    Auto,
}

impl StructuredMode {
    /// The mode as the configuration writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            StructuredMode::Native => "native",
            StructuredMode::Prompted => "prompted",
            StructuredMode::Auto => "auto",
        }
    }
}

/// How one attempt asked for the schema: what the record
/// (`routing.structured_output`) and the `x-switchyard-structured-output`
/// header say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// In the wire's structured-output field.
    Native,
    /// In the system prompt; the answer is the gateway's to check.
    Prompted,
}

impl Asked {
    /// `native` or `prompted`.
    pub fn as_str(self) -> &'static str {
        match self {
            Asked::Native => "native",
            Asked::Prompted => "prompted",
        }
    }
}

/// The request's mode: its own hint, else its route's.
pub fn mode(hint: Option<StructuredMode>, route: StructuredMode) -> StructuredMode {
    hint.unwrap_or(route)
}

/// The JSON schema the request asks its answer to follow, if any.
pub fn schema_of(req: &Request) -> Option<&Value> {
    match &req.response_format {
        Some(ResponseFormat::JsonSchema { schema, .. }) => Some(schema),
        _ => None,
    }
}

/// How `req`'s schema is asked of a deployment whose model declares `caps`
/// (`None`: it declares none) under `mode`; `None`: the request has no schema.
pub fn asked(req: &Request, mode: StructuredMode, caps: Option<&Capabilities>) -> Option<Asked> {
    schema_of(req)?;
    Some(match mode {
        StructuredMode::Native => Asked::Native,
        StructuredMode::Prompted => Asked::Prompted,
        // A model with no declared capabilities was always sent the schema
        // natively (the capability filter keeps it): it still is.
        StructuredMode::Auto if caps.is_none_or(|c| c.structured_output) => Asked::Native,
        StructuredMode::Auto => Asked::Prompted,
    })
}

/// `req` as a prompted attempt sends it: the schema as an instruction after
/// the client's own system prompt (which keeps its prompt-cache markers), and
/// no response format. As it was when it has no schema.
pub fn prompted(req: Cow<'_, Request>) -> Cow<'_, Request> {
    let Some(ResponseFormat::JsonSchema { name, schema, description, .. }) = &req.response_format
    else {
        return req;
    };
    let text = instruction(name, description.as_deref(), schema);
    let mut out = req.into_owned();
    out.response_format = None;
    out.system.push(TextBlock::new(text));
    Cow::Owned(out)
}

/// The system-prompt instruction carrying a schema, pretty-printed so a model
/// reads it as it would read one in documentation.
pub fn instruction(name: &str, description: Option<&str>, schema: &Value) -> String {
    let pretty = serde_json::to_string_pretty(schema).unwrap_or_default();
    let mut out = String::from(
        "Answer only with one JSON value that matches the JSON Schema below: no text \
         before or after it, no Markdown code fence. The answer is parsed as JSON and \
         checked against the schema.\n\n",
    );
    match description.map(str::trim).filter(|d| !d.is_empty()) {
        Some(d) => out.push_str(&format!("Schema {name:?}: {d}\n\n")),
        None if !name.is_empty() => out.push_str(&format!("Schema {name:?}:\n\n")),
        None => {}
    }
    out.push_str(&pretty);
    out
}

/// `text` without surrounding whitespace and one surrounding Markdown code
/// fence (```` ```json … ``` ````, any info word or none), which models add
/// however they are asked not to. As it is, trimmed, when it is not fenced.
pub fn strip_fence(text: &str) -> &str {
    let t = text.trim();
    let Some(rest) = t.strip_prefix("```") else { return t };
    let Some((info, body)) = rest.split_once('\n') else { return t };
    // The info string is one word (`json`, `JSON`); more is not a fence's.
    if info.trim().contains(char::is_whitespace) {
        return t;
    }
    match body.trim_end().strip_suffix("```") {
        Some(inner) if !inner.ends_with('`') => inner.trim(),
        _ => t,
    }
}

/// The answer's JSON text, fence and whitespace taken off, when it parses and
/// matches `schema`; else why not (the first violation, with its path).
pub fn check_text<'t>(text: &'t str, schema: &Value) -> Result<&'t str, String> {
    let clean = strip_fence(text);
    if clean.is_empty() {
        return Err("the answer has no text, not the JSON the schema asks for".to_owned());
    }
    let value: Value =
        serde_json::from_str(clean).map_err(|e| format!("the answer is not JSON: {e}"))?;
    schema::validate(schema, &value)
        .map_err(|v| format!("the answer does not match the schema: {v}"))?;
    Ok(clean)
}

/// Check a whole prompted answer against `schema`; a valid one is left with
/// its JSON text alone, as one text part where its first was. A tool call is a
/// step of a tool loop, not the answer the schema is for: such an answer
/// passes as it is.
pub fn settle(response: &mut Response, schema: &Value) -> Result<(), String> {
    if response.tool_calls().next().is_some() {
        return Ok(());
    }
    let text = response.text();
    let clean = check_text(&text, schema)?;
    if clean.len() == text.len() {
        return Ok(()); // one part, already bare (the usual case): nothing to rewrite
    }
    let mut clean = Some(clean.to_owned());
    response.content.retain_mut(|p| match p {
        Part::Text(t) => match clean.take() {
            Some(c) => {
                t.text = c;
                true
            }
            None => false,
        },
        _ => true,
    });
    Ok(())
}

/// The most text of a prompted stream kept for its check; past it the stream
/// goes on unchecked (said in the record), since a stream is never held whole.
pub const STREAM_TEXT_CAP: usize = 4 << 20;

/// A prompted stream's text, gathered as it passes for the check at its end.
#[derive(Debug, Default)]
pub struct Collected {
    text: String,
    /// More than [`STREAM_TEXT_CAP`] bytes: not checked.
    over: bool,
    /// The answer calls a tool: not the answer the schema is for.
    tool_call: bool,
}

/// What the check of a prompted stream found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Valid, or not for the schema (a tool call).
    Valid,
    /// Too long to check ([`STREAM_TEXT_CAP`]).
    Unchecked,
    /// Not JSON, or not matching the schema: why.
    Invalid(String),
}

impl Collected {
    /// Take what `ev` adds to the answer's text.
    pub fn observe(&mut self, ev: &StreamEvent) {
        match ev {
            StreamEvent::BlockStart { kind: BlockKind::ToolCall { .. }, .. } => {
                self.tool_call = true;
            }
            StreamEvent::Delta { delta: Delta::Text { text }, .. } if !self.over => {
                if self.text.len() + text.len() > STREAM_TEXT_CAP {
                    self.over = true;
                    self.text = String::new();
                } else {
                    self.text.push_str(text);
                }
            }
            _ => {}
        }
    }

    /// The verdict on the whole stream's text against `schema`.
    pub fn finish(self, schema: &Value) -> Verdict {
        if self.tool_call {
            return Verdict::Valid;
        }
        if self.over {
            return Verdict::Unchecked;
        }
        match check_text(&self.text, schema) {
            Ok(_) => Verdict::Valid,
            Err(why) => Verdict::Invalid(why),
        }
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
