//! The body this folder writes to an OpenAI-compatible upstream, as borrowing
//! structs: a translated request serializes straight into the upstream's body,
//! its tools' schemas and its texts borrowed from the canonical request rather
//! than cloned into a `Value` tree. [`Body::of`] checks what the wire cannot
//! carry as it goes (refused by name, as before).

use std::borrow::Cow;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::write::CallOut;
use crate::carry::{self, Placement};
use crate::{
    Document, DocumentSource, Image, Part, ProtocolError, Request, ResponseFormat, Role, TextBlock,
    Tool, ToolChoice, Wire,
};

/// What refusals call this wire.
pub(super) const TARGET: &str = "an OpenAI Chat upstream";

/// A Chat Completions request body.
#[derive(Serialize)]
pub(super) struct Body<'a> {
    pub model: &'a str,
    messages: Vec<MessageOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop: &'a [String],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ToolOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<ToolChoiceOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<FormatOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a Map<String, Value>>,
    // Prompt-cache routing, safety and storage go as the client set them: a lost
    // cache key costs an agent most of its cache hits.
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_retention: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    safety_identifier: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    store: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    service_tier: Option<&'a str>,
    /// Hosted tools' top-level options (`web_search_options`).
    #[serde(flatten)]
    placed: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

impl<'a> Body<'a> {
    /// `req` as a Chat Completions body, each tool-calling assistant turn's
    /// reasoning written in the field `echo` names (a server that wants it back,
    /// see [`super::Compat::reasoning_echo`]).
    pub(super) fn of(req: &'a Request, echo: Option<&'a str>) -> Result<Self, ProtocolError> {
        let mut messages = Vec::with_capacity(req.messages.len() + 1);
        if !req.system.is_empty() {
            messages.push(MessageOut::System { content: join_text(&req.system) });
        }
        for m in &req.messages {
            match m.role {
                Role::System => {
                    let mut text: Vec<&TextBlock> = Vec::new();
                    for part in &m.content {
                        match part {
                            Part::Text(t) => text.push(t),
                            Part::Thinking { .. } | Part::RedactedThinking { .. } => {}
                            other => {
                                return Err(crate::cannot_send(
                                    &other.describe(),
                                    TARGET,
                                    "a system message carries only text",
                                ));
                            }
                        }
                    }
                    messages.push(MessageOut::System { content: join_text(text) });
                }
                Role::User => user(&m.content, &mut messages)?,
                Role::Assistant => messages.push(assistant(&m.content, echo)?),
            }
        }
        let tools = req
            .tools
            .iter()
            .map(|t: &'a Tool| ToolOut {
                kind: "function",
                function: FunctionOut {
                    name: &t.name,
                    description: t.description.as_deref(),
                    parameters: &t.parameters,
                    strict: t.strict,
                },
            })
            .collect();
        // OpenAI refuses `tool_choice` without `tools` (Codex's local compaction
        // sends one): it says nothing then, so it is left out.
        let tool_choice =
            req.tool_choice.as_ref().filter(|_| !req.tools.is_empty()).and_then(|choice| {
                match choice {
                    ToolChoice::Auto => Some(ToolChoiceOut::Mode("auto")),
                    ToolChoice::None => Some(ToolChoiceOut::Mode("none")),
                    ToolChoice::Required => Some(ToolChoiceOut::Mode("required")),
                    ToolChoice::Tool { name } => Some(ToolChoiceOut::Function {
                        kind: "function",
                        function: NameOut { name },
                    }),
                    // Chat's `tool_choice` names functions only; a search model searches
                    // on every request (`carry::forces`).
                    ToolChoice::Hosted { .. } => None,
                }
            });
        let response_format = req.response_format.as_ref().map(|f| match f {
            ResponseFormat::Text => FormatOut::Text,
            ResponseFormat::JsonObject => FormatOut::JsonObject,
            ResponseFormat::JsonSchema { name, schema, strict, description } => {
                FormatOut::JsonSchema {
                    json_schema: SchemaOut {
                        name,
                        schema,
                        strict: *strict,
                        description: description.as_deref(),
                    },
                }
            }
        });
        let mut placed = Map::new();
        for placement in carry::placements(Wire::OpenAiChat, req, TARGET)? {
            match placement {
                Placement::Field(name, value) => {
                    placed.insert(name.into(), value);
                }
                // `place` gives Chat Completions nothing else; refused rather than lost.
                Placement::Tool(_) | Placement::McpServer(_) => {
                    return Err(ProtocolError::Unsupported(format!(
                        "{TARGET} takes hosted tools only as top-level options"
                    )));
                }
            }
        }
        let x = &req.extras;
        Ok(Body {
            model: &req.model,
            messages,
            max_completion_tokens: req.max_tokens,
            temperature: req.temperature,
            top_p: req.top_p,
            stop: &req.stop,
            tools,
            tool_choice,
            parallel_tool_calls: req.parallel_tool_calls.filter(|_| !req.tools.is_empty()),
            reasoning_effort: req
                .reasoning
                .as_ref()
                .filter(|r| r.enabled)
                .map(|r| r.effort().as_str()),
            response_format,
            user: req.user.as_deref(),
            metadata: req.metadata.as_ref(),
            prompt_cache_key: x.prompt_cache_key.as_deref(),
            prompt_cache_retention: x.prompt_cache_retention.as_deref(),
            safety_identifier: x.safety_identifier.as_deref(),
            store: x.store,
            service_tier: x
                .service_tier
                .as_deref()
                .and_then(|t| carry::service_tier(Wire::OpenAiChat, t)),
            placed,
            stream: req.stream.then_some(true),
            stream_options: req.stream.then_some(StreamOptions { include_usage: true }),
        })
    }
}

