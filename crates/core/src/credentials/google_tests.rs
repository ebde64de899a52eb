use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use ring::signature::{RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey};

use super::super::testing::{ManualClock, Seen, Server, T0, TempDir, fake, http};
use super::*;

// The test-only RSA key pair (`crates/testkit/data/gen.sh`): the private key
// as a service account's JSON holds it, the public key as Google would know it.
const TEST_KEY: &str = include_str!("../../../testkit/data/rsa-test.key");
const TEST_PUBLIC_KEY: &[u8] = include_bytes!("../../../testkit/data/rsa-test.pub.der");

const EMAIL: &str = "gateway@test-project.iam.gserviceaccount.com";
const KID: &str = "0123456789abcdef";
const CLIENT_SECRET: &str = "user-client-secret-XYZ";
const REFRESH_TOKEN: &str = "1//refresh-token-XYZ";
const HOUR: Duration = Duration::from_secs(3600);

/// A Google token endpoint and metadata server that check what Google checks,
/// and count what they grant.
struct FakeGoogle {
    clock: ManualClock,
    /// The token endpoint's URL: the JWT's `aud` must be it.
    token_url: OnceLock<String>,
    jwt_grants: AtomicUsize,
    refresh_grants: AtomicUsize,
    metadata_grants: AtomicUsize,
    /// Answer 500 to everything.
    down: AtomicBool,
    /// Why the last request was refused.
    refused: Mutex<Vec<String>>,
}

impl FakeGoogle {
    async fn start(clock: &ManualClock) -> (Arc<Self>, Server) {
        let fake_google = Arc::new(FakeGoogle {
            clock: clock.clone(),
            token_url: OnceLock::new(),
            jwt_grants: AtomicUsize::new(0),
            refresh_grants: AtomicUsize::new(0),
            metadata_grants: AtomicUsize::new(0),
            down: AtomicBool::new(false),
            refused: Mutex::new(Vec::new()),
        });
        let state = Arc::clone(&fake_google);
        let server = fake(move |seen| state.answer(&seen)).await;
        fake_google.token_url.set(format!("{}/token", server.base)).unwrap();
        (fake_google, server)
    }

    fn host(server: &Server) -> String {
        server.base.trim_start_matches("http://").to_owned()
    }

