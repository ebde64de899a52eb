//! Who is calling: the gateway key presented by the client, resolved to a
//! [`Principal`] (user, role, groups, projects, key limits) and the caller's own
//! provider keys (BYOK, opened with the gateway secret).
//!
//! Keys come from three places: the bootstrap admin key (an environment variable;
//! administers a fresh install), static keys in the configuration, and keys stored
//! in the database (created by the CLI or the admin API; only their SHA-256 hash is
//! stored). Database lookups are cached for a short TTL, so a revocation takes
//! effect within seconds. Unknown, revoked and expired keys get 401 — never 400 or
//! 500 — whether or not a database is configured. With no key configured anywhere
//! the gateway is open (a warning is logged at start).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use switchyard_core::GatewayError;
use switchyard_core::access::{CallerRole, Principal};
use switchyard_core::util::{Secret, key_prefix};
use switchyard_protocol::ErrorCode;
use switchyard_store::db::hash_secret;
use switchyard_store::seal::{SealedRef, Sealer};
use switchyard_store::{OwnerKind, Store};

use crate::auth;

/// The result of authentication.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    pub principal: Principal,
    /// Opened BYOK keys by provider name (user's own first, then the project's).
    pub byok: Vec<(String, Secret)>,
}

/// Someone the console lets in: an admin (reads and changes) or a viewer (reads).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Operator {
    /// A user id, `bootstrap-admin`, or an identity provider's subject.
    pub subject: String,
    /// What pages call them (an email), when known.
    pub name: Option<String>,
    /// [`CallerRole::Admin`] or [`CallerRole::Viewer`].
    pub role: CallerRole,
}

#[derive(Clone)]
enum Cached {
    Known(Box<Caller>),
    Unknown,
}

pub struct Identity {
    static_keys: Vec<Secret>,
    admin_key: Option<Secret>,
    store: Option<Store>,
    sealer: Option<Arc<Sealer>>,
    ttl: Duration,
    cache: Mutex<HashMap<String, (Instant, Cached)>>,
    /// Whether any stored key exists (open mode ends with the first one), cached.
    any_stored_key: Mutex<Option<(Instant, bool)>>,
    /// Per project: log content up to this many bytes (None: the project did not
    /// opt in), cached.
    content: Mutex<HashMap<String, (Instant, Option<usize>)>>,
}

/// Static and bootstrap keys shorter than this are warned about at start-up:
/// a generated key has 43 characters, 240 random bits.
pub const MIN_STATIC_KEY_CHARS: usize = 32;

/// One warning for each static key (`gateway.api_keys`) and for the bootstrap
/// admin key (read from `admin_env`) shorter than [`MIN_STATIC_KEY_CHARS`]
/// characters, naming the key by its place and its short prefix, never by its
/// value. A key listed twice is warned about once.
pub fn short_key_warnings(
    static_keys: &[Secret],
    admin_key: Option<&Secret>,
    admin_env: &str,
) -> Vec<String> {
    let mut seen: Vec<&Secret> = Vec::new();
    let mut warnings = Vec::new();
    let keys = static_keys
        .iter()
        .enumerate()
        .map(|(i, k)| (format!("gateway.api_keys[{i}]"), k))
        .chain(admin_key.map(|k| (admin_env.to_owned(), k)));
    for (place, key) in keys {
        let chars = key.expose().chars().count();
        if chars >= MIN_STATIC_KEY_CHARS || seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let shown = key_prefix(key.expose()).map_or(String::new(), |p| format!(" ({p}…)"));
        warnings.push(format!(
            "{place}{shown} is {chars} characters long: a static key should have at least {MIN_STATIC_KEY_CHARS} random characters"
        ));
    }
    warnings
}

impl Identity {
    pub fn new(
        static_keys: Vec<Secret>,
        admin_key: Option<Secret>,
        store: Option<Store>,
        sealer: Option<Arc<Sealer>>,
        ttl: Duration,
    ) -> Self {
        Self {
            static_keys,
            admin_key,
            store,
            sealer,
            ttl,
            cache: Mutex::new(HashMap::new()),
            any_stored_key: Mutex::new(None),
            content: Mutex::new(HashMap::new()),
        }
    }

