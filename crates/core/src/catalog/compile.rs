//! Compiling a parsed file into a [`Catalog`], in named steps that each record
//! what they find, so that a refused file lists every problem (with its line)
//! rather than the first. The routes' steps are in `compile_routes`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::config::raw::ModelKind;
use crate::config::{Span, Spanned};
use switchyard_protocol::openai_chat::Compat;
use switchyard_protocol::{ServerTool, ServerTools, carry};

use super::compile_auth::{PlatformKeys, credentials_for, fill_place};
use super::compile_batches::batch_api;
use super::compile_client::compile_client;
use super::compile_routes::{check_governance, compile_routes};
use super::presets::{compile_preset, implied_credentials};
use super::{
    AttemptPolicy, CacheSpec, Capabilities, Catalog, DeploymentSpec, MODEL_NAME_RULE, ModelEntry,
    ProviderKind, ProviderSpec, Settings, model_name_ok, normalize_model, quote_model,
};
use crate::config::raw::{self, Capability, RawConfig, WireName};
use crate::util::{Date, Secret, glob_match};

/// One problem found while compiling, with its position in the file when known.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// The line in the file, from 1; `None` when unknown (a default, or a
    /// configuration built in code).
    pub line: Option<u64>,
    /// What is wrong, naming the field (`models[fast].deployments: …`).
    pub message: String,
}

impl Problem {
    pub(super) fn at<T>(s: &Spanned<T>, message: impl Into<String>) -> Self {
        Self::located(s.span, message)
    }