    fn answer(&self, seen: &Seen) -> (u16, String) {
        if self.down.load(Ordering::SeqCst) {
            return (500, r#"{"error":"internal_failure"}"#.to_owned());
        }
        let result = match (seen.method.as_str(), seen.path()) {
            ("POST", "/token") => self.grant(seen),
            ("GET", "/computeMetadata/v1/instance/service-accounts/default/token") => {
                if seen.header("metadata-flavor") == Some("Google") {
                    Ok(self.token("metadata", &self.metadata_grants))
                } else {
                    Err("no Metadata-Flavor: Google".to_owned())
                }
            }
            _ => Err(format!("no route {} {}", seen.method, seen.target)),
        };
        result.unwrap_or_else(|why| {
            self.refused.lock().unwrap().push(why.clone());
            (400, json!({"error": "invalid_grant", "error_description": why}).to_string())
        })
    }

    fn grant(&self, seen: &Seen) -> Result<(u16, String), String> {
        if seen.header("content-type") != Some("application/x-www-form-urlencoded") {
            return Err("not a form".to_owned());
        }
        match seen.field("grant_type").as_deref() {
            Some("urn:ietf:params:oauth:grant-type:jwt-bearer") => {
                self.check_jwt(&seen.field("assertion").ok_or("no assertion")?)?;
                Ok(self.token("jwt", &self.jwt_grants))
            }
            Some("refresh_token") => {
                let ok = seen.field("client_id").as_deref() == Some("user-client.apps")
                    && seen.field("client_secret").as_deref() == Some(CLIENT_SECRET)
                    && seen.field("refresh_token").as_deref() == Some(REFRESH_TOKEN);
                if !ok {
                    return Err("bad client or refresh token".to_owned());
                }
                Ok(self.token("user", &self.refresh_grants))
            }
            other => Err(format!("unsupported grant_type {other:?}")),
        }
    }

    /// The JWT as Google checks it: RS256 over `header.claims` with the
    /// account's public key, the right issuer, audience and scope, issued now
    /// for at most an hour.
    fn check_jwt(&self, jwt: &str) -> Result<(), String> {
        let parts: Vec<&str> = jwt.split('.').collect();
        let [header, claims, signature] = parts[..] else {
            return Err("not three parts".to_owned());
        };
        let decode = |s: &str| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).map_err(|e| e.to_string())
        };
        let signed = format!("{header}.{claims}");
        UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, TEST_PUBLIC_KEY)
            .verify(signed.as_bytes(), &decode(signature)?)
            .map_err(|_| "bad signature".to_owned())?;
        let header: Value = serde_json::from_slice(&decode(header)?).map_err(|e| e.to_string())?;
        let claims: Value = serde_json::from_slice(&decode(claims)?).map_err(|e| e.to_string())?;
        if header != json!({"alg": "RS256", "typ": "JWT", "kid": KID}) {
            return Err(format!("header {header}"));
        }
        let now = self.clock.now().0 / 1000;
        let (iat, exp) =
            (claims["iat"].as_u64().ok_or("no iat")?, claims["exp"].as_u64().ok_or("no exp")?);
        let checks = [
            (claims["iss"] == EMAIL, "iss"),
            (claims["aud"].as_str() == self.token_url.get().map(String::as_str), "aud"),
            (claims["scope"] == "https://www.googleapis.com/auth/cloud-platform", "scope"),
            (exp > iat && exp - iat <= 3600, "exp - iat over an hour"),
            (iat <= now + 60, "iat in the future"),
            (exp > now, "expired"),
        ];
        match checks.iter().find(|(ok, _)| !ok) {
            Some((_, what)) => Err(format!("claim check failed: {what}")),
            None => Ok(()),
        }
    }

    fn token(&self, kind: &str, counter: &AtomicUsize) -> (u16, String) {
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        let body = json!({"access_token": format!("ya29.{kind}-{n}"), "expires_in": 3599, "token_type": "Bearer"});
        (200, body.to_string())
    }

    fn refused(&self) -> Vec<String> {
        self.refused.lock().unwrap().clone()
    }
}

fn service_account_json(token_uri: &str) -> String {
    json!({
        "type": "service_account",
        "project_id": "test-project",
        "private_key_id": KID,
        "private_key": TEST_KEY,
        "client_email": EMAIL,
        "client_id": "1234567890",
        "token_uri": token_uri,
    })
    .to_string()
}

fn authorized_user_json(token_uri: &str) -> String {
    json!({
        "type": "authorized_user",
        "client_id": "user-client.apps",
        "client_secret": CLIENT_SECRET,
        "refresh_token": REFRESH_TOKEN,
        "token_uri": token_uri,
    })
    .to_string()
}

async fn service_account() -> (Arc<FakeGoogle>, Server, ManualClock, GoogleAuth) {
    let clock = ManualClock::at(T0);
    let (google, server) = FakeGoogle::start(&clock).await;
    let json = service_account_json(google.token_url.get().unwrap());
    let creds = GoogleCredentials::from_json(&json, "sa.json").unwrap();
    let auth = GoogleAuth::new(creds, http(), clock.clock());
    (google, server, clock, auth)
}

#[tokio::test]
async fn a_service_account_token_is_granted_once_and_cached() {
    let (google, _server, _clock, auth) = service_account().await;
    for _ in 0..10 {
        let token = auth.token().await.unwrap();
        assert_eq!(token.token.expose(), "ya29.jwt-1");
        assert_eq!(token.expires_at, T0 + Duration::from_secs(3599));
    }
    assert_eq!(google.jwt_grants.load(Ordering::SeqCst), 1);
    assert!(google.refused().is_empty(), "{:?}", google.refused());
    assert_eq!(auth.project_id(), Some("test-project"));
}

