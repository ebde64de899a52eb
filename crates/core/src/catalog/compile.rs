//! Compiling a parsed file into a [`Catalog`]: every problem is collected (with
//! its line) so that a refused file lists them all rather than the first.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_saphyr::{Location, Spanned};
use switchyard_protocol::Wire;

use super::{
    AttemptPolicy, Capabilities, Catalog, Chain, Deployment, HARD_MAX_ATTEMPTS, HARD_MAX_FALLBACKS,
    MAX_RETRIES, ModelEntry, ProviderKind, ProviderSpec, Route, Scopes, Settings, Strategy, Target,
    governance_ok, normalize_model,
};
use crate::config::raw::{self, Capability, Credentials, RawConfig, WireName};
use crate::util::{Date, Secret, fnv1a, glob_match, slug};

/// One problem found while compiling, with its position in the file when known.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub line: Option<u64>,
    pub message: String,
}

impl Problem {
    fn at<T>(s: &Spanned<T>, message: impl Into<String>) -> Self {
        Self::located(s.referenced, message)
    }

    /// Line 0 is serde-saphyr's "unknown" (a value from a default, say).
    fn located(at: Location, message: impl Into<String>) -> Self {
        let line = at.line();
        Problem { line: (line > 0).then_some(line), message: message.into() }
    }

    /// `file:line: message`, or `file: message`.
    pub fn render(&self, file: &str) -> String {
        match self.line {
            Some(l) => format!("{file}:{l}: {}", self.message),
            None => format!("{file}: {}", self.message),
        }
    }
}

/// The configuration was refused. Error code `model_registry_invalid`.
#[derive(Debug, Clone)]
pub struct InvalidRegistry {
    pub file: String,
    pub problems: Vec<Problem>,
}

impl fmt::Display for InvalidRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "model_registry_invalid: {} problem(s)", self.problems.len())?;
        for p in &self.problems {
            writeln!(f, "  {}", p.render(&self.file))?;
        }
        Ok(())
    }
}

impl std::error::Error for InvalidRegistry {}

