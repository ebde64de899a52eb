//! Console sign-in through an OpenID Connect provider, black box: the real
//! server on a fresh database (both backends) against the test kit's fake
//! provider. The flow end to end (admin, viewer, neither), the state (tampered,
//! replayed, from another browser), every spoiled ID token, PKCE as the
//! provider sees it, each way a client authenticates, key rotation, the
//! sign-in limit, and the client secret in no page and no log line.
//! (Chromium drives the same flow in `console_oidc_browser.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use base64::Engine as _;
use common::WAIT;
use sha2::{Digest, Sha256};
use switchyard_core::{Catalog, ConfigSource, Engine, SharedSink};
use switchyard_server::AppState;
use switchyard_server::identity::Identity;
use switchyard_store::audit::{AuditConfig, AuditWriter, RecordStore};
use switchyard_store::on_both_backends;
use switchyard_store::testing::TestDb;
use switchyard_testkit::oidc::{ClientAuth, FakeIdp, Fault, IdpConfig, IdpUser};
use tokio::sync::oneshot;

const SECRET: &str = "idp-client-secret-4f1c9a7e";
const SECRET_ENV: &str = "CONSOLE_OIDC_SECRET";

on_both_backends! {
    case_groups_decide_the_role => groups_decide_the_role_sqlite, groups_decide_the_role_postgres;
    case_the_state_is_bound_and_used_once =>
        the_state_is_bound_and_used_once_sqlite, the_state_is_bound_and_used_once_postgres;
    case_spoiled_id_tokens_are_refused_and_limited =>
        spoiled_id_tokens_are_refused_and_limited_sqlite, spoiled_id_tokens_are_refused_and_limited_postgres;
    case_pkce_and_client_authentication =>
        pkce_and_client_authentication_sqlite, pkce_and_client_authentication_postgres;
    case_rotated_keys_are_read_again =>
        rotated_keys_are_read_again_sqlite, rotated_keys_are_read_again_postgres;
}

/// Every log line of this test binary, at trace level.
fn logs() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let writer = Buffer(Arc::clone(&buf));
        let _ = tracing_subscriber::fmt()
            .with_env_filter("switchyard_server=trace,switchyard_store=trace,switchyard_core=trace")
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .try_init();
        buf
    })
}

#[derive(Clone)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An answer: status, the headers looked at, body.
#[derive(Debug)]
struct Page {
    status: u16,
    location: Option<String>,
    cookies: Vec<String>,
    retry_after: Option<String>,
    text: String,
}

impl Page {
    /// The value a `Set-Cookie` of this name sets (empty when it clears it).
    fn cookie(&self, name: &str) -> Option<&str> {
        self.cookies
            .iter()
            .find_map(|c| c.split(';').next().and_then(|kv| kv.strip_prefix(&format!("{name}="))))
    }

    fn set_cookie_line(&self, name: &str) -> &str {
        self.cookies.iter().find(|c| c.starts_with(&format!("{name}="))).unwrap()
    }
}

struct Env {
    base: String,
    client: reqwest::Client,
    idp: FakeIdp,
    db_store: switchyard_store::Store,
    dir: PathBuf,
    /// Everything every page answered, to look for secrets in.
    seen: Mutex<String>,
    shutdown: Option<oneshot::Sender<()>>,
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
    async fn start(db: &TestDb, config: IdpConfig) -> Env {
        logs();
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir()
            .join(format!("switchyard-console-oidc-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let secret_line = match config.auth {
            ClientAuth::Public => String::new(),
            _ => format!("    client_secret_env: {SECRET_ENV}\n"),
        };
        let idp = FakeIdp::start(config).await.unwrap();
        let yaml = format!(
            "storage: {{ url: none }}\n\
             providers:\n  mock: {{ wire: mock }}\n\
             models:\n  - id: mock-echo\n    deployments: [{{ provider: mock }}]\n\
             console:\n  oidc:\n    issuer: {}\n    client_id: switchyard-console\n{secret_line}\
             \x20   scopes: [openid, email, profile, groups]\n\
             \x20   admin_groups: [ops-admins]\n    viewer_groups: [ops-viewers, staff]\n\
             \x20   display_name: Fake IdP\n",
            idp.issuer()
        );
        let env = |k: &str| (k == SECRET_ENV).then(|| SECRET.to_owned());
        let raw = ConfigSource::from_text("test.yaml", &yaml).parse_with(&env).unwrap();
        let catalog = Catalog::compile(&raw, "test.yaml", &env).unwrap();
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
            vec![switchyard_core::util::Secret::new(common::GATEWAY_KEY)],
            None,
            Some(store.clone()),
            None,
            Duration::from_secs(600),
        );
        let state = AppState::with_identity(gateway, identity);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        idp.register_redirect_uri(&format!("{base}/console/oidc/callback"));
        let (tx, rx) = oneshot::channel::<()>();
        tokio::spawn(switchyard_server::serve(listener, state, async move {
            let _ = rx.await;
        }));
        // Redirects are looked at, not followed; cookies are carried by hand.
        let client =
            common::client_builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        Env {
            base,
            client,
            idp,
            db_store: store,
            dir,
            seen: Mutex::new(String::new()),
            shutdown: Some(tx),
        }
    }

