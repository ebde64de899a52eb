//! Hosted tools (web search, code execution, MCP, …): what a request **offers**
//! and what it **requires**, decided once where the plan is made
//! ([`ToolDemand`]), and what each deployment then does with them ([`Fit`]).
//!
//! - A tool the request only offers (declared in its tools, nothing forcing it)
//!   goes where it runs: deployments that run every offered tool are tried first.
//!   One that does not run it serves the request without it ([`Dropped`]): the
//!   translation leaves it out, the fast path takes it out of the client's own
//!   body, and the answer says so (`x-switchyard-dropped-tools`, the record's
//!   field edits, `gateway_dropped_tools_total`, a log line an hour per key, tool
//!   and model: [`DropNotices`]).
//! - A tool the request requires is never left out: `tool_choice` forces it, or
//!   only hosted tools could answer a `tool_choice` that requires some tool, or
//!   the conversation holds the tool's own items (its calls and results), which
//!   only the client's own API takes back. A deployment that cannot run it (or
//!   take its items) is never tried; when none remains, 400 `unsupported_tool`
//!   names the tool and the model, and nothing is sent.
//! - `unrunnable_server_tools: refuse` (a route's, else the model's) treats
//!   every offered tool as required: the behaviour before offered tools could be
//!   dropped.
//!
//! Tools loaded on demand (`defer_loading`) need the provider's tool search
//! wherever they go: required, as before.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use switchyard_protocol::{ErrorCode, HostedTool, Request, ServerTool, ToolChoice, Wire, carry};

use crate::catalog::{Candidate, Plan};
use crate::clock::UnixMs;
use crate::config::raw::UnrunnableServerTools;
use crate::error::GatewayError;

/// What a request's hosted tools ask of a deployment, beyond the request itself:
/// decided once per request, when its plan is made, and read by every stage
/// after (filter, order, each attempt, the answer).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolDemand {
    /// Offered tools are required too (`unrunnable_server_tools: refuse`).
    refuse: bool,
    /// The wire that takes the conversation's hosted-tool items back: the
    /// client's own, where its body goes as it is; `None`: no wire does.
    items_wire: Option<Wire>,
}

impl ToolDemand {
    /// The demand of a request planned under `mode`, whose history's hosted-tool
    /// items go only to `items_wire`.
    pub fn new(mode: UnrunnableServerTools, items_wire: Option<Wire>) -> Self {
        Self { refuse: mode == UnrunnableServerTools::Refuse, items_wire }
    }

    /// What `c` does with `req`'s hosted tools.
    pub fn fit(&self, c: &Candidate, req: &Request) -> Fit {
        let x = &req.extras;
        if x.hosted_tools.is_empty() && x.deferred_tools.is_empty() {
            return Fit::Serves(Dropped::default());
        }
        let wire = c.provider.wire();
        let forced = req.forced_hosted().map(|t| t.path.as_str());
        // `required`/`any` with no function tool: only a hosted tool can answer it.
        let any = matches!(req.tool_choice, Some(ToolChoice::Required)) && req.tools.is_empty();
        let mut dropped = Vec::new();
        let mut runs_some = false;
        for (i, tool) in x.hosted_tools.iter().enumerate() {
            let declared = tool.kind.is_none_or(|k| c.server_tools.contains(k));
            let runs = declared && wire.is_some_and(|w| carry::takes(w, tool));
            let need = || tool.need_name().to_owned();
            let items = tool.kind.is_some_and(|k| x.history_tools.contains(k));
            if items && (self.items_wire.is_none() || wire != self.items_wire) {
                let what = format!(
                    "{}, whose own items the conversation holds (only the client's own API \
                     takes them back),",
                    tool.describe()
                );
                return Fit::Lacks { need: need(), what };
            }
            if forced == Some(tool.path.as_str()) {
                if runs && wire.is_some_and(|w| carry::forces(w, tool)) {
                    runs_some = true;
                    continue;
                }
                let what = format!("{}, which tool_choice requires,", tool.describe());
                return Fit::Lacks { need: need(), what };
            }
            if runs {
                runs_some = true;
            } else if self.refuse {
                return Fit::Lacks { need: need(), what: tool.describe() };
            } else {
                dropped.push(i);
            }
        }
        if any
            && !runs_some
            && let Some(first) = x.hosted_tools.first()
        {
            let what = format!(
                "{} (tool_choice requires a tool call, and only hosted tools are declared)",
                first.describe()
            );
            return Fit::Lacks { need: first.need_name().to_owned(), what };
        }
        let search = c.server_tools.contains(ServerTool::ToolSearch)
            && wire.is_some_and(|w| carry::runnable(w).contains(ServerTool::ToolSearch));
        if let Some(name) = x.deferred_tools.first().filter(|_| !search) {
            return Fit::Lacks {
                need: ServerTool::ToolSearch.as_str().to_owned(),
                what: format!(
                    "the tool `{name}`, loaded on demand (defer_loading) by tool search,"
                ),
            };
        }
        Fit::Serves(Dropped(dropped))
    }

    /// The offered tools `c` serves `req` without (none where it cannot serve it).
    pub fn dropped(&self, c: &Candidate, req: &Request) -> Dropped {
        match self.fit(c, req) {
            Fit::Serves(dropped) => dropped,
            Fit::Lacks { .. } => Dropped::default(),
        }
    }

