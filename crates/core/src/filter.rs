//! Candidate filters applied after resolution and before any attempt: a deployment
//! that cannot serve the request is removed, so the request is never sent somewhere
//! that would silently drop part of it (e.g. images to a text-only model).

use switchyard_protocol::{ErrorCode, Part, Request, ResponseFormat};

use crate::catalog::{Candidate, Capabilities, Catalog, Plan};
use crate::config::raw::ModelKind;
use crate::error::GatewayError;

/// What a request needs of a model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Needs {
    pub vision: bool,
    pub tools: bool,
    pub structured_output: bool,
}

impl Needs {
    pub fn of(req: &Request) -> Needs {
        let has_image = |parts: &[Part]| {
            parts.iter().any(|p| match p {
                Part::Image(_) => true,
                Part::ToolResult(r) => r.content.iter().any(|c| matches!(c, Part::Image(_))),
                _ => false,
            })
        };
        Needs {
            vision: req.messages.iter().any(|m| has_image(&m.content)),
            tools: !req.tools.is_empty(),
            structured_output: matches!(
                req.response_format,
                Some(ResponseFormat::JsonSchema { .. })
            ),
        }
    }

    /// The first capability `caps` lacks, by name.
    pub fn missing(&self, caps: &Capabilities) -> Option<&'static str> {
        if self.vision && !caps.vision {
            Some("vision (image input)")
        } else if self.tools && !caps.tools {
            Some("tools")
        } else if self.structured_output && !caps.structured_output {
            // Asked only in native mode: prompted or auto would serve it.
            Some("structured_output (a JSON schema response_format, in native mode)")
        } else {
            None
        }
    }
}

/// Keep the candidates whose model is of `kind` (an unlisted model's, which
/// the catalog knows nothing of, are kept): a chat request never reaches an
/// embedding model, nor the reverse. A model asked for by name that is of
/// another kind is refused by name (400 `wrong_model_kind`), before anything
/// is sent; so is a plan left with nothing.
pub fn by_kind(plan: &mut Plan, kind: ModelKind) -> Result<(), GatewayError> {
    let refuse = |other: ModelKind| {
        GatewayError::new(
            ErrorCode::WrongModelKind,
            format!(
                "model {:?} is of kind {}: it does not serve {} requests",
                plan.public_model,
                other.as_str(),
                kind.as_str()
            ),
        )
    };
    if let Some(m) = plan.model.as_ref().filter(|m| m.kind != kind) {
        return Err(refuse(m.kind));
    }
    let mut other = None;
    plan.candidates.retain(|c| match c.model.as_ref() {
        Some(m) if m.kind != kind => {
            other = Some(m.kind);
            false
        }
        _ => true,
    });
    match other {
        Some(other) if plan.candidates.is_empty() => Err(refuse(other)),
        _ => Ok(()),
    }
}

/// Drop candidates whose model cannot serve `req`. Models with no declared
/// capabilities are kept. When nothing remains: 400 naming the missing capability.
/// A JSON schema needs the capability only in `native` mode: `prompted` and
/// `auto` ask it of any model in its system prompt (`crate::structured`).
pub fn by_capability(
    plan: &mut Plan,
    req: &Request,
    structured: crate::structured::StructuredMode,
) -> Result<(), GatewayError> {
    let mut needs = Needs::of(req);
    needs.structured_output &= structured == crate::structured::StructuredMode::Native;
    if needs == Needs::default() {
        return Ok(());
    }
    let mut first_missing = None;
    plan.candidates.retain(|c| {
        let Some(caps) = c.model.as_ref().and_then(|m| m.capabilities.as_ref()) else {
            return true;
        };
        match needs.missing(caps) {
            Some(what) => {
                first_missing.get_or_insert((
                    what,
                    c.model.as_ref().map(|m| m.id.clone()).unwrap_or_default(),
                ));
                false
            }
            None => true,
        }
    });
    match (plan.candidates.is_empty(), first_missing) {
        (true, Some((what, model))) => Err(GatewayError::new(
            ErrorCode::CapabilityMissing,
            format!(
                "model {model:?} does not support {what}, and no fallback that does is configured"
            ),
        )),
        _ => Ok(()),
    }
}