    /// Static keys only (no database), as the tests and `storage.url: none` use.
    pub fn from_keys(static_keys: Vec<Secret>) -> Self {
        Self::new(static_keys, None, None, None, Duration::from_secs(5))
    }

    pub fn store(&self) -> Option<&Store> {
        self.store.as_ref()
    }

    pub fn sealer(&self) -> Option<&Arc<Sealer>> {
        self.sealer.as_ref()
    }

    /// Whether (and up to how many bytes) the project logs prompt and completion
    /// text. Off unless the project opted in; off when there is no database.
    pub async fn content_cap(&self, project: Option<&str>) -> Option<usize> {
        let (Some(store), Some(project)) = (&self.store, project) else { return None };
        {
            let cache = self.content.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((at, cap)) = cache.get(project)
                && at.elapsed() < self.ttl
            {
                return *cap;
            }
        }
        let cap = match store.project(project).await {
            Ok(Some(p)) if p.log_content => {
                Some(usize::try_from(p.content_cap_bytes.max(0)).unwrap_or(usize::MAX))
            }
            Ok(_) => None,
            Err(e) => {
                tracing::warn!("project settings lookup failed: {e}");
                None
            }
        };
        let mut cache = self.content.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() > 10_000 {
            cache.clear();
        }
        cache.insert(project.to_owned(), (Instant::now(), cap));
        cap
    }

    /// Forget cached lookups (after an admin change such as a revocation).
    pub fn invalidate(&self) {
        self.content.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).clear();
        *self.any_stored_key.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Whether the gateway needs a key, when that is known without asking the
    /// database: configured keys, no database, or the cached answer. `None`: ask
    /// [`Identity::requires_key`]. The browser guard asks on every request it has
    /// doubts about, so this takes no lock unless there is a database.
    pub fn requires_key_now(&self) -> Option<bool> {
        if !self.static_keys.is_empty() || self.admin_key.is_some() {
            return Some(true);
        }
        if self.store.is_none() {
            return Some(false);
        }
        self.stored_key_flag()
    }

    /// Whether the gateway needs a key; false is open mode, where any caller is
    /// served. A database error counts as needing one.
    pub async fn requires_key(&self) -> bool {
        self.auth_required().await
    }

    async fn auth_required(&self) -> bool {
        if let Some(required) = self.requires_key_now() {
            return required;
        }
        let Some(store) = &self.store else { return false };
        // On a database error, fail closed.
        let any = store.list_keys(None).await.map(|k| !k.is_empty()).unwrap_or(true);
        *self.any_stored_key.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((Instant::now(), any));
        any
    }

