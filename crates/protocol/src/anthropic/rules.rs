//! Claude's rules for a request body, wherever Claude is served (Anthropic's
//! API, and Bedrock's, `crate::bedrock`): the `max_tokens` it needs, its
//! thinking budget's bounds, its effort levels, and which sampling parameters a
//! model takes. One statement of them, so that every wire's translation, the
//! fast path's edits and the record's field edits agree.

use super::request::thinking;
use crate::{Effort, ModelTraits, Request};

/// `max_tokens` is mandatory on the Anthropic wire; used when the client gave none.
pub(crate) const DEFAULT_MAX_TOKENS: u64 = 4096;

/// The smallest thinking budget the API accepts.
const MIN_THINKING_BUDGET: u64 = 1024;

/// With thinking on, the API only accepts `top_p` in `[0.95, 1]`.
const MIN_TOP_P_WITH_THINKING: f64 = 0.95;

/// The `output_config.effort` level for an effort (Anthropic has no `minimal`).
pub(crate) fn anthropic_effort(effort: Effort) -> &'static str {
    match effort {
        Effort::Minimal | Effort::Low => "low",
        Effort::Medium => "medium",
        Effort::High => "high",
        Effort::XHigh => "xhigh",
        Effort::Max => "max",
    }
}

/// A thinking budget the API accepts (at least its minimum) and a `max_tokens` above
/// it (the API requires the budget to be strictly below), raised only if needed.
pub(crate) fn budget_within(budget: u64, max_tokens: u64) -> (u64, u64) {
    let budget = budget.max(MIN_THINKING_BUDGET);
    let max_tokens =
        if max_tokens <= budget { budget.saturating_add(MIN_THINKING_BUDGET) } else { max_tokens };
    (budget, max_tokens)
}

/// Sampling parameters: those a request asks for, or those an Anthropic body carries.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Samplers {
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub top_k: Option<u64>,
}

impl Samplers {
    /// What `req` asks for.
    pub fn asked(req: &Request) -> Self {
        Self { temperature: req.temperature, top_p: req.top_p, top_k: req.top_k }
    }

    /// What of these (as asked) an Anthropic body carries for a model with
    /// `traits`: nothing where the model refuses them all; with `thinking` on, only
    /// a `top_p` of at least 0.95 (thinking requires the default temperature and
    /// top_k); and `temperature` without `top_p` where the model takes one of the
    /// two. The one statement of these rules, so the translation, the fast-path
    /// edits and the record's field edits agree.
    pub fn sent(self, traits: ModelTraits, thinking: bool) -> Self {
        if !traits.sampling {
            return Self::default();
        }
        let mut sent = Self {
            temperature: self.temperature.filter(|_| !thinking),
            top_p: self.top_p.filter(|p| !thinking || *p >= MIN_TOP_P_WITH_THINKING),
            top_k: self.top_k.filter(|_| !thinking),
        };
        if traits.one_sampler && sent.temperature.is_some() {
            sent.top_p = None;
        }
        sent
    }

    /// The fields of `self` (what was asked) a model with `traits` refuses, so
    /// [`Samplers::sent`] leaves them out: all of them where it takes none, `top_p`
    /// beside `temperature` where it takes one of the two. What thinking leaves out
    /// is not the model's refusal, so it is not named here.
    pub fn refused(self, traits: ModelTraits, thinking: bool) -> Vec<&'static str> {
        let sent = self.sent(traits, thinking);
        let takes_all = ModelTraits { sampling: true, one_sampler: false, ..traits };
        let asked = self.sent(takes_all, thinking);
        [
            ("temperature", asked.temperature.is_some() && sent.temperature.is_none()),
            ("top_p", asked.top_p.is_some() && sent.top_p.is_none()),
            ("top_k", asked.top_k.is_some() && sent.top_k.is_none()),
        ]
        .into_iter()
        .filter_map(|(field, refused)| refused.then_some(field))
        .collect()
    }
}

/// For the record: the sampling parameters of `req` a model with `traits` keeps
/// out of its Anthropic body, translated or (`native`) the client's own body on the
/// fast path, and why (`top_p: dropped (the model takes temperature or top_p, not
/// both)`).
pub fn sampling_edits(req: &Request, traits: ModelTraits, native: bool) -> Vec<String> {
    let thinking = !native && thinking(req).is_some();
    let why = if traits.sampling {
        "the model takes temperature or top_p, not both"
    } else {
        "the model takes no sampling parameters"
    };
    Samplers::asked(req)
        .refused(traits, thinking)
        .into_iter()
        .map(|field| format!("{field}: dropped ({why})"))
        .collect()
}

/// The body fields an `anthropic-beta` flag gates: a request that keeps such a
/// field without its flag is refused ("context_management: Extra inputs are
/// not permitted"), so a flag left out takes them with it.
pub fn gated_fields(flag: &str) -> &'static [&'static str] {
    const GATES: &[(&str, &[&str])] =
        &[("context-management-", &["context_management"]), ("mcp-client-", &["mcp_servers"])];
    GATES.iter().find(|(prefix, _)| flag.starts_with(prefix)).map_or(&[], |(_, fields)| fields)
}