    /// Line 0 is serde-saphyr's "unknown" (a value from a default, say).
    pub(super) fn located(at: Span, message: impl Into<String>) -> Self {
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
    /// The source's name (a path, `<embedded default>`, the builder's name).
    pub file: String,
    /// Every problem found, in the order the compile steps ran.
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
    ///
    /// The steps run in a fixed order (providers, models, routes, governance,
    /// access rules, the default model, ranges of numbers) and append to the
    /// same problems and warnings; each runs even when an earlier one found
    /// problems, to report its own too. Problems are then listed in line order.
    pub fn compile(
        raw: &RawConfig,
        file: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Catalog, InvalidRegistry> {
        let mut problems = Vec::new();
        let mut warnings = Vec::new();
        let (providers, provider_index) = compile_providers(raw, env, &mut problems, &mut warnings);
        let (models, lookup) = compile_models(raw, &providers, &provider_index, &mut problems);
        check_model_fallbacks(raw, &models, &mut problems);
        let routes = compile_routes(
            raw,
            &providers,
            &provider_index,
            &models,
            &lookup,
            &mut problems,
            &mut warnings,
        );
        check_governance(raw, &providers, &models, &lookup, &routes, &mut problems);
        let rules = compile_rules(raw, &mut problems);
        check_default_model(&raw.gateway, &lookup, &mut problems);
        super::compile_numbers::check_numbers(raw, &mut problems);
        check_edge(&raw.gateway, &mut problems);
        let console = super::console::compile_console(raw, env, &mut problems);
        let telemetry = super::compile_telemetry::compile_telemetry(raw, &mut problems);
        // A class goes to a chat model: an embedding model cannot answer one.
        let served = |name: &str| {
            lookup.get(name).and_then(|&i| models.get(i)).map(|m| m.kind == ModelKind::Chat)
        };
        let intent = super::compile_intent::compile_intent(raw, &served, &routes, &mut problems);
        let intent_classifier = super::compile_intent::compile_classifier(
            raw,
            intent.is_some(),
            &served,
            &routes,
            &mut problems,
        );
        // Lines and values as written: an expanded `${…}` may have moved lines
        // (a value with a line break) and a message may quote its value.
        let map = &raw.source_map;
        for w in &mut warnings {
            *w = map.scrub(w);
        }
        if !problems.is_empty() {
            for p in &mut problems {
                p.line = p.line.map(|l| map.written_line(l));
                p.message = map.scrub(&p.message);
            }
            // In the file's order, as a reader fixes them; those with no line
            // (settings left at a default, say) last. Stable: problems on one
            // line keep the order the steps found them in.
            problems.sort_by_key(|p| p.line.unwrap_or(u64::MAX));
            return Err(InvalidRegistry { file: file.to_owned(), problems });
        }
        let settings = compile_settings(&raw.gateway);
        let model_route = models
            .iter()
            .map(|m| routes.iter().position(|r| glob_match(&r.pattern, &m.id)))
            .collect();
        let models: Vec<Arc<ModelEntry>> = models.into_iter().map(Arc::new).collect();
        let auto_models = intent
            .as_ref()
            .map(|t| super::compile_intent::auto_models(t, &models, &lookup))
            .unwrap_or_default();
        Ok(Catalog {
            settings,
            providers,
            models,
            model_route,
            default_policy: Arc::new(AttemptPolicy::default()),
            routes,
            rules,
            storage: raw.storage.clone(),
            security: raw.security.clone(),
            state: raw.state.value.clone(),
            limits: raw.limits.value.clone(),
            budgets: super::compile_numbers::budgets(raw),
            console,
            telemetry,
            auto_models,
            intent,
            intent_classifier,
            warnings,
            provider_index,
            lookup,
        })
    }
}

/// The providers, in file order, and their index by name. A provider missing its
/// platform key is kept but unavailable: a problem, or only a warning when it is
/// marked `optional` or `byok_only`.
fn compile_providers(
    raw: &RawConfig,
    env: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<Problem>,
    warnings: &mut Vec<String>,
) -> (Vec<Arc<ProviderSpec>>, HashMap<String, usize>) {
    let mut providers = Vec::new();
    let mut provider_index = HashMap::new();
    for (written, p) in &raw.providers {
        let name = written.as_str();
        let kind = match p.wire.wire() {
            Some(wire) => ProviderKind::Wire(wire),
            None => ProviderKind::Mock { latency: Duration::from_millis(p.latency_ms) },
        };
        let preset = compile_preset(name, written, p, problems);
        let implied = preset.and_then(|preset| implied_credentials(preset, &p.credentials.value));
        let creds = implied.as_ref().unwrap_or(&p.credentials.value);
        let client =
            compile_client(name, written.location(), p, &kind, raw.base_dir.as_deref(), problems);
        let PlatformKeys { keys, cloud, unavailable, refuse, first_missing } =
            if p.wire == WireName::Mock {
                PlatformKeys::none()
            } else {
                let base = raw.base_dir.as_deref();
                credentials_for(name, p, creds, &kind, &client, base, env, problems)
            };
        if let Some(why) = &unavailable {
            if refuse {
                let at = first_known(&[
                    first_missing,
                    Some(p.credentials.span),
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
            .map_or(preset.map_or(default_endpoint(&kind), |p| p.endpoint), |e| e.value.as_str())
            .trim_end_matches('/')
            .to_owned();
        let endpoint_at =
            first_known(&[p.endpoint.as_ref().map(|e| e.span), Some(written.location())]);
        let endpoint = fill_place(name, &endpoint, p, cloud.as_deref(), endpoint_at, problems);
        if let Some(m) = &p.markup
            && (!m.value.is_finite() || m.value < 0.0)
        {
            let at = first_known(&[Some(m.span), Some(written.location())]);
            problems.push(Problem::located(
                at,
                format!("providers.{name}.markup: must be a number >= 0"),
            ));
        }
        if p.wire != WireName::Mock
            && !(endpoint.starts_with("http://") || endpoint.starts_with("https://"))
        {
            let written_at = p.endpoint.as_ref().map(|e| e.span);
            let at = first_known(&[written_at, Some(written.location())]);
            problems.push(Problem::located(
                at,
                format!(
                    "providers.{name}.endpoint: {:?} is not an http(s) URL",
                    crate::util::redact_userinfo(&endpoint)
                ),
            ));
        }
        let server_tools = match &p.server_tools {
            Some(list) => server_tools(list, &kind, &format!("providers.{name}"), problems),
            None => default_server_tools(&kind),
        };
        // Beta flags are what an Anthropic client's `anthropic-beta` header carries:
        // only a wire that passes that header on takes them.
        let takes_betas = matches!(&kind, ProviderKind::Wire(wire)
            if wire.spec().passthrough_headers.contains(&ANTHROPIC_BETA));
        if p.anthropic_betas.is_some() && !takes_betas {
            problems.push(Problem::located(
                written.location(),
                format!(
                    "providers.{name}.anthropic_betas: only a provider of Claude's own API (anthropic, vertex-anthropic, bedrock-anthropic) takes beta flags"
                ),
            ));
        }
        let (batch_api, batch_staging) =
            batch_api(name, p, &kind, &endpoint, written.location(), problems);
        provider_index.insert(name.to_owned(), providers.len());
        let mut secrets = provider_secrets(&keys, &p.headers, &endpoint, client.proxy.as_deref());
        secrets.extend(cloud.iter().flat_map(|c| c.secrets()));
        // A query parameter named like a credential is one (`key=`).
        secrets.extend(
            p.query
                .iter()
                .filter(|(k, _)| {
                    let k = k.to_ascii_lowercase();
                    ["key", "token", "secret", "signature", "sig"].iter().any(|n| k.contains(n))
                })
                .map(|(_, v)| Secret::new(v.clone())),
        );
        providers.push(Arc::new(ProviderSpec {
            name: name.to_owned(),
            kind,
            endpoint,
            keys,
            cloud,
            secrets,
            unavailable,
            headers: p.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            query: p.query.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            drop_fields: p.drop_fields.clone(),
            backend: p.surface == raw::Surface::Backend,
            european: p.governance.european.unwrap_or(false),
            no_retain: p.governance.no_retain.unwrap_or(false),
            markup: p.markup.as_ref().map_or(1.0, |m| m.value),
            server_tools,
            anthropic_betas: p.anthropic_betas.clone(),
            allow_unlisted_models: p.allow_unlisted_models,
            batch_api,
            batch_staging,
            client,
            openai: preset.map_or(Compat::OPENAI, |p| p.compat),
        }));
    }
    (providers, provider_index)
}

/// What a provider's requests carry that an echo must never show: its keys,
/// the values of its credential-like headers (by name: `authorization`,
/// `api-key`, anything naming a key, token, secret, password, cookie, signature
/// or session; other headers such as `anthropic-version` are not secret, and
/// redacting them would corrupt answers that quote them), and its endpoint's
/// userinfo, and its proxy's (a proxy's own error page comes back as the answer).
fn provider_secrets(
    keys: &[Secret],
    headers: &BTreeMap<String, String>,
    endpoint: &str,
    proxy: Option<&str>,
) -> Vec<Secret> {
    const SECRET_NAMES: [&str; 9] = [
        "auth",
        "key",
        "token",
        "secret",
        "password",
        "cookie",
        "signature",
        "session",
        "credential",
    ];
    let mut out = keys.to_vec();
    for (name, value) in headers {
        let name = name.to_ascii_lowercase();
        if SECRET_NAMES.iter().any(|n| name.contains(n)) {
            out.push(Secret::new(value.clone()));
            // `Bearer <token>`, `Basic <credentials>`: the credential alone too.
            if let Some((_, credential)) = value.split_once(' ') {
                out.push(Secret::new(credential.trim()));
            }
        }
    }
    for url in std::iter::once(endpoint).chain(proxy) {
        if let Ok(url) = reqwest::Url::parse(url)
            && let Some(password) = url.password()
        {
            use base64::Engine as _;
            let user = crate::util::percent_decode(url.username());
            let decoded = crate::util::percent_decode(password);
            let basic =
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{decoded}"));
            out.extend([password.to_owned(), decoded, basic].map(Secret::new));
        }
    }
    out.dedup();
    out
}

/// The models, in file order (one with an empty id is left out), and every
/// normalised id and alias → index into them: ids and aliases share one namespace.
fn compile_models(
    raw: &RawConfig,
    providers: &[Arc<ProviderSpec>],
    provider_index: &HashMap<String, usize>,
    problems: &mut Vec<Problem>,
) -> (Vec<ModelEntry>, HashMap<String, usize>) {
    let find_provider = |s: &Spanned<String>, what: &str, problems: &mut Vec<Problem>| {
        let idx = provider_index.get(&s.value).copied();
        if idx.is_none() {
            problems.push(Problem::at(s, format!("{what}: unknown provider {:?}", s.value)));
        }
        idx
    };
    let mut models = Vec::new();
    let mut lookup: HashMap<String, usize> = HashMap::new();
    for m in &raw.models {
        let id = normalize_model(&m.id.value);
        if id.is_empty() {
            problems.push(Problem::at(&m.id, "models[].id: empty"));
            continue;
        }
        check_model_name(&m.id, "models[].id", &id, problems);
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
            check_model_name(a, &format!("models[{id}].aliases"), &alias, problems);
            if lookup.contains_key(&alias) {
                problems.push(Problem::at(
                    a,
                    format!("models[{id}].aliases: {alias:?} collides with another id or alias"),
                ));
                continue;
            }
            lookup.insert(alias.clone(), index);
            aliases.push(alias);
        }
        let mut deployments = Vec::new();
        for d in &m.deployments {
            if let Some(provider) =
                find_provider(&d.provider, &format!("models[{id}].deployments"), problems)
            {
                let server_tools =
                    d.server_tools.as_ref().zip(providers.get(provider)).map(|(list, p)| {
                        let at = format!("models[{id}].deployments[{}]", d.provider.value);
                        server_tools(list, &p.kind, &at, problems)
                    });
                if let Some(why) = providers
                    .get(provider)
                    .and_then(|p| super::compile_kind::serves(&p.kind, m.kind))
                {
                    problems.push(Problem::at(
                        &d.provider,
                        format!("models[{id}].deployments[{}]: {why}", d.provider.value),
                    ));
                }
                let upstream_model = d.model.clone().unwrap_or_else(|| m.id.value.clone());
                let at = format!("models[{id}].deployments[{}].model", d.provider.value);
                check_model_name(&d.provider, &at, &upstream_model, problems);
                deployments.push(DeploymentSpec {
                    provider,
                    upstream_model,
                    pricing: d.pricing.clone(),
                    server_tools,
                    limits: d.limits.unwrap_or_default(),
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
            kind: m.kind,
            deployments,
            pricing: m.pricing.clone(),
            context_window: m.context_window,
            max_output_tokens: m.max_output_tokens,
            capabilities: m.capabilities.as_deref().map(capabilities),
            family: m.family,
            reasoning_control: m.reasoning_control,
            sampling: m.sampling,
            one_sampler: m.one_sampler,
            takes_max_tokens: m.takes_max_tokens,
            hidden: m.hidden,
            retires,
            fallbacks: m.fallbacks.iter().map(|f| normalize_model(&f.value)).collect(),
            owned_by: m.owned_by.clone().unwrap_or_else(|| "switchyard".to_owned()),
            governance: m.governance,
            unrunnable_server_tools: m.unrunnable_server_tools,
            cache: m.cache.as_ref().map(|c| CacheSpec { ttl_ms: c.ttl_ms.value }),
            affinity: m.affinity.as_ref().map(super::AffinitySpec::from_config),
        });
    }
    (models, lookup)
}

/// A model name the catalog holds (an id, an alias, an upstream model) must be one
/// a client could send ([`model_name_ok`]): an upstream model goes into URLs, and
/// a catalog id outside the rule could never be requested.
pub(super) fn check_model_name<T>(
    at: &Spanned<T>,
    what: &str,
    name: &str,
    problems: &mut Vec<Problem>,
) {
    if !model_name_ok(name) {
        problems.push(Problem::at(
            at,
            format!(
                "{what}: {:?} is not a valid model name ({MODEL_NAME_RULE})",
                quote_model(name)
            ),
        ));
    }
}

/// Model fallbacks: ids only (aliases are not valid targets), not itself, no repeats.
fn check_model_fallbacks(raw: &RawConfig, models: &[ModelEntry], problems: &mut Vec<Problem>) {
    for (m, entry) in raw.models.iter().zip(models.iter()) {
        let mut seen = HashSet::new();
        for f in &m.fallbacks {
            let target = normalize_model(&f.value);
            if target == entry.id {
                problems.push(Problem::at(
                    f,
                    format!("models[{}].fallbacks: a model cannot fall back to itself", entry.id),
                ));
            } else if let Some(other) = models.iter().find(|x| x.id == target) {
                if other.kind != entry.kind {
                    problems.push(Problem::at(
                        f,
                        format!(
                            "models[{}].fallbacks: {target:?} is of kind {}, this model of kind {}: a fallback answers the same kind of request",
                            entry.id,
                            other.kind.as_str(),
                            entry.kind.as_str()
                        ),
                    ));
                }
            } else {
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
}

/// Access rules from the file.
fn compile_rules(raw: &RawConfig, problems: &mut Vec<Problem>) -> Vec<crate::access::Rule> {
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
    rules
}

/// The default model must be in the catalog, unless unlisted models are allowed.
fn check_default_model(
    g: &raw::GatewaySettings,
    lookup: &HashMap<String, usize>,
    problems: &mut Vec<Problem>,
) {
    if let Some(dm) = &g.default_model {
        let n = normalize_model(&dm.value);
        if !lookup.contains_key(&n) && !g.allow_unlisted_models {
            problems.push(Problem::at(
                dm,
                format!("gateway.default_model: {:?} is not in the catalog", dm.value),
            ));
        }
    }
}

/// The edge's settings: each allowed host a host name, each allowed origin an
/// origin as browsers send it, the metrics address an address with a port.
fn check_edge(g: &raw::GatewaySettings, problems: &mut Vec<Problem>) {
    for h in &g.allowed_hosts {
        if let Err(why) = allowed_host(&h.value) {
            problems.push(Problem::at(h, format!("gateway.allowed_hosts: {:?}: {why}", h.value)));
        }
    }
    for o in &g.allowed_origins {
        if let Err(why) = allowed_origin(&o.value) {
            problems.push(Problem::at(o, format!("gateway.allowed_origins: {:?}: {why}", o.value)));
        }
    }
    if let Some(m) = &g.metrics_listen {
        let port = m.value.rsplit_once(':').map(|(_, p)| p.parse::<u16>());
        if !matches!(port, Some(Ok(_))) {
            problems.push(Problem::at(
                m,
                format!("gateway.metrics_listen: {:?}: expected host:port", m.value),
            ));
        } else if m.value.trim() == g.listen.trim() {
            problems.push(Problem::at(
                m,
                "gateway.metrics_listen: the same address as gateway.listen; leave it out to \
                 serve /metrics (with a key) on the main address only",
            ));
        }
    }
}

/// An `allowed_hosts` entry as requests are compared with it: lowercase, without
/// a trailing dot.
pub(super) fn allowed_host(s: &str) -> Result<String, &'static str> {
    let host = s.trim().trim_end_matches('.').to_ascii_lowercase();
    if host.is_empty()
        || host.contains(['/', ':', '@', '*', '?', '#', '[', ']'])
        || host.contains(char::is_whitespace)
    {
        return Err("expected a host name alone: no scheme, port, path or wildcard (IP \
                    addresses and localhost are always allowed)");
    }
    Ok(host)
}

/// An `allowed_origins` entry as browsers send an `Origin`: lowercase
/// `scheme://host[:port]`, the scheme's default port left out.
pub(super) fn allowed_origin(s: &str) -> Result<String, &'static str> {
    const WHY: &str = "expected an origin, scheme://host[:port] with http or https and no \
                       path (e.g. https://app.example.com)";
    let origin = s.trim().trim_end_matches('/').to_ascii_lowercase();
    let (scheme, authority) = origin.split_once("://").ok_or(WHY)?;
    let default_port = match scheme {
        "http" => 80,
        "https" => 443,
        _ => return Err(WHY),
    };
    if authority.is_empty()
        || authority.contains(['/', '?', '#', '@', '*'])
        || authority.contains(char::is_whitespace)
    {
        return Err(WHY);
    }
    // The port follows the last colon, unless that colon is inside an IPv6
    // address's brackets.
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !p.contains(']') => (h, Some(p.parse::<u16>().map_err(|_| WHY)?)),
        _ => (authority, None),
    };
    if host.is_empty() {
        return Err(WHY);
    }
    if port == Some(default_port) {
        return Ok(format!("{scheme}://{host}"));
    }
    Ok(origin)
}

/// Gateway settings, once the file is known to be valid.
fn compile_settings(g: &raw::GatewaySettings) -> Settings {
    let t = g.timeouts;
    Settings {
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
        max_json_elements: g.max_json_elements,
        max_response_bytes: g.max_response_bytes,
        shutdown_grace: Duration::from_secs(g.shutdown_grace_secs),
        shutdown_delay: Duration::from_secs(g.shutdown_delay_secs),
        connect_timeout: Duration::from_millis(t.connect_ms),
        first_byte_timeout: Duration::from_millis(t.first_byte_ms),
        idle_timeout: Duration::from_millis(t.idle_ms),
        request_timeout: Duration::from_millis(t.request_ms),
        keepalive: Duration::from_millis(t.keepalive_ms.max(1)),
        connections: crate::catalog::Connections {
            max: g.connections.max,
            // Zero would close every connection before its first request.
            header_read_timeout: Duration::from_millis(g.connections.header_read_timeout_ms.max(1)),
            idle_timeout: Duration::from_millis(g.connections.idle_timeout_ms.max(1)),
            http2_max_concurrent_streams: g.connections.http2_max_concurrent_streams.max(1),
            http2_max_header_list_bytes: g.connections.http2_max_header_list_bytes.max(1024),
        },
        breaker: crate::breaker::BreakerConfig {
            threshold: g.breaker.threshold,
            half_life: Duration::from_millis(g.breaker.half_life_ms),
            cooldown: Duration::from_millis(g.breaker.cooldown_ms),
            max_cooldown: Duration::from_millis(g.breaker.max_cooldown_ms),
            quarantine: Duration::from_millis(g.breaker.quarantine_ms),
        },
        metrics: g.metrics,
        reload_poll: Duration::from_secs(g.reload_poll_secs),
        // Checked by `check_edge`: nothing is left out here.
        allowed_hosts: g.allowed_hosts.iter().filter_map(|h| allowed_host(&h.value).ok()).collect(),
        allowed_origins: g
            .allowed_origins
            .iter()
            .filter_map(|o| allowed_origin(&o.value).ok())
            .collect(),
        metrics_listen: g.metrics_listen.as_ref().map(|m| m.value.trim().to_owned()),
        responses: g.responses,
        jobs: g.jobs,
        batches: g.batches,
    }
}

/// The endpoint of a provider whose config names none: its wire's (the mock calls
/// nothing).
fn default_endpoint(kind: &ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Wire(wire) => wire.spec().default_endpoint,
        ProviderKind::Mock { .. } => "",
    }
}

/// What a provider of `kind` runs when its configuration names no server tools:
/// what its API runs on its current models, as Anthropic's (its own tools) and
/// Gemini's (Google Search, URL context, code execution) do; none on an
/// OpenAI-compatible server, where Chat Completions searches only on search
/// models (a deployment of one says so). The wire says
/// ([`switchyard_protocol::WireBehaviour::default_server_tools`]).
fn default_server_tools(kind: &ProviderKind) -> ServerTools {
    match kind {
        ProviderKind::Wire(wire) => wire.behaviour().default_server_tools(),
        ProviderKind::Mock { .. } => ServerTools::NONE,
    }
}

/// The header an Anthropic client's beta flags come in.
const ANTHROPIC_BETA: &str = "anthropic-beta";

/// A `server_tools` list (at `at`), each name checked against what the wire can
/// declare at all: a promise the encoder could not keep is a problem at its line.
fn server_tools(
    list: &[Spanned<ServerTool>],
    kind: &ProviderKind,
    at: &str,
    problems: &mut Vec<Problem>,
) -> ServerTools {
    let (runnable, wire) = match kind {
        ProviderKind::Wire(wire) => (carry::runnable(*wire), wire.as_str()),
        ProviderKind::Mock { .. } => (ServerTools::NONE, "mock"),
    };
    let mut set = ServerTools::NONE;
    for tool in list {
        if runnable.contains(tool.value) {
            set.insert(tool.value);
        } else {
            problems.push(Problem::at(
                tool,
                format!(
                    "{at}.server_tools: {} cannot run on the {wire} wire (it runs: {})",
                    tool.value.as_str(),
                    runnable.names()
                ),
            ));
        }
    }
    set
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

/// The closest known position of the first of `candidates`: a problem is reported
/// at the field it is about when that was written, else at the provider's name.
pub(super) fn first_known(candidates: &[Option<Span>]) -> Span {
    candidates.iter().flatten().copied().find(|l| l.line() > 0).unwrap_or(Span::UNKNOWN)
}

#[cfg(test)]
#[cfg(feature = "yaml")]
#[path = "compile_kind_tests.rs"]
mod kind_tests;
