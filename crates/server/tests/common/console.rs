//! The console's test harness: the real server on a fresh database (either
//! backend) behind the bootstrap admin key, the fake upstreams, the real audit
//! writer, and optionally a configuration file the route editor may change;
//! a client that carries the session cookie by hand and never follows redirects.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_core::util::Secret;
use switchyard_core::{Catalog, ConfigSource, Engine, SharedSink};
use switchyard_server::identity::Identity;
use switchyard_server::reload::Reloader;
use switchyard_server::{AppState, ConfigFile};
use switchyard_store::audit::{AuditConfig, AuditWriter, RecordStore};
use switchyard_store::testing::TestDb;
use switchyard_testkit::{FakeUpstream, Vendor};
use tokio::sync::oneshot;

use super::{GATEWAY_KEY, Options, Upstreams, WAIT, config_yaml};

/// The bootstrap admin key.
pub const ADMIN: &str = "sy-bootstrap-admin-key-for-console-0123";

/// An answer: status, headers we look at, body.
pub struct Page {
    pub status: u16,
    pub location: Option<String>,
    pub set_cookie: Option<String>,
    pub retry_after: Option<String>,
    pub text: String,
}

pub struct Env {
    pub base: String,
    pub client: reqwest::Client,
    pub _openai: FakeUpstream,
    pub _anthropic: FakeUpstream,
    pub _gemini: FakeUpstream,
    pub _bedrock: FakeUpstream,
    pub dir: PathBuf,
    pub shutdown: Option<oneshot::Sender<()>>,
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
    pub async fn start(db: &TestDb) -> Env {
        Self::start_with(db, None).await
    }

    /// With `routes`: served from a configuration file holding them, which the
    /// console's editor may change (its reloader attached, no polling).
    pub async fn start_with(db: &TestDb, routes: Option<&str>) -> Env {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir()
            .join(format!("switchyard-console-test-{}-{n}", std::process::id()));
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
        let options = Options { routes: routes.unwrap_or_default().into(), ..Options::default() };
        let yaml = config_yaml(&urls, &options);
        let path = dir.join("config.yaml");
        std::fs::write(&path, &yaml).unwrap();
        let source = ConfigSource::from_path(&path).unwrap();
        let raw = source.parse_with(&|_| None).unwrap();
        let catalog = Catalog::compile(&raw, &source.name, &|_| None).unwrap();
        let store = db.store().clone();
        let cfg = AuditConfig {
            flush_every: Duration::from_millis(10),
            ..AuditConfig::new(dir.join("spill.jsonl"))
        };
        let records: Arc<dyn RecordStore> = Arc::new(store.clone());
        let (writer, _task) = AuditWriter::start(records, cfg).unwrap();
        let sink: SharedSink = Arc::new(writer);
        let gateway = Arc::new(Engine::new(catalog, sink).unwrap());
        let identity = Identity::new(
            vec![Secret::new(GATEWAY_KEY)],
            Some(Secret::new(ADMIN)),
            Some(store),
            None,
            Duration::from_secs(600),
        );
        let state = AppState::with_identity(gateway.clone(), identity);
        if routes.is_some() {
            let reloader =
                Reloader::spawn(gateway, path.clone(), Duration::ZERO, Some(db.store().clone()));
            state.attach_config(ConfigFile { path, reloader });
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = oneshot::channel::<()>();
        tokio::spawn(switchyard_server::serve(listener, state, async move {
            let _ = rx.await;
        }));
        // Redirects are looked at, not followed; cookies are carried by hand.
        let client =
            super::client_builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        Env {
            base,
            client,
            _openai: openai,
            _anthropic: anthropic,
            _gemini: gemini,
            _bedrock: bedrock,
            dir,
            shutdown: Some(tx),
        }
    }

    pub async fn answer(&self, req: reqwest::RequestBuilder) -> Page {
        let resp = tokio::time::timeout(WAIT, req.send()).await.unwrap().unwrap();
        let header = |name: &str| resp.headers().get(name).map(|v| v.to_str().unwrap().to_owned());
        Page {
            status: resp.status().as_u16(),
            location: header("location"),
            set_cookie: header("set-cookie"),
            retry_after: header("retry-after"),
            text: resp.text().await.unwrap(),
        }
    }

    /// GET a console page with `cookie` (the session token), if any.
    pub async fn get(&self, path: &str, cookie: Option<&str>) -> Page {
        let mut req = self.client.get(format!("{}{path}", self.base));
        if let Some(c) = cookie {
            req = req.header("cookie", format!("switchyard_console={c}"));
        }
        self.answer(req).await
    }

    /// POST a form, as a page of the console would (same Origin).
    pub async fn post(&self, path: &str, cookie: Option<&str>, form: &[(&str, &str)]) -> Page {
        self.post_from(path, cookie, form, Some(&self.base)).await
    }

    pub async fn post_from(
        &self,
        path: &str,
        cookie: Option<&str>,
        form: &[(&str, &str)],
        origin: Option<&str>,
    ) -> Page {
        let mut req = self
            .client
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(urlencoded(form));
        if let Some(c) = cookie {
            req = req.header("cookie", format!("switchyard_console={c}"));
        }
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        self.answer(req).await
    }

    /// Signs in with `key`: the session token, from the cookie set.
    pub async fn sign_in(&self, key: &str) -> String {
        let p = self
            .post("/console/sign-in", None, &[("key", key), ("next", "/console/requests")])
            .await;
        assert_eq!(p.status, 303, "{}", p.text);
        assert_eq!(p.location.as_deref(), Some("/console/requests"));
        let cookie = p.set_cookie.unwrap();
        let token = cookie.split(';').next().unwrap().strip_prefix("switchyard_console=").unwrap();
        token.to_owned()
    }

    /// A JSON call to the admin API with the bootstrap key.
    pub async fn admin(&self, method: &str, path: &str, body: Value) -> Value {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let req = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(ADMIN)
            .json(&body);
        let resp = tokio::time::timeout(WAIT, req.send()).await.unwrap().unwrap();
        assert!(resp.status().is_success(), "{path}: {}", resp.status());
        resp.json().await.unwrap_or(Value::Null)
    }

    /// A user of `role` with a key: (user id, key id, key secret).
    pub async fn user(&self, email: &str, role: &str) -> (String, String, String) {
        let user = self.admin("POST", "/admin/users", json!({"email": email, "role": role})).await;
        let uid = user["id"].as_str().unwrap().to_owned();
        let key = self.admin("POST", "/admin/keys", json!({"user_id": uid})).await;
        (uid, key["id"].as_str().unwrap().to_owned(), key["secret"].as_str().unwrap().to_owned())
    }

    /// The CSRF token a page's forms carry.
    pub fn csrf(page: &Page) -> String {
        let at = page.text.find("name=\"csrf\" value=\"").unwrap() + "name=\"csrf\" value=\"".len();
        page.text[at..].split('"').next().unwrap().to_owned()
    }
}

/// A form body, as a browser encodes it.
pub fn urlencoded(form: &[(&str, &str)]) -> String {
    let enc = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                    char::from(b).to_string()
                }
                b' ' => "+".to_owned(),
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    form.iter().map(|(k, v)| format!("{}={}", enc(k), enc(v))).collect::<Vec<_>>().join("&")
}
