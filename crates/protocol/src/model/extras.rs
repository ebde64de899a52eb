//! What a request asks of the provider beyond the conversation ([`Extras`]): the
//! tools the provider runs or defines itself ([`HostedTool`]: web search, code
//! execution, MCP, …), prompt-cache routing, safety and tier settings, storage; and
//! the client's session, as the gateway read it.
//!
//! None of it is dropped at parse: hosted tools are carried by kind, so that a
//! request offering one goes first where it can run, and one requiring one only
//! there (the catalog's `server_tools`, decided in core's `hosted`), and an
//! encoder that cannot write one refuses it by name; the
//! fields go to wires that take them and are mapped or dropped for the others, and
//! [`crate::carry`] says which, for the request record.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Wire;

/// Settings beyond the generation itself, each as the client sent it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Extras {
    /// Tools the provider runs or defines (never a plain function tool).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosted_tools: Vec<HostedTool>,
    /// Function tools the client asked to load only on demand (`defer_loading`),
    /// by name: they need the provider's tool search.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deferred_tools: Vec<String>,
    /// The hosted tools whose own items (a search's call and results, an MCP
    /// call, …) the conversation holds, kept as [`crate::Part::Untranslatable`]:
    /// only the client's own API takes them back (its body forwarded as it is).
    #[serde(skip_serializing_if = "no_tools")]
    pub history_tools: ServerTools,
    /// OpenAI `prompt_cache_key`: which cache the prompt's prefix is routed to.
    /// Agents send one per conversation; dropping it costs most of their cache hits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<String>,
    /// OpenAI `prompt_cache_retention` (`in-memory`, `24h`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_retention: Option<String>,
    /// OpenAI `safety_identifier`: a stable id of the end user, for abuse detection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safety_identifier: Option<String>,
    /// `service_tier` as the client named it (OpenAI `auto`/`default`/`flex`/
    /// `priority`/`scale`, Anthropic `auto`/`standard_only`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<String>,
    /// OpenAI `store`, exactly as the client set it (never rewritten).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
    /// The client's session (Claude Code's, from `metadata.user_id`): recorded,
    /// never a user or tenant of the gateway's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The client asked for reasoning effort `auto` (`reasoning_effort`,
    /// `reasoning.effort`, `output_config.effort`): the gateway sets
    /// [`crate::Request::reasoning`] from the request's intent, and no upstream
    /// sees the word.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reasoning_auto: bool,
}

fn no_tools(tools: &ServerTools) -> bool {
    tools.is_empty()
}

impl Extras {
    /// The server tools the request needs, each once.
    pub fn needs(&self) -> ServerTools {
        let mut needs = ServerTools::of(self.hosted_tools.iter().filter_map(|t| t.kind));
        if !self.deferred_tools.is_empty() {
            needs.insert(ServerTool::ToolSearch);
        }
        needs
    }
}

/// A kind of tool the provider runs (or defines) itself, by the name the catalog's
/// `server_tools` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerTool {
    /// Responses `web_search*`, Anthropic `web_search_*`, Chat `web_search_options`.
    WebSearch,
    /// Anthropic `web_fetch_*`.
    WebFetch,
    /// Responses `code_interpreter`, Anthropic `code_execution_*`.
    CodeExecution,
    /// Responses `file_search` (the organisation's vector stores).
    FileSearch,
    /// Responses `mcp`, Anthropic `mcp_toolset` and `mcp_servers`.
    Mcp,
    /// Responses `image_generation`.
    ImageGeneration,
    /// Anthropic `tool_search_tool_*`, Responses `tool_search`, and every tool
    /// declared with `defer_loading`.
    ToolSearch,
    /// Responses `computer_use_preview`, Anthropic `computer_*`.
    ComputerUse,
    /// Anthropic `bash_*` (run by the client, defined by Anthropic).
    Bash,
    /// Anthropic `text_editor_*`.
    TextEditor,
    /// Anthropic `memory_*`.
    Memory,
    /// Responses `local_shell` and `shell` (run by the client, defined by OpenAI).
    Shell,
    /// Responses `apply_patch` (the typed tool, not a `custom` one).
    ApplyPatch,
}

impl ServerTool {
    /// Every kind, in declaration order (the order sets iterate in).
    pub const ALL: [ServerTool; 13] = [
        ServerTool::WebSearch,
        ServerTool::WebFetch,
        ServerTool::CodeExecution,
        ServerTool::FileSearch,
        ServerTool::Mcp,
        ServerTool::ImageGeneration,
        ServerTool::ToolSearch,
        ServerTool::ComputerUse,
        ServerTool::Bash,
        ServerTool::TextEditor,
        ServerTool::Memory,
        ServerTool::Shell,
        ServerTool::ApplyPatch,
    ];

