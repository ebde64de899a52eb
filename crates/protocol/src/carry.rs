//! What each upstream wire does with a request's [`Extras`](crate::Extras): how it declares a
//! hosted tool ([`place`]), or why it cannot; which settings it takes, maps or
//! drops ([`carriage`]). The encoders write what these functions say and the core
//! records it, so the record and the body never disagree. Each wire states its
//! own rules in its folder's [`WireBehaviour`](crate::WireBehaviour) (`place`,
//! `service_tier`, `carry_settings`, …); what every wire shares (reading a
//! search's settings, the fast path's removal of dropped tools, the record) is
//! here.
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

use serde_json::{Map, Value};

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
    wire.behaviour().runnable()
}

/// `tool` as `wire` declares it, or why it cannot be declared there.
pub fn place(wire: Wire, tool: &HostedTool) -> Result<Placement, String> {
    wire.behaviour().place(tool)
}

/// The gateway's kind of `tool`, for a wire that declares it from another
/// format's declaration: one it does not know only its own API takes.
pub(crate) fn kind(tool: &HostedTool) -> Result<ServerTool, String> {
    tool.kind
        .ok_or_else(|| "the gateway does not know this tool, so only its own API takes it".into())
}

/// The settings OpenAI defined that `req` has, of those a wire either takes as
/// they are or drops (`prompt_cache_key`, `prompt_cache_retention`, `store`).
pub(crate) fn plain_settings(req: &Request) -> impl Iterator<Item = &'static str> {
    let x = &req.extras;
    [
        ("prompt_cache_key", x.prompt_cache_key.is_some()),
        ("prompt_cache_retention", x.prompt_cache_retention.is_some()),
        ("store", x.store.is_some()),
    ]
    .into_iter()
    .filter_map(|(field, present)| present.then_some(field))
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
    wire.behaviour().forces(tool)
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

/// Chat Completions' field for a web search.
pub(crate) const WEB_SEARCH_OPTIONS: &str = "web_search_options";

/// A web search's settings, whichever format declared it; each wire writes them
/// in its own form.
#[derive(Debug, Default)]
pub(crate) struct Search {
    pub(crate) allowed: Vec<Value>,
    pub(crate) blocked: Vec<Value>,
    /// `city`, `region`, `country`, `timezone`.
    pub(crate) location: Map<String, Value>,
    pub(crate) context_size: Option<Value>,
    pub(crate) max_uses: Option<Value>,
}

impl Search {
    pub(crate) fn read(tool: &HostedTool) -> Search {
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
        let blocked = match tool.dialect {
            // Vertex AI's Google Search excludes domains; it has no allow list.
            Dialect::Gemini => list(
                c.pointer("/googleSearch/excludeDomains")
                    .or_else(|| c.pointer("/google_search/exclude_domains")),
            ),
            _ => list(c.get("blocked_domains")),
        };
        Search {
            allowed,
            blocked,
            location,
            context_size: c.get("search_context_size").filter(|v| !v.is_null()).cloned(),
            max_uses: c.get("max_uses").filter(|v| !v.is_null()).cloned(),
        }
    }

    /// Domain filters narrow what may be read: a wire without them cannot honour
    /// the request, so it is refused rather than searched unfiltered.
    pub(crate) fn no_filters(&self, why: &str) -> Result<(), String> {
        if self.allowed.is_empty() && self.blocked.is_empty() {
            Ok(())
        } else {
            Err(format!("the search is limited to or from some domains, and {why}"))
        }
    }
}

/// A Responses `code_interpreter` that asks only for a fresh container: no
/// container of OpenAI's by id, no files uploaded there.
pub(crate) fn auto_container(config: &Value) -> bool {
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
    wire.behaviour().service_tier(tier)
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
    /// `field` is left out.
    pub(crate) fn drop(&mut self, field: &str) {
        self.edits.push(format!("{field}: dropped"));
    }
}

/// What `wire`'s encoder does with `req`'s settings ([`crate::Extras`], and the
/// `user` and `metadata` a wire may have no place for).
pub fn carriage(wire: Wire, req: &Request) -> Carriage {
    let behaviour = wire.behaviour();
    let mut c = Carriage::default();
    behaviour.carry_settings(req, &mut c);
    if let Some(tier) = &req.extras.service_tier {
        match behaviour.service_tier(tier) {
            Some(to) => {
                c.sent.push("service_tier");
                if to != tier {
                    c.edits.push(format!("service_tier: {tier} -> {to}"));
                }
            }
            None => c.drop("service_tier"),
        }
    }
    behaviour.carry_user(req, &mut c);
    c.sent.sort_unstable();
    c.sent.dedup();
    c
}

#[cfg(test)]
#[path = "carry_tests.rs"]
mod tests;
