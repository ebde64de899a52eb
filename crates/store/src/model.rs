//! The rows the store reads and writes. Times are unix milliseconds; ids are
//! opaque text (`usr_…`, `prj_…`, `grp_…`, `key_…`, `rul_…`, `crd_…`).
//!
//! Roles, rule effects and rule subjects are core's access types
//! ([`switchyard_core::access`]), so a stored rule is a core rule plus an id.

use serde::{Deserialize, Serialize};
use switchyard_core::access;
use switchyard_core::app_policy::AppPolicy;
use switchyard_core::limits::Limits;

pub use switchyard_core::access::{CallerRole, Effect, Subject};

/// A person (or service) that holds API keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct User {
    pub id: String,
    /// Stored lower-cased; unique.
    pub email: String,
    pub name: Option<String>,
    pub role: CallerRole,
    pub primary_project_id: Option<String>,
    pub disabled: bool,
    pub created_at: i64,
}

/// What [`crate::Store::create_user`] needs.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct NewUser {
    pub email: String,
    #[serde(default)]
    pub name: Option<String>,
    pub role: CallerRole,
    /// The user's primary project. `None`: a new project named after the email's
    /// local part (`alice@example.com` → `alice`, or `alice-2`… when taken).
    #[serde(default)]
    pub project_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Project {
    pub id: String,
    pub name: String,
    /// Whether request content may be logged for this project.
    pub log_content: bool,
    pub content_cap_bytes: i64,
    pub created_at: i64,
    /// The project's own routing policy (`None`: the routes').
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routing: Option<AppPolicy>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    pub id: String,
    pub name: String,
    pub created_at: i64,
}

/// A gateway API key as stored: the visible prefix and metadata, never the secret
/// (only its SHA-256 is stored, and this type does not carry even that).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApiKey {
    pub id: String,
    /// The visible start of the secret, e.g. `sy-3f9a2b` (keys created before the 6-character rule keep 8).
    pub prefix: String,
    pub user_id: String,
    /// The project the key is bound to (`None`: the user's primary project).
    pub project_id: Option<String>,
    pub label: Option<String>,
    /// Model patterns this key is limited to (`None`: no limit).
    pub allowed_models: Option<Vec<String>>,
    /// The key's own rate limits (`None`: none of its own; its user's and
    /// project's limits from the configuration still apply).
    pub limits: Option<Limits>,
    /// The key's own routing policy (`None`: its project's, else the routes').
    pub routing: Option<AppPolicy>,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub last_used_at: Option<i64>,
}

impl ApiKey {
    /// Neither revoked nor expired at `now_ms`.
    pub fn is_active(&self, now_ms: i64) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|t| now_ms < t)
    }
}

/// What [`crate::Store::create_key`] needs.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default)]
pub struct NewKey {
    pub user_id: String,
    pub project_id: Option<String>,
    pub label: Option<String>,
    pub allowed_models: Option<Vec<String>>,
    /// The key's own rate limits; none set (or `None`) stores none.
    pub limits: Option<Limits>,
    pub expires_at: Option<i64>,
}

/// What [`crate::Store::create_rule`] needs: core's rule as written in config.
pub type NewRule = access::Rule;

/// A stored access rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rule {
    pub id: String,
    #[serde(flatten)]
    pub rule: access::Rule,
    pub created_at: i64,
}

/// Who owns a provider credential (BYOK).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OwnerKind {
    User,
    Project,
}

impl OwnerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OwnerKind::User => "user",
            OwnerKind::Project => "project",
        }
    }

    pub fn parse(s: &str) -> Option<OwnerKind> {
        match s {
            "user" => Some(OwnerKind::User),
            "project" => Some(OwnerKind::Project),
            _ => None,
        }
    }
}

/// A sealed provider credential to store. The store never sees plaintext: the
/// sealing module ([`crate::seal`]) produces `key_id` (which key-encryption key),
/// `nonce`, `ciphertext` (both text) and `fingerprint`, binding the row `id` into
/// the ciphertext (take one from [`crate::Store::new_credential_id`]).
#[derive(Clone, PartialEq)]
pub struct NewCredential {
    pub id: String,
    pub owner_kind: OwnerKind,
    pub owner_id: String,
    pub provider: String,
    pub key_id: String,
    pub nonce: String,
    pub ciphertext: String,
    pub fingerprint: String,
}

/// A stored sealed credential, with the sealed fields (for the unsealing module).
#[derive(Clone, PartialEq)]
pub struct CredentialRow {
    pub id: String,
    pub owner_kind: OwnerKind,
    pub owner_id: String,
    pub provider: String,
    pub key_id: String,
    pub nonce: String,
    pub ciphertext: String,
    pub fingerprint: String,
    pub created_at: i64,
    pub updated_at: i64,
}

