//! Compiling the routes: their chains (primary, fallbacks, per-scope chains) and
//! attempt policies, then the check that every deployment a route may use meets
//! its data-governance requirements.

use std::collections::HashMap;
use std::sync::Arc;

use crate::config::Spanned;

use super::compile::{Problem, check_model_name};
use super::{
    AttemptPolicy, CacheSpec, ChainSpec, DeploymentSpec, HARD_MAX_ATTEMPTS, HARD_MAX_FALLBACKS,
    MAX_RETRIES, ModelEntry, ProviderSpec, RouteSpec, Scopes, Strategy, TargetSpec, governance_ok,
    normalize_model,
};
use crate::config::raw::{self, RawConfig};
use crate::util::{fnv1a, glob_match, slug};

/// The routes, in file order; a route whose primary names no known provider is
/// left out (its problem is recorded).
pub(super) fn compile_routes(
    raw: &RawConfig,
    providers: &[Arc<ProviderSpec>],
    provider_index: &HashMap<String, usize>,
    models: &[ModelEntry],
    lookup: &HashMap<String, usize>,
    problems: &mut Vec<Problem>,
    warnings: &mut Vec<String>,
) -> Vec<RouteSpec> {
    let model_index: HashMap<&str, &ModelEntry> =
        models.iter().map(|m| (m.id.as_str(), m)).collect();
    let mut routes: Vec<RouteSpec> = Vec::new();
    for r in &raw.routes {
        let ctx =
            RouteCtx { route: &r.name, providers, provider_index, models: &model_index, lookup };
        let pattern = normalize_model(&r.pattern.value);
        for (key, spanned) in [
            ("fallback_provider", &r.fallback_provider),
            ("fallback_upstream_model", &r.fallback_upstream_model),
        ] {
            if let Some(v) = spanned {
                problems.push(Problem::at(v, format!(
                    "routes[{}].{key} is no longer supported: write it as a one-entry list, `fallbacks: [{{ provider: <name>, model: <upstream id> }}]`",
                    r.name
                )));
            }
        }
        let chain = ctx.chain(
            &r.provider,
            r.model.as_ref(),
            r.weight.as_ref(),
            &r.fallbacks,
            r.strategy,
            problems,
        );
        let scopes = r.by_scope.as_ref().map(|b| {
            if b.dimension.value != "project" {
                problems.push(Problem::at(
                    &b.dimension,
                    format!(
                        "routes[{}].by_scope.dimension: {:?} is not supported (only `project`)",
                        r.name, b.dimension.value
                    ),
                ));
            }
            let chains = b
                .chains
                .iter()
                .filter_map(|(scope, c)| {
                    let strategy = c.strategy.unwrap_or(r.strategy);
                    ctx.chain(
                        &c.provider,
                        c.model.as_ref(),
                        c.weight.as_ref(),
                        &c.fallbacks,
                        strategy,
                        problems,
                    )
                    .map(|chain| (scope.clone(), chain))
                })
                .collect();
            Scopes {
                dimension: b.dimension.value.clone(),
                unmapped_shared: b.unmapped == raw::Unmapped::Shared,
                chains,
            }
        });
        let mut context_fallbacks = Vec::new();
        for c in &r.context_fallbacks {
            let id = normalize_model(&c.value);
            if model_index.contains_key(id.as_str()) {
                context_fallbacks.push(id);
            } else {
                problems.push(Problem::at(
                    c,
                    format!("routes[{}].context_fallbacks: {id:?} is not a model id", r.name),
                ));
            }
        }
        for (what, limit, hard) in [
            ("max_fallbacks", r.max_fallbacks, HARD_MAX_FALLBACKS),
            ("max_attempts", r.max_attempts, HARD_MAX_ATTEMPTS),
        ] {
            if let Some(n) = limit.filter(|n| *n > hard) {
                warnings.push(format!(
                    "route {:?}: {what} {n} is above the hard maximum {hard}; using {hard}",
                    r.name
                ));
            }
        }
        if r.retry.max_retries > MAX_RETRIES {
            warnings.push(format!(
                "route {:?}: retry.max_retries {} is above {MAX_RETRIES}; using {MAX_RETRIES}",
                r.name, r.retry.max_retries
            ));
        }
        if let Some(earlier) = routes.iter().find(|e| glob_match(&e.pattern, &pattern)) {
            warnings.push(format!(
                "route {:?} (match {pattern:?}) is shadowed by the earlier route {:?} (match {:?})",
                r.name, earlier.name, earlier.pattern
            ));
        }
        let adaptive = ctx.adaptive(r, problems);
        if let Some(chain) = chain {
            routes.push(RouteSpec {
                id: route_id(&r.name),
                name: r.name.clone(),
                pattern,
                chain,
                scopes,
                context_fallbacks,
                requires: r.requires,
                unrunnable_server_tools: r.unrunnable_server_tools,
                cache: r.cache.as_ref().map(|c| CacheSpec { ttl_ms: c.ttl_ms.value }),
                affinity: r.affinity.as_ref().map(super::AffinitySpec::from_config),
                policy: Arc::new(AttemptPolicy {
                    structured_output: r.structured_output.unwrap_or_default(),
                    adaptive,
                    ..AttemptPolicy::compile(&r.retry, &r.failover, r.max_fallbacks, r.max_attempts)
                }),
            });
        }
    }
    routes
}

