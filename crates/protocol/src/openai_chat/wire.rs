//! Chat Completions wire types: only what we read (requests, responses, stream
//! chunks); what we write is built with `json!`.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::Usage;

#[derive(Deserialize)]
pub(super) struct WireRequest {
    #[serde(default)]
    pub(super) model: String,
    pub(super) messages: Vec<WireMessage>,
    #[serde(default)]
    pub(super) tools: Vec<WireTool>,
    #[serde(default)]
    pub(super) functions: Vec<WireFunction>,
    #[serde(default)]
    pub(super) tool_choice: Option<Value>,
    #[serde(default)]
    pub(super) parallel_tool_calls: Option<bool>,
    #[serde(default)]
    pub(super) max_tokens: Option<u64>,
    #[serde(default)]
    pub(super) max_completion_tokens: Option<u64>,
    #[serde(default)]
    pub(super) temperature: Option<f64>,
    #[serde(default)]
    pub(super) top_p: Option<f64>,
    #[serde(default)]
    pub(super) top_k: Option<u64>,
    #[serde(default)]
    pub(super) stop: Option<Value>,
    #[serde(default)]
    pub(super) stream: Option<bool>,
    #[serde(default)]
    pub(super) stream_options: Option<WireStreamOptions>,
    #[serde(default)]
    pub(super) reasoning_effort: Option<String>,
    #[serde(default)]
    pub(super) response_format: Option<WireResponseFormat>,
    #[serde(default)]
    pub(super) user: Option<String>,
    #[serde(default)]
    pub(super) metadata: Option<Map<String, Value>>,
    #[serde(default)]
    pub(super) prompt_cache_key: Option<String>,
    #[serde(default)]
    pub(super) prompt_cache_retention: Option<String>,
    #[serde(default)]
    pub(super) safety_identifier: Option<String>,
    #[serde(default)]
    pub(super) service_tier: Option<String>,
    #[serde(default)]
    pub(super) store: Option<bool>,
    /// A web search the provider runs (search models).
    #[serde(default)]
    pub(super) web_search_options: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct WireMessage {
    pub(super) role: String,
    #[serde(default)]
    pub(super) content: Option<WireContent>,
    #[serde(default)]
    pub(super) tool_calls: Vec<WireToolCall>,
    #[serde(default)]
    pub(super) tool_call_id: Option<String>,
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) reasoning_content: Option<String>,
    /// vLLM's (and OpenRouter's) name for `reasoning_content`. Read as any value:
    /// a field only some servers give must not refuse a body where it is
    /// something else.
    #[serde(default)]
    pub(super) reasoning: Option<Value>,
    #[serde(default)]
    pub(super) refusal: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum WireContent {
    Text(String),
    Parts(Vec<WirePart>),
}

/// One content part. Read as one struct with the fields of every known type (not
/// an enum tagged by `type`), so an unknown type keeps its name for the refusal.
#[derive(Deserialize)]
pub(super) struct WirePart {
    #[serde(rename = "type")]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) text: Option<String>,
    #[serde(default)]
    pub(super) image_url: Option<WireImageUrl>,
    #[serde(default)]
    pub(super) refusal: Option<String>,
    #[serde(default)]
    pub(super) file: Option<WireFile>,
}

/// A `file` part's file: inline data (a `data:` URI) or an uploaded file's id.
#[derive(Deserialize)]
pub(super) struct WireFile {
    #[serde(default)]
    pub(super) file_data: Option<String>,
    #[serde(default)]
    pub(super) file_id: Option<String>,
    #[serde(default)]
    pub(super) filename: Option<String>,
}

#[derive(Deserialize, Default)]
pub(super) struct WireStreamOptions {
    #[serde(default)]
    pub(super) include_usage: Option<bool>,
}

#[derive(Deserialize)]
pub(super) struct WireImageUrl {
    pub(super) url: String,
    #[serde(default)]
    pub(super) detail: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct WireToolCall {
    #[serde(default)]
    pub(super) id: String,
    pub(super) function: WireFunctionCall,
}

#[derive(Deserialize)]
pub(super) struct WireFunctionCall {
    #[serde(default)]
    pub(super) name: String,
    #[serde(default)]
    pub(super) arguments: String,
}

#[derive(Deserialize)]
pub(super) struct WireTool {
    pub(super) function: WireFunction,
}

#[derive(Deserialize)]
pub(super) struct WireFunction {
    pub(super) name: String,
    #[serde(default)]
    pub(super) description: Option<String>,
    #[serde(default)]
    pub(super) parameters: Option<Value>,
    #[serde(default)]
    pub(super) strict: Option<bool>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum WireResponseFormat {
    Text,
    JsonObject,
    JsonSchema { json_schema: WireJsonSchema },
}

#[derive(Deserialize)]
pub(super) struct WireJsonSchema {
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) schema: Option<Value>,
    #[serde(default)]
    pub(super) strict: Option<bool>,
    #[serde(default)]
    pub(super) description: Option<String>,
}

#[derive(Deserialize, Default)]
pub(super) struct WireUsage {
    #[serde(default)]
    pub(super) prompt_tokens: Option<u64>,
    #[serde(default)]
    pub(super) completion_tokens: Option<u64>,
    #[serde(default)]
    pub(super) prompt_tokens_details: Option<WirePromptDetails>,
    #[serde(default)]
    pub(super) completion_tokens_details: Option<WireCompletionDetails>,
    /// DeepSeek's name for cached prompt tokens.
    #[serde(default)]
    pub(super) prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
pub(super) struct WirePromptDetails {
    #[serde(default)]
    pub(super) cached_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
pub(super) struct WireCompletionDetails {
    #[serde(default)]
    pub(super) reasoning_tokens: Option<u64>,
}

impl WireUsage {
    pub(super) fn canonical(&self) -> Usage {
        Usage {
            input_tokens: self.prompt_tokens,
            output_tokens: self.completion_tokens,
            cache_read_tokens: self
                .prompt_tokens_details
                .as_ref()
                .and_then(|d| d.cached_tokens)
                .or(self.prompt_cache_hit_tokens),
            cache_write_tokens: None,
            reasoning_tokens: self
                .completion_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens),
        }
    }
}

#[derive(Deserialize)]
pub(super) struct WireResponse {
    #[serde(default)]
    pub(super) id: String,
    #[serde(default)]
    pub(super) model: String,
    #[serde(default)]
    pub(super) choices: Vec<WireChoice>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
}

#[derive(Deserialize)]
pub(super) struct WireChoice {
    #[serde(default)]
    pub(super) message: Option<WireMessage>,
    #[serde(default)]
    pub(super) finish_reason: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct WireChunk {
    #[serde(default)]
    pub(super) id: String,
    #[serde(default)]
    pub(super) model: String,
    #[serde(default)]
    pub(super) choices: Vec<WireChunkChoice>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
    #[serde(default)]
    pub(super) error: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct WireChunkChoice {
    #[serde(default)]
    pub(super) delta: Option<WireDelta>,
    #[serde(default)]
    pub(super) finish_reason: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct WireDelta {
    #[serde(default)]
    pub(super) content: Option<String>,
    #[serde(default)]
    pub(super) reasoning_content: Option<String>,
    #[serde(default)]
    pub(super) reasoning: Option<String>,
    #[serde(default)]
    pub(super) refusal: Option<String>,
    #[serde(default)]
    pub(super) tool_calls: Vec<WireToolCallDelta>,
}

#[derive(Deserialize)]
pub(super) struct WireToolCallDelta {
    #[serde(default)]
    pub(super) index: Option<usize>,
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) function: Option<WireFunctionDelta>,
}

#[derive(Deserialize)]
pub(super) struct WireFunctionDelta {
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) arguments: Option<String>,
}

impl WireMessage {
    /// Its reasoning text under either name (`reasoning_content` first).
    pub(super) fn reasoning_text(&mut self) -> Option<String> {
        let other = match self.reasoning.take() {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        self.reasoning_content.take().or(other).filter(|r| !r.is_empty())
    }
}
