//! Resolution: a requested model name → a [`Plan`] (the catalog entry, the route
//! that matched, the ordered candidate deployments), and the questions asked of a
//! compiled catalog about what it serves.

use std::sync::Arc;

use super::{
    Candidate, Catalog, ChainSpec, DeploymentSpec, ModelEntry, Plan, ProviderSpec, RouteSpec,
    Scope, Strategy, TargetSpec, normalize_model,
};
use crate::config::raw;
use crate::util::{Date, glob_match};

impl Catalog {
    /// Does a runtime identity (`public|provider|upstream`, see
    /// [`Candidate::identity`]) still name something this catalog serves?
    pub fn has_identity(&self, identity: &str) -> bool {
        let mut parts = identity.splitn(3, '|');
        let (Some(public), Some(provider), Some(upstream)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return false;
        };
        let Some(&pi) = self.provider_index.get(provider) else { return false };
        let deployed = |m: &ModelEntry| {
            m.deployments.iter().any(|d| d.provider == pi && d.upstream_model == upstream)
        };
        if public.is_empty() {
            return self.settings.allow_unlisted_models;
        }
        match self.model(public) {
            Some(m) => {
                deployed(m)
                    || self.routes.iter().any(|r| {
                        glob_match(&r.pattern, public)
                            && std::iter::once(&r.chain)
                                .chain(r.scopes.iter().flat_map(|s| s.chains.values()))
                                .any(|c| {
                                    std::iter::once(&c.primary)
                                        .chain(&c.fallbacks)
                                        .any(|t| t.provider == pi)
                                })
                    })
                    || self.models.iter().any(|o| deployed(o))
            }
            None => false,
        }
    }

    /// Models a client may see in `/v1/models`: not hidden, not retired, and not
    /// served only by backend-surface providers.
    pub fn visible_models(&self, today: Date) -> impl Iterator<Item = &Arc<ModelEntry>> {
        self.models.iter().filter(move |m| {
            let backend_only = !m.deployments.is_empty()
                && m.deployments
                    .iter()
                    .all(|d| self.providers.get(d.provider).is_some_and(|p| p.backend));
            !m.hidden && !m.is_retired(today) && !backend_only
        })
    }

    /// Whether some deployment a request for `m` may be sent to is on a provider
    /// `usable` accepts: the targets of the route it resolves to (every scope's
    /// chain; without a route, its own deployments), then its fallback models'
    /// deployments. The candidates [`Catalog::plan`] builds, for any scope, so a
    /// model listed this way can be answered by something other than a 503.
    pub fn reachable(&self, m: &ModelEntry, usable: impl Fn(&ProviderSpec) -> bool) -> bool {
        let usable_at = |i: usize| self.providers.get(i).is_some_and(|p| usable(p));
        let first = match self.route_of(m) {
            Some(r) => std::iter::once(&r.chain)
                .chain(r.scopes.iter().flat_map(|s| s.chains.values()))
                .flat_map(|c| std::iter::once(&c.primary).chain(&c.fallbacks))
                .any(|t| usable_at(t.provider)),
            None => m.deployments.iter().any(|d| usable_at(d.provider)),
        };
        first
            || m.fallbacks
                .iter()
                .filter_map(|fb| self.model(fb))
                .any(|fm| fm.deployments.iter().any(|d| usable_at(d.provider)))
    }

    /// The route a request for the catalog model `m` resolves to, if any.
    pub fn route_of(&self, m: &ModelEntry) -> Option<&RouteSpec> {
        self.lookup
            .get(&m.id)
            .and_then(|&i| self.model_route.get(i).copied().flatten())
            .and_then(|r| self.routes.get(r))
    }

    /// How a requested `auto` model resolves for `req` (see [`crate::intent`]):
    /// `None` for every other name, and for every name without `intent:`.
    /// `decided`: the request's decision where one was made as it entered.
    pub fn auto_model(
        &self,
        requested: &str,
        req: &switchyard_protocol::Request,
        decided: Option<&crate::intent::Decision>,
    ) -> Option<crate::intent::Resolved> {
        let targets = self.intent.as_ref()?;
        crate::intent::resolve(&self.canonical_name(requested), req, decided, targets)
    }