/// Routing hints a request may carry in the `switchyard` extension field. They can
/// only narrow what the route permits, never widen it.
///
/// ```json
/// "switchyard": {"only": ["anthropic"], "ignore": ["openai"], "allow_fallbacks": false,
///                "max_price": {"input": 3.0, "output": 15.0},
///                "max_cost_per_1k_tokens": 0.01, "unknown_cost": "reject"}
/// ```
/// `only` / `ignore` name providers; `max_price` is USD per million tokens, each
/// side apart; `max_cost_per_1k_tokens` is one ceiling, in USD per thousand, on
/// both (a model's price, not the request's bill). A deployment with no price
/// cannot be shown to be under a ceiling: `unknown_cost: reject` (the default)
/// skips it, `allow` keeps it. `structured_output` (`native`, `prompted`,
/// `auto`) replaces the route's mode for a JSON schema: how it is asked for,
/// not which deployments the route permits.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hints {
    /// Only these providers (empty: no restriction).
    #[serde(default)]
    pub only: Vec<String>,
    /// Never these providers.
    #[serde(default)]
    pub ignore: Vec<String>,
    /// `false`: only the first candidate left by the other hints is tried; `None`
    /// or `true`: the route's fallbacks stay.
    #[serde(default)]
    pub allow_fallbacks: Option<bool>,
    /// Skip candidates priced above these (an unpriced one is skipped too).
    #[serde(default)]
    pub max_price: Option<MaxPrice>,
    /// Skip candidates whose input or output price is above this, in USD per
    /// 1,000 tokens.
    #[serde(default)]
    pub max_cost_per_1k_tokens: Option<f64>,
    /// What a price ceiling does to an unpriced candidate; `None`: `reject`.
    #[serde(default)]
    pub unknown_cost: Option<UnknownCost>,
    /// How a JSON-schema response format is asked for (`native`, `prompted`,
    /// `auto`), over the route's `structured_output`; `None`: the route's.
    #[serde(default)]
    pub structured_output: Option<crate::structured::StructuredMode>,
}

/// [`Hints::unknown_cost`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownCost {
    /// An unpriced candidate is skipped (the default).
    Reject,
    /// An unpriced candidate is kept.
    Allow,
}

/// Price ceilings of [`Hints::max_price`], in USD per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaxPrice {
    /// The most per million input tokens; `None`: no ceiling.
    #[serde(default)]
    pub input: Option<f64>,
    /// The most per million output tokens; `None`: no ceiling.
    #[serde(default)]
    pub output: Option<f64>,
}

