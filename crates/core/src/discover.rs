//! Catalog discovery: what each provider serves, from its own model list,
//! against what the catalog deploys on it.
//!
//! Each wire says where its list is and how to read it
//! ([`switchyard_protocol::listing`], `WireBehaviour::model_listing`); this
//! module asks it with the provider's own credentials, exactly as a generation
//! is authenticated (`upstream::get`: its key, else its cloud credential's
//! SigV4 signature or access token), follows its pages, and compares:
//!
//! - **new**: listed, and no catalog model deploys it on the provider;
//! - **missing**: a catalog deployment names it, and the list does not;
//! - **retiring**: a catalog deployment names it, and the list marks it as on
//!   its way out (Bedrock's `LEGACY`, a deprecation).
//!
//! A provider that cannot be asked (no list, disabled, the mock) or whose
//! request fails is reported with the reason, never an error of the whole run:
//! one provider's bad key says nothing of the others. Whatever an upstream
//! sends back is scrubbed of the provider's secrets before it is reported.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

use serde::Serialize;
use switchyard_protocol::Wire;
use switchyard_protocol::listing::{ListedModel, ModelListing, Paging};

use crate::catalog::{Catalog, ProviderKind, ProviderSpec};
use crate::upstream::{self, Dest, Failure, ProviderRuntime};
use crate::util::{Redactor, Secret};

/// The most pages followed for one provider: a list that never ends (a
/// cursor that repeats, a server that always has more) is cut off here.
const MAX_PAGES: usize = 100;

/// How long one provider's whole list may take.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(60);

/// One provider's discovery.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderDiscovery {
    /// Its name under `providers:`.
    pub provider: String,
    /// Its wire's name (`mock` for the mock).
    pub wire: &'static str,
    /// What its list said, or why there is none.
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// What a provider's list said, or why it has none.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// Listed and compared.
    Listed(Comparison),
    /// The provider has no list the gateway can ask (its wire's, or the mock),
    /// or cannot be used at all (disabled): why.
    Unsupported {
        /// Why.
        reason: String,
    },
    /// Asking failed (credentials refused, unreachable, an answer that could
    /// not be read): why, scrubbed of the provider's secrets.
    Failed {
        /// Why.
        reason: String,
    },
}

/// A provider's list against the catalog's deployments on it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Comparison {
    /// How many models the list holds (those a deployment could name).
    pub listed: usize,
    /// How many of the catalog's deployments on the provider it lists.
    pub matched: usize,
    /// Listed, deployed by no catalog model: sorted by id.
    pub new: Vec<NewModel>,
    /// Deployed, not listed.
    pub missing: Vec<Deployed>,
    /// Deployed, listed as on its way out.
    pub retiring: Vec<Retiring>,
}

/// A model the provider lists and the catalog does not deploy on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewModel {
    /// The provider's id.
    pub id: String,
    /// Its name for people, where the list gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}

/// A catalog deployment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Deployed {
    /// The catalog model.
    pub model: String,
    /// The provider's id for it, as the deployment names it.
    pub upstream_model: String,
}

/// A catalog deployment whose model the provider marks as retiring.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Retiring {
    /// The catalog model and the deployment's upstream id.
    #[serde(flatten)]
    pub deployment: Deployed,
    /// What the provider says (`LEGACY`, `deprecated 2025-03-30`).
    pub note: String,
    /// The day it stops serving it (`YYYY-MM-DD`), where the list says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retires: Option<String>,
}

/// Why discovery could not run at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscoverError {
    /// `--provider` names no provider of the catalog.
    #[error("no provider named {0:?} in the configuration")]
    UnknownProvider(String),
}

/// Discovers every provider of `catalog` (only the one named `only`, if
/// given), concurrently, in the catalog's provider order. Errs only when
/// `only` names no provider; each provider's own failure is its outcome.
pub async fn discover(
    catalog: &Catalog,
    only: Option<&str>,
) -> Result<Vec<ProviderDiscovery>, DiscoverError> {
    let providers: Vec<&ProviderSpec> = match only {
        Some(name) => {
            let p = catalog
                .providers
                .iter()
                .find(|p| p.name == name)
                .ok_or_else(|| DiscoverError::UnknownProvider(name.to_owned()))?;
            vec![p.as_ref()]
        }
        None => catalog.providers.iter().map(AsRef::as_ref).collect(),
    };
    let runs = providers.into_iter().map(|p| async move {
        let outcome = provider(catalog, p).await;
        ProviderDiscovery { provider: p.name.clone(), wire: p.wire_name(), outcome }
    });
    Ok(futures_util::future::join_all(runs).await)
}