    /// Remove the candidates that cannot serve `req`'s hosted tools, fallbacks
    /// included (`server_tool:<provider>!<tool>` in the descriptor). When none
    /// remains: 400 `unsupported_tool` naming the tool, the model and the
    /// deployments.
    pub fn filter(self, plan: &mut Plan, req: &Request) -> Result<(), GatewayError> {
        let x = &req.extras;
        if x.hosted_tools.is_empty() && x.deferred_tools.is_empty() {
            return Ok(());
        }
        let mut refused: Vec<String> = Vec::new();
        let mut first = None;
        plan.candidates.retain(|c| match self.fit(c, req) {
            Fit::Lacks { need, what } => {
                plan.descriptor.push(format!("server_tool:{}!{need}", c.provider.name));
                first.get_or_insert(what);
                refused.push(c.label());
                false
            }
            Fit::Serves(_) => true,
        });
        if !plan.candidates.is_empty() || refused.is_empty() {
            return Ok(());
        }
        Err(GatewayError::new(
            ErrorCode::UnsupportedTool,
            format!(
                "{} cannot run on any deployment of model {:?}: {} cannot run it (the \
                 catalog's server_tools say which deployments run which server tools)",
                first.unwrap_or_default(),
                plan.public_model,
                refused.join(", ")
            ),
        ))
    }

    /// Candidates that run every offered tool first, each group in the order it
    /// had (the strategy's): a request goes without a tool only where nothing
    /// before could run it.
    pub fn order(self, plan: &mut Plan, req: &Request) {
        if req.extras.hosted_tools.is_empty() {
            return;
        }
        plan.candidates.sort_by_cached_key(|c| !self.dropped(c, req).is_empty());
    }
}

/// What a deployment does with a request's hosted tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fit {
    /// It serves the request, without these offered tools.
    Serves(Dropped),
    /// It cannot serve it.
    Lacks {
        /// The catalog's name for what it lacks (`web_search`).
        need: String,
        /// How a refusal names it (``the `web_search` tool (tools[2])``).
        what: String,
    },
}

/// Offered tools a deployment serves a request without: indices into the
/// request's [`hosted_tools`](switchyard_protocol::Extras::hosted_tools).
/// Empty (allocating nothing) for most requests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dropped(Vec<usize>);

impl Dropped {
    /// Nothing is left out.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The tools left out, as `req` declares them.
    pub fn tools<'r>(&self, req: &'r Request) -> Vec<&'r HostedTool> {
        self.0.iter().filter_map(|&i| req.extras.hosted_tools.get(i)).collect()
    }

    /// Their names (the catalog's, `web_search`), each once, in declaration order.
    pub fn names(&self, req: &Request) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for tool in self.tools(req) {
            if !names.iter().any(|n| n == tool.need_name()) {
                names.push(tool.need_name().to_owned());
            }
        }
        names
    }

    /// `req` without them: borrowed when nothing is left out.
    pub fn apply<'r>(&self, req: &'r Request) -> Cow<'r, Request> {
        if self.0.is_empty() {
            return Cow::Borrowed(req);
        }
        let mut out = req.clone();
        let mut i = 0;
        out.extras.hosted_tools.retain(|_| {
            let keep = !self.0.contains(&i);
            i += 1;
            keep
        });
        Cow::Owned(out)
    }

    /// What the record's field edits say of them.
    pub fn edits(&self, req: &Request) -> impl Iterator<Item = String> {
        self.tools(req)
            .into_iter()
            .map(|t| format!("{}: dropped (the deployment does not run it)", t.describe()))
    }
}

/// The label a dropped tool has in metrics: its kind's name; a type the gateway
/// does not know is the client's word, so it is not a label of its own.
pub fn metric_tool(tool: &HostedTool) -> &'static str {
    tool.kind.map_or("other", ServerTool::as_str)
}

/// How often the same key, tool and model are logged as dropped.
const NOTICE_EVERY_MS: u64 = 60 * 60 * 1000;
/// Most (key, tool, model) triples remembered; the oldest goes first.
const NOTICES_KEPT: usize = 4096;

/// The log lines for dropped tools, one per key, tool and model an hour: the
/// last time each was logged, by a hash of the three (bounded, never growing
/// with the traffic).
#[derive(Debug, Default)]
pub struct DropNotices {
    logged: Mutex<HashMap<u64, UnixMs>>,
}

impl DropNotices {
    /// Whether a drop of `tool` for `key` on `model` is to be logged `now` (it is
    /// then noted as logged).
    pub fn due(&self, key: &str, tool: &str, model: &str, now: UnixMs) -> bool {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (key, tool, model).hash(&mut hasher);
        let id = hasher.finish();
        let mut logged = self.logged.lock().unwrap_or_else(|e| e.into_inner());
        if logged.get(&id).is_some_and(|at| now.0.saturating_sub(at.0) < NOTICE_EVERY_MS) {
            return false;
        }
        if logged.len() >= NOTICES_KEPT && !logged.contains_key(&id) {
            logged.retain(|_, at| now.0.saturating_sub(at.0) < NOTICE_EVERY_MS);
            if logged.len() >= NOTICES_KEPT
                && let Some(oldest) = logged.iter().min_by_key(|(_, at)| **at).map(|(k, _)| *k)
            {
                logged.remove(&oldest);
            }
        }
        logged.insert(id, now);
        true
    }
}

// Its tests read YAML.
#[cfg(test)]
#[cfg(feature = "yaml")]
#[path = "hosted_tests.rs"]
mod tests;