/// Governance: every deployment a route may use must meet its requirements,
/// judged as dispatch judges it: a target naming a catalog model carries that
/// model's narrowing; any other target serves the requested model, so every
/// catalog model the route serves narrows it.
pub(super) fn check_governance(
    raw: &RawConfig,
    providers: &[Arc<ProviderSpec>],
    models: &[ModelEntry],
    lookup: &HashMap<String, usize>,
    routes: &[RouteSpec],
    problems: &mut Vec<Problem>,
) {
    // Each written route with the route it compiled to (one that did not compile,
    // already a problem, has nothing to check).
    let compiled_of = |name: &str| routes.iter().find(|c| c.id == route_id(name));
    for (r, compiled) in raw.routes.iter().filter_map(|r| Some((r, compiled_of(&r.name)?))) {
        if !r.requires.european && !r.requires.no_retain {
            continue;
        }
        let routed: Vec<&ModelEntry> = models
            .iter()
            .filter(|m| {
                routes.iter().position(|x| glob_match(&x.pattern, &m.id))
                    == routes.iter().position(|x| x.id == compiled.id)
            })
            .collect();
        let chains = std::iter::once(&compiled.chain)
            .chain(compiled.scopes.iter().flat_map(|s| s.chains.values()));
        for chain in chains {
            for t in std::iter::once(&chain.primary).chain(&chain.fallbacks) {
                let Some(p) = providers.get(t.provider) else { continue };
                let named = t
                    .model
                    .as_ref()
                    .and_then(|m| lookup.get(&normalize_model(m)).and_then(|&i| models.get(i)));
                let target = t.model.as_ref().map(|m| format!("/{m}")).unwrap_or_default();
                let served: Vec<Option<&ModelEntry>> = match named {
                    Some(m) => vec![Some(m)],
                    None => std::iter::once(None).chain(routed.iter().copied().map(Some)).collect(),
                };
                for model in served {
                    let Err(failed) = governance_ok(p, model.map(|m| &m.governance), &r.requires)
                    else {
                        continue;
                    };
                    let serving = match (named, model) {
                        (None, Some(m)) => format!(" serving model {}", m.id),
                        _ => String::new(),
                    };
                    problems.push(Problem::at(
                        &r.provider,
                        format!(
                            "routes[{}].requires: {}{target}{serving} does not satisfy `{failed}`",
                            r.name, p.name,
                        ),
                    ));
                    break;
                }
            }
        }
    }
}

fn route_id(name: &str) -> String {
    let s = slug(name);
    let h = fnv1a(name.as_bytes()) & 0xff_ffff;
    if s.is_empty() { format!("route-{h:06x}") } else { format!("{s}-{h:06x}") }
}

/// What validating a route's chains needs to see.
struct RouteCtx<'a> {
    route: &'a str,
    providers: &'a [Arc<ProviderSpec>],
    provider_index: &'a HashMap<String, usize>,
    models: &'a HashMap<&'a str, &'a ModelEntry>,
    lookup: &'a HashMap<String, usize>,
}