/// One provider's outcome.
async fn provider(catalog: &Catalog, spec: &ProviderSpec) -> Outcome {
    let wire = match spec.kind {
        ProviderKind::Wire(wire) => wire,
        ProviderKind::Mock { .. } => {
            return Outcome::Unsupported {
                reason: "the mock serves whatever the catalog names; it has no list".into(),
            };
        }
    };
    if let Some(why) = &spec.unavailable {
        return Outcome::Unsupported { reason: format!("disabled: {why}") };
    }
    let listing = wire.behaviour().model_listing();
    if let ModelListing::Unsupported(why) = listing {
        return Outcome::Unsupported { reason: why.to_owned() };
    }
    let listed =
        match tokio::time::timeout(PROVIDER_TIMEOUT, list(catalog, spec, wire, listing)).await {
            Ok(Ok(listed)) => listed,
            Ok(Err(reason)) => return Outcome::Failed { reason },
            Err(_) => {
                return Outcome::Failed {
                    reason: format!("no whole list within {} s", PROVIDER_TIMEOUT.as_secs()),
                };
            }
        };
    Outcome::Listed(compare(catalog, spec, wire, &listed))
}

/// Every page of the provider's list; `Err`: why not, scrubbed.
async fn list(
    catalog: &Catalog,
    spec: &ProviderSpec,
    wire: Wire,
    listing: ModelListing,
) -> Result<Vec<ListedModel>, String> {
    let first = listing.url(&spec.endpoint).map_err(str::to_owned)?;
    let first = reqwest::Url::parse(&first).map_err(|e| {
        format!("{}: the list's URL is not valid: {e}", crate::util::redact_userinfo(&first))
    })?;
    let runtime = ProviderRuntime::new(&catalog.settings, spec)?;
    // One request needs one key: the first (rotation spreads generations'
    // load, which a list is not).
    let key = spec.keys.first();
    let dest = Dest { runtime: &runtime, spec, wire, key, upstream_model: "" };
    let mut models = Vec::new();
    let mut seen = HashSet::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut url = first.clone();
        if let (Paging::Cursor { param }, Some(c)) = (listing.paging(), &cursor) {
            url.query_pairs_mut().append_pair(param, c);
        }
        // The whole list is under PROVIDER_TIMEOUT too; this bounds one
        // page's reads, as an attempt's are.
        let deadline = Instant::now() + PROVIDER_TIMEOUT;
        let scrub_with = |minted: &[Secret], f: Failure| {
            failure_text(f.redacted(&Redactor { platform: &spec.secrets, used: key, minted }))
        };
        let (resp, minted) = upstream::get(dest, url).await.map_err(|f| scrub_with(&[], f))?;
        // With what the cloud credential minted for this request.
        let redactor = Redactor { platform: &spec.secrets, used: key, minted: &minted };
        let scrub = |f: Failure| scrub_with(&minted, f);
        if !resp.status().is_success() {
            return Err(scrub(upstream::read_failure(resp, wire, &redactor, deadline).await));
        }
        let body = upstream::read_body(resp, catalog.settings.max_response_bytes, deadline)
            .await
            .map_err(scrub)?;
        let page =
            wire.behaviour().parse_models(&body).map_err(|e| scrub(Failure::from_protocol(e)))?;
        models.extend(page.models);
        match page.next {
            // A cursor seen before would ask for the same pages again.
            Some(next) if seen.insert(next.clone()) => cursor = Some(next),
            Some(_) => return Err("the list's pages repeat".into()),
            None => return Ok(models),
        }
    }
    Err(format!("the list has more than {MAX_PAGES} pages"))
}

/// A failure as one line for the operator.
fn failure_text(f: Failure) -> String {
    match f {
        Failure::Status { status, message, .. } => format!("{status}: {message}"),
        other => other.into_message(),
    }
}

/// The provider's list against the catalog's deployments on it.
pub(crate) fn compare(
    catalog: &Catalog,
    spec: &ProviderSpec,
    wire: Wire,
    listed: &[ListedModel],
) -> Comparison {
    let behaviour = wire.behaviour();
    // The first entry of an id wins: a list that names one twice is one model.
    let mut by_id: HashMap<&str, &ListedModel> = HashMap::new();
    for m in listed {
        by_id.entry(m.id.as_str()).or_insert(m);
    }
    let index = catalog.providers.iter().position(|p| p.name == spec.name);
    let mut out = Comparison { listed: by_id.len(), ..Comparison::default() };
    let mut deployed: HashSet<&str> = HashSet::new();
    for model in &catalog.models {
        for d in model.deployments.iter().filter(|d| Some(d.provider) == index) {
            let id = behaviour.listed_id(&d.upstream_model);
            deployed.insert(id);
            let deployment =
                Deployed { model: model.id.clone(), upstream_model: d.upstream_model.clone() };
            let Some(found) = by_id.get(id) else {
                out.missing.push(deployment);
                continue;
            };
            out.matched += 1;
            if let Some(note) = &found.retiring {
                let retires = found
                    .retires_at
                    .and_then(|secs| i64::try_from(secs / 86_400).ok())
                    .map(|days| crate::util::Date::from_days(days).to_string());
                out.retiring.push(Retiring { deployment, note: note.clone(), retires });
            }
        }
    }
    let new: BTreeSet<&str> = by_id.keys().copied().filter(|id| !deployed.contains(id)).collect();
    out.new = new
        .into_iter()
        .filter_map(|id| by_id.get(id))
        .map(|m| NewModel { id: m.id.clone(), display_name: m.display_name.clone() })
        .collect();
    out
}

#[cfg(all(test, feature = "yaml"))]
#[path = "discover_tests.rs"]
mod tests;
