//! How a target model takes reasoning and sampling settings, inferred from its id
//! (the catalog may say otherwise), and the edits the fast path makes for it.

use serde::{Deserialize, Serialize};

use crate::Family;

/// A reasoning level, as effort-based wires take it (OpenAI `reasoning_effort`,
/// Anthropic `output_config.effort`, Gemini 3 `thinkingLevel`). Serialized by the
/// names [`Effort::as_str`] gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effort {
    /// OpenAI `minimal` (also what a client's `none` reads as).
    Minimal,
    /// `low`.
    Low,
    /// `medium`: what is sent when the client gave neither a level nor a budget.
    Medium,
    /// `high`.
    High,
    /// OpenAI `xhigh`, Anthropic `xhigh` (Opus 4.7 and later).
    #[serde(rename = "xhigh")]
    XHigh,
    /// OpenAI `max` (GPT-6), Anthropic `max`.
    Max,
}

impl Effort {
    /// The wire name (`minimal`, `low`, `medium`, `high`, `xhigh`, `max`).
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Minimal => "minimal",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::XHigh => "xhigh",
            Effort::Max => "max",
        }
    }

    /// A wire name, `none` reading as [`Effort::Minimal`]; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "minimal" | "none" => Some(Effort::Minimal),
            "low" => Some(Effort::Low),
            "medium" => Some(Effort::Medium),
            "high" => Some(Effort::High),
            "xhigh" => Some(Effort::XHigh),
            "max" => Some(Effort::Max),
            _ => None,
        }
    }

    /// A token budget for wires that take one (Anthropic, Gemini).
    pub fn budget_tokens(self) -> u64 {
        match self {
            Effort::Minimal => 1024,
            Effort::Low => 2048,
            Effort::Medium => 8192,
            Effort::High => 24576,
            Effort::XHigh => 32768,
            Effort::Max => 49152,
        }
    }

    /// The effort that best matches a token budget: low to high only. `minimal`,
    /// `xhigh` and `max` exist on some models only (GPT-6 refuses `minimal`), so
    /// they are sent only when a client names them.
    pub fn from_budget(budget: u64) -> Self {
        match budget {
            0..=4096 => Effort::Low,
            4097..=16384 => Effort::Medium,
            _ => Effort::High,
        }
    }
}

/// How a target model takes its reasoning setting. OpenAI-chat models always take
/// `reasoning_effort`; the other wires have two generations of control:
/// - `Budget`: a token budget (Anthropic `thinking: {type: enabled, budget_tokens}`,
///   Gemini 2.x `thinkingBudget`).
/// - `Effort`: a level (Anthropic `thinking: {type: adaptive}` with
///   `output_config.effort`, Claude 4.6 and later, the only form Claude Opus 4.7
///   accepts; Gemini 3 `thinkingLevel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningControl {
    /// A token budget.
    Budget,
    /// A level ([`Effort`]).
    Effort,
}

impl ReasoningControl {
    /// The control a model takes, from its upstream id, when the catalog does not
    /// say: effort for Claude 4.6 and later and for Gemini 3 and later, a budget for
    /// earlier (and unrecognised) models of those wires ([`ModelTraits::infer`]).
    pub fn infer(wire: crate::Wire, upstream_model: &str) -> Self {
        ModelTraits::infer(wire, upstream_model).reasoning
    }

    /// The configuration's name for it (`budget`, `effort`).
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningControl::Budget => "budget",
            ReasoningControl::Effort => "effort",
        }
    }
}

/// What an encoder needs to know about the model it writes for, beyond the request.
/// [`ModelTraits::infer`] derives it from the upstream model id; the catalog can
/// say otherwise per model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ModelTraits {
    /// Whose model it is ([`Family::of`] its id, unless the catalog says): what
    /// only one family takes (Claude's thinking on Bedrock's Converse, its cache
    /// points) is sent by the family, whatever wire carries it.
    pub family: Family,
    /// How the model takes its reasoning setting.
    pub reasoning: ReasoningControl,
    /// The model takes `temperature`, `top_p` and `top_k`. Claude Opus 4.7 and the
    /// Claude models after it refuse any of them with a 400, and so do OpenAI's
    /// reasoning models (but at their default, 1), so they are left out.
    pub sampling: bool,
    /// The model takes `temperature` or `top_p`, not both: Claude Opus 4.1 and the
    /// Claude models after it refuse the pair with a 400 ("`temperature` and
    /// `top_p` cannot both be specified for this model"), and clients send both
    /// (GitHub Copilot CLI: `temperature: 0`, `top_p: 0.95` on every request). Given
    /// both, `temperature` is kept and `top_p` left out.
    pub one_sampler: bool,
    /// The model takes the older `max_tokens`. OpenAI's reasoning models (o1 and
    /// later, GPT-5 and later) refuse it and take only `max_completion_tokens`,
    /// which every OpenAI model accepts.
    pub takes_max_tokens: bool,
}