    /// GET `url` (absolute, or a path of the gateway) with these cookies.
    async fn get(&self, url: &str, cookies: &[(&str, &str)]) -> Page {
        let url =
            if url.starts_with("http") { url.to_owned() } else { format!("{}{url}", self.base) };
        let mut req = self.client.get(url);
        if !cookies.is_empty() {
            let line: Vec<String> = cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
            req = req.header("cookie", line.join("; "));
        }
        let resp = tokio::time::timeout(WAIT, req.send()).await.unwrap().unwrap();
        let header = |name: &str| resp.headers().get(name).map(|v| v.to_str().unwrap().to_owned());
        let page = Page {
            status: resp.status().as_u16(),
            location: header("location"),
            retry_after: header("retry-after"),
            cookies: resp
                .headers()
                .get_all("set-cookie")
                .iter()
                .map(|v| v.to_str().unwrap().to_owned())
                .collect(),
            text: String::new(),
        };
        let headers = format!("{:?}", resp.headers());
        let text = resp.text().await.unwrap();
        self.seen.lock().unwrap().push_str(&format!("{headers}\n{text}\n"));
        Page { text, ..page }
    }

    /// Starts a sign-in: (the pending cookie's value, the provider's URL).
    async fn begin(&self) -> (String, String) {
        let p = self.get("/console/oidc/start?next=/console/requests", &[]).await;
        assert_eq!(p.status, 303, "{}", p.text);
        let line = p.set_cookie_line("switchyard_oidc");
        for flag in ["HttpOnly", "SameSite=Lax", "Path=/console/oidc", "Max-Age=600"] {
            assert!(line.contains(flag), "{line}");
        }
        (p.cookie("switchyard_oidc").unwrap().to_owned(), p.location.unwrap())
    }

    /// Through the provider (approving as `sub`): the callback URL it sends back to.
    async fn authorize(&self, at: &str, sub: &str) -> String {
        self.idp.approve_as(Some(sub));
        let p = self.get(at, &[]).await;
        assert_eq!(p.status, 303, "{}", p.text);
        let back = p.location.unwrap();
        assert!(back.starts_with(&format!("{}/console/oidc/callback?", self.base)), "{back}");
        back
    }

    /// The whole flow as `sub`: the callback's answer.
    async fn sign_in_as(&self, sub: &str) -> Page {
        let (pending, at) = self.begin().await;
        let back = self.authorize(&at, sub).await;
        self.get(&back, &[("switchyard_oidc", &pending)]).await
    }

    async fn live_sessions(&self) -> usize {
        self.db_store.list_sessions().await.unwrap().len()
    }

    fn assert_no_secret(&self) {
        let seen = self.seen.lock().unwrap();
        assert!(!seen.contains(SECRET), "the client secret was in a page");
        let logs = String::from_utf8_lossy(&logs().lock().unwrap()).into_owned();
        assert!(!logs.contains(SECRET), "the client secret was logged");
        // No JWT (a header's base64url starts `eyJ`) in a page or the log.
        assert!(!logs.contains("eyJ"), "a token was logged");
        assert!(!seen.contains("eyJ"), "a token was in a page");
    }
}

fn users(env: &Env) {
    env.idp.add_user(IdpUser::new("alice", "alice@example.com", &["ops-admins", "staff"]));
    env.idp.add_user(IdpUser::new("victor", "victor@example.com", &["staff"]));
    let mut one = IdpUser::new("sam", "sam@example.com", &[]);
    // A provider that writes one group as a string.
    one.extra.insert("groups".into(), serde_json::json!("ops-viewers"));
    env.idp.add_user(one);
    env.idp.add_user(IdpUser::new("eve", "eve@example.com", &["marketing"]));
}