#[tokio::test]
async fn a_token_is_refreshed_ahead_of_its_expiry_with_a_fresh_jwt() {
    let (google, _server, clock, auth) = service_account().await;
    assert_eq!(auth.token().await.unwrap().token.expose(), "ya29.jwt-1");
    clock.advance(Duration::from_secs(3599 - 300) - Duration::from_millis(1));
    assert_eq!(auth.token().await.unwrap().token.expose(), "ya29.jwt-1");
    assert_eq!(google.jwt_grants.load(Ordering::SeqCst), 1);
    // Five minutes before: still served, refreshed behind.
    clock.advance(Duration::from_millis(1));
    assert_eq!(auth.token().await.unwrap().token.expose(), "ya29.jwt-1");
    // At its expiry: the refreshed token, from a second grant whose JWT the
    // fake accepted at the new time.
    clock.advance(Duration::from_secs(300));
    assert_eq!(auth.token().await.unwrap().token.expose(), "ya29.jwt-2");
    assert_eq!(google.jwt_grants.load(Ordering::SeqCst), 2);
    assert!(google.refused().is_empty(), "{:?}", google.refused());
}

#[tokio::test]
async fn fifty_concurrent_callers_cause_one_grant() {
    let (google, _server, clock, auth) = service_account().await;
    for round in 1..=2 {
        let tokens = futures_util::future::join_all((0..50).map(|_| auth.token())).await;
        let want = format!("ya29.jwt-{round}");
        assert!(tokens.iter().all(|t| t.as_ref().unwrap().token.expose() == want));
        assert_eq!(google.jwt_grants.load(Ordering::SeqCst), round);
        clock.advance(HOUR);
    }
}

#[tokio::test]
async fn a_failing_endpoint_is_a_fetch_error_and_does_not_poison_the_cache() {
    let (google, _server, _clock, auth) = service_account().await;
    google.down.store(true, Ordering::SeqCst);
    let err = auth.token().await.unwrap_err();
    assert_eq!(
        err,
        CredentialError::Fetch(
            "Google token endpoint (service account): HTTP 500: internal_failure".to_owned()
        )
    );
    google.down.store(false, Ordering::SeqCst);
    assert_eq!(auth.token().await.unwrap().token.expose(), "ya29.jwt-1");
}

#[tokio::test]
async fn a_refused_jwt_is_reported_with_googles_reason_and_no_secret() {
    let clock = ManualClock::at(T0);
    let (google, _server) = FakeGoogle::start(&clock).await;
    // The wrong audience: the fake refuses it as Google would.
    let json = service_account_json(&format!("{}?elsewhere", google.token_url.get().unwrap()));
    let creds = GoogleCredentials::from_json(&json, "sa.json").unwrap();
    let auth = GoogleAuth::new(creds, http(), clock.clock());
    let err = auth.token().await.unwrap_err();
    assert_eq!(google.refused(), ["claim check failed: aud"]);
    let shown = err.to_string();
    assert!(shown.ends_with("HTTP 400: invalid_grant: claim check failed: aud"), "{shown}");
    assert!(!shown.contains("eyJ") && !shown.contains("PRIVATE"), "{shown}");
}

#[tokio::test]
async fn the_fake_refuses_a_tampered_or_foreign_jwt() {
    let (google, _server, clock, auth) = service_account().await;
    let GoogleCredentials::ServiceAccount(sa) = auth.credentials() else { panic!() };
    let jwt = sa.assertion(clock.now()).unwrap();
    assert_eq!(google.check_jwt(jwt.expose()), Ok(()));
    // Claims changed after signing.
    let parts: Vec<&str> = jwt.expose().split('.').collect();
    let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(json!({"iss": "attacker@example.com"}).to_string());
    let tampered = format!("{}.{forged}.{}", parts[0], parts[2]);
    assert_eq!(google.check_jwt(&tampered), Err("bad signature".to_owned()));
    // Signed an hour ago: expired.
    let old = sa.assertion(clock.now() - HOUR).unwrap();
    assert_eq!(google.check_jwt(old.expose()), Err("claim check failed: expired".to_owned()));
}

