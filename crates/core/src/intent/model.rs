//! The model-based classifier (`intent.classifier`): a configured catalog model
//! (a small local one, served by Ollama or vLLM, is the point) is asked whether
//! a request for a bare `auto` model needs deliberate reasoning or a direct
//! answer, over the rules:
//!
//! - The rules decide first. Vision and code stand: their evidence is in the
//!   request's structure (an image, a coding agent's tools), which a small
//!   model reading the text does no better on. Between reasoning and the
//!   direct classes (ordinary, cheap) the model decides: `reasoning` makes the
//!   request reasoning; `direct` makes a reasoning one ordinary and leaves the
//!   others as the rules put them. The rule is then `model`.
//! - It is bounded by `timeout_ms`: past it, or on any failure or an answer it
//!   cannot read, the rules decide alone and the record says why.
//! - Answers are kept by a hash of the model and the text asked about
//!   (`cache_ttl_ms`, in the state backend, so instances share them).
//! - `shadow: true` asks and records, but routes by the rules: to compare
//!   before switching.
//! - Its call is a request of its own through the pipeline (access rules,
//!   limits, budgets, failover, metering), recorded with the route descriptor
//!   `intent_classifier` and the id `<request id>-intent`; the request's record
//!   carries its answer, latency and cost (`routing.classifier`).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use switchyard_protocol::{ClientFormat, Message, Request, Role, TextBlock, util::fnv1a};

use super::{Decision, Intent};
use crate::continuity::BoxFuture;
use crate::exec::{Delivery, Inbound, Output};
use crate::record::{ClassifierRecord, SharedSink};
use crate::runtime::Runtime;
use crate::util::Secret;

/// How long the classifier's answer is waited for when the config says not.
pub const DEFAULT_TIMEOUT_MS: u64 = 1_000;
/// The longest wait a config may ask for.
pub const MAX_TIMEOUT_MS: u64 = 30_000;
/// How long an answer is kept when the config says not (an hour).
pub const DEFAULT_CACHE_TTL_MS: u64 = 3_600_000;
/// The route descriptor of the classifier's own request.
pub(crate) const PURPOSE: &str = "intent_classifier";
/// The most task text the classifier is sent, in bytes (the start of it: where
/// a request says what it wants, before any pasted material).
const MAX_TASK_BYTES: usize = 4_000;

/// What the classifier is asked to do: one word back.
const INSTRUCTION: &str = "You route requests to language models. Read the user's request \
below and decide whether answering it well needs deliberate multi-step reasoning (mathematics, \
proofs, puzzles, planning under many constraints, careful quantitative analysis) or can be \
answered directly (facts, writing, explanations, conversation). Answer with exactly one word: \
reasoning or direct.";

/// The compiled `intent.classifier`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassifierSpec {
    /// The catalog model (or routed name) asked.
    pub model: String,
    /// How long its answer is waited for.
    pub timeout: Duration,
    /// Ask and record, but route by the rules.
    pub shadow: bool,
    /// How long an answer is kept (0: not kept).
    pub cache_ttl_ms: u64,
}

/// Whether the model may change the rules' `decision` (see the module's notes).
pub(crate) fn asks(decision: &Decision) -> bool {
    matches!(decision.intent, Intent::Reasoning | Intent::Ordinary | Intent::Cheap)
}

/// The classifier's request for `task`: the instruction, the task's start, one
/// short answer, no sampling.
pub(crate) fn request(spec: &ClassifierSpec, task: &str) -> Request {
    let mut end = task.len().min(MAX_TASK_BYTES);
    while !task.is_char_boundary(end) {
        end -= 1;
    }
    Request {
        model: spec.model.clone(),
        system: vec![TextBlock::new(INSTRUCTION)],
        messages: vec![Message::text(Role::User, &task[..end])],
        max_tokens: Some(8),
        temperature: Some(0.0),
        ..Request::default()
    }
}

/// The answer's first word: `reasoning` (true) or `direct` (false); `None`
/// for anything else.
pub(crate) fn parse(answer: &str) -> Option<bool> {
    let word: String = answer
        .trim_start_matches(|c: char| !c.is_alphabetic())
        .chars()
        .take_while(|c| c.is_alphabetic())
        .collect::<String>()
        .to_lowercase();
    match word.as_str() {
        "reasoning" => Some(true),
        "direct" => Some(false),
        _ => None,
    }
}