/// Signed in: the session cookie, and the page that goes on to `next`.
fn session_of(p: &Page) -> String {
    assert_eq!(p.status, 200, "{}", p.text);
    assert!(
        p.text.contains("http-equiv=\"refresh\" content=\"0;url=/console/requests\""),
        "{}",
        p.text
    );
    let line = p.set_cookie_line("switchyard_console");
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(line.contains(flag), "{line}");
    }
    // The sign-in under way is cleared.
    assert_eq!(p.cookie("switchyard_oidc"), Some(""));
    p.cookie("switchyard_console").unwrap().to_owned()
}

async fn case_groups_decide_the_role(db: TestDb) {
    let env = Env::start(&db, IdpConfig::default()).await;
    users(&env);
    // The sign-in page offers the provider.
    let form = env.get("/console/sign-in?next=/console/requests", &[]).await;
    assert!(form.text.contains("Sign in with Fake IdP"), "{}", form.text);
    assert!(form.text.contains("action=\"/console/oidc/start\""));

    for (sub, role) in [("alice", "admin"), ("victor", "viewer"), ("sam", "viewer")] {
        let token = session_of(&env.sign_in_as(sub).await);
        let page = env.get("/console/overview", &[("switchyard_console", &token)]).await;
        assert_eq!(page.status, 200, "{}", page.text);
        assert!(page.text.contains(&format!("{sub}@example.com · {role}")), "{sub}: {}", page.text);
    }
    let sessions = env.db_store.list_sessions().await.unwrap();
    assert_eq!(sessions.len(), 3);
    assert!(sessions.iter().all(|s| s.method == switchyard_store::db::SignIn::Oidc));

    // In no group: refused, saying so, and no session.
    let p = env.sign_in_as("eve").await;
    assert_eq!(p.status, 403, "{}", p.text);
    assert!(
        p.text.contains("eve@example.com signed in at Fake IdP, but is in none of the groups"),
        "{}",
        p.text
    );
    assert_eq!(p.cookie("switchyard_console"), None);
    assert_eq!(env.live_sessions().await, 3);

    // The provider refusing (the user cancelled, say) is shown, not followed.
    let (pending, at) = env.begin().await;
    let state = at.split("state=").nth(1).unwrap().split('&').next().unwrap();
    let back = format!("{}/console/oidc/callback?error=access_denied&state={state}", env.base);
    let p = env.get(&back, &[("switchyard_oidc", &pending)]).await;
    assert_eq!(p.status, 403);
    assert!(p.text.contains("did not sign you in (access_denied)"), "{}", p.text);
    env.assert_no_secret();
}

async fn case_the_state_is_bound_and_used_once(db: TestDb) {
    let env = Env::start(&db, IdpConfig::default()).await;
    users(&env);
    // A tampered state: refused, and the sign-in is spent (the right state
    // afterwards finds nothing).
    let (pending, at) = env.begin().await;
    let back = env.authorize(&at, "alice").await;
    let state = back.split("state=").nth(1).unwrap().split('&').next().unwrap().to_owned();
    let mut flipped = state.clone().into_bytes();
    flipped[0] = if flipped[0] == b'a' { b'b' } else { b'a' };
    let tampered = back.replace(&state, std::str::from_utf8(&flipped).unwrap());
    let p = env.get(&tampered, &[("switchyard_oidc", &pending)]).await;
    assert_eq!(p.status, 403, "{}", p.text);
    assert!(p.text.contains("sign in again"));
    let p = env.get(&back, &[("switchyard_oidc", &pending)]).await;
    assert_eq!(p.status, 403, "the sign-in was spent by the tampered callback");

    // Replayed: the first callback signs in, the same one again does not.
    let (pending, at) = env.begin().await;
    let back = env.authorize(&at, "alice").await;
    session_of(&env.get(&back, &[("switchyard_oidc", &pending)]).await);
    let p = env.get(&back, &[("switchyard_oidc", &pending)]).await;
    assert_eq!(p.status, 403, "replayed: {}", p.text);
    assert_eq!(p.cookie("switchyard_console"), None);

    // Another browser (no pending cookie, or another one's) cannot finish it.
    let (_pending, at) = env.begin().await;
    let back = env.authorize(&at, "alice").await;
    assert_eq!(env.get(&back, &[]).await.status, 403);
    let (other, _) = env.begin().await;
    assert_eq!(env.get(&back, &[("switchyard_oidc", &other)]).await.status, 403);
    assert_eq!(env.live_sessions().await, 1);

    // `next` is only ever a console path.
    let p = env.get("/console/oidc/start?next=https://evil.example/", &[]).await;
    let pending = p.cookie("switchyard_oidc").unwrap().to_owned();
    let back = env.authorize(&p.location.unwrap(), "alice").await;
    let p = env.get(&back, &[("switchyard_oidc", &pending)]).await;
    assert!(p.text.contains("url=/console/overview"), "{}", p.text);
    assert!(!p.text.contains("evil.example"));
    env.assert_no_secret();
}