    /// Whether a request for `requested` is classified (a bare `auto`, with
    /// `intent:` configured), as against named (`auto-code`) or not auto at all.
    pub fn classifies(&self, requested: &str) -> bool {
        self.intent.is_some() && self.canonical_name(requested) == "auto"
    }

    /// The canonical id for a requested name: normalised, namespace prefix removed.
    pub fn canonical_name(&self, requested: &str) -> String {
        let name = normalize_model(requested);
        for prefix in &self.settings.model_prefixes {
            if let Some(rest) = name.strip_prefix(prefix.as_str())
                && !rest.is_empty()
            {
                return rest.to_owned();
            }
        }
        name
    }

    /// Resolve a requested model into a plan of candidate deployments, in chain
    /// order (strategies, health and request filters are applied by the pipeline).
    pub fn plan(
        &self,
        requested: &str,
        today: Date,
        scope: &Scope<'_>,
    ) -> Result<Plan, ResolveError> {
        // The default model was applied where the request entered
        // (`Snapshot::apply_default_model`).
        let name = self.canonical_name(requested);
        if name.is_empty() {
            return Err(ResolveError::NoModel);
        }
        // Checked where requests enter too; here as well because an unlisted name
        // goes upstream as the model, and every way in reaches this.
        if !super::model_name_ok(&name) {
            return Err(ResolveError::InvalidName(super::quote_model(requested)));
        }
        let model = self.model(&name).cloned();
        if let Some(m) = &model
            && m.is_retired(today)
        {
            return Err(ResolveError::Retired {
                model: m.id.clone(),
                date: m.retires.unwrap_or(today),
            });
        }
        if model.is_none()
            && let Some(plan) = self.provider_addressed(requested, &name)
        {
            return Ok(plan);
        }
        if model.is_none() && !self.settings.allow_unlisted_models {
            return Err(ResolveError::NotFound(requested.to_owned()));
        }
        let route = match self.lookup.get(&name) {
            Some(&i) => self.model_route.get(i).copied().flatten().and_then(|r| self.routes.get(r)),
            None => self.routes.iter().find(|r| glob_match(&r.pattern, &name)),
        };
        let public_model = model.as_ref().map(|m| m.id.clone()).unwrap_or(name);

        let mut candidates = Vec::new();
        let mut descriptor = Vec::new();
        let mut strategy = Strategy::Ordered;
        let policy = route.map_or_else(|| self.default_policy.clone(), |r| r.policy.clone());
        if let Some(r) = route {
            descriptor.push(format!("route:{}", r.id));
            let chain = self.pick_chain(r, scope, &mut descriptor)?;
            strategy = chain.strategy;
            for t in std::iter::once(&chain.primary).chain(&chain.fallbacks) {
                self.push_target(t, model.as_ref(), &public_model, &mut candidates);
            }
        } else if let Some(m) = &model {
            for d in &m.deployments {
                self.push_deployment(d, m, &mut candidates);
            }
        }
        if let Some(m) = &model {
            for fb in &m.fallbacks {
                if let Some(fm) = self.model(fb) {
                    for d in &fm.deployments {
                        self.push_deployment(d, fm, &mut candidates);
                    }
                }
            }
        }
        candidates.truncate(1 + policy.max_fallbacks);
        if candidates.is_empty() {
            return Err(ResolveError::NoRoute(public_model));
        }
        // The route's word where it says, else the model's.
        let unrunnable_server_tools = route
            .and_then(|r| r.unrunnable_server_tools)
            .or_else(|| model.as_ref().and_then(|m| m.unrunnable_server_tools))
            .unwrap_or_default();
        let cache = route.and_then(|r| r.cache).or_else(|| model.as_ref().and_then(|m| m.cache));
        let affinity =
            route.and_then(|r| r.affinity).or_else(|| model.as_ref().and_then(|m| m.affinity));
        Ok(Plan {
            requested: requested.to_owned(),
            public_model,
            model,
            route_id: route.map(|r| r.id.clone()),
            context_fallbacks: route.map(|r| r.context_fallbacks.clone()).unwrap_or_default(),
            candidates,
            descriptor,
            strategy,
            policy,
            bypass_breakers: false,
            requires: route.map(|r| r.requires).unwrap_or_default(),
            unrunnable_server_tools,
            tools: crate::hosted::ToolDemand::default(),
            cache,
            affinity,
        })
    }