    /// Authenticate a request from its headers.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Caller, GatewayError> {
        let presented = auth::presented(headers).filter(|k| !k.is_empty());
        // What records show of a static or bootstrap key (a stored key's is
        // the one stored with it).
        let prefix = presented.and_then(key_prefix);
        let Some(key) = presented else {
            if self.auth_required().await {
                return Err(GatewayError::new(
                    ErrorCode::MissingApiKey,
                    "no API key: send Authorization: Bearer <key>, x-api-key or x-goog-api-key",
                ));
            }
            return Ok(Caller::default());
        };
        if let Some(admin) = &self.admin_key
            && admin.matches(key.as_bytes())
        {
            let mut principal = Principal::user("bootstrap-admin").role(CallerRole::Admin);
            principal.key_prefix = prefix;
            return Ok(Caller { principal, byok: Vec::new() });
        }
        let mut static_hit = false;
        for k in &self.static_keys {
            static_hit |= k.matches(key.as_bytes());
        }
        if static_hit {
            let mut principal = Principal::anonymous().role(CallerRole::Member);
            principal.key_prefix = prefix;
            return Ok(Caller { principal, byok: Vec::new() });
        }
        let Some(store) = &self.store else {
            if self.static_keys.is_empty() && self.admin_key.is_none() {
                return Ok(Caller::default()); // open gateway: any key is accepted
            }
            return Err(invalid());
        };
        let hash = hash_secret(key);
        match self.cached(&hash) {
            Some(Cached::Known(c)) => return Ok(*c),
            // Unknown keys are refused only once the gateway requires keys (in open
            // mode any key is accepted, cached or not).
            Some(Cached::Unknown) if self.auth_required().await => return Err(invalid()),
            Some(Cached::Unknown) => return Ok(Caller::default()),
            None => {}
        }
        let resolved = self.resolve(store, key).await?;
        let entry = match &resolved {
            Some(c) => Cached::Known(Box::new(c.clone())),
            None => Cached::Unknown,
        };
        self.remember(hash, entry);
        match resolved {
            Some(c) => Ok(c),
            None if self.auth_required().await => Err(invalid()),
            None => Ok(Caller::default()),
        }
    }

    /// The caller a key acts as, by the key's SHA-256 (as a batch keeps it:
    /// never the key), resolved now: the bootstrap admin, a static key, or a
    /// stored key that is still active and whose user is not disabled.
    /// `None`: no such key any more. No hash: the anonymous caller of an open
    /// gateway (`None` once the gateway requires keys).
    pub(crate) async fn caller_by_hash(
        &self,
        hash: Option<&str>,
        prefix: Option<&str>,
    ) -> Result<Option<Caller>, GatewayError> {
        let Some(hash) = hash else {
            return Ok((!self.auth_required().await).then(Caller::default));
        };
        let same = |k: &Secret| -> bool {
            subtle::ConstantTimeEq::ct_eq(hash_secret(k.expose()).as_bytes(), hash.as_bytes())
                .into()
        };
        let named = |mut principal: Principal| {
            principal.key_prefix = prefix.map(str::to_owned);
            Some(Caller { principal, byok: Vec::new() })
        };
        if self.admin_key.as_ref().is_some_and(same) {
            return Ok(named(Principal::user("bootstrap-admin").role(CallerRole::Admin)));
        }
        if self.static_keys.iter().any(same) {
            return Ok(named(Principal::anonymous().role(CallerRole::Member)));
        }
        let Some(store) = &self.store else { return Ok(None) };
        let Some(api_key) = store.key_by_hash(hash).await.map_err(unavailable)? else {
            return Ok(None);
        };
        if !api_key.is_active(now_ms()) {
            return Ok(None);
        }
        let Some(principal) = self.principal_of(store, &api_key).await? else {
            return Ok(None);
        };
        let (user, project) =
            (principal.user_id.as_deref().unwrap_or_default(), principal.project.as_deref());
        let byok = self.byok(store, user, project).await?;
        Ok(Some(Caller { principal, byok }))
    }

    /// Who may use the console with this key: the bootstrap admin, or a stored
    /// key's user with the admin or viewer role. `None` for anyone else (static
    /// keys act as members; unknown, revoked and expired keys; disabled users).
    pub(crate) async fn operator(&self, key: &str) -> Result<Option<Operator>, GatewayError> {
        self.operator_by_hash(&hash_secret(key)).await
    }

    /// [`Identity::operator`] by the key's SHA-256, as a console session keeps
    /// it: resolved at each page, uncached, so a revoked key, a disabled user or
    /// a changed role takes effect at the next one.
    pub(crate) async fn operator_by_hash(
        &self,
        hash: &str,
    ) -> Result<Option<Operator>, GatewayError> {
        if let Some(admin) = &self.admin_key
            && subtle::ConstantTimeEq::ct_eq(
                hash_secret(admin.expose()).as_bytes(),
                hash.as_bytes(),
            )
            .into()
        {
            return Ok(Some(Operator {
                subject: "bootstrap-admin".to_owned(),
                name: None,
                role: CallerRole::Admin,
            }));
        }
        let Some(store) = &self.store else { return Ok(None) };
        let Some(key) = store.key_by_hash(hash).await.map_err(unavailable)? else {
            return Ok(None);
        };
        if !key.is_active(now_ms()) {
            return Ok(None);
        }
        let Some(user) = store.user(&key.user_id).await.map_err(unavailable)? else {
            return Ok(None);
        };
        if user.disabled || !matches!(user.role, CallerRole::Admin | CallerRole::Viewer) {
            return Ok(None);
        }
        Ok(Some(Operator { subject: user.id, name: Some(user.email), role: user.role }))
    }

    fn cached(&self, hash: &str) -> Option<Cached> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.get(hash).filter(|(at, _)| at.elapsed() < self.ttl).map(|(_, c)| c.clone())
    }

    fn remember(&self, hash: String, entry: Cached) {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() > 10_000 {
            cache.clear();
        }
        cache.insert(hash, (Instant::now(), entry));
    }

    fn stored_key_flag(&self) -> Option<bool> {
        let flag = self.any_stored_key.lock().unwrap_or_else(|e| e.into_inner());
        flag.filter(|(at, _)| at.elapsed() < self.ttl).map(|(_, any)| any)
    }

    /// Look a key up in the database and build the caller.
    async fn resolve(&self, store: &Store, key: &str) -> Result<Option<Caller>, GatewayError> {
        let now = now_ms();
        let Some(api_key) = store.key_by_secret(key).await.map_err(unavailable)? else {
            return Ok(None);
        };
        if !api_key.is_active(now) {
            return Ok(None);
        }
        let Some(principal) = self.principal_of(store, &api_key).await? else {
            return Ok(None);
        };
        let (user, project) =
            (principal.user_id.as_deref().unwrap_or_default(), principal.project.as_deref());
        let byok = self.byok(store, user, project).await?;
        // Best effort: last-used time is informational.
        let (store, id) = (store.clone(), api_key.id.clone());
        tokio::spawn(async move {
            let _ = store.touch_key(&id, now).await;
        });
        Ok(Some(Caller { principal, byok }))
    }

    /// Who a stored key acts as: its user (with role, groups, projects) and the
    /// key's own binding, model limit and rate limits. `None` when the user is
    /// gone or disabled. Whether the key itself is active is the caller's to
    /// check.
    pub(crate) async fn principal_of(
        &self,
        store: &Store,
        api_key: &switchyard_store::ApiKey,
    ) -> Result<Option<Principal>, GatewayError> {
        let Some(user) = store.user(&api_key.user_id).await.map_err(unavailable)? else {
            return Ok(None);
        };
        if user.disabled {
            return Ok(None);
        }
        let groups = store.groups_of(&user.id).await.map_err(unavailable)?;
        let memberships = store.projects_of(&user.id).await.map_err(unavailable)?;
        let mut project_names: Vec<(String, String)> =
            memberships.iter().map(|p| (p.id.clone(), p.name.clone())).collect();
        let mut project_policies = Vec::new();
        for p in &memberships {
            project_policies.extend(pinned(p.routing.as_ref(), &format!("project:{}", p.id)));
        }
        let projects: Vec<String> = memberships.into_iter().map(|p| p.id).collect();
        let project = api_key.project_id.clone().or(user.primary_project_id.clone());
        // A key bound to a project the user is not (or no longer) a member of
        // still names it.
        if let Some(id) = project.as_deref()
            && !project_names.iter().any(|(x, _)| x == id)
            && let Some(p) = store.project(id).await.map_err(unavailable)?
        {
            project_policies.extend(pinned(p.routing.as_ref(), &format!("project:{}", p.id)));
            project_names.push((p.id, p.name));
        }
        let mut principal = Principal::user(user.id.clone())
            .role(user.role)
            .groups(groups)
            .projects(projects)
            .project_names(project_names)
            .email(user.email.clone())
            .key(api_key.id.clone(), api_key.prefix.clone());
        // Both may be absent: a key bound to no project, one limited to no models.
        principal.project.clone_from(&project);
        principal.allowed_models.clone_from(&api_key.allowed_models);
        // The key's own limits, counted under `key:<id>` by the admit stage. Like
        // everything here they are cached with the key: a change reaches this
        // instance when the cache entry expires (`security.key_cache_ms`), or at
        // once after an admin API change, which clears this instance's cache.
        principal.limits = api_key.limits;
        // Their routing policies likewise.
        principal.key_policy =
            pinned(api_key.routing.as_ref(), &format!("key:{}", api_key.id)).map(|(_, p)| p);
        principal.project_policies = project_policies
            .into_iter()
            .map(|(source, p)| (source.trim_start_matches("project:").to_owned(), p))
            .collect();
        Ok(Some(principal))
    }

    /// A project by id or name, as `(id, name)`: for admins, who may attribute a
    /// request to a project they are not a member of. `None` without a database.
    pub async fn project(
        &self,
        id_or_name: &str,
    ) -> Result<Option<(String, String)>, GatewayError> {
        let Some(store) = &self.store else { return Ok(None) };
        let found = match store.project(id_or_name).await.map_err(unavailable)? {
            Some(p) => Some(p),
            None => store.project_by_name(id_or_name).await.map_err(unavailable)?,
        };
        Ok(found.map(|p| (p.id, p.name)))
    }

    /// The caller's own provider keys: the user's, then the project's for providers
    /// the user has none for.
    async fn byok(
        &self,
        store: &Store,
        user: &str,
        project: Option<&str>,
    ) -> Result<Vec<(String, Secret)>, GatewayError> {
        let Some(sealer) = &self.sealer else { return Ok(Vec::new()) };
        let mut out: Vec<(String, Secret)> = Vec::new();
        let mut owners = vec![(OwnerKind::User, user.to_owned())];
        if let Some(p) = project {
            owners.push((OwnerKind::Project, p.to_owned()));
        }
        for (kind, id) in owners {
            let infos =
                store.list_credentials(Some((kind, id.as_str()))).await.map_err(unavailable)?;
            for info in infos {
                if out.iter().any(|(p, _)| *p == info.provider) {
                    continue;
                }
                let Some(row) =
                    store.credential(kind, &id, &info.provider).await.map_err(unavailable)?
                else {
                    continue;
                };
                let sealed = SealedRef {
                    key_id: &row.key_id,
                    nonce: &row.nonce,
                    ciphertext: &row.ciphertext,
                };
                match sealer.open(&row.id, &sealed) {
                    Ok(plain) => out.push((row.provider.clone(), Secret::new(plain.as_str()))),
                    Err(e) => {
                        tracing::warn!(credential = %row.id, provider = %row.provider, "stored provider key cannot be opened: {e}")
                    }
                }
            }
        }
        Ok(out)
    }
}