impl RouteCtx<'_> {
    /// The route's adaptive policy: needed where it or one of its scope chains
    /// orders by `adaptive`, refused where none does (it would do nothing).
    fn adaptive(
        &self,
        r: &raw::RouteConfig,
        problems: &mut Vec<Problem>,
    ) -> Option<Arc<crate::adaptive::AdaptivePolicy>> {
        let adaptive = raw::StrategyName::Adaptive;
        let uses = r.strategy == adaptive
            || r.by_scope
                .as_ref()
                .is_some_and(|b| b.chains.values().any(|c| c.strategy == Some(adaptive)));
        let Some(written) = &r.adaptive else {
            if uses {
                problems.push(Problem::at(
                    &r.pattern,
                    format!(
                        "routes[{}]: strategy adaptive needs an `adaptive:` block (a preset: interactive, economy or quality; or a version and weights)",
                        self.route
                    ),
                ));
            }
            return None;
        };
        if !uses {
            problems.push(Problem::at(
                written,
                format!(
                    "routes[{}].adaptive: the route's strategy is not adaptive (set `strategy: adaptive`)",
                    self.route
                ),
            ));
            return None;
        }
        let target_ok = |t: &str| {
            self.lookup.contains_key(t)
                || t.split_once('/').is_some_and(|(p, _)| self.provider_index.contains_key(p))
        };
        match crate::adaptive::AdaptivePolicy::compile(&written.value, &target_ok) {
            Ok(policy) => Some(policy),
            Err(found) => {
                for why in found {
                    problems.push(Problem::at(written, format!("routes[{}].{why}", self.route)));
                }
                None
            }
        }
    }

    fn provider(
        &self,
        s: &Spanned<String>,
        what: &str,
        problems: &mut Vec<Problem>,
    ) -> Option<usize> {
        let idx = self.provider_index.get(&s.value).copied();
        if idx.is_none() {
            problems.push(Problem::at(
                s,
                format!("routes[{}].{what}: unknown provider {:?}", self.route, s.value),
            ));
        }
        idx
    }

    fn weight(&self, w: Option<&Spanned<u32>>, problems: &mut Vec<Problem>) -> u32 {
        match w {
            Some(w) if w.value == 0 => {
                problems.push(Problem::at(
                    w,
                    format!(
                        "routes[{}]: weight 0 is refused (remove the deployment instead)",
                        self.route
                    ),
                ));
                1
            }
            Some(w) => w.value,
            None => 1,
        }
    }

    /// Does this target serve at least one priced catalog model?
    fn serves_priced_model(&self, provider: usize, model: Option<&String>) -> bool {
        let priced = |m: &ModelEntry, d: &DeploymentSpec| {
            d.pricing
                .as_ref()
                .or(m.pricing.as_ref())
                .is_some_and(|p| p.input.is_some() && p.output.is_some())
        };
        self.models.values().any(|m| {
            m.deployments.iter().any(|d| {
                d.provider == provider
                    && match model {
                        None => true,
                        Some(name) => {
                            let n = normalize_model(name);
                            d.upstream_model == *name
                                || m.id == n
                                || self.lookup.get(&n).is_some_and(|_| m.aliases.contains(&n))
                        }
                    }
                    && priced(m, d)
            })
        })
    }

    /// A target's model naming no catalog model goes upstream as written, so it
    /// must be a valid model name (reported at the target's provider: the model
    /// has no position of its own).
    fn target_model(
        &self,
        at: &Spanned<String>,
        what: &str,
        model: Option<&String>,
        problems: &mut Vec<Problem>,
    ) {
        if let Some(name) = model
            && !self.lookup.contains_key(&normalize_model(name))
        {
            check_model_name(at, &format!("routes[{}].{what}", self.route), name, problems);
        }
    }

    fn chain(
        &self,
        provider: &Spanned<String>,
        model: Option<&String>,
        weight: Option<&Spanned<u32>>,
        fallbacks: &[raw::RouteTarget],
        strategy: Strategy,
        problems: &mut Vec<Problem>,
    ) -> Option<ChainSpec> {
        self.target_model(provider, "model", model, problems);
        let primary = self.provider(provider, "provider", problems).map(|p| TargetSpec {
            provider: p,
            model: model.cloned(),
            weight: self.weight(weight, problems),
        });
        let mut out: Vec<TargetSpec> = Vec::new();
        for f in fallbacks {
            self.target_model(&f.provider, "fallbacks[].model", f.model.as_ref(), problems);
            let Some(p) = self.provider(&f.provider, "fallbacks", problems) else { continue };
            let t = TargetSpec {
                provider: p,
                model: f.model.clone(),
                weight: self.weight(f.weight.as_ref(), problems),
            };
            let same = |a: &TargetSpec| a.provider == t.provider && a.model == t.model;
            let name = self.providers.get(p).map(|x| x.name.as_str()).unwrap_or("?");
            if primary.as_ref().is_some_and(same) {
                problems.push(Problem::at(
                    &f.provider,
                    format!("routes[{}].fallbacks: {name} equals the route's primary", self.route),
                ));
            } else if out.iter().any(same) {
                problems.push(Problem::at(
                    &f.provider,
                    format!("routes[{}].fallbacks: {name} is listed twice", self.route),
                ));
            } else if !self.serves_priced_model(p, t.model.as_ref()) {
                problems.push(Problem::at(&f.provider, format!(
                    "routes[{}].fallbacks: {name}{} serves no priced catalog model (cost could not be metered)",
                    self.route,
                    t.model.as_ref().map(|m| format!("/{m}")).unwrap_or_default()
                )));
            }
            out.push(t);
        }
        primary.map(|primary| ChainSpec { primary, fallbacks: out, strategy })
    }
}

// Its tests read YAML.
#[cfg(test)]
#[cfg(feature = "yaml")]
#[path = "compile_adaptive_tests.rs"]
mod adaptive_tests;
