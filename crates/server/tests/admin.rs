//! The admin API, black-box through the real server: a store on a fresh database,
//! the bootstrap admin key, a BYOK sealer, and request records written by the real
//! audit writer into the same database. Every wait is bounded.
//!
//! Every case is written once (`async fn case_x(db: TestDb)`) and runs on both
//! backends (`x_sqlite`, `x_postgres`; see `switchyard_store::testing`): SQLite in
//! a temporary file, PostgreSQL in a fresh schema at `SWITCHYARD_TEST_POSTGRES_URL`
//! (skipped, saying so, when that is unset, unless `SWITCHYARD_REQUIRE_POSTGRES=1`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::ws::{self, Next};
use common::{ANTHROPIC_KEY, GATEWAY_KEY, OPENAI_KEY, Options, Upstreams, WAIT, config_yaml};
use reqwest::Method;
use serde_json::{Value, json};
use switchyard_core::util::Secret;
use switchyard_core::{Catalog, ConfigSource, Engine, SharedSink};
use switchyard_server::AppState;
use switchyard_server::identity::Identity;
use switchyard_store::MemorySink;
use switchyard_store::audit::{AuditConfig, AuditWriter, RecordStore};
use switchyard_store::seal::Sealer;
use switchyard_store::testing::TestDb;
use switchyard_testkit::{FakeUpstream, Reply, Vendor, canned};
use tokio::sync::oneshot;

const ADMIN: &str = "sy-bootstrap-admin-key-0123456789";
/// A static key of 16 characters: records may show no more than 3 of them.
const SHORT_STATIC: &str = "short-static-16c";
const SECRET: &str = "gateway-secret-for-admin-tests-0123456789";
const BYOK: &str = "sk-byok-alice-own-key-000111";
const BYOK_2: &str = "sk-byok-alice-rotated-key-000222";
const BYOK_PROJECT: &str = "sk-ant-byok-project-key-000333";

/// Every admin route (OpenAPI path templates).
const ROUTES: &[(&str, &str)] = &[
    ("GET", "/admin/users"),
    ("POST", "/admin/users"),
    ("GET", "/admin/users/{id}"),
    ("PATCH", "/admin/users/{id}"),
    ("GET", "/admin/projects"),
    ("POST", "/admin/projects"),
    ("PATCH", "/admin/projects/{id}"),
    ("POST", "/admin/projects/{id}/members"),
    ("GET", "/admin/groups"),
    ("POST", "/admin/groups"),
    ("POST", "/admin/groups/{id}/members"),
    ("GET", "/admin/keys"),
    ("POST", "/admin/keys"),
    ("DELETE", "/admin/keys/{id}"),
    ("PATCH", "/admin/keys/{id}"),
    ("GET", "/admin/rules"),
    ("POST", "/admin/rules"),
    ("DELETE", "/admin/rules/{name_or_id}"),
    ("GET", "/admin/credentials"),
    ("PUT", "/admin/credentials"),
    ("DELETE", "/admin/credentials/{owner_kind}/{owner_id}/{provider}"),
    ("GET", "/admin/usage"),
    ("GET", "/admin/analytics"),
    ("GET", "/admin/budgets"),
    ("GET", "/admin/destinations"),
    ("GET", "/admin/requests"),
    ("GET", "/admin/requests/{id}"),
    ("GET", "/admin/openapi.json"),
];

/// A concrete path for a template (`{x}` segments filled in).
fn concrete(template: &str) -> String {
    template
        .split('/')
        .map(|seg| if seg.starts_with('{') { "x" } else { seg })
        .collect::<Vec<_>>()
        .join("/")
}

#[derive(Clone, Copy)]
struct Opts {
    store: bool,
    sealer: bool,
}

const FULL: Opts = Opts { store: true, sealer: true };

use switchyard_store::on_both_backends;

on_both_backends! {
    case_every_admin_route_needs_an_admin_key =>
        every_admin_route_needs_an_admin_key_sqlite, every_admin_route_needs_an_admin_key_postgres;
    case_without_a_database_or_a_secret_the_api_says_so =>
        without_a_database_or_a_secret_the_api_says_so_sqlite,
        without_a_database_or_a_secret_the_api_says_so_postgres;
    case_users_projects_and_keys => users_projects_and_keys_sqlite, users_projects_and_keys_postgres;
    case_a_key_limited_to_some_models_refuses_others =>
        a_key_limited_to_some_models_refuses_others_sqlite,
        a_key_limited_to_some_models_refuses_others_postgres;
    case_budgets_are_reported_for_this_period =>
        budgets_are_reported_for_this_period_sqlite,
        budgets_are_reported_for_this_period_postgres;
    case_key_limits_are_set_at_creation_and_changed_later =>
        key_limits_are_set_at_creation_and_changed_later_sqlite,
        key_limits_are_set_at_creation_and_changed_later_postgres;
    case_keys_and_projects_pin_their_routing_policy =>
        keys_and_projects_pin_their_routing_policy_sqlite,
        keys_and_projects_pin_their_routing_policy_postgres;
    case_stored_rules_apply_to_the_next_request =>
        stored_rules_apply_to_the_next_request_sqlite,
        stored_rules_apply_to_the_next_request_postgres;
    case_provider_keys_are_write_only_and_used_upstream =>
        provider_keys_are_write_only_and_used_upstream_sqlite,
        provider_keys_are_write_only_and_used_upstream_postgres;
    case_provider_keys_never_reach_clients_logs_or_records =>
        provider_keys_never_reach_clients_logs_or_records_sqlite,
        provider_keys_never_reach_clients_logs_or_records_postgres;
    case_projects_and_users_are_named_by_name_or_id_everywhere =>
        projects_and_users_are_named_by_name_or_id_everywhere_sqlite,
        projects_and_users_are_named_by_name_or_id_everywhere_postgres;
    case_usage_and_requests_report_what_was_served =>
        usage_and_requests_report_what_was_served_sqlite,
        usage_and_requests_report_what_was_served_postgres;
    case_openapi_describes_every_route =>
        openapi_describes_every_route_sqlite, openapi_describes_every_route_postgres;
    case_model_list_shows_what_the_callers_own_keys_reach =>
        model_list_shows_what_the_callers_own_keys_reach_sqlite,
        model_list_shows_what_the_callers_own_keys_reach_postgres;
    case_a_revoked_key_ends_its_websocket_session =>
        a_revoked_key_ends_its_websocket_session_sqlite,
        a_revoked_key_ends_its_websocket_session_postgres;
    case_metrics_need_a_key_that_may_read_them_and_name_no_key =>
        metrics_need_a_key_that_may_read_them_and_name_no_key_sqlite,
        metrics_need_a_key_that_may_read_them_and_name_no_key_postgres;
}

/// An answer: status, JSON body (Null if none), the raw text, the request id.
struct Answer {
    status: u16,
    json: Value,
    text: String,
    request_id: Option<String>,
    cache_control: Option<String>,
}

impl Answer {
    fn code(&self) -> &str {
        self.json["error"]["code"].as_str().unwrap_or("")
    }
}

struct Env {
    base: String,
    client: reqwest::Client,
    openai: FakeUpstream,
    anthropic: FakeUpstream,
    _gemini: FakeUpstream,
    bedrock: FakeUpstream,
    dir: PathBuf,
    shutdown: Option<oneshot::Sender<()>>,
    /// Every admin answer: (may it carry a key secret, body text).
    bodies: Mutex<Vec<(bool, String)>>,
}

impl Drop for Env {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Env {
    /// The server; with `opts.store`, on `db`'s store.
    async fn start(db: &TestDb, opts: Opts) -> Env {
        Self::start_with(db, opts, &Options::default()).await
    }

