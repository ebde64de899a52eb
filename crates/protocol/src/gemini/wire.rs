//! Gemini's wire types, read and written with serde (camelCase, every field
//! optional).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct WireRequest {
    pub(super) contents: Vec<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) system_instruction: Option<Content>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) tools: Vec<WireTool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_config: Option<ToolConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) generation_config: Option<GenerationConfig>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct Content {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) role: Option<String>,
    pub(super) parts: Vec<WirePart>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct WirePart {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thought: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thought_signature: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) inline_data: Option<Blob>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) file_data: Option<FileData>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) function_call: Option<FunctionCall>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) function_response: Option<FunctionResponse>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct Blob {
    pub(super) mime_type: String,
    pub(super) data: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct FileData {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) mime_type: Option<String>,
    pub(super) file_uri: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct FunctionCall {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) id: Option<String>,
    pub(super) name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) args: Option<Value>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct FunctionResponse {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) id: Option<String>,
    pub(super) name: String,
    pub(super) response: Value,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct WireTool {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) function_declarations: Vec<FunctionDeclaration>,
    /// The entry's other members: a tool Gemini runs itself (`googleSearch`,
    /// `urlContext`, `codeExecution`, …), read from a client's request.
    #[serde(flatten, skip_serializing)]
    pub(super) hosted: Map<String, Value>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct FunctionDeclaration {
    pub(super) name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) description: Option<String>,
    /// OpenAPI-subset schema; read, never written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) parameters: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) parameters_json_schema: Option<Value>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct ToolConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) function_calling_config: Option<FunctionCallingConfig>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct FunctionCallingConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) mode: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) allowed_function_names: Vec<String>,
}

#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct GenerationConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) top_k: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) stop_sequences: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) response_mime_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) response_json_schema: Option<Value>,
    /// OpenAPI-subset schema; read, never written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) response_schema: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thinking_config: Option<ThinkingConfig>,
}

#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct ThinkingConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thinking_budget: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) include_thoughts: Option<bool>,
    /// Gemini 3 and later: `minimal`, `low`, `medium`, `high` (by model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thinking_level: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct WireResponse {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) candidates: Vec<Candidate>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) prompt_feedback: Option<PromptFeedback>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) usage_metadata: Option<UsageMetadata>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) model_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) response_id: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct Candidate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) content: Option<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) finish_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) index: Option<u32>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct PromptFeedback {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) block_reason: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct UsageMetadata {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) prompt_token_count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) candidates_token_count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) total_token_count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) cached_content_token_count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) thoughts_token_count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_use_prompt_token_count: Option<u64>,
}
