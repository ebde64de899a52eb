//! Anthropic's wire types (what we read; what we write is built with `json!`), and
//! the block readers that requests, responses and the stream decoder share.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{
    Document, DocumentSource, Image, ImageSource, Part, TextBlock, ToolCall, ToolResult, Usage,
    util,
};

/// A content block as it appears in requests, responses and `content_block_start`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum InBlock {
    Text {
        text: String,
        #[serde(default)]
        cache_control: Option<Value>,
    },
    Image {
        source: Value,
        #[serde(default)]
        cache_control: Option<Value>,
    },
    Document {
        source: Value,
        #[serde(default)]
        title: Option<String>,
        #[serde(default)]
        context: Option<String>,
        #[serde(default)]
        citations: Option<Value>,
        #[serde(default)]
        cache_control: Option<Value>,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        /// A string, or an array of text/image blocks.
        #[serde(default)]
        content: Value,
        #[serde(default)]
        is_error: Option<bool>,
        #[serde(default)]
        cache_control: Option<Value>,
    },
    Thinking {
        thinking: String,
        #[serde(default)]
        signature: Option<String>,
    },
    RedactedThinking {
        data: String,
    },
    /// Server-tool blocks, search results, …: untranslatable (see the wire's docs in [`super`]).
    #[serde(other)]
    Other,
}

/// The block types [`InBlock`] reads; any other is named in its refusal.
pub(super) const KNOWN_BLOCKS: [&str; 7] =
    ["text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking"];

/// An image's or a document's `source`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InSource {
    Base64 {
        media_type: String,
        data: String,
    },
    Url {
        url: String,
    },
    /// Files API (`file`), a document's `text` and `content`, future sources: the
    /// canonical model cannot carry them.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
pub(super) struct InMessage {
    pub(super) role: String,
    pub(super) content: Value,
}

#[derive(Debug, Deserialize)]
pub(super) struct InSystemBlock {
    pub(super) text: String,
    #[serde(default)]
    pub(super) cache_control: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub(super) struct InTool {
    pub(super) name: String,
    #[serde(default)]
    pub(super) description: Option<String>,
    pub(super) input_schema: Value,
    #[serde(default)]
    pub(super) strict: Option<bool>,
    #[serde(default)]
    pub(super) cache_control: Option<Value>,
    /// Loaded only when the model searches for it (tool search).
    #[serde(default)]
    pub(super) defer_loading: Option<bool>,
}

#[derive(Debug, Deserialize)]
pub(super) struct InToolChoice {
    #[serde(rename = "type")]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) disable_parallel_tool_use: Option<bool>,
}

#[derive(Debug, Deserialize)]
pub(super) struct InThinking {
    #[serde(rename = "type")]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) budget_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct InOutputConfig {
    #[serde(default)]
    pub(super) effort: Option<String>,
    #[serde(default)]
    pub(super) format: Option<InOutputFormat>,
}

/// `output_config.format` (GA) and the older beta `output_format`.
#[derive(Debug, Deserialize)]
pub(super) struct InOutputFormat {
    #[serde(rename = "type")]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) schema: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct InMetadata {
    #[serde(default)]
    pub(super) user_id: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct InResponse {
    #[serde(default)]
    pub(super) id: String,
    #[serde(default)]
    pub(super) model: String,
    #[serde(default)]
    pub(super) content: Vec<Value>,
    #[serde(default)]
    pub(super) stop_reason: Option<String>,
    #[serde(default)]
    pub(super) stop_sequence: Option<String>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
}

/// Anthropic's usage object: `input_tokens` excludes cache reads and writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    pub(super) input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) output_tokens: Option<u64>,
    #[serde(default)]
    pub(super) cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Fields the later report carries win (stream reports are cumulative).
    pub(super) fn merge(&mut self, later: &WireUsage) {
        fn pick(a: &mut Option<u64>, b: Option<u64>) {
            if b.is_some() {
                *a = b;
            }
        }
        pick(&mut self.input_tokens, later.input_tokens);
        pick(&mut self.output_tokens, later.output_tokens);
        pick(&mut self.cache_read_input_tokens, later.cache_read_input_tokens);
        pick(&mut self.cache_creation_input_tokens, later.cache_creation_input_tokens);
    }

