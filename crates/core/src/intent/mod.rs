//! Intent: what a request needs, read from the request itself, for the `auto`
//! models to route by. The classifier is deterministic and auditable: a fixed
//! order of named rules over signals measured on the canonical request (so the
//! four client formats classify alike), each decision carrying the rule that made
//! it and the signals it saw.
//!
//! The rules, first match wins:
//!
//! | rule | class | when |
//! |---|---|---|
//! | `image` | vision | the last user turn carries an image (or a tool result does) |
//! | `small_talk` | cheap | the last user turn is only a greeting, thanks or sign-off |
//! | `image_referred` | vision | an earlier turn's image, which the last turn points at |
//! | `tool_loop` | code | the client sends tool results back and its tools are a coding agent's (files, shell, edits, search) |
//! | `coding_agent` | code | a coding agent's tools or system prompt, and the turn asks for work |
//! | `code_text` | code | the task text holds code, a stack trace or build output, or asks for code by name (and holds no stronger reasoning evidence) |
//! | `terse` | cheap | the last turn asks for a terse answer by name ("just the number") and nothing calls for reasoning |
//! | `writing` | ordinary | a writing task (poem, email, summary, translation of a text) |
//! | `reasoning_text` | reasoning | proofs, probability, puzzles, equations, quantitative problems, many constraints |
//! | `image_recent` | vision | a short turn right after one with an image |
//! | `short` | cheap | a short question with no evidence of the above (a turn of tool results is not short) |
//! | `default` | ordinary | everything else |
//!
//! A short follow-up (`why?`, `and the second?`) is read with the user turn before
//! it: its context carries the class.

pub mod model;
mod signals;
#[rustfmt::skip]
mod words;

use switchyard_protocol::{Effort, Reasoning, Request};

pub use signals::{CODE_THRESHOLD, REASONING_THRESHOLD, Signals};

/// What a request needs. The discriminants index [`Targets`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Intent {
    /// Deliberate multi-step thought that is not software work.
    Reasoning,
    /// Software engineering: code, shell, build output, a coding agent's loop.
    Code,
    /// Writing, explaining, summarising, advising: the general case.
    Ordinary,
    /// Trivial: small talk, one-line facts, trivial arithmetic.
    Cheap,
    /// Answering needs looking at an image.
    Vision,
}

impl Intent {
    /// Every class, in a stable order.
    pub const ALL: [Intent; 5] =
        [Intent::Reasoning, Intent::Code, Intent::Ordinary, Intent::Cheap, Intent::Vision];

    /// The name configs, headers and records use.
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Reasoning => "reasoning",
            Intent::Code => "code",
            Intent::Ordinary => "ordinary",
            Intent::Cheap => "cheap",
            Intent::Vision => "vision",
        }
    }

    /// The class a name (as [`Intent::as_str`] writes it) stands for.
    pub fn parse(name: &str) -> Option<Intent> {
        Intent::ALL.into_iter().find(|i| i.as_str() == name)
    }
}

impl std::fmt::Display for Intent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where each class goes: the compiled `intent:` block, a catalog model (or a
/// name a route matches) per class.
#[derive(Debug, Clone, PartialEq)]
pub struct Targets([String; 5]);

impl Targets {
    /// `by_class[i as usize]` serves class `i`.
    pub fn new(by_class: [String; 5]) -> Targets {
        Targets(by_class)
    }

    /// The model that serves `intent`.
    pub fn of(&self, intent: Intent) -> &str {
        &self.0[intent as usize]
    }
}

/// How an `auto` model resolved: the class, the rule (`named` for an
/// `auto-<class>` name), and the model that serves it.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The class.
    pub intent: Intent,
    /// The rule that decided it (`named`: the client named the class).
    pub rule: &'static str,
    /// The catalog model (or routed name) the request goes to.
    pub target: String,
}

/// Resolve `name` (canonical: normalised, namespace prefix removed) if it is
/// an `auto` model: `auto` by the request's decision (`decided`, where one was
/// made as it entered; else classifying `req` now), `auto-<class>` by its
/// name. `None` for every other name.
pub fn resolve(
    name: &str,
    req: &Request,
    decided: Option<&Decision>,
    targets: &Targets,
) -> Option<Resolved> {
    let (intent, rule) = match name.strip_prefix("auto") {
        Some("") => match decided {
            Some(d) => (d.intent, d.rule),
            None => {
                let d = classify(req);
                (d.intent, d.rule)
            }
        },
        Some(rest) => (Intent::parse(rest.strip_prefix('-')?)?, "named"),
        None => return None,
    };
    Some(Resolved { intent, rule, target: targets.of(intent).to_owned() })
}

/// The reasoning a request that asked for effort `auto` gets, by its intent:
/// high for reasoning, medium for code, low for ordinary, and none (what a
/// client's `none` asks) for cheap and vision. `None`: it did not ask. The
/// decision is kept with the request, so an `auto` model's target is chosen by
/// the same one ([`resolve`]).
pub fn settle_reasoning(req: &mut Request) -> Option<Decision> {
    if !req.extras.reasoning_auto {
        return None;
    }
    let decision = classify(req);
    let (enabled, effort) = match decision.intent {
        Intent::Reasoning => (true, Effort::High),
        Intent::Code => (true, Effort::Medium),
        Intent::Ordinary => (true, Effort::Low),
        Intent::Cheap | Intent::Vision => (false, Effort::Minimal),
    };
    req.reasoning = Some(Reasoning { enabled, effort: Some(effort), budget_tokens: None });
    Some(decision)
}

/// A classification and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The class.
    pub intent: Intent,
    /// The rule that decided (see the module's table).
    pub rule: &'static str,
    /// What the rules saw.
    pub signals: Signals,
}

/// Classify `req` by the rules in the module's table.
pub fn classify(req: &Request) -> Decision {
    let s = Signals::of(req);
    let (intent, rule) = decide(&s);
    Decision { intent, rule, signals: s }
}

/// The rules over the signals, in order.
fn decide(s: &Signals) -> (Intent, &'static str) {
    if s.images_last > 0 {
        return (Intent::Vision, "image");
    }
    if s.small_talk {
        return (Intent::Cheap, "small_talk");
    }
    if s.image_referred {
        return (Intent::Vision, "image_referred");
    }
    if s.tool_results_last > 0 && s.coding_tools {
        return (Intent::Code, "tool_loop");
    }
    if (s.coding_tools || s.coding_system) && !s.writing && s.task_chars > 0 {
        return (Intent::Code, "coding_agent");
    }
    // Where both are evident, the stronger evidence decides (code on a tie):
    // a physics problem's `c_ice = 2.09` is notation, not code.
    if s.code >= signals::CODE_THRESHOLD && s.code >= s.reasoning {
        return (Intent::Code, "code_text");
    }
    if s.terse && s.reasoning < signals::REASONING_THRESHOLD {
        return (Intent::Cheap, "terse");
    }
    if s.writing {
        return (Intent::Ordinary, "writing");
    }
    if s.reasoning >= signals::REASONING_THRESHOLD {
        return (Intent::Reasoning, "reasoning_text");
    }
    if s.image_recent {
        return (Intent::Vision, "image_recent");
    }
    if s.short {
        return (Intent::Cheap, "short");
    }
    (Intent::Ordinary, "default")
}

#[cfg(test)]
mod tests;