    /// `<provider>/<model>`, where the catalog does not list the name and the
    /// provider takes unlisted models: one candidate there, `<model>` upstream as
    /// the client wrote it (upstream ids may be case-sensitive:
    /// `meta-llama/Llama-3.3-70B`), no route, the gateway's default policy.
    fn provider_addressed(&self, requested: &str, name: &str) -> Option<Plan> {
        let (prefix, _) = name.split_once('/')?;
        let provider = self.provider(prefix).filter(|p| p.allow_unlisted_models)?;
        // The same split of the name as written (the canonical one is lowercased,
        // and may have lost a namespace prefix before the provider's name).
        let written = requested.trim();
        let at = written.to_ascii_lowercase().find(&format!("{prefix}/"))?;
        let upstream_model = written.get(at + prefix.len() + 1..)?.to_owned();
        if upstream_model.is_empty() {
            return None;
        }
        let candidate = Candidate {
            provider: provider.clone(),
            upstream_model,
            pricing: None,
            model: None,
            weight: 1,
            server_tools: provider.server_tools,
            limits: crate::limits::Limits::default(),
            traits: std::sync::OnceLock::new(),
        };
        Some(Plan {
            requested: requested.to_owned(),
            public_model: name.to_owned(),
            model: None,
            route_id: None,
            context_fallbacks: Vec::new(),
            candidates: vec![candidate],
            descriptor: vec![format!("provider:{}", provider.name)],
            strategy: Strategy::Ordered,
            policy: self.default_policy.clone(),
            bypass_breakers: false,
            requires: Default::default(),
            unrunnable_server_tools: Default::default(),
            tools: crate::hosted::ToolDemand::default(),
            cache: None,
            affinity: None,
        })
    }

    /// The chain serving this request: the scope's own, the route's (unmapped:
    /// shared, or no scopes), or a refusal.
    fn pick_chain<'r>(
        &self,
        r: &'r RouteSpec,
        scope: &Scope<'_>,
        descriptor: &mut Vec<String>,
    ) -> Result<&'r ChainSpec, ResolveError> {
        let Some(scopes) = &r.scopes else { return Ok(&r.chain) };
        let (value, name) = match scopes.dimension.as_str() {
            "project" => (scope.project, scope.project_name),
            _ => (None, None),
        };
        match value {
            Some(v) => {
                // Keyed by id, else by name (users write names in the file).
                let by_id = scopes.chains.get(v).map(|c| (v, c));
                let hit = by_id.or_else(|| name.and_then(|n| scopes.chains.get(n).map(|c| (n, c))));
                let shown = hit.map_or(v, |(k, _)| k);
                descriptor.push(format!("scope:{}={shown}", scopes.dimension));
                match hit.map(|(_, c)| c) {
                    Some(chain) => Ok(chain),
                    None if scopes.unmapped_shared => Ok(&r.chain),
                    None => Err(ResolveError::ScopeRefused {
                        route: r.id.clone(),
                        dimension: scopes.dimension.clone(),
                        value: v.to_owned(),
                    }),
                }
            }
            None if scopes.unmapped_shared => Ok(&r.chain),
            None => Err(ResolveError::ScopeRefused {
                route: r.id.clone(),
                dimension: scopes.dimension.clone(),
                value: String::new(),
            }),
        }
    }

    /// The candidate a model id gives on its first available deployment (used for
    /// context-window fallbacks).
    pub fn first_deployment(&self, id: &str) -> Option<Candidate> {
        let m = self.model(id)?;
        let mut out = Vec::new();
        for d in &m.deployments {
            self.push_deployment(d, m, &mut out);
        }
        out.into_iter().next()
    }

    fn push_deployment(&self, d: &DeploymentSpec, m: &Arc<ModelEntry>, out: &mut Vec<Candidate>) {
        if let Some(provider) = self.providers.get(d.provider) {
            push_unique(
                out,
                Candidate {
                    provider: provider.clone(),
                    upstream_model: d.upstream_model.clone(),
                    pricing: d.pricing.clone().or_else(|| m.pricing.clone()),
                    model: Some(m.clone()),
                    weight: 1,
                    server_tools: d.server_tools.unwrap_or(provider.server_tools),
                    limits: d.limits,
                    traits: std::sync::OnceLock::new(),
                },
            );
        }
    }

    fn push_target(
        &self,
        t: &TargetSpec,
        model: Option<&Arc<ModelEntry>>,
        public: &str,
        out: &mut Vec<Candidate>,
    ) {
        let Some(provider) = self.providers.get(t.provider) else { return };
        // A target model naming a catalog entry uses that entry's deployment there.
        let served = match &t.model {
            Some(name) => self.model(&normalize_model(name)).cloned().or_else(|| model.cloned()),
            None => model.cloned(),
        };
        let deployment = served.as_ref().and_then(|m| {
            m.deployments.iter().find(|d| {
                d.provider == t.provider
                    && t.model.as_ref().is_none_or(|name| {
                        *name == d.upstream_model || normalize_model(name) == m.id
                    })
            })
        });
        let upstream_model = match (deployment, &t.model) {
            (Some(d), _) => d.upstream_model.clone(),
            (None, Some(name)) => name.clone(),
            (None, None) => public.to_owned(),
        };
        let pricing = deployment
            .and_then(|d| d.pricing.clone())
            .or_else(|| served.as_ref().and_then(|m| m.pricing.clone()));
        let limits = deployment.map(|d| d.limits).unwrap_or_default();
        push_unique(
            out,
            Candidate {
                server_tools: deployment
                    .and_then(|d| d.server_tools)
                    .unwrap_or(provider.server_tools),
                provider: provider.clone(),
                upstream_model,
                pricing,
                model: served,
                weight: t.weight,
                limits,
                traits: std::sync::OnceLock::new(),
            },
        );
    }
}