    pub(super) fn to_canonical(self) -> Usage {
        let (read, write) = (self.cache_read_input_tokens, self.cache_creation_input_tokens);
        Usage::with_cache_apart(self.input_tokens, read, write, self.output_tokens)
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct WireError {
    #[serde(rename = "type", default)]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) message: String,
}

/// One streamed event, tagged by its `type` (which always equals the SSE event name).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum WireEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: u64,
        content_block: Value,
    },
    ContentBlockDelta {
        index: u64,
        delta: WireDelta,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: WireError,
    },
    /// Event types added after this was written.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
pub(super) struct StartMessage {
    #[serde(default)]
    pub(super) id: String,
    #[serde(default)]
    pub(super) model: String,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct MessageDeltaBody {
    #[serde(default)]
    pub(super) stop_reason: Option<String>,
    #[serde(default)]
    pub(super) stop_sequence: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum WireDelta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    /// `citations_delta` and future delta types.
    #[serde(other)]
    Other,
}

// ---------------------------------------------------------------------------------
// Reading blocks
// ---------------------------------------------------------------------------------

/// Deserialize one nested value, prefixing errors with its path (`messages[2].content[0]`).
pub(super) fn at<T: DeserializeOwned>(value: Value, path: &str) -> Result<T, String> {
    serde_json::from_value(value).map_err(|e| format!("{path}: {e}"))
}

/// An empty signature is no signature (Anthropic never sends one; clients echo `""`
/// back for thinking we produced from a non-Anthropic upstream).
pub(super) fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

/// The type of a block (or source) that is not one of `known`, for its refusal;
/// `None` for a known one. Read before the value is moved into its parse.
pub(super) fn unknown_type(value: &Value, known: &[&str]) -> Option<String> {
    let kind = value.get("type").and_then(Value::as_str).unwrap_or("(none)");
    (!known.contains(&kind)).then(|| kind.to_owned())
}

/// A `source`: the known forms, or (`Err`) how a refusal names the one it is
/// instead (a Files API source with its file's id).
fn source(value: Value, path: &str) -> Result<Result<InSource, String>, String> {
    if let Some(kind) = unknown_type(&value, &["base64", "url"]) {
        return Ok(Err(match value.get("file_id").and_then(Value::as_str) {
            Some(id) => format!("a `{kind}` source ({id})"),
            None => format!("a `{kind}` source"),
        }));
    }
    at::<InSource>(value, path).map(Ok)
}

fn image_part(
    source_value: Value,
    cache_control: Option<Value>,
    path: &str,
) -> Result<Part, String> {
    let source = match source(source_value, &format!("{path}.source"))? {
        Ok(InSource::Base64 { media_type, data }) => ImageSource::Base64 { media_type, data },
        Ok(InSource::Url { url }) => ImageSource::Url { url },
        Ok(InSource::Other) => return Ok(untranslatable(path, "an image with an unknown source")),
        Err(what) => return Ok(untranslatable(path, &format!("an image with {what}"))),
    };
    Ok(Part::Image(Image { source, detail: None, cache_control }))
}

fn untranslatable(path: &str, what: &str) -> Part {
    Part::Untranslatable { what: format!("{path}: {what}") }
}

fn document_part(
    source_value: Value,
    title: Option<String>,
    context: Option<String>,
    citations: Option<Value>,
    cache_control: Option<Value>,
    path: &str,
) -> Result<Part, String> {
    let source = match source(source_value, &format!("{path}.source"))? {
        Ok(InSource::Base64 { media_type, data }) => DocumentSource::Base64 { media_type, data },
        Ok(InSource::Url { url }) => DocumentSource::Url { url, media_type: None },
        Ok(InSource::Other) => {
            return Ok(untranslatable(path, "a document with an unknown source"));
        }
        Err(what) => return Ok(untranslatable(path, &format!("a document with {what}"))),
    };
    Ok(Part::Document(Document {
        source,
        filename: None,
        title,
        context,
        citations,
        cache_control,
    }))
}

/// One content block of a request as a canonical part. `unknown` is the block's
/// type when [`InBlock`] does not read it.
pub(super) fn block_to_part(
    block: InBlock,
    unknown: Option<String>,
    path: &str,
) -> Result<Part, String> {
    Ok(match block {
        InBlock::Text { text, cache_control } => Part::Text(TextBlock { text, cache_control }),
        InBlock::Image { source, cache_control } => image_part(source, cache_control, path)?,
        InBlock::Document { source, title, context, citations, cache_control } => {
            document_part(source, title, context, citations, cache_control, path)?
        }
        InBlock::ToolUse { id, name, input } => {
            let arguments = match input {
                Value::Null => "{}".to_owned(),
                input => util::value_to_arguments(&input),
            };
            Part::ToolCall(ToolCall { id, name, arguments, signature: None })
        }
        InBlock::ToolResult { tool_use_id, content, is_error, cache_control } => {
            let mut content = tool_result_content(content, &format!("{path}.content"))?;
            // The canonical tool result has no cache marker of its own. Moving it onto
            // the result's last block keeps the breakpoint where the client put it
            // (the cached prefix ends at the same place, give or take the wrapper).
            if let Some(cc) = cache_control {
                match content.last_mut() {
                    Some(Part::Text(t)) if t.cache_control.is_none() => t.cache_control = Some(cc),
                    Some(Part::Image(i)) if i.cache_control.is_none() => i.cache_control = Some(cc),
                    Some(Part::Document(d)) if d.cache_control.is_none() => {
                        d.cache_control = Some(cc)
                    }
                    _ => {}
                }
            }
            Part::ToolResult(ToolResult {
                call_id: tool_use_id,
                name: None,
                content,
                is_error: is_error.unwrap_or(false),
            })
        }
        InBlock::Thinking { thinking, signature } => {
            Part::Thinking { text: thinking, signature: non_empty(signature) }
        }
        InBlock::RedactedThinking { data } => Part::RedactedThinking { data },
        InBlock::Other => {
            let kind = unknown.unwrap_or_else(|| "(unknown)".to_owned());
            untranslatable(path, &format!("a `{kind}` block"))
        }
    })
}

/// `tool_result.content`: absent, a string, or an array of text, image and
/// document blocks (search results and the like are untranslatable).
fn tool_result_content(content: Value, path: &str) -> Result<Vec<Part>, String> {
    match content {
        Value::Null => Ok(Vec::new()),
        Value::String(s) if s.is_empty() => Ok(Vec::new()),
        Value::String(s) => Ok(vec![Part::Text(TextBlock::new(s))]),
        Value::Array(items) => {
            let mut parts = Vec::new();
            for (j, item) in items.into_iter().enumerate() {
                let item_path = format!("{path}[{j}]");
                let unknown = unknown_type(&item, &KNOWN_BLOCKS);
                parts.push(match at::<InBlock>(item, &item_path)? {
                    block @ (InBlock::Text { .. }
                    | InBlock::Image { .. }
                    | InBlock::Document { .. }
                    | InBlock::Other) => block_to_part(block, unknown, &item_path)?,
                    _ => untranslatable(&item_path, "a block a tool result cannot hold"),
                });
            }
            Ok(parts)
        }
        _ => Err(format!("{path}: expected a string or an array of content blocks")),
    }
}