impl Catalog {
    /// Validate and compile a parsed file. `env` reads credential variables.
    pub fn compile(
        raw: &RawConfig,
        file: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Catalog, InvalidRegistry> {
        let mut problems = Vec::new();
        let mut warnings = Vec::new();
        let g = &raw.gateway;

        // Providers.
        let mut providers = Vec::new();
        let mut provider_index = HashMap::new();
        for (written, p) in &raw.providers {
            let name = written.as_str();
            let kind = match p.wire {
                WireName::OpenaiChat => ProviderKind::Wire(Wire::OpenAiChat),
                WireName::Anthropic => ProviderKind::Wire(Wire::Anthropic),
                WireName::Gemini => ProviderKind::Wire(Wire::Gemini),
                WireName::Mock => {
                    ProviderKind::Mock { latency: Duration::from_millis(p.latency_ms) }
                }
            };
            let PlatformKeys { keys, unavailable, refuse, first_missing } =
                if p.wire == WireName::Mock {
                    PlatformKeys {
                        keys: Vec::new(),
                        unavailable: None,
                        refuse: false,
                        first_missing: None,
                    }
                } else {
                    keys_for(name, &p.credentials.value, env)
                };
            if let Some(why) = &unavailable {
                if refuse {
                    let at = first_known(&[
                        first_missing,
                        Some(p.credentials.referenced),
                        Some(written.location()),
                    ]);
                    problems.push(Problem::located(at, format!(
                        "providers.{name}.credentials: {why} (mark the provider `credentials.optional: true` to start without it, or `byok_only: true`)"
                    )));
                } else {
                    warnings.push(why.clone());
                }
            }
            let endpoint = p
                .endpoint
                .as_ref()
                .map_or(default_endpoint(p.wire), |e| e.value.as_str())
                .trim_end_matches('/')
                .to_owned();
            if let Some(m) = &p.markup
                && (!m.value.is_finite() || m.value < 0.0)
            {
                let at = first_known(&[Some(m.referenced), Some(written.location())]);
                problems.push(Problem::located(
                    at,
                    format!("providers.{name}.markup: must be a number >= 0"),
                ));
            }
            if p.wire != WireName::Mock
                && !(endpoint.starts_with("http://") || endpoint.starts_with("https://"))
            {
                let written_at = p.endpoint.as_ref().map(|e| e.referenced);
                let at = first_known(&[written_at, Some(written.location())]);
                problems.push(Problem::located(
                    at,
                    format!("providers.{name}.endpoint: {endpoint:?} is not an http(s) URL"),
                ));
            }
            provider_index.insert(name.to_owned(), providers.len());
            providers.push(Arc::new(ProviderSpec {
                name: name.to_owned(),
                kind,
                endpoint,
                keys,
                unavailable,
                headers: p.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                drop_fields: p.drop_fields.clone(),
                backend: p.surface == raw::Surface::Backend,
                european: p.governance.european.unwrap_or(false),
                no_retain: p.governance.no_retain.unwrap_or(false),
                markup: p.markup.as_ref().map_or(1.0, |m| m.value),
            }));
        }
        let find_provider = |s: &Spanned<String>, what: &str, problems: &mut Vec<Problem>| {
            let idx = provider_index.get(&s.value).copied();
            if idx.is_none() {
                problems.push(Problem::at(s, format!("{what}: unknown provider {:?}", s.value)));
            }
            idx
        };

        // Models: ids and aliases share one namespace.
        let mut models = Vec::new();
        let mut lookup: HashMap<String, usize> = HashMap::new();
        for m in &raw.models {
            let id = normalize_model(&m.id.value);
            if id.is_empty() {
                problems.push(Problem::at(&m.id, "models[].id: empty"));
                continue;
            }
            if lookup.contains_key(&id) {
                problems.push(Problem::at(
                    &m.id,
                    format!("models[].id: {id:?} is defined twice (or collides with an alias)"),
                ));
            }
            let index = models.len();
            lookup.insert(id.clone(), index);
            let mut aliases = Vec::new();
            for a in &m.aliases {
                let alias = normalize_model(&a.value);
                if lookup.contains_key(&alias) {
                    problems.push(Problem::at(
                        a,
                        format!(
                            "models[{id}].aliases: {alias:?} collides with another id or alias"
                        ),
                    ));
                    continue;
                }
                lookup.insert(alias.clone(), index);
                aliases.push(alias);
            }
            let mut deployments = Vec::new();
            for d in &m.deployments {
                if let Some(provider) =
                    find_provider(&d.provider, &format!("models[{id}].deployments"), &mut problems)
                {
                    deployments.push(Deployment {
                        provider,
                        upstream_model: d.model.clone().unwrap_or_else(|| m.id.value.clone()),
                        pricing: d.pricing.clone(),
                    });
                }
            }
            let retires = match &m.retires {
                None => None,
                Some(s) => match Date::parse(&s.value) {
                    Some(d) => Some(d),
                    None => {
                        problems.push(Problem::at(
                            s,
                            format!("models[{id}].retires: {:?} is not a YYYY-MM-DD date", s.value),
                        ));
                        None
                    }
                },
            };
            models.push(ModelEntry {
                id: id.clone(),
                aliases,
                deployments,
                pricing: m.pricing.clone(),
                context_window: m.context_window,
                max_output_tokens: m.max_output_tokens,
                capabilities: m.capabilities.as_deref().map(capabilities),
                reasoning_control: m.reasoning_control,
                sampling: m.sampling,
                takes_max_tokens: m.takes_max_tokens,
                hidden: m.hidden,
                retires,
                fallbacks: m.fallbacks.iter().map(|f| normalize_model(&f.value)).collect(),
                owned_by: m.owned_by.clone().unwrap_or_else(|| "switchyard".to_owned()),
                governance: m.governance,
            });
        }
        // Model fallbacks: ids only (aliases are not valid targets), not itself, no repeats.
        for (m, entry) in raw.models.iter().zip(models.iter()) {
            let mut seen = HashSet::new();
            for f in &m.fallbacks {
                let target = normalize_model(&f.value);
                if target == entry.id {
                    problems.push(Problem::at(
                        f,
                        format!(
                            "models[{}].fallbacks: a model cannot fall back to itself",
                            entry.id
                        ),
                    ));
                } else if !models.iter().any(|x| x.id == target) {
                    problems.push(Problem::at(f, format!("models[{}].fallbacks: {target:?} is not a model id (aliases are not valid fallback targets)", entry.id)));
                }
                if !seen.insert(target.clone()) {
                    problems.push(Problem::at(
                        f,
                        format!("models[{}].fallbacks: {target:?} is listed twice", entry.id),
                    ));
                }
            }
        }

        // Routes.
        let model_index: HashMap<&str, &ModelEntry> =
            models.iter().map(|m| (m.id.as_str(), m)).collect();
        let mut routes: Vec<Route> = Vec::new();
        for r in &raw.routes {
            let ctx = RouteCtx {
                route: &r.name,
                providers: &providers,
                provider_index: &provider_index,
                models: &model_index,
                lookup: &lookup,
            };
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
                &mut problems,
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
                            &mut problems,
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
            if let Some(chain) = chain {
                routes.push(Route {
                    id: route_id(&r.name),
                    name: r.name.clone(),
                    pattern,
                    chain,
                    scopes,
                    context_fallbacks,
                    requires: r.requires,
                    policy: Arc::new(AttemptPolicy::compile(
                        &r.retry,
                        &r.failover,
                        r.max_fallbacks,
                        r.max_attempts,
                    )),
                });
            }
        }

        // Governance: every deployment a route may use must meet its requirements,
        // judged as dispatch judges it: a target naming a catalog model carries
        // that model's narrowing; any other target serves the requested model, so
        // every catalog model the route serves narrows it.
        for (r, compiled) in raw.routes.iter().zip(routes.iter()) {
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
                        None => {
                            std::iter::once(None).chain(routed.iter().copied().map(Some)).collect()
                        }
                    };
                    for model in served {
                        let Err(failed) =
                            governance_ok(p, model.map(|m| &m.governance), &r.requires)
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

        // Access rules from the file.
        let mut rules = Vec::new();
        for rc in &raw.access_rules {
            use crate::access::Subject;
            let subjects: Vec<Subject> = [
                rc.role.map(Subject::Role),
                rc.group.clone().map(Subject::Group),
                rc.project.clone().map(Subject::Project),
                rc.user.clone().map(Subject::User),
            ]
            .into_iter()
            .flatten()
            .collect();
            if subjects.len() > 1 {
                problems.push(Problem::at(
                    &rc.name,
                    format!(
                        "access_rules[{}]: give at most one of role, group, project, user",
                        rc.name.value
                    ),
                ));
            }
            if rules.iter().any(|r: &crate::access::Rule| r.name == rc.name.value) {
                problems.push(Problem::at(
                    &rc.name,
                    format!("access_rules[{}]: defined twice", rc.name.value),
                ));
            }
            rules.push(crate::access::Rule {
                name: rc.name.value.clone(),
                effect: rc.effect,
                pattern: normalize_model(&rc.pattern),
                subject: subjects.into_iter().next().unwrap_or(Subject::Any),
                reason: rc.reason.clone(),
                priority: rc.priority,
            });
        }

        if let Some(dm) = &g.default_model {
            let n = normalize_model(&dm.value);
            if !lookup.contains_key(&n) && !g.allow_unlisted_models {
                problems.push(Problem::at(
                    dm,
                    format!("gateway.default_model: {:?} is not in the catalog", dm.value),
                ));
            }
        }

        if !problems.is_empty() {
            return Err(InvalidRegistry { file: file.to_owned(), problems });
        }
        let t = g.timeouts;
        let settings = Settings {
            listen: g.listen.clone(),
            default_model: g.default_model.as_ref().map(|dm| normalize_model(&dm.value)),
            allow_unlisted_models: g.allow_unlisted_models,
            model_prefixes: g
                .model_prefixes
                .iter()
                .map(|p| normalize_model(p))
                .filter(|p| !p.is_empty())
                .collect(),
            api_keys: g
                .api_keys
                .iter()
                .filter(|k| !k.is_empty())
                .map(|k| Secret::new(k.clone()))
                .collect(),
            max_body_bytes: g.max_body_bytes,
            max_json_depth: g.max_json_depth,
            shutdown_grace: Duration::from_secs(g.shutdown_grace_secs),
            connect_timeout: Duration::from_millis(t.connect_ms),
            first_byte_timeout: Duration::from_millis(t.first_byte_ms),
            idle_timeout: Duration::from_millis(t.idle_ms),
            request_timeout: Duration::from_millis(t.request_ms),
            breaker: crate::breaker::BreakerConfig {
                threshold: g.breaker.threshold,
                half_life: Duration::from_millis(g.breaker.half_life_ms),
                cooldown: Duration::from_millis(g.breaker.cooldown_ms),
                max_cooldown: Duration::from_millis(g.breaker.max_cooldown_ms),
                quarantine: Duration::from_millis(g.breaker.quarantine_ms),
            },
            reload_poll: Duration::from_secs(g.reload_poll_secs),
        };
        let model_route = models
            .iter()
            .map(|m| routes.iter().position(|r| glob_match(&r.pattern, &m.id)))
            .collect();
        Ok(Catalog {
            settings,
            providers,
            models: models.into_iter().map(Arc::new).collect(),
            model_route,
            default_policy: Arc::new(AttemptPolicy::default()),
            routes,
            rules,
            storage: raw.storage.clone(),
            security: raw.security.clone(),
            warnings,
            provider_index,
            lookup,
        })
    }
}

fn default_endpoint(wire: WireName) -> &'static str {
    match wire {
        WireName::OpenaiChat => "https://api.openai.com/v1",
        WireName::Anthropic => "https://api.anthropic.com",
        WireName::Gemini => "https://generativelanguage.googleapis.com",
        WireName::Mock => "",
    }
}

fn route_id(name: &str) -> String {
    let s = slug(name);
    let h = fnv1a(name.as_bytes()) & 0xff_ffff;
    if s.is_empty() { format!("route-{h:06x}") } else { format!("{s}-{h:06x}") }
}

fn capabilities(list: &[Capability]) -> Capabilities {
    let mut c = Capabilities::default();
    for cap in list {
        match cap {
            Capability::Vision => c.vision = true,
            Capability::Tools => c.tools = true,
            Capability::StructuredOutput => c.structured_output = true,
            Capability::Reasoning => c.reasoning = true,
        }
    }
    c
}

/// A provider's platform keys, and why it is unusable when it is.
struct PlatformKeys {
    keys: Vec<Secret>,
    unavailable: Option<String>,
    /// Whether the missing key is a configuration error (it is unless the provider
    /// is marked `optional` or `byok_only`).
    refuse: bool,
    /// The first unset variable's position, where a refusal is reported.
    first_missing: Option<Location>,
}

fn keys_for(name: &str, creds: &Credentials, env: &dyn Fn(&str) -> Option<String>) -> PlatformKeys {
    let none = |keys| PlatformKeys { keys, unavailable: None, refuse: false, first_missing: None };
    if creds.none {
        return none(Vec::new());
    }
    let mut keys: Vec<Secret> =
        creds.keys.iter().filter(|k| !k.is_empty()).map(|k| Secret::new(k.clone())).collect();
    let mut missing: Vec<&Spanned<String>> = Vec::new();
    for var in &creds.env {
        match env(&var.value).filter(|v| !v.is_empty()) {
            Some(v) => keys.push(Secret::new(v)),
            None => missing.push(var),
        }
    }
    if !keys.is_empty() {
        return none(keys);
    }
    let first_missing = missing.first().map(|v| v.referenced);
    if creds.byok_only {
        let why =
            format!("provider {name} takes users' own keys only (byok_only) and none was given");
        return PlatformKeys { keys, unavailable: Some(why), refuse: false, first_missing };
    }
    let why = if missing.is_empty() {
        format!(
            "provider {name} declares no credentials (set credentials.env, credentials.keys, or credentials.none: true)"
        )
    } else {
        let names: Vec<&str> = missing.iter().map(|v| v.value.as_str()).collect();
        format!("provider {name} is disabled: {} is not set", names.join(", "))
    };
    PlatformKeys { keys, unavailable: Some(why), refuse: !creds.optional, first_missing }
}

/// The closest known position of the first of `candidates`: a problem is reported
/// at the field it is about when that was written, else at the provider's name.
fn first_known(candidates: &[Option<Location>]) -> Location {
    candidates.iter().flatten().copied().find(|l| l.line() > 0).unwrap_or(Location::UNKNOWN)
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
        let priced = |m: &ModelEntry, d: &Deployment| {
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

    fn chain(
        &self,
        provider: &Spanned<String>,
        model: Option<&String>,
        weight: Option<&Spanned<u32>>,
        fallbacks: &[raw::RouteTarget],
        strategy: Strategy,
        problems: &mut Vec<Problem>,
    ) -> Option<Chain> {
        let primary = self.provider(provider, "provider", problems).map(|p| Target {
            provider: p,
            model: model.cloned(),
            weight: self.weight(weight, problems),
        });
        let mut out: Vec<Target> = Vec::new();
        for f in fallbacks {
            let Some(p) = self.provider(&f.provider, "fallbacks", problems) else { continue };
            let t = Target {
                provider: p,
                model: f.model.clone(),
                weight: self.weight(f.weight.as_ref(), problems),
            };
            let same = |a: &Target| a.provider == t.provider && a.model == t.model;
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
        primary.map(|primary| Chain { primary, fallbacks: out, strategy })
    }
}