impl CredentialRow {
    /// The row without its sealed fields.
    pub fn info(&self) -> CredentialInfo {
        CredentialInfo {
            id: self.id.clone(),
            owner_kind: self.owner_kind,
            owner_id: self.owner_id.clone(),
            provider: self.provider.clone(),
            key_id: self.key_id.clone(),
            fingerprint: self.fingerprint.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// A stored credential as listed: no nonce, no ciphertext.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CredentialInfo {
    pub id: String,
    pub owner_kind: OwnerKind,
    pub owner_id: String,
    pub provider: String,
    pub key_id: String,
    pub fingerprint: String,
    pub created_at: i64,
    pub updated_at: i64,
}

// Sealed material stays out of logs even though it is encrypted.
impl std::fmt::Debug for NewCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewCredential")
            .field("id", &self.id)
            .field("owner_kind", &self.owner_kind)
            .field("owner_id", &self.owner_id)
            .field("provider", &self.provider)
            .field("key_id", &self.key_id)
            .field("nonce", &"<sealed>")
            .field("ciphertext", &"<sealed>")
            .field("fingerprint", &self.fingerprint)
            .finish()
    }
}

impl std::fmt::Debug for CredentialRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialRow")
            .field("id", &self.id)
            .field("owner_kind", &self.owner_kind)
            .field("owner_id", &self.owner_id)
            .field("provider", &self.provider)
            .field("key_id", &self.key_id)
            .field("nonce", &"<sealed>")
            .field("ciphertext", &"<sealed>")
            .field("fingerprint", &self.fingerprint)
            .field("created_at", &self.created_at)
            .field("updated_at", &self.updated_at)
            .finish()
    }
}

/// Which request records [`crate::Store::list_records`] and
/// [`crate::Store::usage`] look at. Every field is optional; all given ones must
/// hold.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RecordFilter {
    /// `time_ms >= since_ms`.
    pub since_ms: Option<i64>,
    /// `time_ms < until_ms`.
    pub until_ms: Option<i64>,
    pub user: Option<String>,
    pub project: Option<String>,
    /// Matches the resolved or the requested model.
    pub model: Option<String>,
    /// The provider that served the request.
    pub provider: Option<String>,
    /// The visible prefix of the gateway key that made it.
    pub key_prefix: Option<String>,
    pub status: Option<u16>,
    /// An `auto` model's class (`list_records` only: the rollups behind usage
    /// reports do not keep it).
    pub intent: Option<String>,
    /// What the requests asked for (`list_records` only): `embeddings`, or
    /// `generation` for those that asked for none of the others.
    pub operation: Option<String>,
    /// Keyset pagination for `list_records`: only records after this one in
    /// its order (newest first), given as its `(time_ms, id)`. Usage reports
    /// ignore it.
    pub before: Option<(i64, String)>,
    /// Rows for `list_records` (default 100, at most 1000); ignored by `usage`.
    pub limit: Option<u32>,
}

impl RecordFilter {
    pub const DEFAULT_LIMIT: u32 = 100;
    pub const MAX_LIMIT: u32 = 1000;

    /// The limit `list_records` applies.
    pub fn effective_limit(&self) -> u32 {
        self.limit.unwrap_or(Self::DEFAULT_LIMIT).clamp(1, Self::MAX_LIMIT)
    }
}

/// How [`crate::Store::usage`] groups records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageBy {
    User,
    Project,
    /// The resolved model, or the requested one when resolution failed.
    Model,
    /// The provider that served the request.
    Provider,
    /// The visible prefix of the gateway key that made it.
    Key,
}

/// One hour of one group of [`crate::Store::usage_series`]: the hour's
/// usage, and what only the rollups keep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesPoint {
    /// The hour's start, in ms since the epoch.
    pub hour_ms: i64,
    #[serde(flatten)]
    pub usage: UsageRow,
    /// Requests served after failing over.
    pub failovers: u64,
    /// Requests answered from the response cache.
    pub cache_hits: u64,
    /// Percentiles of the time to first token, to the bucket; `None` when no
    /// request of the hour streamed content.
    pub ttft_p50_ms: Option<u64>,
    pub ttft_p95_ms: Option<u64>,
}

/// [`crate::Store::usage_series_of`]: hour by hour, the groups asked for and
/// all the traffic.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SeriesOf {
    /// The groups' hours, as [`crate::Store::usage_series`] gives them.
    pub groups: Vec<SeriesPoint>,
    /// All the traffic the filter matches, an hour a point (`usage.key` is
    /// `None`).
    pub total: Vec<SeriesPoint>,
}

/// One group of [`crate::Store::usage`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageRow {
    /// The group's user id / project id / model / provider; `None` for records
    /// without one (anonymous callers, requests no provider served).
    pub key: Option<String>,
    pub requests: u64,
    /// Status >= 400 or an error code set.
    pub errors: u64,
    /// Sums; unknown counts add nothing.
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    /// Sum of the known costs; `None` when no record of the group has one.
    pub cost_usd: Option<f64>,
    /// Every record of the group has a known cost.
    pub cost_complete: bool,
    /// Nearest-rank percentiles of `total_ms`.
    pub p50_ms: u64,
    pub p95_ms: u64,
    /// Share (0..=1) of requests with `total_ms` above the SLO.
    pub slo_breach_share: f64,
}