fn invalid() -> GatewayError {
    GatewayError::new(ErrorCode::InvalidApiKey, "invalid, revoked or expired API key")
}

/// A stored routing policy, compiled for `source` (`key:<id>`, `project:<id>`)
/// as `(source, policy)`; `None` when there is none. One that no longer
/// compiles (it was checked when set) is logged and left out: the routes apply.
fn pinned(
    routing: Option<&switchyard_core::app_policy::AppPolicy>,
    source: &str,
) -> Option<(String, Arc<switchyard_core::app_policy::Pinned>)> {
    let policy = routing.filter(|p| !p.is_empty())?;
    match policy.compile(source, &|_| true) {
        Ok(p) => Some((source.to_owned(), Arc::new(p))),
        Err(problems) => {
            tracing::warn!(source, problems = %problems.join("; "), "stored routing policy left out");
            None
        }
    }
}

fn unavailable(e: switchyard_store::StoreError) -> GatewayError {
    tracing::error!("key lookup failed: {e}");
    GatewayError::new(ErrorCode::AuthUnavailable, "the key store is unavailable; try again")
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Admins attribute requests to any project in the database.
impl switchyard_core::exec::ProjectDirectory for Identity {
    fn project<'a>(
        &'a self,
        id_or_name: &'a str,
    ) -> switchyard_core::continuity::BoxFuture<'a, Result<Option<(String, String)>, GatewayError>>
    {
        Box::pin(Identity::project(self, id_or_name))
    }
}
