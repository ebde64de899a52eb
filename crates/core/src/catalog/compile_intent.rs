//! `intent:` read and checked: each class a class, `ordinary` there when any
//! is, each target a catalog model or a name a route matches, and no catalog
//! model in the way of the `auto` names.

use super::compile::Problem;
use super::normalize_model;
use super::spec::{Capabilities, ModelEntry, RouteSpec};
use crate::config::raw::RawConfig;
use crate::intent::model::{
    ClassifierSpec, DEFAULT_CACHE_TTL_MS, DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS,
};
use crate::intent::{Intent, Targets};
use crate::util::glob_match;

/// The compiled `intent:` block; `None` when it names no target (or has
/// problems, which are pushed, at the block's line).
pub(super) fn compile_intent(
    raw: &RawConfig,
    served: &dyn Fn(&str) -> Option<bool>,
    routes: &[RouteSpec],
    problems: &mut Vec<Problem>,
) -> Option<Targets> {
    let block = &raw.intent;
    let written = &block.value.targets;
    if written.is_empty() {
        return None;
    }
    let before = problems.len();
    let mut targets: [Option<String>; 5] = Default::default();
    for (class, target) in written {
        let Some(intent) = Intent::parse(class) else {
            problems.push(Problem::at(
                block,
                format!(
                    "intent.targets.{class}: not a class (expected one of reasoning, code, ordinary, cheap, vision)"
                ),
            ));
            continue;
        };
        let name = normalize_model(target);
        match served(&name) {
            Some(true) => {}
            Some(false) => problems.push(Problem::at(
                block,
                format!("intent.targets.{class}: `{target}` is not a chat model (kind)"),
            )),
            None if !routes.iter().any(|r| glob_match(&r.pattern, &name)) => {
                problems.push(Problem::at(
                    block,
                    format!(
                        "intent.targets.{class}: `{target}` is no catalog model, and no route matches it"
                    ),
                ));
            }
            None => {}
        }
        if name == "auto" || name.starts_with("auto-") {
            problems.push(Problem::at(
                block,
                format!("intent.targets.{class}: `{target}` is an auto name itself"),
            ));
        }
        targets[intent as usize] = Some(name);
    }
    let Some(ordinary) = targets[Intent::Ordinary as usize].clone() else {
        problems.push(Problem::at(
            block,
            "intent.targets.ordinary: required once any class has a target (the classes left out go there)",
        ));
        return None;
    };
    for name in
        std::iter::once("auto".to_owned()).chain(Intent::ALL.iter().map(|i| format!("auto-{i}")))
    {
        if served(&name).is_some() {
            problems.push(Problem::at(
                block,
                format!("intent: the catalog has a model or alias `{name}`, which the auto models answer to"),
            ));
        }
    }
    if problems.len() > before {
        return None;
    }
    Some(Targets::new(targets.map(|t| t.unwrap_or_else(|| ordinary.clone()))))
}

/// The compiled `intent.classifier`: its model served, its timeout bounded, and
/// only with targets to route by.
pub(super) fn compile_classifier(
    raw: &RawConfig,
    has_targets: bool,
    served: &dyn Fn(&str) -> Option<bool>,
    routes: &[RouteSpec],
    problems: &mut Vec<Problem>,
) -> Option<std::sync::Arc<ClassifierSpec>> {
    let written = raw.intent.value.classifier.as_ref()?;
    let c = &written.value;
    let before = problems.len();
    if !has_targets {
        problems.push(Problem::at(
            written,
            "intent.classifier: needs intent.targets (the classes it chooses between go somewhere)",
        ));
    }
    let name = normalize_model(&c.model);
    match served(&name) {
        Some(true) => {}
        Some(false) => problems.push(Problem::at(
            written,
            format!("intent.classifier.model: `{}` is not a chat model (kind)", c.model),
        )),
        None if !routes.iter().any(|r| glob_match(&r.pattern, &name)) => {
            problems.push(Problem::at(
                written,
                format!(
                    "intent.classifier.model: `{}` is no catalog model, and no route matches it",
                    c.model
                ),
            ));
        }
        None => {}
    }
    let timeout_ms = c.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    if timeout_ms == 0 || timeout_ms > MAX_TIMEOUT_MS {
        problems.push(Problem::at(
            written,
            format!("intent.classifier.timeout_ms: {timeout_ms} is not in 1..={MAX_TIMEOUT_MS}"),
        ));
    }
    if problems.len() > before {
        return None;
    }
    Some(std::sync::Arc::new(ClassifierSpec {
        model: name,
        timeout: std::time::Duration::from_millis(timeout_ms),
        shadow: c.shadow,
        cache_ttl_ms: c.cache_ttl_ms.unwrap_or(DEFAULT_CACHE_TTL_MS),
    }))
}

/// The `auto` models as model lists show them: `auto-<class>` with its
/// target's facts, `auto` with what every target shares (the smallest window
/// and output ceiling, the capabilities all have, no single price). A name
/// whose target is not a catalog model (a routed name) is not listed.
pub(super) fn auto_models(
    targets: &Targets,
    models: &[std::sync::Arc<ModelEntry>],
    lookup: &std::collections::HashMap<String, usize>,
) -> Vec<(std::sync::Arc<ModelEntry>, Vec<std::sync::Arc<ModelEntry>>)> {
    use std::sync::Arc;
    let entry = |name: &str| lookup.get(name).and_then(|&i| models.get(i)).cloned();
    let listed = |id: String, like: &ModelEntry| ModelEntry {
        id,
        aliases: Vec::new(),
        kind: like.kind,
        deployments: Vec::new(),
        pricing: like.pricing.clone(),
        context_window: like.context_window,
        max_output_tokens: like.max_output_tokens,
        capabilities: like.capabilities,
        family: None,
        reasoning_control: None,
        sampling: None,
        one_sampler: None,
        takes_max_tokens: None,
        hidden: false,
        retires: None,
        fallbacks: Vec::new(),
        owned_by: "switchyard".to_owned(),
        governance: crate::config::raw::Governance::default(),
        unrunnable_server_tools: None,
        cache: None,
        affinity: None,
    };
    let mut out = Vec::new();
    let mut all: Vec<Arc<ModelEntry>> = Vec::new();
    let mut complete = true;
    for class in Intent::ALL {
        match entry(targets.of(class)) {
            Some(target) => {
                let named = listed(format!("auto-{class}"), &target);
                if !all.iter().any(|m| m.id == target.id) {
                    all.push(Arc::clone(&target));
                }
                out.push((Arc::new(named), vec![target]));
            }
            None => complete = false,
        }
    }
    if complete && let Some(first) = all.first() {
        let min = |f: fn(&ModelEntry) -> Option<u64>| all.iter().map(|m| f(m)).min().flatten();
        let mut auto = listed("auto".to_owned(), first);
        auto.pricing = None;
        auto.context_window = min(|m| m.context_window);
        auto.max_output_tokens = min(|m| m.max_output_tokens);
        auto.capabilities = all.iter().try_fold(
            Capabilities { vision: true, tools: true, structured_output: true, reasoning: true },
            |acc, m| {
                let c = m.capabilities?;
                Some(Capabilities {
                    vision: acc.vision && c.vision,
                    tools: acc.tools && c.tools,
                    structured_output: acc.structured_output && c.structured_output,
                    reasoning: acc.reasoning && c.reasoning,
                })
            },
        );
        out.insert(0, (Arc::new(auto), all));
    }
    out
}

// Its tests read YAML.
#[cfg(test)]
#[cfg(feature = "yaml")]
#[path = "compile_intent_tests.rs"]
mod tests;
