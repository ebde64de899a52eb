//! Rate limits of stored gateway keys, black box: the real server on a SQLite
//! store, keys carrying their own limits (as `keys create --rpm` and the admin
//! API store them), and the `limits:` block of the file for users and projects.
//! A refusal is a 429 `rate_limited` in the caller's format with `Retry-After`,
//! and never reaches the upstream. Every wait is bounded.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::time::Duration;

use common::{Options, Upstreams, WAIT, config_yaml};
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use switchyard_core::limits::Limits;
use switchyard_core::{Catalog, ConfigSource, Engine};
use switchyard_server::AppState;
use switchyard_server::identity::Identity;
use switchyard_store::testing::{TestDb, sqlite_temp};
use switchyard_store::{CallerRole, MemorySink, NewKey, NewUser, Store, User};
use switchyard_testkit::{FakeUpstream, Reply, Vendor};
use tokio::sync::oneshot;

struct Env {
    base: String,
    client: reqwest::Client,
    openai: FakeUpstream,
    anthropic: FakeUpstream,
    _gemini: FakeUpstream,
    db: TestDb,
    shutdown: Option<oneshot::Sender<()>>,
}

impl Drop for Env {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// An answer: status, headers, JSON body.
struct Answer {
    status: u16,
    headers: HeaderMap,
    json: Value,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn message(&self) -> &str {
        self.json["error"]["message"].as_str().unwrap_or("")
    }
}

impl Env {
    /// The server on a fresh SQLite store, with `limits` as the file's
    /// `limits:` block (or empty). The key cache lives 600 s: the limits a
    /// request meets are the ones the key had when it was first looked up.
    async fn start(limits: &str) -> Env {
        let db = sqlite_temp().await;
        let openai = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
        let anthropic = FakeUpstream::start(Vendor::Anthropic).await.unwrap();
        let gemini = FakeUpstream::start(Vendor::Gemini).await.unwrap();
        let bedrock = FakeUpstream::start(Vendor::Bedrock).await.unwrap();
        let options = Options { limits: limits.to_owned(), ..Options::default() };
        let urls = Upstreams {
            openai: &openai.base_url(),
            anthropic: &anthropic.base_url(),
            gemini: &gemini.base_url(),
            bedrock: &bedrock.base_url(),
        };
        let yaml = config_yaml(&urls, &options);
        let raw = ConfigSource::from_text("test.yaml", &yaml).parse_with(&|_| None).unwrap();
        let catalog = Catalog::compile(&raw, "test.yaml", &|_| None).unwrap();
        // The default runtime counts limits in this process, as `state.backend:
        // local` does.
        let gateway = std::sync::Arc::new(
            Engine::new(catalog, std::sync::Arc::new(MemorySink::new(100))).unwrap(),
        );
        let identity = Identity::new(
            Vec::new(),
            None,
            Some(db.store().clone()),
            None,
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
            db,
            shutdown: Some(tx),
        }
    }

    fn store(&self) -> &Store {
        self.db.store()
    }

    async fn user(&self, email: &str) -> User {
        let new =
            NewUser { email: email.into(), name: None, role: CallerRole::Member, project_id: None };
        self.store().create_user(new).await.unwrap()
    }

    /// A key of `user` (bound to `project`, else the user's primary) with these
    /// limits of its own; its secret.
    async fn key(&self, user: &User, project: Option<&str>, limits: Option<Limits>) -> String {
        let new = NewKey {
            user_id: user.id.clone(),
            project_id: project.map(str::to_owned),
            limits,
            ..NewKey::default()
        };
        self.store().create_key(new).await.unwrap().1
    }

    async fn post(&self, key: &str, path: &str, body: &Value) -> Answer {
        let req = self.client.post(format!("{}{path}", self.base)).bearer_auth(key).json(body);
        let resp = tokio::time::timeout(WAIT, req.send()).await.unwrap().unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = tokio::time::timeout(WAIT, resp.text()).await.unwrap().unwrap();
        Answer { status, headers, json: serde_json::from_str(&text).unwrap_or(Value::Null) }
    }