async fn case_spoiled_id_tokens_are_refused_and_limited(db: TestDb) {
    let env = Env::start(&db, IdpConfig::default()).await;
    users(&env);
    let faults = [
        (Fault::WrongAudience, "another client"),
        (Fault::WrongIssuer, "another issuer"),
        (Fault::Expired, "expired"),
        (Fault::IssuedInTheFuture, "future"),
        (Fault::BadSignature, "signature"),
        (Fault::UnknownKey, "no key the provider publishes"),
        (Fault::MissingNonce, "nonce"),
        (Fault::WrongNonce, "nonce"),
        (Fault::Unsigned, "only RS256 and ES256"),
        (Fault::SeveralAudiencesNoAzp, "azp"),
    ];
    for (fault, why) in faults {
        env.idp.set_fault(Some(fault));
        let p = env.sign_in_as("alice").await;
        assert_eq!(p.status, 403, "{fault:?}: {}", p.text);
        assert!(p.text.contains(why), "{fault:?}: {}", p.text);
        assert_eq!(p.cookie("switchyard_console"), None, "{fault:?}");
    }
    assert_eq!(env.live_sessions().await, 0);
    // Ten failures from one address: the next sign-in waits, even a good one.
    env.idp.set_fault(None);
    let p = env.get("/console/oidc/start", &[]).await;
    assert_eq!(p.status, 429, "{}", p.text);
    assert!(p.retry_after.is_some());
    env.assert_no_secret();
}

async fn case_pkce_and_client_authentication(db: TestDb) {
    for (auth, method) in [
        (ClientAuth::Basic, "client_secret_basic"),
        (ClientAuth::Post, "client_secret_post"),
        (ClientAuth::Public, "none"),
    ] {
        let secret = (auth != ClientAuth::Public).then(|| SECRET.to_owned());
        let env =
            Env::start(&db, IdpConfig { auth, client_secret: secret, ..IdpConfig::default() })
                .await;
        users(&env);
        session_of(&env.sign_in_as("alice").await);
        let exchanges = env.idp.exchanges();
        assert_eq!(exchanges.len(), 1);
        let x = &exchanges[0];
        assert_eq!((x.status, x.client_auth), (200, method), "{x:?}");
        assert_eq!(x.code_challenge_method.as_deref(), Some("S256"));
        let verifier = x.code_verifier.as_deref().unwrap();
        let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(Sha256::digest(verifier.as_bytes()));
        assert_eq!(x.code_challenge.as_deref(), Some(challenge.as_str()));
        // The secret goes only where the method puts it.
        assert_eq!(x.body.contains("client_secret="), auth == ClientAuth::Post, "{}", x.body);
        env.assert_no_secret();
    }
}

async fn case_rotated_keys_are_read_again(db: TestDb) {
    let env = Env::start(&db, IdpConfig::default()).await;
    users(&env);
    session_of(&env.sign_in_as("alice").await);
    session_of(&env.sign_in_as("victor").await);
    // Discovery and the keys were read once for both.
    assert_eq!(env.idp.reads(), (1, 1));
    // The provider rotates to a new key (ES256): the first token under it
    // names a key the cached JWKS lacks, so it is read again, once.
    env.idp.rotate_to_es256().unwrap();
    session_of(&env.sign_in_as("alice").await);
    session_of(&env.sign_in_as("victor").await);
    assert_eq!(env.idp.reads(), (1, 2));
    env.assert_no_secret();
}