/// The rules' decision with the model's answer (see the module's notes).
pub(crate) fn combine(rules: &Decision, reasoning: bool) -> Decision {
    let (intent, rule) = match (rules.intent, reasoning) {
        (Intent::Vision | Intent::Code, _) => (rules.intent, rules.rule),
        (_, true) => (Intent::Reasoning, "model"),
        (Intent::Reasoning, false) => (Intent::Ordinary, "model"),
        (other, false) => (other, rules.rule),
    };
    Decision { intent, rule, signals: rules.signals.clone() }
}

/// What the classifier's call needs of the request it classifies.
pub(crate) struct Asking {
    /// The request's id (the call's is `<id>-intent`).
    pub id: String,
    /// The request.
    pub request: Arc<Request>,
    /// Its caller: the call is made, limited and billed as theirs.
    pub principal: crate::access::Principal,
    /// Its project.
    pub project: Option<String>,
    /// Its project's name.
    pub project_name: Option<String>,
    /// Its caller's own provider keys.
    pub byok: Vec<(String, Secret)>,
}

impl Asking {
    /// What `inbound`'s classification needs.
    pub(crate) fn of(inbound: &Inbound) -> Asking {
        Asking {
            id: inbound.id.clone(),
            request: Arc::clone(&inbound.request),
            principal: inbound.principal.clone(),
            project: inbound.project.clone(),
            project_name: inbound.project_name.clone(),
            byok: inbound.byok.clone(),
        }
    }
}

/// Ask the classifier about `asking` (whose rules decided `rules`): the
/// decision to route by and the record of the asking. Boxed: it runs the
/// pipeline, from inside the pipeline.
pub(crate) fn consult(
    snapshot: Arc<crate::Snapshot>,
    asking: Asking,
    runtime: Arc<Runtime>,
    sink: SharedSink,
    spec: Arc<ClassifierSpec>,
    rules: Decision,
) -> BoxFuture<'static, (Decision, ClassifierRecord)> {
    Box::pin(async move {
        let started = Instant::now();
        let task = super::signals::task_text(&asking.request);
        let key = format!("intent\n{}\n{:016x}", spec.model, fnv1a(task.as_bytes()));
        let mut record = ClassifierRecord {
            model: spec.model.clone(),
            rules: Cow::Borrowed(rules.intent.as_str()),
            shadow: spec.shadow,
            ..ClassifierRecord::default()
        };
        let kept = match spec.cache_ttl_ms {
            0 => None,
            _ => runtime.intent_decisions.get(std::slice::from_ref(&key)).await,
        };
        let answer = match kept.and_then(|(_, v)| v.first().copied()) {
            Some(b) => {
                record.cached = true;
                Some(b == b'r')
            }
            None => {
                let id = format!("{}-intent", asking.id);
                let mut inner = Inbound::new(
                    id.clone(),
                    ClientFormat::OpenAiChat,
                    request(&spec, &task),
                    asking.principal,
                );
                inner.project = asking.project;
                inner.project_name = asking.project_name;
                inner.byok = asking.byok;
                inner.output = Output::Canonical;
                record.request_id = Some(id);
                let call = snapshot.run(inner, Arc::clone(&runtime), sink, Some(PURPOSE));
                let answer = match tokio::time::timeout(spec.timeout, call).await {
                    Err(_) => {
                        record.answer = Cow::Borrowed("timeout");
                        None
                    }
                    Ok(Err(e)) => {
                        tracing::debug!(code = e.code().as_str(), "intent classifier failed");
                        record.answer = Cow::Borrowed("error");
                        None
                    }
                    Ok(Ok(success)) => match success.delivery {
                        Delivery::Response { response, record: call_record } => {
                            record.cost_usd = call_record.and_then(|r| r.cost_usd);
                            let read = parse(&response.text());
                            if read.is_none() {
                                record.answer = Cow::Borrowed("unreadable");
                            }
                            read
                        }
                        // Asked for canonically, the pipeline answers so.
                        _ => {
                            record.answer = Cow::Borrowed("error");
                            None
                        }
                    },
                };
                if let Some(reasoning) = answer
                    && spec.cache_ttl_ms > 0
                {
                    let value: Arc<[u8]> = Arc::from(if reasoning { &b"r"[..] } else { &b"d"[..] });
                    runtime.intent_decisions.put(key, value, spec.cache_ttl_ms).await;
                }
                answer
            }
        };
        record.latency_ms = started.elapsed().as_millis() as u64;
        if let Some(reasoning) = answer {
            record.answer = Cow::Borrowed(if reasoning { "reasoning" } else { "direct" });
        }
        let decided = match answer {
            Some(reasoning) if !spec.shadow => combine(&rules, reasoning),
            _ => rules,
        };
        (decided, record)
    })
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