    /// The server on the test configuration with `options` added.
    async fn start_with(db: &TestDb, opts: Opts, options: &Options) -> Env {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("switchyard-admin-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();

        let openai = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
        let anthropic = FakeUpstream::start(Vendor::Anthropic).await.unwrap();
        let gemini = FakeUpstream::start(Vendor::Gemini).await.unwrap();
        let bedrock = FakeUpstream::start(Vendor::Bedrock).await.unwrap();
        let urls = Upstreams {
            openai: &openai.base_url(),
            anthropic: &anthropic.base_url(),
            gemini: &gemini.base_url(),
            bedrock: &bedrock.base_url(),
        };
        let yaml = config_yaml(&urls, options);
        let raw = ConfigSource::from_text("test.yaml", &yaml).parse_with(&|_| None).unwrap();
        let catalog = Catalog::compile(&raw, "test.yaml", &|_| None).unwrap();

        let store = opts.store.then(|| db.store().clone());
        let sink: SharedSink = match &store {
            Some(store) => {
                let cfg = AuditConfig {
                    flush_every: Duration::from_millis(10),
                    ..AuditConfig::new(dir.join("spill.jsonl"))
                };
                let records: Arc<dyn RecordStore> = Arc::new(store.clone());
                // The task is detached; it ends when the writer (the gateway) goes.
                let (writer, _task) = AuditWriter::start(records, cfg).unwrap();
                Arc::new(writer)
            }
            None => Arc::new(MemorySink::new(1000)),
        };
        let gateway = Arc::new(Engine::new(catalog, sink).unwrap());
        let sealer = opts.sealer.then(|| Arc::new(Sealer::new(SECRET, "k1").unwrap()));
        // A long cache TTL: anything that takes effect at once does so because the
        // admin API invalidated the cache, not because an entry expired.
        let identity = Identity::new(
            vec![Secret::new(GATEWAY_KEY), Secret::new(SHORT_STATIC)],
            Some(Secret::new(ADMIN)),
            store,
            sealer,
            Duration::from_secs(600),
        );
        let state = AppState::with_identity(gateway, identity);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = oneshot::channel::<()>();
        tokio::spawn(switchyard_server::serve(listener, state, async move {
            let _ = rx.await;
        }));
        Env {
            base,
            client: common::client(),
            openai,
            anthropic,
            _gemini: gemini,
            bedrock,
            dir,
            shutdown: Some(tx),
            bodies: Mutex::new(Vec::new()),
        }
    }

    async fn call(
        &self,
        key: Option<&str>,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Answer {
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b.to_string());
        }
        let resp = tokio::time::timeout(WAIT, req.send()).await.unwrap().unwrap();
        let status = resp.status().as_u16();
        let request_id =
            resp.headers().get("x-request-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let cache_control =
            resp.headers().get("cache-control").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let text = resp.text().await.unwrap();
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        if path.starts_with("/admin") {
            let may_hold_secret = path == "/admin/keys" && status == 201;
            self.bodies.lock().unwrap().push((may_hold_secret, text.clone()));
        }
        Answer { status, json, text, request_id, cache_control }
    }

    /// An admin call with the bootstrap admin key.
    async fn admin(&self, method: &str, path: &str, body: Option<Value>) -> Answer {
        self.call(Some(ADMIN), method, path, body.as_ref()).await
    }

    /// An admin call that must answer `status`; its JSON.
    async fn expect(&self, status: u16, method: &str, path: &str, body: Option<Value>) -> Value {
        let a = self.admin(method, path, body).await;
        assert_eq!(a.status, status, "{method} {path}: {}", a.text);
        a.json
    }

    async fn chat(&self, key: &str, model: &str) -> Answer {
        let body = json!({"model": model, "messages": [{"role": "user", "content": "hi"}]});
        self.call(Some(key), "POST", "/v1/chat/completions", Some(&body)).await
    }

    /// The record of request `id`, once the audit writer has stored it.
    async fn record(&self, id: &str) -> Value {
        let path = format!("/admin/requests/{id}");
        tokio::time::timeout(WAIT, async {
            loop {
                let a = self.admin("GET", &path, None).await;
                if a.status == 200 {
                    return a.json;
                }
                assert_eq!(a.status, 404, "{path}: {}", a.text);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{path}: no record within {WAIT:?}"))
    }

    /// The model ids `GET /v1/models` lists to the holder of `key`.
    async fn listed(&self, key: &str) -> Vec<String> {
        let a = self.call(Some(key), "GET", "/v1/models", None).await;
        assert_eq!(a.status, 200, "{}", a.text);
        let data = a.json["data"].as_array().unwrap();
        data.iter().map(|m| m["id"].as_str().unwrap().to_owned()).collect()
    }

    /// A user with a key: (user id, primary project id, key secret, key id).
    async fn user_with_key(&self, email: &str, extra: Value) -> (String, String, String, String) {
        let user = self.expect(201, "POST", "/admin/users", Some(json!({"email": email}))).await;
        let uid = user["id"].as_str().unwrap().to_owned();
        let project = user["primary_project_id"].as_str().unwrap().to_owned();
        let mut body = json!({"user_id": uid});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let key = self.expect(201, "POST", "/admin/keys", Some(body)).await;
        let secret = key["secret"].as_str().unwrap().to_owned();
        let kid = key["id"].as_str().unwrap().to_owned();
        (uid, project, secret, kid)
    }

    /// Polls `GET /admin/requests?<query>` until it lists at least `n` records.
    async fn records(&self, query: &str, n: usize) -> Vec<Value> {
        let path = format!("/admin/requests?{query}");
        tokio::time::timeout(WAIT, async {
            loop {
                let a = self.admin("GET", &path, None).await;
                assert_eq!(a.status, 200, "{path}: {}", a.text);
                let rows = a.json["data"].as_array().unwrap().clone();
                if rows.len() >= n {
                    return rows;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{path}: fewer than {n} records within {WAIT:?}"))
    }

    /// No admin answer so far holds any of `secrets` (a new key's own answer may
    /// hold that key's secret, and only that).
    fn assert_no_leak(&self, secrets: &[&str]) {
        let bodies = self.bodies.lock().unwrap();
        assert!(!bodies.is_empty());
        for (may_hold_key, body) in bodies.iter() {
            for s in secrets {
                let allowed = *may_hold_key && s.starts_with("sy-");
                assert!(allowed || !body.contains(s), "an admin answer leaks {s:?}: {body}");
            }
            for field in ["\"hash\"", "\"ciphertext\"", "\"nonce\"", "\"api_key\""] {
                assert!(!body.contains(field), "an admin answer has {field}: {body}");
            }
        }
    }
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_owned()
}

async fn case_every_admin_route_needs_an_admin_key(db: TestDb) {
    let env = Env::start(&db, FULL).await;
    let (_, _, member_key, _) = env.user_with_key("member@example.com", json!({})).await;
    for (method, template) in ROUTES {
        let path = concrete(template);
        let body = json!({});
        let none = env.call(None, method, &path, Some(&body)).await;
        assert_eq!((none.status, none.code()), (401, "missing_api_key"), "{method} {path}");
        assert!(none.json["error"]["message"].is_string(), "OpenAI error shape: {}", none.text);
        let bad =
            env.call(Some("sy-not-a-real-key-000000000000"), method, &path, Some(&body)).await;
        assert_eq!((bad.status, bad.code()), (401, "invalid_api_key"), "{method} {path}");
        for key in [GATEWAY_KEY, member_key.as_str()] {
            let a = env.call(Some(key), method, &path, Some(&body)).await;
            assert_eq!(
                (a.status, a.code()),
                (403, "admin_required"),
                "{method} {path}: {}",
                a.text
            );
            assert_eq!(a.json["error"]["type"], "permission_error");
        }
    }
    // The admin gets through (and past auth, a missing target is a 404).
    env.expect(200, "GET", "/admin/users", None).await;
    let missing = env.admin("GET", "/admin/users/usr_missing", None).await;
    assert_eq!((missing.status, missing.code()), (404, "not_found"));
    let unknown = env.admin("GET", "/admin/nothing-here", None).await;
    assert_eq!((unknown.status, unknown.code()), (404, "not_found"));
    assert_eq!(env.openai.request_count() + env.anthropic.request_count(), 0);
}

async fn case_without_a_database_or_a_secret_the_api_says_so(db: TestDb) {
    let env = Env::start(&db, Opts { store: false, sealer: false }).await;
    // The OpenAPI document, and this instance's memory, need no database.
    let stored = |p: &&str| !p.ends_with("openapi.json") && !p.ends_with("destinations");
    for (method, template) in ROUTES.iter().filter(|(_, p)| stored(p)) {
        let a = env.admin(method, &concrete(template), Some(json!({}))).await;
        assert_eq!((a.status, a.code()), (503, "storage_disabled"), "{method} {template}");
    }
    // Authentication still comes first.
    let member = env.call(Some(GATEWAY_KEY), "GET", "/admin/users", None).await;
    assert_eq!(member.status, 403);
    env.expect(200, "GET", "/admin/openapi.json", None).await;
    env.expect(200, "GET", "/admin/destinations", None).await;
    drop(env);

    let env = Env::start(&db, Opts { store: true, sealer: false }).await;
    let user = env.expect(201, "POST", "/admin/users", Some(json!({"email": "a@b.c"}))).await;
    let body =
        json!({"owner_kind": "user", "owner_id": id(&user), "provider": "openai", "api_key": BYOK});
    let a = env.admin("PUT", "/admin/credentials", Some(body)).await;
    assert_eq!((a.status, a.code()), (503, "byok_disabled"), "{}", a.text);
    env.assert_no_leak(&[BYOK]);
}

async fn case_users_projects_and_keys(db: TestDb) {
    let env = Env::start(&db, FULL).await;
    // Users.
    let alice = env
        .expect(
            201,
            "POST",
            "/admin/users",
            Some(json!({"email": "Alice@Example.com", "name": "Alice"})),
        )
        .await;
    let uid = id(&alice);
    assert_eq!(alice["email"], "alice@example.com");
    assert_eq!(alice["role"], "member");
    assert_eq!(alice["disabled"], false);
    let primary = alice["primary_project_id"].as_str().unwrap().to_owned();
    let dup = env.admin("POST", "/admin/users", Some(json!({"email": "alice@example.com"}))).await;
    assert_eq!((dup.status, dup.code()), (409, "conflict"));
    for bad in [
        json!({"name": "no email"}),
        json!({"email": "x@y.z", "colour": "red"}),
        json!({"email": "nope"}),
    ] {
        let a = env.admin("POST", "/admin/users", Some(bad.clone())).await;
        assert_eq!((a.status, a.code()), (400, "invalid_request"), "{bad}: {}", a.text);
    }
    let listed = env.expect(200, "GET", "/admin/users", None).await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
    assert_eq!(listed["data"][0]["id"], uid.as_str());

    // Projects and membership.
    let research =
        env.expect(201, "POST", "/admin/projects", Some(json!({"name": "research"}))).await;
    let pid = id(&research);
    let dup = env.admin("POST", "/admin/projects", Some(json!({"name": "research"}))).await;
    assert_eq!((dup.status, dup.code()), (409, "conflict"));
    let other = env.expect(201, "POST", "/admin/projects", Some(json!({"name": "other"}))).await;
    let projects = env.expect(200, "GET", "/admin/projects", None).await;
    assert_eq!(projects["data"].as_array().unwrap().len(), 3, "{projects}");
    let member = json!({"user_id": uid});
    env.expect(200, "POST", &format!("/admin/projects/{pid}/members"), Some(member.clone())).await;
    let a = env.admin("POST", "/admin/projects/prj_missing/members", Some(member.clone())).await;
    assert_eq!((a.status, a.code()), (404, "not_found"));
    let a = env
        .admin("POST", &format!("/admin/projects/{pid}/members"), Some(json!({"user_id": "usr_x"})))
        .await;
    assert_eq!((a.status, a.code()), (404, "not_found"));
    let detail = env.expect(200, "GET", &format!("/admin/users/{uid}"), None).await;
    let mut names: Vec<&str> = detail["projects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["alice", "research"]);

    // Keys: bound to a project the user is in, never to one they are not.
    let a = env
        .admin("POST", "/admin/keys", Some(json!({"user_id": uid, "project_id": id(&other)})))
        .await;
    assert_eq!((a.status, a.code()), (400, "invalid_request"), "{}", a.text);
    let a = env.admin("POST", "/admin/keys", Some(json!({"user_id": "usr_missing"}))).await;
    assert_eq!((a.status, a.code()), (404, "not_found"));
    let a = env
        .admin(
            "POST",
            "/admin/keys",
            Some(json!({"user_id": uid, "expires_at": 1, "expires_in_days": 1})),
        )
        .await;
    assert_eq!((a.status, a.code()), (400, "invalid_request"));
    let body = json!({"user_id": uid, "project_id": pid, "label": "laptop", "expires_in_days": 30});
    let created = env.admin("POST", "/admin/keys", Some(body)).await;
    assert_eq!(created.status, 201, "{}", created.text);
    // The one answer with a secret must not be cached anywhere.
    assert_eq!(created.cache_control.as_deref(), Some("no-store"));
    let key = created.json;
    let secret = key["secret"].as_str().unwrap().to_owned();
    let kid = id(&key);
    assert!(secret.starts_with("sy-") && secret.len() > 20, "{secret}");
    assert_eq!(key["prefix"].as_str().unwrap(), &secret[..9]);
    assert_eq!(key["active"], true);
    let expires = key["expires_at"].as_i64().unwrap() - key["created_at"].as_i64().unwrap();
    assert!((expires - 30 * 86_400_000).abs() < 60_000, "{expires}");
    let keys = env.admin("GET", &format!("/admin/keys?user={uid}"), None).await;
    assert_eq!(keys.status, 200);
    assert_eq!(keys.json["data"].as_array().unwrap().len(), 1);
    assert_eq!(keys.json["data"][0]["id"], kid.as_str());
    assert!(keys.json["data"][0].get("secret").is_none(), "{}", keys.text);
    assert!(!keys.text.contains(&secret));
    let none = env.expect(200, "GET", "/admin/keys?user=usr_nobody", None).await;
    assert_eq!(none["data"], json!([]));

    // The key works, and its requests are attributed to the user and project.
    let ok = env.chat(&secret, "mock").await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    let rid = ok.request_id.clone().unwrap();
    let rows = env.records(&format!("user={uid}"), 1).await;
    assert_eq!(rows[0]["id"], rid.as_str());
    assert_eq!(rows[0]["user"], uid.as_str());
    assert_eq!(rows[0]["project"], pid.as_str());
    assert_eq!(rows[0]["key_prefix"], &secret[..9]);
    // Static keys show their scheme and at most a fifth of the rest.
    for (key, shown) in [(SHORT_STATIC, "sho"), (GATEWAY_KEY, "sk-gw-t")] {
        let ok = env.chat(key, "mock").await;
        assert_eq!(ok.status, 200, "{}", ok.text);
        let row = env.record(ok.request_id.as_deref().unwrap()).await;
        assert_eq!(row["key_prefix"], shown, "{row}");
    }

    // Disabling the user, and changing their role, take effect at once.
    let patched = env
        .expect(200, "PATCH", &format!("/admin/users/{uid}"), Some(json!({"disabled": true})))
        .await;
    assert_eq!(patched["disabled"], true);
    assert_eq!(env.chat(&secret, "mock").await.status, 401);
    env.expect(200, "PATCH", &format!("/admin/users/{uid}"), Some(json!({"disabled": false})))
        .await;
    assert_eq!(env.chat(&secret, "mock").await.status, 200);
    assert_eq!(env.call(Some(&secret), "GET", "/admin/users", None).await.status, 403);
    let patched = env
        .expect(200, "PATCH", &format!("/admin/users/{uid}"), Some(json!({"role": "admin"})))
        .await;
    assert_eq!(patched["role"], "admin");
    assert_eq!(env.call(Some(&secret), "GET", "/admin/users", None).await.status, 200);
    env.expect(200, "PATCH", &format!("/admin/users/{uid}"), Some(json!({"role": "viewer"}))).await;
    assert_eq!(env.call(Some(&secret), "GET", "/admin/users", None).await.status, 403);
    let a = env.admin("PATCH", &format!("/admin/users/{uid}"), Some(json!({}))).await;
    assert_eq!((a.status, a.code()), (400, "invalid_request"));
    let a = env.admin("PATCH", "/admin/users/usr_missing", Some(json!({"disabled": true}))).await;
    assert_eq!((a.status, a.code()), (404, "not_found"));

    // Revocation is immediate.
    let revoked = env.expect(200, "DELETE", &format!("/admin/keys/{kid}"), None).await;
    assert_eq!(revoked["active"], false);
    assert!(revoked["revoked_at"].as_i64().is_some());
    let refused = env.chat(&secret, "mock").await;
    assert_eq!((refused.status, refused.code()), (401, "invalid_api_key"), "{}", refused.text);
    let a = env.admin("DELETE", "/admin/keys/key_missing", None).await;
    assert_eq!((a.status, a.code()), (404, "not_found"));
    let keys = env.expect(200, "GET", "/admin/keys", None).await;
    assert_eq!(keys["data"][0]["active"], false);

    env.assert_no_leak(&[&secret, ADMIN]);
    let _ = primary;
}

async fn case_a_key_limited_to_some_models_refuses_others(db: TestDb) {
    let env = Env::start(&db, FULL).await;
    let (_, _, secret, _) =
        env.user_with_key("limited@example.com", json!({"allowed_models": ["mock*"]})).await;
    assert_eq!(env.chat(&secret, "mock").await.status, 200);
    let denied = env.chat(&secret, "m-openai").await;
    assert_eq!((denied.status, denied.code()), (403, "authz_denied"), "{}", denied.text);
    assert_eq!(env.openai.request_count(), 0);
    let (_, _, open, _) = env.user_with_key("open@example.com", json!({})).await;
    assert_eq!(env.chat(&open, "m-openai").await.status, 200);

    // Model discovery shows the key only what it may call, in every shape, and
    // a forbidden model is as unknown as one that does not exist.
    let limited = env.listed(&secret).await;
    assert!(limited.contains(&"mock-echo".to_owned()), "{limited:?}");
    assert!(limited.iter().all(|m| m.starts_with("mock")), "{limited:?}");
    assert!(env.listed(&open).await.contains(&"m-openai".to_owned()));
    let gemini = env.call(Some(&secret), "GET", "/v1beta/models", None).await;
    assert_eq!(gemini.status, 200, "{}", gemini.text);
    let names: Vec<&str> = gemini.json["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"models/mock-echo") && names.iter().all(|n| n.starts_with("models/mock")),
        "{names:?}"
    );
    assert_eq!(env.call(Some(&secret), "GET", "/v1/models/mock", None).await.status, 200);
    for base in ["/v1/models", "/v1beta/models"] {
        let unknown = env.call(Some(&secret), "GET", &format!("{base}/no-such-model"), None).await;
        let forbidden = env.call(Some(&secret), "GET", &format!("{base}/m-openai"), None).await;
        assert_eq!(forbidden.status, 404, "{base}: {}", forbidden.text);
        assert_eq!(
            forbidden.text.replace("m-openai", "X"),
            unknown.text.replace("no-such-model", "X"),
            "{base}: a forbidden model answers like an unknown one"
        );
    }
    assert_eq!(env.call(Some(&open), "GET", "/v1/models/m-openai", None).await.status, 200);

    let a =
        env.admin("POST", "/admin/keys", Some(json!({"user_id": "x", "allowed_models": []}))).await;
    assert_eq!((a.status, a.code()), (400, "invalid_request"));
}

/// A key's own rate limits: given at creation, listed with the key, replaced or
/// cleared by `PATCH /admin/keys/{id}` with immediate effect on this instance;
/// zero, negative and unknown limits are refused naming the field.
async fn case_budgets_are_reported_for_this_period(db: TestDb) {
    let options = Options {
        top_level: "budgets:\n  - { scope: gateway, limit_usd: 5, period: day, max_reservation_usd: 0.5 }\n  \
                    - { scope: \"project:nobody\", limit_usd: 2, period: month, mode: warn }\n"
            .into(),
        ..Options::default()
    };
    let env = Env::start_with(&db, FULL, &options).await;
    // Nothing counted yet this period: spent by the records (none).
    let report = env.expect(200, "GET", "/admin/budgets", None).await;
    let rows = report["data"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (&rows[0]["scope"], &rows[0]["period"], &rows[0]["mode"], &rows[0]["limit_usd"]),
        (&json!("gateway"), &json!("day"), &json!("enforce"), &json!(5.0))
    );
    assert_eq!((&rows[0]["source"], &rows[0]["spent_usd"]), (&json!("records"), &json!(0.0)));
    assert!(rows[0]["window"].as_str().unwrap().starts_with('d'));
    assert_eq!((&rows[1]["scope"], &rows[1]["mode"]), (&json!("project:nobody"), &json!("warn")));
    assert!(rows[1]["window"].as_str().unwrap().starts_with('m'));
    // A request (the mock is unpriced: it keeps its $0.50 reservation as
    // uncertain spend) puts the gateway's budget in the live counters.
    let (_, _, secret, _) = env.user_with_key("spender@example.com", json!({})).await;
    assert_eq!(env.chat(&secret, "mock-echo").await.status, 200);
    let settled = async {
        loop {
            let report = env.expect(200, "GET", "/admin/budgets", None).await;
            let row = report["data"][0].clone();
            if row["uncertain_usd"] == json!(0.5) {
                return row;
            }
            tokio::task::yield_now().await;
        }
    };
    let row = tokio::time::timeout(WAIT, settled).await.expect("settled as uncertain");
    assert_eq!((&row["source"], &row["reserved_usd"]), (&json!("counters"), &json!(0.0)));
}

async fn case_keys_and_projects_pin_their_routing_policy(db: TestDb) {
    // The route tries the dearer anthropic first ($3/$15 a million), openai
    // ($1/$2) after.
    let options = Options {
        routes: "routes:\n  - name: Pair\n    match: m-anthropic\n    provider: anthropic\n    fallbacks: [{ provider: openai, model: m-openai }]\n".into(),
        ..Options::default()
    };
    let env = Env::start_with(&db, FULL, &options).await;
    let (_, project, secret, kid) = env.user_with_key("pinned@example.com", json!({})).await;
    let served = |a: &Answer| a.json["model"].as_str().map(str::to_owned);
    let first = env.chat(&secret, "m-anthropic").await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(env.anthropic.request_count(), 1);

    // The key pins the cost strategy: the cheaper deployment first.
    let key = env
        .expect(
            200,
            "PATCH",
            &format!("/admin/keys/{kid}"),
            Some(json!({"routing": {"strategy": "cost"}})),
        )
        .await;
    assert_eq!(key["routing"], json!({"strategy": "cost"}));
    let a = env.chat(&secret, "m-anthropic").await;
    assert_eq!((a.status, env.openai.request_count(), env.anthropic.request_count()), (200, 1, 1));
    let record = env.record(a.request_id.as_deref().unwrap()).await;
    let descriptor = record["descriptor"].as_str().unwrap();
    assert!(
        descriptor.contains(&format!("pinned:key:{kid}")) && descriptor.contains("strategy:cost"),
        "{descriptor}"
    );

    // Cleared, the project's ceiling ($5 a million, 0.005 a thousand) leaves
    // only openai; the route's order comes back otherwise.
    env.expect(200, "PATCH", &format!("/admin/keys/{kid}"), Some(json!({"routing": null}))).await;
    let p = env
        .expect(
            200,
            "PATCH",
            &format!("/admin/projects/{project}"),
            Some(json!({"routing": {"max_cost_per_1k_tokens": 0.005}})),
        )
        .await;
    assert_eq!(p["routing"]["max_cost_per_1k_tokens"], 0.005);
    let a = env.chat(&secret, "m-anthropic").await;
    assert_eq!((a.status, env.openai.request_count(), env.anthropic.request_count()), (200, 2, 1));
    assert!(served(&a).is_some());
    // A ceiling nothing meets is refused by name, nothing sent.
    env.expect(
        200,
        "PATCH",
        &format!("/admin/projects/{project}"),
        Some(json!({"routing": {"max_cost_per_1k_tokens": 0.0001}})),
    )
    .await;
    let a = env.chat(&secret, "m-anthropic").await;
    assert_eq!((a.status, a.code()), (400, "no_candidate"), "{}", a.text);
    assert!(a.text.contains("max_cost_per_1k_tokens 0.0001"), "{}", a.text);
    assert_eq!(env.openai.request_count() + env.anthropic.request_count(), 3);

    // Checked against the catalog when set, each problem named.
    let bad = json!({"routing": {"strategy": "adaptive", "adaptive": {"preset": "quality",
        "quality": {"profiles": [{"target": "nowhere/x", "score": 2}]}}}});
    let a = env.admin("PATCH", &format!("/admin/keys/{kid}"), Some(bad)).await;
    assert_eq!((a.status, a.code()), (400, "invalid_request"), "{}", a.text);
    assert_eq!(a.json["error"]["param"], "routing");
    assert!(
        a.text.contains("`nowhere/x` is no catalog model") && a.text.contains("2 is not in [0, 1]"),
        "{}",
        a.text
    );
    let a = env.admin("PATCH", "/admin/projects/prj_nope", Some(json!({"routing": null}))).await;
    assert_eq!(a.status, 404);
    let a = env.admin("PATCH", &format!("/admin/projects/{project}"), Some(json!({}))).await;
    assert_eq!(a.status, 400);
}

async fn case_key_limits_are_set_at_creation_and_changed_later(db: TestDb) {
    let env = Env::start(&db, FULL).await;
    let (uid, _, secret, kid) = env
        .user_with_key("limited@example.com", json!({"limits": {"rpm": 2, "concurrent": 1}}))
        .await;
    let listed = env.expect(200, "GET", &format!("/admin/keys?user={uid}"), None).await;
    assert_eq!(listed["data"][0]["limits"], json!({"rpm": 2, "concurrent": 1}));
    let (_, _, _, plain) = env.user_with_key("plain@example.com", json!({})).await;
    let all = env.expect(200, "GET", "/admin/keys", None).await;
    let plain_row = all["data"].as_array().unwrap().iter().find(|k| id(k) == plain).unwrap();
    assert_eq!(plain_row["limits"], Value::Null);

    // Refused at creation, naming the field; no key is made.
    for (bad, field) in [
        (json!({"rpm": 0}), "limits.rpm"),
        (json!({"tpm": 10, "concurrent": 0}), "limits.concurrent"),
        (json!({"rph": 5}), "rph"),
        (json!({"rpm": -1}), "-1"),
    ] {
        let a =
            env.admin("POST", "/admin/keys", Some(json!({"user_id": uid, "limits": bad}))).await;
        assert_eq!((a.status, a.code()), (400, "invalid_request"), "{bad}: {}", a.text);
        assert!(a.json["error"]["message"].as_str().unwrap().contains(field), "{}", a.text);
    }
    let a =
        env.admin("POST", "/admin/keys", Some(json!({"user_id": uid, "limits": {"rpm": 0}}))).await;
    assert_eq!(a.json["error"]["param"], "limits.rpm", "{}", a.text);
    let keys = env.expect(200, "GET", &format!("/admin/keys?user={uid}"), None).await;
    assert_eq!(keys["data"].as_array().unwrap().len(), 1);

    // rpm 2: the third request within the minute is refused.
    for _ in 0..2 {
        assert_eq!(env.chat(&secret, "mock").await.status, 200);
    }
    let refused = env.chat(&secret, "mock").await;
    assert_eq!((refused.status, refused.code()), (429, "rate_limited"), "{}", refused.text);

    // PATCH replaces the whole set, at once on this instance (the key cache
    // here lives 600 s): a token limit alone now, so requests pass again.
    let path = format!("/admin/keys/{kid}");
    let changed = env.expect(200, "PATCH", &path, Some(json!({"limits": {"tpm": 100000}}))).await;
    assert_eq!(changed["limits"], json!({"tpm": 100000}));
    assert_eq!(changed["id"], kid.as_str());
    let served = env.chat(&secret, "mock").await;
    assert_eq!(served.status, 200, "{}", served.text);
    // Refusals change nothing.
    for (bad, field) in [
        (json!({"limits": {"tpm": 0}}), "limits.tpm"),
        (json!({"limits": {"burst": 3}}), "burst"),
        (json!({"limits": {"rpm": 1}, "label": "x"}), "label"),
        (json!({}), "limits"),
    ] {
        let a = env.admin("PATCH", &path, Some(bad.clone())).await;
        assert_eq!((a.status, a.code()), (400, "invalid_request"), "{bad}: {}", a.text);
        assert!(a.json["error"]["message"].as_str().unwrap().contains(field), "{}", a.text);
    }
    let key = env.expect(200, "GET", &format!("/admin/keys?user={uid}"), None).await;
    assert_eq!(key["data"][0]["limits"], json!({"tpm": 100000}));
    let a = env.admin("PATCH", "/admin/keys/key_missing", Some(json!({"limits": null}))).await;
    assert_eq!((a.status, a.code()), (404, "not_found"));

    // null clears them; so does an empty object.
    let cleared = env.expect(200, "PATCH", &path, Some(json!({"limits": null}))).await;
    assert_eq!(cleared["limits"], Value::Null);
    env.expect(200, "PATCH", &path, Some(json!({"limits": {"rpm": 1}}))).await;
    let cleared = env.expect(200, "PATCH", &path, Some(json!({"limits": {}}))).await;
    assert_eq!(cleared["limits"], Value::Null);
    let stored = db.store().key(&kid).await.unwrap().unwrap();
    assert_eq!(stored.limits, None);
    env.assert_no_leak(&[&secret]);
}

async fn case_stored_rules_apply_to_the_next_request(db: TestDb) {
    let env = Env::start(&db, FULL).await;
    let (uid, _, secret, _) = env.user_with_key("rules@example.com", json!({})).await;
    let (_, _, bystander, _) = env.user_with_key("bystander@example.com", json!({})).await;
    assert_eq!(env.chat(&secret, "mock").await.status, 200);

    let rule = json!({
        "name": "no-mock", "effect": "deny", "pattern": "mock*",
        "subject": {"kind": "any"}, "reason": "mock is closed",
    });
    let created = env.expect(201, "POST", "/admin/rules", Some(rule.clone())).await;
    assert!(created["id"].as_str().unwrap().starts_with("rul_"));
    let denied = env.chat(&secret, "mock").await;
    assert_eq!(denied.status, 403, "{}", denied.text);
    assert_eq!(denied.code(), "authz_denied");
    assert_eq!(denied.json["error"]["message"], "authz denied [no-mock]: mock is closed");
    // The listing follows the rules a request meets.
    let listed = env.listed(&secret).await;
    assert!(!listed.iter().any(|m| m.starts_with("mock")), "{listed:?}");
    assert!(listed.contains(&"m-openai".to_owned()), "{listed:?}");
    let one = env.call(Some(&secret), "GET", "/v1/models/mock", None).await;
    assert_eq!((one.status, one.code()), (404, "model_not_found"), "{}", one.text);
    let listed = env.expect(200, "GET", "/admin/rules", None).await;
    assert_eq!(listed["data"][0]["name"], "no-mock");
    let dup = env.admin("POST", "/admin/rules", Some(rule)).await;
    assert_eq!((dup.status, dup.code()), (409, "conflict"));
    let bad = env.admin("POST", "/admin/rules", Some(json!({"name": "half"}))).await;
    assert_eq!((bad.status, bad.code()), (400, "invalid_request"));
    let misspelt = json!({
        "name": "typo", "effect": "deny", "pattern": "*",
        "subject": {"kind": "any"}, "reason": "r", "priorty": 5,
    });
    let bad = env.admin("POST", "/admin/rules", Some(misspelt)).await;
    assert_eq!((bad.status, bad.code()), (400, "invalid_request"), "{}", bad.text);
    env.expect(200, "DELETE", "/admin/rules/no-mock", None).await;
    assert_eq!(env.chat(&secret, "mock").await.status, 200);
    assert!(env.listed(&secret).await.contains(&"mock-echo".to_owned()));
    let gone = env.admin("DELETE", "/admin/rules/no-mock", None).await;
    assert_eq!((gone.status, gone.code()), (404, "not_found"));

    // A rule for a group applies once the user joins it.
    let group = env.expect(201, "POST", "/admin/groups", Some(json!({"name": "blocked"}))).await;
    let dup = env.admin("POST", "/admin/groups", Some(json!({"name": "blocked"}))).await;
    assert_eq!((dup.status, dup.code()), (409, "conflict"));
    let groups = env.expect(200, "GET", "/admin/groups", None).await;
    assert_eq!(groups["data"][0]["name"], "blocked");
    let rule = json!({
        "name": "blocked-group", "effect": "deny", "pattern": "*",
        "subject": {"kind": "group", "value": "blocked"}, "reason": "on the list", "priority": 5,
    });
    let created = env.expect(201, "POST", "/admin/rules", Some(rule)).await;
    assert_eq!(env.chat(&secret, "mock").await.status, 200);
    let gid = id(&group);
    env.expect(200, "POST", &format!("/admin/groups/{gid}/members"), Some(json!({"user_id": uid})))
        .await;
    let a =
        env.admin("POST", "/admin/groups/grp_missing/members", Some(json!({"user_id": uid}))).await;
    assert_eq!((a.status, a.code()), (404, "not_found"));
    let denied = env.chat(&secret, "mock").await;
    assert_eq!(denied.json["error"]["message"], "authz denied [blocked-group]: on the list");
    assert_eq!(env.chat(&bystander, "mock").await.status, 200);
    let detail = env.expect(200, "GET", &format!("/admin/users/{uid}"), None).await;
    assert_eq!(detail["groups"], json!(["blocked"]));
    // Deleting by id works too.
    env.expect(200, "DELETE", &format!("/admin/rules/{}", id(&created)), None).await;
    assert_eq!(env.chat(&secret, "mock").await.status, 200);
    let listed = env.expect(200, "GET", "/admin/rules", None).await;
    assert_eq!(listed["data"], json!([]));
}

async fn case_provider_keys_are_write_only_and_used_upstream(db: TestDb) {
    let env = Env::start(&db, FULL).await;
    let (uid, project, secret, _) = env.user_with_key("byok@example.com", json!({})).await;
    let (_, _, plain, _) = env.user_with_key("plain@example.com", json!({})).await;
    let put = |api_key: &str| json!({"owner_kind": "user", "owner_id": uid, "provider": "openai", "api_key": api_key});

    let info = env.expect(200, "PUT", "/admin/credentials", Some(put(BYOK))).await;
    assert!(info["fingerprint"].as_str().unwrap().starts_with("fp-"), "{info}");
    assert_eq!(info["key_id"], "k1");
    assert_eq!(info["provider"], "openai");
    assert_eq!(info["owner_kind"], "user");
    assert_eq!(info["owner_id"], uid.as_str());

    let auth_of_last = |fake: &FakeUpstream, header: &str| {
        fake.received().last().unwrap().header(header).unwrap().to_owned()
    };
    assert_eq!(env.chat(&secret, "m-openai").await.status, 200);
    assert_eq!(auth_of_last(&env.openai, "authorization"), format!("Bearer {BYOK}"));
    assert_eq!(env.chat(&plain, "m-openai").await.status, 200);
    assert_eq!(auth_of_last(&env.openai, "authorization"), format!("Bearer {OPENAI_KEY}"));

    let listed = env
        .expect(200, "GET", &format!("/admin/credentials?owner_kind=user&owner_id={uid}"), None)
        .await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
    assert_eq!(listed["data"][0]["fingerprint"], info["fingerprint"]);
    let all = env.expect(200, "GET", "/admin/credentials", None).await;
    assert_eq!(all["data"].as_array().unwrap().len(), 1);
    let a = env.admin("GET", "/admin/credentials?owner_kind=user", None).await;
    assert_eq!((a.status, a.code()), (400, "invalid_request"));

    // Refusals.
    let mut bad = put(BYOK);
    bad["provider"] = json!("no-such-provider");
    assert_eq!(env.admin("PUT", "/admin/credentials", Some(bad)).await.status, 400);
    let mut bad = put(BYOK);
    bad["owner_id"] = json!("usr_missing");
    assert_eq!(env.admin("PUT", "/admin/credentials", Some(bad)).await.status, 404);
    let mut bad = put(BYOK);
    bad["owner_kind"] = json!("team");
    let a = env.admin("PUT", "/admin/credentials", Some(bad)).await;
    assert_eq!((a.status, a.code()), (400, "invalid_request"));
    let a = env.admin("PUT", "/admin/credentials", Some(put(""))).await;
    assert_eq!((a.status, a.code()), (400, "invalid_request"));

    // Replacing the key takes effect at once.
    let replaced = env.expect(200, "PUT", "/admin/credentials", Some(put(BYOK_2))).await;
    assert_ne!(replaced["fingerprint"], info["fingerprint"]);
    assert_eq!(env.chat(&secret, "m-openai").await.status, 200);
    assert_eq!(auth_of_last(&env.openai, "authorization"), format!("Bearer {BYOK_2}"));

    // A project's key serves its members for providers they have no key for.
    let body = json!({"owner_kind": "project", "owner_id": project, "provider": "anthropic", "api_key": BYOK_PROJECT});
    env.expect(200, "PUT", "/admin/credentials", Some(body)).await;
    assert_eq!(env.chat(&secret, "m-anthropic").await.status, 200);
    assert_eq!(auth_of_last(&env.anthropic, "x-api-key"), BYOK_PROJECT);
    assert_eq!(env.chat(&plain, "m-anthropic").await.status, 200);
    assert_eq!(auth_of_last(&env.anthropic, "x-api-key"), ANTHROPIC_KEY);
    // A caller's own key for a signed wire is a Bedrock API key: a bearer
    // token, where the platform signs with SigV4.
    let body = json!({"owner_kind": "user", "owner_id": uid, "provider": "bedrock", "api_key": switchyard_testkit::bedrock::API_KEY});
    env.expect(200, "PUT", "/admin/credentials", Some(body)).await;
    assert_eq!(env.chat(&secret, "m-bedrock").await.status, 200);
    let api_key = format!("Bearer {}", switchyard_testkit::bedrock::API_KEY);
    assert_eq!(auth_of_last(&env.bedrock, "authorization"), api_key);
    assert!(env.bedrock.received().last().unwrap().header("x-amz-date").is_none());
    assert_eq!(env.chat(&plain, "m-bedrock").await.status, 200);
    assert!(auth_of_last(&env.bedrock, "authorization").starts_with("AWS4-HMAC-SHA256 "));
    // Token counts are sent with the caller's own keys too.
    let count = json!({"model": "m-anthropic", "messages": [{"role": "user", "content": "hi"}]});
    let a = env.call(Some(&secret), "POST", "/v1/messages/count_tokens", Some(&count)).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(
        a.json["input_tokens"],
        canned::counted_tokens(&env.anthropic.received().last().unwrap().body)
    );
    assert_eq!(auth_of_last(&env.anthropic, "x-api-key"), BYOK_PROJECT);
    let a = env.call(Some(&plain), "POST", "/v1/messages/count_tokens", Some(&count)).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(auth_of_last(&env.anthropic, "x-api-key"), ANTHROPIC_KEY);

    // Deleting it brings the platform key back.
    let path = format!("/admin/credentials/user/{uid}/openai");
    env.expect(200, "DELETE", &path, None).await;
    assert_eq!(env.chat(&secret, "m-openai").await.status, 200);
    assert_eq!(auth_of_last(&env.openai, "authorization"), format!("Bearer {OPENAI_KEY}"));
    let a = env.admin("DELETE", &path, None).await;
    assert_eq!((a.status, a.code()), (404, "not_found"));
    let a = env.admin("DELETE", &format!("/admin/credentials/team/{uid}/openai"), None).await;
    assert_eq!((a.status, a.code()), (400, "invalid_request"));

    // The records name credentials by fingerprint only.
    let rows = env.records(&format!("user={uid}"), 4).await;
    assert!(rows.iter().all(|r| r["user"] == uid.as_str()));
    env.assert_no_leak(&[BYOK, BYOK_2, BYOK_PROJECT, OPENAI_KEY, ANTHROPIC_KEY, &secret, &plain]);
}

/// A model served only by a provider without a platform key is listed to the
/// callers who brought their own key for it (theirs or their project's), and to
/// nobody else.
async fn case_model_list_shows_what_the_callers_own_keys_reach(db: TestDb) {
    let options = Options {
        providers_extra: r#"  keyless: { wire: openai-chat, endpoint: "{openai}/v1", credentials: { byok_only: true } }
"#
        .to_owned(),
        extra_models: "  - id: m-keyless\n    deployments: [{ provider: keyless, model: up-keyless }]\n"
            .to_owned(),
        ..Options::default()
    };
    let env = Env::start_with(&db, FULL, &options).await;
    let (uid, _, own, _) = env.user_with_key("own@example.com", json!({})).await;
    let (_, project, member, _) = env.user_with_key("member@example.com", json!({})).await;
    let (_, _, plain, _) = env.user_with_key("plain@example.com", json!({})).await;
    for key in [&own, &member, &plain, GATEWAY_KEY] {
        let ids = env.listed(key).await;
        assert!(!ids.iter().any(|id| id == "m-keyless"), "{ids:?}");
        assert!(ids.iter().any(|id| id == "m-openai") && ids.iter().any(|id| id == "mock-echo"));
    }

    let user_key =
        json!({"owner_kind": "user", "owner_id": uid, "provider": "keyless", "api_key": BYOK});
    env.expect(200, "PUT", "/admin/credentials", Some(user_key)).await;
    let project_key = json!({"owner_kind": "project", "owner_id": project, "provider": "keyless", "api_key": BYOK_PROJECT});
    env.expect(200, "PUT", "/admin/credentials", Some(project_key)).await;
    for key in [&own, &member] {
        let ids = env.listed(key).await;
        assert!(ids.iter().any(|id| id == "m-keyless"), "{ids:?}");
        assert!(ids.iter().any(|id| id == "m-openai") && ids.iter().any(|id| id == "mock-echo"));
    }
    for key in [&plain, GATEWAY_KEY] {
        let ids = env.listed(key).await;
        assert!(!ids.iter().any(|id| id == "m-keyless"), "{ids:?}");
    }
    // What is listed is served, with the caller's key.
    assert_eq!(env.chat(&own, "m-keyless").await.status, 200);
    let last = env.openai.received().last().unwrap().header("authorization").unwrap().to_owned();
    assert_eq!(last, format!("Bearer {BYOK}"));
    assert_eq!(env.chat(&plain, "m-keyless").await.status, 503);
}

/// Log lines written while a test runs, at trace level (the test runtime runs
/// the server's tasks on the test's own thread).
#[derive(Clone, Default)]
struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An upstream that quotes the key it was sent, in error bodies (400 and 500) and
/// in an error event after a stream's first content: a user's key, a project's
/// key and a platform key, streamed and not, on the fast path and translated.
/// None of them reaches the client, the logs, the records or the admin API.
async fn case_provider_keys_never_reach_clients_logs_or_records(db: TestDb) {
    let logs = LogBuffer::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter("trace")
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);

    let env = Env::start(&db, FULL).await;
    let (uid, project, secret, _) = env.user_with_key("owner@example.com", json!({})).await;
    let (plain_uid, _, plain, _) = env.user_with_key("plain@example.com", json!({})).await;
    let user_key =
        json!({"owner_kind": "user", "owner_id": uid, "provider": "openai", "api_key": BYOK});
    env.expect(200, "PUT", "/admin/credentials", Some(user_key)).await;
    let project_key = json!({"owner_kind": "project", "owner_id": project, "provider": "anthropic", "api_key": BYOK_PROJECT});
    env.expect(200, "PUT", "/admin/credentials", Some(project_key)).await;

    let chat = |model: &str, stream: bool| json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": "hi"}]});
    let messages = |model: &str, stream: bool| json!({"model": model, "stream": stream, "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]});
    // Anthropic's stream: content first, then an error event quoting the key.
    let broken_after_content = |key: &str| {
        let frame = |event: &str, data: Value| {
            canned::sse_frame(Vendor::Anthropic, event, &data.to_string())
        };
        Reply::sse(vec![
            frame(
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_01", "type": "message", "role": "assistant", "model": "up-anthropic", "content": [], "stop_reason": null, "usage": {"input_tokens": 3, "output_tokens": 1}}}),
            ),
            frame(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            frame(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "partial"}}),
            ),
            frame(
                "error",
                json!({"type": "error", "error": {"type": "api_error", "message": format!("key {key} was revoked mid-stream")}}),
            ),
        ])
    };

    let mut seen = String::new();
    let mut cases: Vec<(&str, &str, &str, Value, Reply)> = Vec::new();
    for stream in [false, true] {
        for status in [400, 500] {
            // The user's own key, on the fast path (chat → OpenAI) and translated.
            let msg = format!("request rejected for key {BYOK}");
            cases.push((
                &secret,
                "/v1/chat/completions",
                "openai",
                chat("m-openai", stream),
                Reply::error(status, msg.clone()),
            ));
            cases.push((
                &secret,
                "/v1/messages",
                "openai",
                messages("m-openai", stream),
                Reply::error(status, msg),
            ));
            // The project's key, on the fast path (messages → Anthropic) and translated.
            let msg = format!("invalid x-api-key {BYOK_PROJECT}");
            cases.push((
                &secret,
                "/v1/messages",
                "anthropic",
                messages("m-anthropic", stream),
                Reply::error(status, msg.clone()),
            ));
            cases.push((
                &secret,
                "/v1/chat/completions",
                "anthropic",
                chat("m-anthropic", stream),
                Reply::error(status, msg),
            ));
            // A platform key.
            let msg = format!("bad key {OPENAI_KEY}");
            cases.push((
                &plain,
                "/v1/chat/completions",
                "openai",
                chat("m-openai", stream),
                Reply::error(status, msg),
            ));
        }
    }
    for path in ["/v1/messages", "/v1/chat/completions"] {
        let body = if path == "/v1/messages" {
            messages("m-anthropic", true)
        } else {
            chat("m-anthropic", true)
        };
        cases.push((&secret, path, "anthropic", body.clone(), broken_after_content(BYOK_PROJECT)));
        cases.push((&plain, path, "anthropic", body, broken_after_content(ANTHROPIC_KEY)));
    }
    let n = cases.len();
    for (key, path, provider, body, reply) in cases {
        let fake = if provider == "openai" { &env.openai } else { &env.anthropic };
        fake.push(reply);
        let a = env.call(Some(key), "POST", path, Some(&body)).await;
        assert!(
            a.status >= 400 || a.text.contains("[redacted]"),
            "{path} {provider}: {} {}",
            a.status,
            a.text
        );
        assert!(
            a.text.contains("[redacted]"),
            "{path} {provider}: the quoted key was replaced: {}",
            a.text
        );
        seen.push_str(&a.text);
    }
    let mut rows = env.records(&format!("user={uid}"), n - 6).await;
    rows.extend(env.records(&format!("user={plain_uid}"), 6).await);
    for row in &rows {
        let rid = row["id"].as_str().unwrap();
        let detail = env.expect(200, "GET", &format!("/admin/requests/{rid}"), None).await;
        seen.push_str(&detail.to_string());
    }
    seen.push_str(&serde_json::to_string(&rows).unwrap());
    let logged = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    assert!(logged.contains("attempt failed"), "the trace-level log was captured");
    seen.push_str(&logged);
    for key in [BYOK, BYOK_PROJECT, OPENAI_KEY, ANTHROPIC_KEY] {
        assert!(!seen.contains(key), "{key} leaked");
        // Nor any long piece of it.
        assert!(!seen.contains(&key[..key.len() - 4]), "part of {key} leaked");
    }
    env.assert_no_leak(&[BYOK, BYOK_PROJECT, OPENAI_KEY, ANTHROPIC_KEY]);
}

/// Users write project names (and emails) where the gateway used to want ids: the
/// project header, per-project chains and access rules in the file all take a
/// project's name or id, and a user's email or id.
async fn case_projects_and_users_are_named_by_name_or_id_everywhere(db: TestDb) {
    let options = Options {
        routes: r#"
routes:
  - name: per-team
    match: "m-chain"
    provider: openai
    by_scope:
      dimension: project
      unmapped: shared
      chains:
        storefront: { provider: anthropic }
"#
        .into(),
        rules: r#"
access_rules:
  - { name: lab-no-gemini, effect: deny, pattern: "m-gemini", project: research-lab, reason: "not for the lab" }
  - { name: bob-no-openai, effect: deny, pattern: "m-openai", user: Bob@Example.com, reason: "not for bob" }
"#
        .into(),
        ..Options::default()
    };
    let env = Env::start_with(&db, FULL, &options).await;
    let (uid, _, member, _) = env.user_with_key("ann@example.com", json!({})).await;
    let (_, _, outsider, _) = env.user_with_key("bob@example.com", json!({})).await;
    let store =
        env.expect(201, "POST", "/admin/projects", Some(json!({"name": "storefront"}))).await;
    let lab =
        env.expect(201, "POST", "/admin/projects", Some(json!({"name": "research-lab"}))).await;
    for p in [&store, &lab] {
        let path = format!("/admin/projects/{}/members", id(p));
        env.expect(200, "POST", &path, Some(json!({"user_id": uid}))).await;
    }
    let chat = |key: &str, model: &str, project: Option<&str>| {
        let mut req = env
            .client
            .post(format!("{}/v1/chat/completions", env.base))
            .bearer_auth(key)
            .header("content-type", "application/json")
            .body(
                json!({"model": model, "messages": [{"role": "user", "content": "hi"}]})
                    .to_string(),
            );
        if let Some(p) = project {
            req = req.header("x-switchyard-project", p);
        }
        async move { tokio::time::timeout(WAIT, req.send()).await.unwrap().unwrap() }
    };
    let header = |r: &reqwest::Response, name: &str| {
        r.headers().get(name).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
    };

    // The header names the project by name or by id; the chain keyed by its name serves it.
    for named in ["storefront", store["id"].as_str().unwrap()] {
        let r = chat(&member, "m-chain", Some(named)).await;
        assert_eq!(r.status(), 200, "{named}");
        assert_eq!(header(&r, "x-gateway-provider"), "anthropic", "{named}");
        assert!(header(&r, "x-gateway-route").contains("scope:project=storefront"), "{named}");
    }
    // Without the header: the primary project, whose chain is the shared one.
    let r = chat(&member, "m-chain", None).await;
    assert_eq!(header(&r, "x-gateway-provider"), "openai");
    // A project the caller is not a member of, by name or id, is refused.
    for named in ["storefront", store["id"].as_str().unwrap(), "no-such-project"] {
        let r = chat(&outsider, "m-chain", Some(named)).await;
        assert_eq!(r.status(), 403, "{named}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], "project_forbidden", "{v}");
    }
    // Records carry the project's id.
    let rows = env.records(&format!("user={uid}"), 3).await;
    let attributed: Vec<&str> = rows.iter().filter_map(|r| r["project"].as_str()).collect();
    assert_eq!(
        attributed.iter().filter(|p| **p == store["id"].as_str().unwrap()).count(),
        2,
        "{rows:?}"
    );

    // Rules in the file name the project by name and the user by email.
    let r = chat(&member, "m-gemini", None).await;
    assert_eq!(r.status(), 403, "a member of research-lab");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["message"], "authz denied [lab-no-gemini]: not for the lab");
    assert_eq!(chat(&outsider, "m-gemini", None).await.status(), 200);
    let r = chat(&outsider, "m-openai", None).await;
    assert_eq!(r.status(), 403, "bob by email");
    assert_eq!(chat(&member, "m-openai", None).await.status(), 200);
}

async fn case_usage_and_requests_report_what_was_served(db: TestDb) {
    let env = Env::start(&db, FULL).await;
    let (a_uid, a_project, a_key, _) = env.user_with_key("ann@example.com", json!({})).await;
    let (b_uid, _, b_key, _) = env.user_with_key("bob@example.com", json!({})).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let r = env.chat(&a_key, "mock").await;
        assert_eq!(r.status, 200, "{}", r.text);
        ids.push(r.request_id.unwrap());
    }
    assert_eq!(env.chat(&b_key, "m-openai").await.status, 200);

    let a_rows = env.records(&format!("user={a_uid}"), 3).await;
    assert_eq!(a_rows.len(), 3);
    for r in &a_rows {
        assert!(ids.contains(&r["id"].as_str().unwrap().to_owned()));
        assert_eq!(r["status"], 200);
        assert_eq!(r["project"], a_project.as_str());
        assert_eq!(r["requested_model"], "mock");
    }
    let b_rows = env.records(&format!("user={b_uid}"), 1).await;
    assert_eq!(b_rows[0]["served_provider"], "openai");
    assert_eq!(env.records("since=1h&status=200", 4).await.len(), 4);
    assert_eq!(env.records(&format!("user={a_uid}&limit=2"), 2).await.len(), 2);
    assert_eq!(env.records("model=m-openai", 1).await.len(), 1);
    let future = env.expect(200, "GET", "/admin/requests?until=1h", None).await;
    assert_eq!(future["data"], json!([]));
    let one = env.expect(200, "GET", &format!("/admin/requests/{}", ids[0]), None).await;
    assert_eq!(one["id"], ids[0].as_str());
    assert_eq!(one["user"], a_uid.as_str());
    let missing = env.admin("GET", "/admin/requests/req_missing", None).await;
    assert_eq!((missing.status, missing.code()), (404, "not_found"));

    let by_user = env.expect(200, "GET", "/admin/usage?since=1h&by=user", None).await;
    assert_eq!(by_user["by"], "user");
    let rows = by_user["data"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{by_user}");
    assert_eq!(rows[0]["key"], a_uid.as_str());
    assert_eq!(rows[0]["requests"], 3);
    assert_eq!(rows[0]["errors"], 0);
    assert_eq!(rows[1]["key"], b_uid.as_str());
    assert_eq!(rows[1]["requests"], 1);
    let by_provider = env.expect(200, "GET", "/admin/usage?by=provider&slo_ms=1", None).await;
    assert_eq!(by_provider["slo_ms"], 500);
    let providers: Vec<(&str, u64)> = by_provider["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["key"].as_str().unwrap(), r["requests"].as_u64().unwrap()))
        .collect();
    assert_eq!(providers, [("mock", 3), ("openai", 1)]);
    let only_b = env.expect(200, "GET", &format!("/admin/usage?user={b_uid}&by=model"), None).await;
    assert_eq!(only_b["data"].as_array().unwrap().len(), 1);
    assert_eq!(only_b["data"][0]["key"], "m-openai");
    let since_ms = env
        .expect(200, "GET", &format!("/admin/usage?since={}", 4_102_444_800_000_i64), None)
        .await;
    assert_eq!(since_ms["data"], json!([]));
    // Hour by hour: the same requests, in this hour (or the last, at its turn).
    let series = env.expect(200, "GET", "/admin/analytics?since=1h&by=provider", None).await;
    assert_eq!(series["step_ms"], 3_600_000);
    let points = series["data"].as_array().unwrap();
    let sum = |key: &str| -> u64 {
        points.iter().filter(|p| p["key"] == key).map(|p| p["requests"].as_u64().unwrap()).sum()
    };
    assert_eq!((sum("mock"), sum("openai")), (3, 1), "{series}");
    assert!(points.iter().all(|p| p["hour_ms"].as_i64().unwrap() % 3_600_000 == 0), "{series}");

    for bad in [
        "/admin/usage?since=yesterday",
        "/admin/usage?by=colour",
        "/admin/usage?since=1h&until=2h",
        "/admin/usage?colour=red",
        "/admin/requests?limit=0",
        "/admin/requests?status=abc",
    ] {
        let a = env.admin("GET", bad, None).await;
        assert_eq!((a.status, a.code()), (400, "invalid_request"), "{bad}: {}", a.text);
    }
    env.assert_no_leak(&[&a_key, &b_key, OPENAI_KEY]);
}

async fn case_openapi_describes_every_route(db: TestDb) {
    let env = Env::start(&db, FULL).await;
    let doc = env.expect(200, "GET", "/admin/openapi.json", None).await;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.0"));
    let paths = doc["paths"].as_object().unwrap();
    for (method, path) in ROUTES {
        let op =
            &paths.get(*path).unwrap_or_else(|| panic!("{path} missing"))[method.to_lowercase()];
        assert!(op.is_object(), "{method} {path} missing");
        assert!(op["responses"].is_object(), "{method} {path}: no responses");
        if ["POST", "PUT", "PATCH"].contains(method) && !path.ends_with("openapi.json") {
            assert!(op["requestBody"].is_object(), "{method} {path}: no request body");
        }
        for param in path.split('/').filter(|s| s.starts_with('{')) {
            let name = param.trim_matches(|c| c == '{' || c == '}');
            let params = op["parameters"].as_array().unwrap();
            assert!(
                params.iter().any(|p| p["name"] == name && p["in"] == "path"),
                "{path}: {name}"
            );
        }
    }
    assert_eq!(
        paths.len(),
        ROUTES.iter().map(|(_, p)| p).collect::<std::collections::HashSet<_>>().len()
    );
    // Every $ref resolves.
    let text = doc.to_string();
    for part in text.split("\"$ref\":\"#/components/").skip(1) {
        let target = &part[..part.find('"').unwrap()];
        let (section, name) = target.split_once('/').unwrap();
        assert!(doc["components"][section][name].is_object(), "dangling $ref {target}");
    }
    let key = &doc["components"]["schemas"]["ApiKey"]["properties"];
    assert!(key["prefix"].is_object() && key.get("hash").is_none() && key.get("secret").is_none());
    assert!(doc["components"]["schemas"]["CreatedKey"].to_string().contains("secret"));
}

/// A WebSocket session checks its key before every turn: once the key is revoked,
/// the next turn is refused (401) and the session closes (1008, policy violation).
async fn case_a_revoked_key_ends_its_websocket_session(db: TestDb) {
    let env = Env::start(&db, FULL).await;
    let (_, _, secret, kid) = env.user_with_key("ws@example.com", json!({})).await;
    let mut socket = ws::connect_with(&env.base, &secret).await;
    let events = ws::turn(&mut socket, json!({"model": "mock", "input": "hi"})).await;
    assert_eq!(events.last().unwrap()["type"], "response.completed", "{events:?}");

    env.expect(200, "DELETE", &format!("/admin/keys/{kid}"), None).await;
    let events = ws::turn(&mut socket, json!({"model": "mock", "input": "again"})).await;
    assert_eq!(events[0]["status"], 401, "{events:?}");
    assert_eq!(events[0]["error"]["code"], "invalid_api_key");
    match ws::next(&mut socket).await {
        Next::Closed(Some((code, _))) => assert_eq!(code, 1008),
        other => panic!("expected a close frame, got {other:?}"),
    }
}

/// `/metrics` answers admins, viewers and the file's static keys, not a member's
/// stored key; its breaker labels name a credential by position (`key-1`) or as
/// a caller's own (`byok`), never by anything derived from the key.
async fn case_metrics_need_a_key_that_may_read_them_and_name_no_key(db: TestDb) {
    let env = Env::start(&db, FULL).await;
    let (uid, _, member, _) = env.user_with_key("member@example.com", json!({})).await;
    let viewer = env
        .expect(
            201,
            "POST",
            "/admin/users",
            Some(json!({"email": "viewer@example.com", "role": "viewer"})),
        )
        .await;
    let key = env.expect(201, "POST", "/admin/keys", Some(json!({"user_id": id(&viewer)}))).await;
    let viewer_key = key["secret"].as_str().unwrap().to_owned();
    let put = json!({"owner_kind": "user", "owner_id": uid, "provider": "openai", "api_key": BYOK});
    env.expect(200, "PUT", "/admin/credentials", Some(put)).await;
    // One request on the caller's own key, one on the platform's.
    assert_eq!(env.chat(&member, "m-openai").await.status, 200);
    assert_eq!(env.chat(GATEWAY_KEY, "m-openai").await.status, 200);

    let a = env.call(None, "GET", "/metrics", None).await;
    assert_eq!((a.status, a.code()), (401, "missing_api_key"));
    let a = env.call(Some("sk-not-a-key-0000000000"), "GET", "/metrics", None).await;
    assert_eq!((a.status, a.code()), (401, "invalid_api_key"));
    let a = env.call(Some(&member), "GET", "/metrics", None).await;
    assert_eq!((a.status, a.code()), (403, "metrics_forbidden"));
    for key in [ADMIN, viewer_key.as_str(), GATEWAY_KEY] {
        let a = env.call(Some(key), "GET", "/metrics", None).await;
        assert_eq!(a.status, 200, "{}", a.text);
        assert!(a.text.contains("gateway_requests_total"), "{}", a.text);
    }
    let text = env.call(Some(ADMIN), "GET", "/metrics", None).await.text;
    for label in [
        r#"gateway_breaker_state{provider="openai",credential="key-1"}"#,
        r#"gateway_breaker_state{provider="openai",credential="byok"}"#,
    ] {
        assert!(text.contains(label), "{label} missing:\n{text}");
    }
    // What the label used to be: a 32-bit fingerprint of the key.
    for secret in [BYOK, OPENAI_KEY, ANTHROPIC_KEY] {
        let fingerprint = Secret::new(secret).fingerprint();
        assert!(!text.contains(&fingerprint), "{fingerprint} (of {secret}) in the metrics");
    }
}