impl ModelTraits {
    /// The traits of `upstream_model` on `wire`, from its id alone. The wire says
    /// whose rules apply ([`crate::WireBehaviour::model_traits`]): the model
    /// family's ([`Family::of`]) where the wire's API enforces its vendor's rules
    /// (Claude's on Anthropic's API, [`ModelTraits::claude`]), its own otherwise
    /// (an OpenAI-compatible server takes `reasoning_effort` whatever it serves,
    /// [`ModelTraits::openai_chat`]).
    pub fn infer(wire: crate::Wire, upstream_model: &str) -> Self {
        Self::infer_as(wire, Family::of(upstream_model), upstream_model)
    }

    /// [`ModelTraits::infer`] for a model known to be of `family` (the catalog's
    /// word, for an id that names none: an application inference profile's ARN).
    pub fn infer_as(wire: crate::Wire, family: Family, upstream_model: &str) -> Self {
        Self { family, ..wire.behaviour().model_traits(family, upstream_model) }
    }

    /// A model whose rules are not known, on a wire that takes a reasoning budget:
    /// a budget, every sampling parameter, `max_tokens`.
    pub const BUDGET: ModelTraits = ModelTraits {
        family: Family::Other,
        reasoning: ReasoningControl::Budget,
        sampling: true,
        one_sampler: false,
        takes_max_tokens: true,
    };

    /// Claude's rules, by the version its id names however the platform writes
    /// it (`claude-opus-4-7`, `us.anthropic.claude-sonnet-4-5-20250929-v1:0`,
    /// `claude-opus-4-1@20250805`): effort from 4.6 on, a budget before (and for
    /// an id whose version cannot be read); sampling refused from 4.7 on; one
    /// sampler from Opus 4.1 on (4.0 and 3.x take both).
    pub fn claude(upstream_model: &str) -> Self {
        let Some(version) = claude_version(upstream_model) else {
            return Self { family: Family::Claude, ..Self::BUDGET };
        };
        Self {
            family: Family::Claude,
            reasoning: if version >= (4, 6) {
                ReasoningControl::Effort
            } else {
                ReasoningControl::Budget
            },
            sampling: version < (4, 7),
            one_sampler: version >= (4, 1),
            takes_max_tokens: true,
        }
    }

    /// Gemini's rules: a level (`thinkingLevel`) from Gemini 3 on, a budget before
    /// (and for an id whose version cannot be read).
    pub fn gemini(upstream_model: &str) -> Self {
        let newer = gemini_major(upstream_model).is_some_and(|v| v >= 3);
        Self {
            family: Family::Gemini,
            reasoning: if newer { ReasoningControl::Effort } else { ReasoningControl::Budget },
            ..Self::BUDGET
        }
    }

    /// An OpenAI-compatible server's: `reasoning_effort` whatever model it
    /// serves (a Claude id behind it is the server's business), and every
    /// sampling parameter and `max_tokens` but for OpenAI's reasoning models,
    /// which refuse them.
    pub fn openai_chat(upstream_model: &str) -> Self {
        let reasoning_model = openai_reasoning_model(upstream_model);
        Self {
            family: Family::of(upstream_model),
            reasoning: ReasoningControl::Effort,
            sampling: !reasoning_model,
            one_sampler: false,
            takes_max_tokens: !reasoning_model,
        }
    }
}

/// OpenAI's reasoning models by id: `o1`, `o3-mini`, `o4-mini`, `gpt-5`, `gpt-5.1`,
/// `gpt-6.2-sol`; a routing prefix such as `openai/` is skipped. Not `gpt-4o`, not
/// `gpt-oss-120b`.
fn openai_reasoning_model(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    let o_series = crate::family::o_series(name);
    let gpt_major = name
        .strip_prefix("gpt-")
        .and_then(|rest| rest.split(['.', '-']).next())
        .and_then(|major| major.parse::<u32>().ok());
    o_series || gpt_major.is_some_and(|major| major >= 5)
}

/// One change to a client's own top-level body on the same-format fast path:
/// `Some` sets the field, `None` removes it.
pub type FieldEdit = (&'static str, Option<serde_json::Value>);

/// `(major, minor)` of a Claude model id: `claude-opus-4-7`, `claude-sonnet-4-6-20260101`,
/// `claude-opus-4-20250514` (4.0), `claude-3-7-sonnet-latest` (3.7). A prefix such as
/// `anthropic.` or `us.anthropic.` is skipped.
fn claude_version(model: &str) -> Option<(u32, u32)> {
    let rest = &model[model.find("claude-")? + "claude-".len()..];
    let mut numbers = rest
        .split(['-', '.', '@', ':'])
        .filter(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
        // Dates (`20250514`) and version tags (`v1`) are not version numbers.
        .filter(|part| part.len() <= 2)
        .filter_map(|part| part.parse().ok());
    let major = numbers.next()?;
    Some((major, numbers.next().unwrap_or(0)))
}

/// The major version of a Gemini model id: `gemini-3-pro-preview` → 3,
/// `gemini-2.5-flash` → 2, `models/gemini-3.1-pro` → 3.
fn gemini_major(model: &str) -> Option<u32> {
    let rest = &model[model.find("gemini-")? + "gemini-".len()..];
    let digits: &str = rest.split(['.', '-']).next()?;
    digits.parse().ok()
}