/// Apply routing hints. When nothing remains: 400 `no_candidate` naming the hint.
pub fn by_hints(plan: &mut Plan, hints: &Hints, _req: &Request) -> Result<(), GatewayError> {
    if *hints == Hints::default() {
        return Ok(());
    }
    let before = plan.candidates.len();
    if !hints.only.is_empty() {
        plan.candidates.retain(|c| hints.only.iter().any(|p| *p == c.provider.name));
    }
    plan.candidates.retain(|c| !hints.ignore.iter().any(|p| *p == c.provider.name));
    // Both ceilings in USD per million tokens, each side.
    let per_1k = hints.max_cost_per_1k_tokens;
    if let Some(c) = per_1k.filter(|c| !c.is_finite() || *c < 0.0) {
        return Err(GatewayError::new(
            ErrorCode::InvalidRequest,
            format!("switchyard.max_cost_per_1k_tokens: {c}: expected a finite price of 0 or more"),
        ));
    }
    let max = hints.max_price.unwrap_or_default();
    let ceiling = |side: Option<f64>| match (side, per_1k.map(|c| c * 1000.0)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let (max_in, max_out) = (ceiling(max.input), ceiling(max.output));
    if max_in.is_some() || max_out.is_some() {
        let allow_unknown = hints.unknown_cost == Some(UnknownCost::Allow);
        plan.candidates.retain(|c| priced_under(c, max_in, max_out, allow_unknown));
    }
    if hints.allow_fallbacks == Some(false) {
        plan.candidates.truncate(1);
    }
    if plan.candidates.is_empty() {
        return Err(GatewayError::new(
            ErrorCode::NoCandidate,
            format!(
                "the request's routing hints (switchyard: only/ignore/max_price/max_cost_per_1k_tokens) exclude all {before} deployment(s) of model {:?}",
                plan.public_model
            ),
        ));
    }
    Ok(())
}

/// Whether `c`'s input and output prices (USD per million tokens) are at most
/// `max_in` and `max_out`; an unpriced side passes only with `allow_unknown`
/// (it cannot be shown to be under the limit).
fn priced_under(
    c: &Candidate,
    max_in: Option<f64>,
    max_out: Option<f64>,
    allow_unknown: bool,
) -> bool {
    let p = c.pricing.as_ref();
    let ok = |limit: Option<f64>, price: Option<f64>| match (limit, price) {
        (None, _) => true,
        (Some(l), Some(p)) => p <= l,
        (Some(_), None) => allow_unknown,
    };
    ok(max_in, p.and_then(|p| p.input)) && ok(max_out, p.and_then(|p| p.output))
}

/// A key's or project's cost ceiling (`crate::app_policy`): deployments priced
/// above `per_1k` USD per 1,000 input or output tokens are skipped (unpriced
/// ones too, unless `unknown_cost: allow`). The request's own hint is applied
/// by [`by_hints`]: both hold.
pub fn by_pinned_ceiling(
    plan: &mut Plan,
    pinned: &crate::app_policy::Pinned,
) -> Result<(), GatewayError> {
    let Some(per_1k) = pinned.max_cost_per_1k_tokens else { return Ok(()) };
    let before = plan.candidates.len();
    let max = Some(per_1k * 1000.0);
    let allow_unknown = pinned.unknown_cost == Some(UnknownCost::Allow);
    plan.candidates.retain(|c| priced_under(c, max, max, allow_unknown));
    if plan.candidates.is_empty() {
        return Err(GatewayError::new(
            ErrorCode::NoCandidate,
            format!(
                "the {} routing policy's max_cost_per_1k_tokens {per_1k} excludes all {before} deployment(s) of model {:?}",
                pinned.source.replace(':', " "),
                plan.public_model
            ),
        ));
    }
    Ok(())
}

/// Context-window check, before any upstream call. The input estimate counts text
/// only (tools' schemas included, images and documents not: their fixed estimates
/// may be far over a small image), so it errs low and never refuses a request that
/// fits. Candidates whose model's window is smaller are skipped; when
/// none remains the route's `context_fallbacks` are tried in order
/// (`context_window:a->b`); when nothing fits: 400 `context_window_exceeded`. Models
/// without a declared window are never refused.
pub fn by_context_window(
    plan: &mut Plan,
    catalog: &Catalog,
    input_estimate: impl FnOnce() -> u64,
) -> Result<(), GatewayError> {
    if plan.candidates.iter().all(|c| c.model.as_ref().and_then(|m| m.context_window).is_none()) {
        return Ok(()); // nothing declares a window: never refused, no text scan
    }
    let estimate = input_estimate();
    let fits = |c: &Candidate| {
        c.model.as_ref().and_then(|m| m.context_window).is_none_or(|w| estimate <= w)
    };
    let primary_limit = plan
        .candidates
        .iter()
        .find_map(|c| c.model.as_ref().and_then(|m| m.context_window.map(|w| (w, m.id.clone()))));
    plan.candidates.retain(fits);
    if !plan.candidates.is_empty() {
        return Ok(());
    }
    for id in &plan.context_fallbacks {
        if let Some(c) = catalog.first_deployment(id)
            && fits(&c)
        {
            plan.descriptor.push(format!("context_window:{}->{}", plan.public_model, id));
            plan.candidates.push(c);
            return Ok(());
        }
    }
    let (limit, model) = primary_limit.unwrap_or((0, plan.public_model.clone()));
    Err(GatewayError::new(
        ErrorCode::ContextWindowExceeded,
        format!(
            "the request is about {estimate} input tokens (estimated), over the {limit}-token context window of model {model:?}"
        ),
    ))
}

/// Why a candidate's every credential is held back by its breaker, as the
/// descriptor names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocked {
    /// Every credential is throttled by a 429 (`throttled:<provider>`): the
    /// upstream asked for a pause; nothing failed.
    Throttled,
    /// Some credential's circuit is open or quarantined (`circuit_open:<provider>`).
    CircuitOpen,
}