    async fn chat(&self, key: &str) -> Answer {
        self.post(key, "/v1/chat/completions", &chat()).await
    }
}

fn chat() -> Value {
    json!({"model": "m-openai", "messages": [{"role": "user", "content": "hi"}]})
}

/// A `Retry-After` of whole seconds within a minute (the per-minute limits).
fn retry_after(a: &Answer) -> u64 {
    let s: u64 = a.header("retry-after").expect("a refusal says when to retry").parse().unwrap();
    assert!((1..=60).contains(&s), "{s}");
    s
}

/// `x-ratelimit-reset-*`: seconds, as `12s`.
fn reset_secs(a: &Answer, header: &str) -> u64 {
    let v = a.header(header).unwrap_or_else(|| panic!("{header} missing"));
    v.strip_suffix('s').unwrap_or_else(|| panic!("{header}: {v}")).parse().unwrap()
}

#[tokio::test]
async fn a_keys_request_limit_refuses_past_it_in_the_callers_format_and_spares_other_keys() {
    let env = Env::start("").await;
    let ana = env.user("ana@example.com").await;
    let limited = env.key(&ana, None, Some(Limits::default().rpm(2))).await;
    let other = env.key(&ana, None, None).await;

    for remaining in ["1", "0"] {
        let a = env.chat(&limited).await;
        assert_eq!(a.status, 200, "{}", a.json);
        assert_eq!(a.header("x-ratelimit-limit-requests"), Some("2"));
        assert_eq!(a.header("x-ratelimit-remaining-requests"), Some(remaining));
        assert!(reset_secs(&a, "x-ratelimit-reset-requests") <= 60);
        assert_eq!(a.header("x-ratelimit-limit-tokens"), None, "no token limit applies");
    }
    let refused = env.chat(&limited).await;
    assert_eq!(refused.status, 429, "{}", refused.json);
    assert_eq!(refused.json["error"]["code"], "rate_limited");
    assert!(refused.message().contains("2 requests per minute"), "{}", refused.json);
    assert!(refused.message().contains("key:"), "names the key's scope: {}", refused.json);
    retry_after(&refused);
    assert_eq!(env.openai.request_count(), 2, "the refused request never left");

    // Another key of the same user has limits of its own (none): not refused.
    let a = env.chat(&other).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.header("x-ratelimit-limit-requests"), None);
    assert_eq!(env.openai.request_count(), 3);

    // Anthropic's format for an Anthropic client.
    let one = env.key(&ana, None, Some(Limits::default().rpm(1))).await;
    let body = json!({"model": "m-anthropic", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]});
    let a = env.post(&one, "/v1/messages", &body).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.header("x-ratelimit-remaining-requests"), Some("0"));
    let refused = env.post(&one, "/v1/messages", &body).await;
    assert_eq!(refused.status, 429, "{}", refused.json);
    assert_eq!(refused.json["type"], "error");
    assert_eq!(refused.json["error"]["type"], "rate_limit_error");
    assert!(refused.message().contains("1 requests per minute"), "{}", refused.json);
    retry_after(&refused);
    assert_eq!(env.anthropic.request_count(), 1);
}

#[tokio::test]
async fn a_token_count_that_calls_the_upstream_is_one_of_the_keys_requests() {
    let env = Env::start("").await;
    let ana = env.user("ana@example.com").await;
    let one = env.key(&ana, None, Some(Limits::default().rpm(1))).await;
    let count = json!({"model": "m-anthropic", "messages": [{"role": "user", "content": "hi"}]});
    let a = env.post(&one, "/v1/messages/count_tokens", &count).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(env.anthropic.request_count(), 1, "counted by the upstream");
    // The count was the key's one request this minute: a generation waits too.
    let body = json!({"model": "m-anthropic", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]});
    let refused = env.post(&one, "/v1/messages", &body).await;
    assert_eq!(refused.status, 429, "{}", refused.json);
    let refused = env.post(&one, "/v1/messages/count_tokens", &count).await;
    assert_eq!(refused.status, 429, "{}", refused.json);
    assert_eq!(refused.json["error"]["type"], "rate_limit_error");
    retry_after(&refused);
    assert_eq!(env.anthropic.request_count(), 1, "nothing more reached the upstream");
}