fn join_text<'a>(blocks: impl IntoIterator<Item = &'a TextBlock>) -> Cow<'a, str> {
    let mut out: Option<Cow<'a, str>> = None;
    for b in blocks {
        match &mut out {
            None => out = Some(Cow::Borrowed(&b.text)),
            Some(acc) => {
                let acc = acc.to_mut();
                acc.push_str("\n\n");
                acc.push_str(&b.text);
            }
        }
    }
    out.unwrap_or(Cow::Borrowed(""))
}

/// One message. Serialized by hand: an assistant turn's reasoning echo is a
/// field whose name the server's preset gives.
enum MessageOut<'a> {
    System {
        content: Cow<'a, str>,
    },
    User {
        content: UserContent<'a>,
    },
    Tool {
        tool_call_id: &'a str,
        content: String,
    },
    Assistant {
        content: Option<Cow<'a, str>>,
        echo: Option<(&'a str, String)>,
        calls: Vec<CallOut<'a>>,
    },
}

impl Serialize for MessageOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        match self {
            MessageOut::System { content } => {
                m.serialize_entry("role", "system")?;
                m.serialize_entry("content", content)?;
            }
            MessageOut::User { content } => {
                m.serialize_entry("role", "user")?;
                m.serialize_entry("content", content)?;
            }
            MessageOut::Tool { tool_call_id, content } => {
                m.serialize_entry("role", "tool")?;
                m.serialize_entry("tool_call_id", tool_call_id)?;
                m.serialize_entry("content", content)?;
            }
            MessageOut::Assistant { content, echo, calls } => {
                m.serialize_entry("role", "assistant")?;
                m.serialize_entry("content", content)?;
                if let Some((field, text)) = echo {
                    m.serialize_entry(field, text)?;
                }
                if !calls.is_empty() {
                    m.serialize_entry("tool_calls", calls)?;
                }
            }
        }
        m.end()
    }
}

/// A user message's content: a single text part as a plain string (the most
/// widely accepted shape), else the parts.
#[derive(Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(&'a str),
    Parts(Vec<PartOut<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum PartOut<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrlOut<'a> },
    File { file: FileOut },
}

#[derive(Serialize)]
struct ImageUrlOut<'a> {
    url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
}

#[derive(Serialize)]
struct FileOut {
    file_data: String,
    filename: String,
}

#[derive(Serialize)]
struct ToolOut<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionOut<'a>,
}

#[derive(Serialize)]
struct FunctionOut<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    parameters: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum ToolChoiceOut<'a> {
    Mode(&'static str),
    Function {
        #[serde(rename = "type")]
        kind: &'static str,
        function: NameOut<'a>,
    },
}

#[derive(Serialize)]
struct NameOut<'a> {
    name: &'a str,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum FormatOut<'a> {
    Text,
    JsonObject,
    JsonSchema { json_schema: SchemaOut<'a> },
}

#[derive(Serialize)]
struct SchemaOut<'a> {
    name: &'a str,
    schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
}