#[tokio::test]
async fn an_authorized_user_refreshes_with_its_refresh_token() {
    let clock = ManualClock::at(T0);
    let (google, _server) = FakeGoogle::start(&clock).await;
    let json = authorized_user_json(google.token_url.get().unwrap());
    let creds = GoogleCredentials::from_json(&json, "adc.json").unwrap();
    assert_eq!(creds.project_id(), None);
    let debug = format!("{creds:?}");
    assert!(!debug.contains(CLIENT_SECRET) && !debug.contains(REFRESH_TOKEN), "{debug}");
    let auth = GoogleAuth::new(creds, http(), clock.clock());
    assert_eq!(auth.token().await.unwrap().token.expose(), "ya29.user-1");
    assert_eq!(auth.token().await.unwrap().token.expose(), "ya29.user-1");
    assert_eq!(google.refresh_grants.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_metadata_server_is_asked_with_its_header() {
    let clock = ManualClock::at(T0);
    let (google, server) = FakeGoogle::start(&clock).await;
    let env = Env::from_pairs([("GCE_METADATA_HOST", FakeGoogle::host(&server))]);
    let auth = GoogleAuth::new(
        GoogleCredentials::Metadata(MetadataServer::from_env(&env)),
        http(),
        clock.clock(),
    );
    assert_eq!(auth.token().await.unwrap().token.expose(), "ya29.metadata-1");
    assert_eq!(google.metadata_grants.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn application_default_credentials_look_in_googles_order() {
    let clock = ManualClock::at(T0);
    let (google, server) = FakeGoogle::start(&clock).await;
    let token_url = google.token_url.get().unwrap().clone();
    let dir = TempDir::new();
    let env_file = dir.write("sa.json", &service_account_json(&token_url));
    let gcloud = dir.path().join("gcloud");
    dir.write("gcloud/application_default_credentials.json", &authorized_user_json(&token_url));
    let home = dir.path().join("home");
    dir.write(
        "home/.config/gcloud/application_default_credentials.json",
        &service_account_json(&token_url),
    );
    let empty_home = dir.path().join("nobody");
    let metadata = ("GCE_METADATA_HOST".to_owned(), FakeGoogle::host(&server));
    let token = |vars: Vec<(&str, String)>| {
        let mut vars: Vec<(String, String)> =
            vars.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        vars.push(metadata.clone());
        let auth = GoogleAuth::application_default(&Env::from_pairs(vars), http(), clock.clock());
        async move { auth.unwrap().token().await.unwrap().token.expose().to_owned() }
    };
    let path = |p: &Path| p.display().to_string();

    // 1. GOOGLE_APPLICATION_CREDENTIALS beats the well-known file.
    let vars = vec![
        ("GOOGLE_APPLICATION_CREDENTIALS", path(&env_file)),
        ("CLOUDSDK_CONFIG", path(&gcloud)),
        ("HOME", path(&home)),
    ];
    assert_eq!(token(vars).await, "ya29.jwt-1");
    // 2. The well-known file in CLOUDSDK_CONFIG beats the metadata server (and HOME's).
    let vars = vec![("CLOUDSDK_CONFIG", path(&gcloud)), ("HOME", path(&home))];
    assert_eq!(token(vars).await, "ya29.user-1");
    // 2'. Without CLOUDSDK_CONFIG: ~/.config/gcloud.
    assert_eq!(token(vec![("HOME", path(&home))]).await, "ya29.jwt-2");
    // 3. No file anywhere: the metadata server.
    assert_eq!(token(vec![("HOME", path(&empty_home))]).await, "ya29.metadata-1");
    assert!(google.refused().is_empty(), "{:?}", google.refused());
}

#[test]
fn a_credentials_variable_naming_a_missing_file_is_refused() {
    let env = Env::from_pairs([("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/sa.json")]);
    let err = GoogleCredentials::application_default(&env).unwrap_err();
    let CredentialError::Config { source_name, message } = err else { panic!("{err:?}") };
    assert_eq!(source_name, "/nonexistent/sa.json (GOOGLE_APPLICATION_CREDENTIALS)");
    assert!(message.starts_with("cannot read it"), "{message}");
}

#[test]
fn a_malformed_service_account_names_the_file_and_the_field() {
    let dir = TempDir::new();
    let good: Value = serde_json::from_str(&service_account_json(DEFAULT_TOKEN_URI)).unwrap();
    let with = |field: &str, value: Value| {
        let mut v = good.clone();
        match value {
            Value::Null => v.as_object_mut().unwrap().remove(field),
            other => v.as_object_mut().unwrap().insert(field.to_owned(), other),
        };
        v.to_string()
    };
    let cases = [
        (with("client_email", Value::Null), "field `client_email`: missing"),
        (with("private_key", Value::Null), "field `private_key`: missing"),
        (
            with("private_key", json!("not a key")),
            "field `private_key`: no PRIVATE KEY block in it",
        ),
        (
            with("private_key", json!(TEST_KEY.replace("MII", "AAA"))),
            "field `private_key`: not a usable RSA private key",
        ),
        (with("client_email", json!(42)), "field `client_email`: not a string"),
        (
            with("token_uri", json!("ftp://x")),
            "field `token_uri`: \"ftp://x\" is not an http(s) URL",
        ),
        (
            with("type", json!("external_account")),
            "field `type`: \"external_account\" is not supported",
        ),
        ("{\"type\": ".to_owned(), "not JSON"),
        ("[]".to_owned(), "not a JSON object"),
    ];
    for (text, want) in cases {
        let file = dir.write("sa.json", &text);
        let err = GoogleCredentials::from_file(&file).unwrap_err();
        let CredentialError::Config { source_name, message } = &err else { panic!("{err:?}") };
        assert_eq!(source_name, &file.display().to_string());
        assert!(message.starts_with(want), "{message} (wanted {want})");
        let shown = err.to_string();
        assert!(!shown.contains("MII") && !shown.contains("PRIVATE KEY-"), "{shown}");
    }
}

#[test]
fn a_service_account_from_a_variable_names_the_variable() {
    let text = service_account_json(DEFAULT_TOKEN_URI);
    let env = Env::from_pairs([
        ("SA_JSON", text.as_str()),
        ("BAD_JSON", "{\"type\":\"service_account\"}"),
    ]);
    let creds = GoogleCredentials::from_env_json(&env, "SA_JSON").unwrap();
    assert_eq!(creds.project_id(), Some("test-project"));
    let err = GoogleCredentials::from_env_json(&env, "BAD_JSON").unwrap_err();
    assert_eq!(err.to_string(), "environment variable BAD_JSON: field `private_key`: missing");
    let err = GoogleCredentials::from_env_json(&env, "UNSET").unwrap_err();
    assert_eq!(err.to_string(), "environment variable UNSET: not set");
}

#[tokio::test]
async fn debug_output_shows_no_token_or_key() {
    let (_google, _server, _clock, auth) = service_account().await;
    let token = auth.token().await.unwrap();
    let GoogleCredentials::ServiceAccount(sa) = auth.credentials() else { panic!() };
    let jwt = sa.assertion(T0).unwrap();
    for shown in [format!("{auth:?}"), format!("{token:?}"), format!("{jwt:?}")] {
        assert!(!shown.contains("ya29") && !shown.contains("eyJ"), "{shown}");
        assert!(!shown.contains("PRIVATE") && !shown.contains("MII"), "{shown}");
    }
    assert!(format!("{auth:?}").contains(EMAIL));
}

#[test]
fn the_futures_can_be_spawned() {
    fn send<T: Send>(_: &T) {}
    let creds = GoogleCredentials::Metadata(MetadataServer::at("127.0.0.1:9"));
    let auth = GoogleAuth::new(creds, http(), Clock::system());
    send(&auth.token());
}
