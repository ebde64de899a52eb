//! What each upstream wire does with a request's [`Extras`](crate::Extras): how it declares a
//! hosted tool ([`place`]), or why it cannot; which settings it takes, maps or
//! drops ([`carriage`]). The encoders write what these functions say and the core
//! records it, so the record and the body never disagree.
//!
//! The rules, from the providers' API references:
//! - OpenAI Chat Completions takes `prompt_cache_key`, `prompt_cache_retention`,
//!   `safety_identifier`, `service_tier` and `store` as they are (Anthropic's
//!   `standard_only` tier is its `default`), and a web search as
//!   `web_search_options` (no domain filters).
//! - Anthropic takes `service_tier` as `auto` or `standard_only` (OpenAI's `default`
//!   and `flex` become `standard_only`, `priority` and `scale` `auto`), and a safety
//!   identifier as `metadata.user_id` when the request names no user; it has no
//!   prompt-cache key (its cache is keyed by the prompt's own prefix), retention
//!   setting or `store`. Its own hosted tools go as they came; a web search from
//!   another format becomes `web_search_20250305`.
//! - Gemini takes none of these settings; a web search becomes `googleSearch`, code
//!   execution `codeExecution`, a web fetch `urlContext` (none with domain filters
//!   or OpenAI-side files).

use serde_json::{Map, Value, json};

use crate::{
    Dialect, FieldEdit, HostedTool, MCP_SERVER, ProtocolError, Request, ServerTool, ServerTools,
    Wire,
};