#[tokio::test]
async fn a_keys_token_limit_shows_the_token_headers() {
    let env = Env::start("").await;
    let ana = env.user("ana@example.com").await;
    let key = env.key(&ana, None, Some(Limits::default().tpm(100_000))).await;
    let a = env.chat(&key).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.header("x-ratelimit-limit-tokens"), Some("100000"));
    let remaining: u64 = a.header("x-ratelimit-remaining-tokens").unwrap().parse().unwrap();
    assert!(remaining < 100_000, "the request's tokens are counted: {remaining}");
    assert!(reset_secs(&a, "x-ratelimit-reset-tokens") <= 60);
    assert_eq!(a.header("x-ratelimit-limit-requests"), None, "no request limit applies");
}

#[tokio::test]
async fn a_keys_concurrency_limit_holds_until_the_first_caller_goes_away() {
    let env = Env::start("").await;
    let ana = env.user("ana@example.com").await;
    let key = env.key(&ana, None, Some(Limits::default().concurrent(1))).await;
    env.openai.push(Reply::hang());
    let first = {
        let req = env
            .client
            .post(format!("{}/v1/chat/completions", env.base))
            .bearer_auth(&key)
            .json(&chat());
        tokio::spawn(async move { req.send().await })
    };
    tokio::time::timeout(WAIT, env.openai.wait_for_requests(1)).await.unwrap();
    let refused = env.chat(&key).await;
    assert_eq!(refused.status, 429, "{}", refused.json);
    assert_eq!(refused.json["error"]["code"], "rate_limited");
    assert!(refused.message().contains("1 requests at once"), "{}", refused.json);
    assert!(refused.header("retry-after").is_some());
    assert_eq!(env.openai.request_count(), 1);

    // The first caller leaves: the gateway cancels its upstream call and the
    // slot comes back.
    first.abort();
    tokio::time::timeout(WAIT, env.openai.wait_idle()).await.unwrap();
    let freed = async {
        loop {
            if env.chat(&key).await.status == 200 {
                break;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(WAIT, freed).await.expect("the slot is released");
}

/// `limits.users` by email and `limits.projects` by name apply to stored keys
/// of that user and that project, shared by all their keys, and not to others.
#[tokio::test]
async fn the_files_user_and_project_limits_apply_to_stored_keys() {
    let env = Env::start(
        "limits:\n  users: { \"ana@example.com\": { rpm: 1 } }\n  projects: { research: { rpm: 2 } }\n",
    )
    .await;
    // Ana's two keys share her one request a minute.
    let ana = env.user("ana@example.com").await;
    let (ana_1, ana_2) = (env.key(&ana, None, None).await, env.key(&ana, None, None).await);
    assert_eq!(env.chat(&ana_1).await.status, 200);
    let refused = env.chat(&ana_2).await;
    assert_eq!(
        (refused.status, refused.json["error"]["code"].as_str()),
        (429, Some("rate_limited"))
    );
    assert!(refused.message().contains(&format!("user:{}", ana.id)), "{}", refused.json);
    retry_after(&refused);

    // Bob and Carol's keys bound to project research share its two.
    let research = env.store().create_project("research").await.unwrap();
    let (bob, carol) = (env.user("bob@example.com").await, env.user("carol@example.com").await);
    for u in [&bob, &carol] {
        env.store().add_project_member(&research.id, &u.id).await.unwrap();
    }
    let bob_key = env.key(&bob, Some(&research.id), None).await;
    let carol_key = env.key(&carol, Some(&research.id), None).await;
    assert_eq!(env.chat(&bob_key).await.status, 200);
    let a = env.chat(&carol_key).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.header("x-ratelimit-remaining-requests"), Some("0"));
    let refused = env.chat(&bob_key).await;
    assert_eq!(refused.status, 429, "{}", refused.json);
    assert!(refused.message().contains(&format!("project:{}", research.id)), "{}", refused.json);

    // Bob's key for his own project is not the research project's.
    let own = env.key(&bob, None, None).await;
    let a = env.chat(&own).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.header("x-ratelimit-limit-requests"), None);
    assert_eq!(env.openai.request_count(), 4);
}