    /// The name the configuration and refusals use.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerTool::WebSearch => "web_search",
            ServerTool::WebFetch => "web_fetch",
            ServerTool::CodeExecution => "code_execution",
            ServerTool::FileSearch => "file_search",
            ServerTool::Mcp => "mcp",
            ServerTool::ImageGeneration => "image_generation",
            ServerTool::ToolSearch => "tool_search",
            ServerTool::ComputerUse => "computer_use",
            ServerTool::Bash => "bash",
            ServerTool::TextEditor => "text_editor",
            ServerTool::Memory => "memory",
            ServerTool::Shell => "shell",
            ServerTool::ApplyPatch => "apply_patch",
        }
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }

    /// The kind of an Anthropic tool `type` (one without an `input_schema`).
    pub fn from_anthropic(tool_type: &str) -> Option<ServerTool> {
        const FAMILIES: [(&str, ServerTool); 9] = [
            ("web_search_", ServerTool::WebSearch),
            ("web_fetch_", ServerTool::WebFetch),
            ("code_execution_", ServerTool::CodeExecution),
            ("mcp_toolset", ServerTool::Mcp),
            ("tool_search_tool_", ServerTool::ToolSearch),
            ("bash_", ServerTool::Bash),
            ("text_editor_", ServerTool::TextEditor),
            ("computer_", ServerTool::ComputerUse),
            ("memory_", ServerTool::Memory),
        ];
        FAMILIES.iter().find(|(prefix, _)| tool_type.starts_with(prefix)).map(|(_, kind)| *kind)
    }

    /// The kind whose own item an Anthropic content block of type `block` is
    /// (`web_search_tool_result`, `mcp_tool_use`, …); `None` for any other block.
    /// A `server_tool_use` block names its tool only in its `name`, and comes
    /// with its result, which names the kind.
    pub fn of_anthropic_block(block: &str) -> Option<ServerTool> {
        const BLOCKS: [(&str, ServerTool); 8] = [
            ("web_search_tool_result", ServerTool::WebSearch),
            ("web_fetch_tool_result", ServerTool::WebFetch),
            ("code_execution_tool_result", ServerTool::CodeExecution),
            ("bash_code_execution_tool_result", ServerTool::CodeExecution),
            ("text_editor_code_execution_tool_result", ServerTool::CodeExecution),
            ("tool_search_tool_result", ServerTool::ToolSearch),
            ("mcp_tool_use", ServerTool::Mcp),
            ("mcp_tool_result", ServerTool::Mcp),
        ];
        BLOCKS.iter().find(|(t, _)| *t == block).map(|(_, kind)| *kind)
    }

    /// The kind of a Responses tool `type` (anything but `function`, `custom` and
    /// `namespace`).
    pub fn from_responses(tool_type: &str) -> Option<ServerTool> {
        Some(match tool_type {
            t if t.starts_with("web_search") => ServerTool::WebSearch,
            "file_search" => ServerTool::FileSearch,
            "code_interpreter" => ServerTool::CodeExecution,
            "mcp" => ServerTool::Mcp,
            "image_generation" => ServerTool::ImageGeneration,
            "tool_search" => ServerTool::ToolSearch,
            "computer_use_preview" | "computer_use" | "computer" => ServerTool::ComputerUse,
            "local_shell" | "shell" => ServerTool::Shell,
            "apply_patch" => ServerTool::ApplyPatch,
            _ => return None,
        })
    }
}

/// A set of [`ServerTool`]s (what a deployment runs, what a request needs).
/// Serialized as the list of its members' names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ServerTools(u32);

impl Serialize for ServerTools {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for ServerTools {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<ServerTool>::deserialize(d).map(ServerTools::of)
    }
}

impl ServerTools {
    /// The empty set.
    pub const NONE: ServerTools = ServerTools(0);

    /// The set of `kinds` (each counted once).
    pub fn of(kinds: impl IntoIterator<Item = ServerTool>) -> Self {
        let mut set = Self::NONE;
        for kind in kinds {
            set.insert(kind);
        }
        set
    }

    /// Add `kind` (no change if it is already in).
    pub fn insert(&mut self, kind: ServerTool) {
        self.0 |= kind.bit();
    }

    /// Whether `kind` is in the set.
    pub fn contains(self, kind: ServerTool) -> bool {
        self.0 & kind.bit() != 0
    }