impl Blocked {
    fn as_str(self) -> &'static str {
        match self {
            Blocked::Throttled => "throttled",
            Blocked::CircuitOpen => "circuit_open",
        }
    }
}

/// Circuit filter: drop candidates whose every credential is held back by its
/// breaker (`circuit_open:<provider>`, or `throttled:<provider>` where each is
/// only throttled, in the descriptor). If that would leave none, every candidate
/// is kept in chain order and the breakers are bypassed for this request
/// (`circuit_open:all`): a stuck breaker is never worse than no breaker.
pub fn by_circuit(plan: &mut Plan, blocked: impl Fn(&Candidate) -> Option<Blocked>) {
    let why: Vec<Option<Blocked>> = plan.candidates.iter().map(&blocked).collect();
    if why.iter().all(Option::is_none) {
        return;
    }
    if why.iter().all(Option::is_some) {
        plan.bypass_breakers = true;
        plan.descriptor.push("circuit_open:all".to_owned());
        return;
    }
    let mut keep = Vec::with_capacity(plan.candidates.len());
    for (c, why) in plan.candidates.drain(..).zip(why) {
        match why {
            Some(why) => plan.descriptor.push(format!("{}:{}", why.as_str(), c.provider.name)),
            None => keep.push(c),
        }
    }
    plan.candidates = keep;
}

/// Estimated USD for this request on this candidate (for the cost strategy):
/// estimated input tokens at the input price, plus the requested output ceiling
/// (or 1,024 tokens) at the output price. `None` when unpriced.
/// `input_tokens`: the request's estimate, computed once by the caller.
pub fn estimated_price(c: &Candidate, input_tokens: u64, req: &Request) -> Option<f64> {
    // At the tier a prompt this size is billed at.
    let (p, _) = c.pricing.as_ref()?.for_prompt(input_tokens);
    let p = &p;
    let input = input_tokens as f64;
    let output = req
        .max_tokens
        .unwrap_or(1024)
        .min(c.model.as_ref().and_then(|m| m.max_output_tokens).unwrap_or(u64::MAX))
        as f64;
    let output_rate = if output == 0.0 { p.output.unwrap_or(0.0) } else { p.output? };
    Some((input * p.input? + output * output_rate) / 1_000_000.0)
}

/// Data governance at dispatch: a deployment that does not meet the route's
/// `requires` is never contacted (`governance:<provider>!<condition>` in the
/// descriptor); when none remains the request is denied (403 `governance_denied`).
pub fn by_governance(plan: &mut Plan) -> Result<(), GatewayError> {
    let req = plan.requires;
    if !req.european && !req.no_retain {
        return Ok(());
    }
    let mut failed = Vec::new();
    plan.candidates.retain(|c| match c.governance(&req) {
        Ok(()) => true,
        Err(cond) => {
            failed.push(format!("governance:{}!{cond}", c.provider.name));
            false
        }
    });
    let first = failed.first().cloned();
    plan.descriptor.extend(failed);
    if plan.candidates.is_empty() {
        let what = first.unwrap_or_default();
        return Err(GatewayError::new(
            ErrorCode::GovernanceDenied,
            format!(
                "no deployment of model {:?} satisfies the route's data requirements ({what})",
                plan.public_model
            ),
        ));
    }
    Ok(())
}