fn image_part(img: &Image) -> PartOut<'_> {
    PartOut::ImageUrl {
        image_url: ImageUrlOut { url: img.source.to_openai_url(), detail: img.detail.as_deref() },
    }
}

/// A document as a `file` part: inline only. Chat Completions has no URL form
/// for files, and fetching one is not the gateway's job.
fn file_part(doc: &Document) -> Result<PartOut<'_>, ProtocolError> {
    match &doc.source {
        DocumentSource::Base64 { media_type, data } => Ok(PartOut::File {
            file: FileOut {
                file_data: format!("data:{media_type};base64,{data}"),
                filename: doc.filename_or_default(),
            },
        }),
        DocumentSource::Url { .. } => Err(crate::cannot_send(
            &crate::describe_document(doc),
            TARGET,
            "Chat Completions takes files inline only (file_data), and the gateway does not \
             fetch URLs; send the file's data",
        )),
    }
}

/// A canonical user turn becomes: one `tool` message per tool result (they must
/// follow the assistant's tool calls directly), then one `user` message with the
/// rest. Images and documents inside a tool result (which `tool` messages cannot
/// carry) go into that user message, so nothing is dropped; what no user message
/// can carry is refused by name.
fn user<'a>(content: &'a [Part], out: &mut Vec<MessageOut<'a>>) -> Result<(), ProtocolError> {
    let mut parts = Vec::new();
    for part in content {
        if let Part::ToolResult(r) = part {
            let mut text = r.text();
            if r.is_error {
                text = format!("[tool error] {text}");
            }
            out.push(MessageOut::Tool { tool_call_id: &r.call_id, content: text });
            for p in &r.content {
                match p {
                    Part::Text(_) => {}
                    Part::Image(img) => parts.push(image_part(img)),
                    Part::Document(doc) => parts.push(file_part(doc)?),
                    other => {
                        return Err(crate::cannot_send(
                            &other.describe(),
                            TARGET,
                            "a tool result carries only text, images and files",
                        ));
                    }
                }
            }
        }
    }
    for part in content {
        match part {
            Part::Text(t) => parts.push(PartOut::Text { text: &t.text }),
            Part::Image(img) => parts.push(image_part(img)),
            Part::Document(doc) => parts.push(file_part(doc)?),
            Part::ToolResult(_) => {}
            // Reasoning is context only: it is never sent back to another provider.
            Part::Thinking { .. } | Part::RedactedThinking { .. } => {}
            other @ (Part::ToolCall(_) | Part::Untranslatable { .. } | Part::Compaction { .. }) => {
                return Err(crate::cannot_send(
                    &other.describe(),
                    TARGET,
                    "a user message carries only text, images, files and tool results",
                ));
            }
        }
    }
    if parts.is_empty() {
        return Ok(());
    }
    let content = match parts.as_slice() {
        [PartOut::Text { text }] => UserContent::Text(text),
        _ => UserContent::Parts(parts),
    };
    out.push(MessageOut::User { content });
    Ok(())
}

fn assistant<'a>(
    parts: &'a [Part],
    echo: Option<&'a str>,
) -> Result<MessageOut<'a>, ProtocolError> {
    let mut text: Option<Cow<'a, str>> = None;
    let mut calls = Vec::new();
    for part in parts {
        match part {
            Part::Text(t) => match &mut text {
                None => text = Some(Cow::Borrowed(&t.text)),
                Some(acc) => acc.to_mut().push_str(&t.text),
            },
            Part::ToolCall(c) => calls.push(CallOut::of(c)),
            // Reasoning from any provider is not sent back: OpenAI-compatible servers
            // either ignore it or refuse it (unless `echo` asks for it, below).
            Part::Thinking { .. } | Part::RedactedThinking { .. } => {}
            other @ (Part::Image(_)
            | Part::Document(_)
            | Part::ToolResult(_)
            | Part::Untranslatable { .. }
            | Part::Compaction { .. }) => {
                return Err(crate::cannot_send(
                    &other.describe(),
                    TARGET,
                    "an assistant message carries only text and tool calls",
                ));
            }
        }
    }
    let text = text.unwrap_or(Cow::Borrowed(""));
    let content = if text.is_empty() && !calls.is_empty() { None } else { Some(text) };
    let echo = echo
        .filter(|_| !calls.is_empty())
        .map(|field| (field, super::compat::reasoning_text(parts)));
    Ok(MessageOut::Assistant { content, echo, calls })
}