fn push_unique(out: &mut Vec<Candidate>, c: Candidate) {
    if !out
        .iter()
        .any(|x| x.provider.name == c.provider.name && x.upstream_model == c.upstream_model)
    {
        out.push(c);
    }
}

/// Does a provider (and optionally a model on it) meet `req`? On failure, the name
/// of the first condition not met.
pub fn governance_ok(
    p: &ProviderSpec,
    model: Option<&raw::Governance>,
    req: &raw::Requires,
) -> Result<(), &'static str> {
    let flag = |provider: bool, m: Option<Option<bool>>| provider && m.flatten().unwrap_or(true);
    if req.european && !flag(p.european, model.map(|g| g.european)) {
        return Err("european");
    }
    if req.no_retain && !flag(p.no_retain, model.map(|g| g.no_retain)) {
        return Err("no_retain");
    }
    Ok(())
}

/// Why a requested model could not be resolved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResolveError {
    /// The request names no model and none is configured as the default.
    #[error("no model given and no default model configured")]
    NoModel,
    /// Not in the catalog, and unlisted models are not allowed. Holds the name as
    /// requested.
    #[error("model {0:?} is not served by this gateway")]
    NotFound(String),
    /// A name outside [`super::model_name_ok`]'s rule. Holds at most 100
    /// characters of it.
    #[error("model {0:?} is not a valid model name ({rule})", rule = super::MODEL_NAME_RULE)]
    InvalidName(String),
    /// The model's retirement day has come.
    #[error("model {model:?} was retired on {date}")]
    Retired {
        /// Its catalog id.
        model: String,
        /// The day it retired.
        date: Date,
    },
    /// Resolution found no deployment to try (no route matched and the model has
    /// no deployment of its own, say). Holds the canonical id.
    #[error("no route serves model {0:?}")]
    NoRoute(String),
    /// The route has per-scope chains, none for the request's scope, and it does
    /// not send unlisted values to its own chain.
    #[error(
        "route {route} has no chain for {dimension} {value:?} (and does not send unmapped {dimension}s to its shared chain)"
    )]
    ScopeRefused {
        /// The route's id.
        route: String,
        /// The scope dimension (`project`).
        dimension: String,
        /// The request's value (empty when it has none).
        value: String,
    },
}