/// Where a hosted tool goes in a wire's body.
#[derive(Debug, Clone, PartialEq)]
pub enum Placement {
    /// An entry of the body's `tools`.
    Tool(Value),
    /// An entry of Anthropic's top-level `mcp_servers`.
    McpServer(Value),
    /// A top-level field of its own (Chat Completions' `web_search_options`).
    Field(&'static str, Value),
}

/// The server tools a deployment of `wire` can run at all (what its encoder can
/// declare); the catalog refuses to promise others.
pub fn runnable(wire: Wire) -> ServerTools {
    use ServerTool::*;
    match wire {
        Wire::Anthropic => ServerTools::of([
            WebSearch,
            WebFetch,
            CodeExecution,
            Mcp,
            ToolSearch,
            Bash,
            TextEditor,
            ComputerUse,
            Memory,
        ]),
        Wire::OpenAiChat => ServerTools::of([WebSearch]),
        Wire::Gemini => ServerTools::of([WebSearch, WebFetch, CodeExecution]),
    }
}

/// `tool` as `wire` declares it, or why it cannot be declared there.
pub fn place(wire: Wire, tool: &HostedTool) -> Result<Placement, String> {
    if tool.dialect.native_wire() == Some(wire) {
        // The client's own declaration, for the API it was written for.
        return Ok(match (wire, tool.tool_type.as_str()) {
            (Wire::Anthropic, MCP_SERVER) => Placement::McpServer(tool.config.clone()),
            (Wire::OpenAiChat, _) => Placement::Field(WEB_SEARCH_OPTIONS, tool.config.clone()),
            _ => Placement::Tool(tool.config.clone()),
        });
    }
    let kind =
        tool.kind.ok_or("the gateway does not know this tool, so only its own API takes it")?;
    match (wire, kind) {
        (_, ServerTool::WebSearch) => {
            let search = Search::read(tool);
            match wire {
                Wire::Anthropic => Ok(Placement::Tool(search.anthropic())),
                Wire::OpenAiChat => {
                    search.no_filters("web_search_options has no domain filters")?;
                    Ok(Placement::Field(WEB_SEARCH_OPTIONS, search.chat()))
                }
                Wire::Gemini => {
                    search.no_filters("googleSearch has no domain filters")?;
                    Ok(Placement::Tool(json!({"googleSearch": {}})))
                }
            }
        }
        (Wire::Gemini, ServerTool::CodeExecution) => {
            if tool.dialect == Dialect::OpenAiResponses && !auto_container(&tool.config) {
                return Err("its container and files are kept by OpenAI".into());
            }
            Ok(Placement::Tool(json!({"codeExecution": {}})))
        }
        (Wire::Gemini, ServerTool::WebFetch) => {
            Search::read(tool).no_filters("urlContext has no domain filters")?;
            Ok(Placement::Tool(json!({"urlContext": {}})))
        }
        (Wire::Anthropic, _) => Err(format!(
            "Anthropic runs {} only as its own tool, declared (with its beta) by an Anthropic client",
            kind.as_str()
        )),
        _ => Err(format!("the wire has no {} tool", kind.as_str())),
    }
}

/// Whether `wire` can declare `tool`.
pub fn takes(wire: Wire, tool: &HostedTool) -> bool {
    place(wire, tool).is_ok()
}

/// Whether `wire` can be made to use `tool` when a request forces it
/// ([`crate::ToolChoice::Hosted`]): Anthropic by the name it declares the tool
/// with; Chat Completions' search models search on every request; Gemini's
/// calling modes name functions only, so its own tools cannot be forced.
pub fn forces(wire: Wire, tool: &HostedTool) -> bool {
    match (wire, place(wire, tool)) {
        (Wire::Anthropic, Ok(Placement::Tool(declared))) => {
            declared.get("name").is_some_and(Value::is_string)
        }
        (Wire::OpenAiChat, Ok(_)) => true,
        _ => false,
    }
}

/// The edits that take `dropped` (hosted tools of a client's own body, by their
/// [`HostedTool::path`]) out of that body, for the same-format fast path: their
/// entries of `tools` and `mcp_servers`, Chat's `web_search_options`. A `tools`
/// left empty goes, and its `tool_choice` with it (the APIs refuse one without
/// tools). The rest of the body is left alone.
pub(crate) fn without(body: &Map<String, Value>, dropped: &[&HostedTool]) -> Vec<FieldEdit> {
    let mut edits = Vec::new();
    for field in [TOOLS, MCP_SERVER] {
        let gone: Vec<usize> = dropped.iter().filter_map(|t| index_in(&t.path, field)).collect();
        let Some(list) = body.get(field).and_then(Value::as_array).filter(|_| !gone.is_empty())
        else {
            continue;
        };
        let kept: Vec<Value> = list
            .iter()
            .enumerate()
            .filter(|(i, _)| !gone.contains(i))
            .map(|(_, v)| v.clone())
            .collect();
        if kept.is_empty() && field == TOOLS && body.contains_key(TOOL_CHOICE) {
            edits.push((TOOL_CHOICE, None));
        }
        edits.push((field, (!kept.is_empty()).then_some(Value::Array(kept))));
    }
    if dropped.iter().any(|t| t.path == WEB_SEARCH_OPTIONS) {
        edits.push((WEB_SEARCH_OPTIONS, None));
    }
    edits
}

const TOOLS: &str = "tools";
const TOOL_CHOICE: &str = "tool_choice";

/// `i` of a path `field[i]`.
fn index_in(path: &str, field: &str) -> Option<usize> {
    path.strip_prefix(field)?.strip_prefix('[')?.strip_suffix(']')?.parse().ok()
}

/// The request's hosted tools as `wire` declares them; one it cannot declare is
/// refused by name (`target` names the wire in the refusal).
pub(crate) fn placements(
    wire: Wire,
    req: &Request,
    target: &str,
) -> Result<Vec<Placement>, ProtocolError> {
    req.extras
        .hosted_tools
        .iter()
        .map(|t| place(wire, t).map_err(|why| crate::cannot_send(&t.describe(), target, &why)))
        .collect()
}

const WEB_SEARCH_OPTIONS: &str = "web_search_options";

/// A web search's settings, whichever format declared it.
#[derive(Debug, Default)]
struct Search {
    allowed: Vec<Value>,
    blocked: Vec<Value>,
    /// `city`, `region`, `country`, `timezone`.
    location: Map<String, Value>,
    context_size: Option<Value>,
    max_uses: Option<Value>,
}

impl Search {
    fn read(tool: &HostedTool) -> Search {
        let c = &tool.config;
        let list = |v: Option<&Value>| v.and_then(Value::as_array).cloned().unwrap_or_default();
        let location = match tool.dialect {
            // Chat nests the place under `approximate`.
            Dialect::OpenAiChat => c.pointer("/user_location/approximate"),
            _ => c.get("user_location"),
        };
        let location = location
            .and_then(Value::as_object)
            .map(|l| {
                l.iter()
                    .filter(|(k, v)| {
                        ["city", "region", "country", "timezone"].contains(&k.as_str())
                            && !v.is_null()
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let allowed = match tool.dialect {
            Dialect::OpenAiResponses => list(c.pointer("/filters/allowed_domains")),
            _ => list(c.get("allowed_domains")),
        };
        Search {
            allowed,
            blocked: list(c.get("blocked_domains")),
            location,
            context_size: c.get("search_context_size").filter(|v| !v.is_null()).cloned(),
            max_uses: c.get("max_uses").filter(|v| !v.is_null()).cloned(),
        }
    }

    /// Domain filters narrow what may be read: a wire without them cannot honour
    /// the request, so it is refused rather than searched unfiltered.
    fn no_filters(&self, why: &str) -> Result<(), String> {
        if self.allowed.is_empty() && self.blocked.is_empty() {
            Ok(())
        } else {
            Err(format!("the search is limited to or from some domains, and {why}"))
        }
    }

    fn anthropic(&self) -> Value {
        let mut tool = Map::new();
        tool.insert("type".into(), json!("web_search_20250305"));
        tool.insert("name".into(), json!("web_search"));
        if !self.allowed.is_empty() {
            tool.insert("allowed_domains".into(), Value::Array(self.allowed.clone()));
        }
        if !self.blocked.is_empty() {
            tool.insert("blocked_domains".into(), Value::Array(self.blocked.clone()));
        }
        if !self.location.is_empty() {
            let mut location = self.location.clone();
            location.insert("type".into(), json!("approximate"));
            tool.insert("user_location".into(), Value::Object(location));
        }
        if let Some(max) = &self.max_uses {
            tool.insert("max_uses".into(), max.clone());
        }
        Value::Object(tool)
    }

    fn chat(&self) -> Value {
        let mut options = Map::new();
        if let Some(size) = &self.context_size {
            options.insert("search_context_size".into(), size.clone());
        }
        if !self.location.is_empty() {
            options.insert(
                "user_location".into(),
                json!({"type": "approximate", "approximate": self.location}),
            );
        }
        Value::Object(options)
    }
}

/// A Responses `code_interpreter` that asks only for a fresh container: no
/// container of OpenAI's by id, no files uploaded there.
fn auto_container(config: &Value) -> bool {
    match config.get("container") {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s == "auto",
        Some(Value::Object(c)) => {
            c.get("type").and_then(Value::as_str) == Some("auto")
                && c.get("file_ids").and_then(Value::as_array).is_none_or(Vec::is_empty)
        }
        Some(_) => false,
    }
}

/// `service_tier` as `wire` takes it; `None` where it has no such setting.
pub fn service_tier(wire: Wire, tier: &str) -> Option<&str> {
    match wire {
        Wire::OpenAiChat => Some(if tier == "standard_only" { "default" } else { tier }),
        Wire::Anthropic => match tier {
            "auto" | "priority" | "scale" => Some("auto"),
            "standard_only" | "default" | "flex" => Some("standard_only"),
            _ => None,
        },
        Wire::Gemini => None,
    }
}

/// What a translated request's body carries of its [`Extras`](crate::Extras) and what became of
/// the rest.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Carriage {
    /// The body's top-level fields that carry settings (so a provider's
    /// `drop_fields` can say which of them it removed).
    pub sent: Vec<&'static str>,
    /// The settings mapped or dropped on the way: `prompt_cache_key: dropped`,
    /// `service_tier: default -> standard_only`.
    pub edits: Vec<String>,
}

impl Carriage {
    fn drop(&mut self, field: &str) {
        self.edits.push(format!("{field}: dropped"));
    }
}

/// What `wire`'s encoder does with `req`'s settings ([`crate::Extras`], and the
/// `user` and `metadata` a wire may have no place for).
pub fn carriage(wire: Wire, req: &Request) -> Carriage {
    let x = &req.extras;
    let mut c = Carriage::default();
    let plain = [
        ("prompt_cache_key", x.prompt_cache_key.is_some()),
        ("prompt_cache_retention", x.prompt_cache_retention.is_some()),
        ("store", x.store.is_some()),
    ];
    for (field, present) in plain {
        match (present, wire) {
            (false, _) => {}
            (true, Wire::OpenAiChat) => c.sent.push(field),
            (true, _) => c.drop(field),
        }
    }
    if x.safety_identifier.is_some() {
        match wire {
            Wire::OpenAiChat => c.sent.push("safety_identifier"),
            Wire::Anthropic if req.user.is_none() => {
                c.sent.push("metadata");
                c.edits.push("safety_identifier: -> metadata.user_id".into());
            }
            _ => c.drop("safety_identifier"),
        }
    }
    if let Some(tier) = &x.service_tier {
        match service_tier(wire, tier) {
            Some(to) => {
                c.sent.push("service_tier");
                if to != tier {
                    c.edits.push(format!("service_tier: {tier} -> {to}"));
                }
            }
            None => c.drop("service_tier"),
        }
    }
    match wire {
        Wire::OpenAiChat => {
            c.sent.extend(req.user.as_ref().map(|_| "user"));
            c.sent.extend(req.metadata.as_ref().map(|_| "metadata"));
        }
        Wire::Anthropic => {
            if req.user.is_some() {
                c.sent.push("metadata");
            }
            if req.metadata.is_some() {
                c.drop("metadata");
            }
        }
        Wire::Gemini => {
            if req.user.is_some() {
                c.drop("user");
            }
            if req.metadata.is_some() {
                c.drop("metadata");
            }
        }
    }
    c.sent.sort_unstable();
    c.sent.dedup();
    c
}

#[cfg(test)]
#[path = "carry_tests.rs"]
mod tests;