    /// No kind at all.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The members, in [`ServerTool::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = ServerTool> {
        ServerTool::ALL.into_iter().filter(move |k| self.contains(*k))
    }

    /// The members' names joined with `, ` (`none` when empty), for messages.
    pub fn names(self) -> String {
        if self.is_empty() {
            return "none".to_owned();
        }
        self.iter().map(ServerTool::as_str).collect::<Vec<_>>().join(", ")
    }
}

/// Whose definition a hosted tool is: the client format it came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dialect {
    /// OpenAI Chat Completions (`web_search_options`).
    OpenAiChat,
    /// OpenAI Responses (`tools` entries of a hosted type).
    OpenAiResponses,
    /// Anthropic Messages (`tools` entries of a server type, `mcp_servers`).
    Anthropic,
    /// Gemini `generateContent` (`tools` entries `googleSearch`, `urlContext`,
    /// `codeExecution`, …).
    Gemini,
}

impl Dialect {
    /// The upstream wire that takes this dialect's definitions as they are.
    pub fn native_wire(self) -> Option<Wire> {
        match self {
            Dialect::OpenAiChat => Some(Wire::OpenAiChat),
            Dialect::Anthropic => Some(Wire::Anthropic),
            Dialect::Gemini => Some(Wire::Gemini),
            Dialect::OpenAiResponses => Some(Wire::Responses),
        }
    }
}

/// `tool_type` of the [`HostedTool`]s an Anthropic request's `mcp_servers` entries
/// become (each an MCP server the provider connects to).
pub const MCP_SERVER: &str = "mcp_servers";

/// A tool the provider runs or defines itself, carried as the client declared it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostedTool {
    /// What it does; `None` for a type the gateway does not know, which only a
    /// wire of its own dialect can take (as it is).
    pub kind: Option<ServerTool>,
    /// The format it was declared in, which says how `config` reads.
    pub dialect: Dialect,
    /// Its `type` as the client wrote it (`web_search_20250305`,
    /// `web_search_preview`, [`MCP_SERVER`], …).
    pub tool_type: String,
    /// Where the client declared it (`tools[2]`), for refusals.
    pub path: String,
    /// The declaration as the client sent it.
    pub config: Value,
}

impl HostedTool {
    /// How refusals name it: ``the `web_search` tool (tools[2])``.
    pub fn describe(&self) -> String {
        format!("the `{}` tool ({})", self.tool_type, self.path)
    }

    /// The catalog's name for what it needs (its type when the kind is unknown).
    pub fn need_name(&self) -> &str {
        match self.kind {
            Some(kind) => kind.as_str(),
            None => &self.tool_type,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_types_map_to_their_kinds() {
        assert_eq!(ServerTool::from_anthropic("web_search_20250305"), Some(ServerTool::WebSearch));
        assert_eq!(ServerTool::from_anthropic("web_fetch_20250910"), Some(ServerTool::WebFetch));
        assert_eq!(ServerTool::from_anthropic("mcp_toolset"), Some(ServerTool::Mcp));
        assert_eq!(
            ServerTool::from_anthropic("tool_search_tool_regex_20251119"),
            Some(ServerTool::ToolSearch)
        );
        assert_eq!(ServerTool::from_anthropic("teleport_20990101"), None);
        assert_eq!(ServerTool::from_responses("web_search_preview"), Some(ServerTool::WebSearch));
        assert_eq!(ServerTool::from_responses("code_interpreter"), Some(ServerTool::CodeExecution));
        assert_eq!(ServerTool::from_responses("local_shell"), Some(ServerTool::Shell));
        assert_eq!(ServerTool::from_responses("function"), None);
        for kind in ServerTool::ALL {
            let name = serde_json::to_value(kind).unwrap();
            assert_eq!(name, kind.as_str(), "the config name is the serde name");
        }
    }

    #[test]
    fn sets_hold_each_kind_once() {
        let set = ServerTools::of([ServerTool::Mcp, ServerTool::WebSearch, ServerTool::Mcp]);
        assert!(set.contains(ServerTool::Mcp) && set.contains(ServerTool::WebSearch));
        assert!(!set.contains(ServerTool::Bash));
        assert_eq!(set.names(), "web_search, mcp");
        assert_eq!(ServerTools::NONE.names(), "none");
        // As the list of its names.
        let json = serde_json::to_value(set).unwrap();
        assert_eq!(json, serde_json::json!(["web_search", "mcp"]));
        assert_eq!(serde_json::from_value::<ServerTools>(json).unwrap(), set);
        assert_eq!(
            ServerTool::of_anthropic_block("web_fetch_tool_result"),
            Some(ServerTool::WebFetch)
        );
        assert_eq!(ServerTool::of_anthropic_block("text"), None);
    }
}
