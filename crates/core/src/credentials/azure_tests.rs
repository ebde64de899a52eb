use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use super::super::testing::{ManualClock, Seen, Server, T0, fake, http};
use super::*;

const TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
const CLIENT: &str = "00000000-0000-0000-0000-00000000c11e";
const SECRET: &str = "entra~client~secret~XYZ";
const HOUR: Duration = Duration::from_secs(3600);

/// An Entra token endpoint and an instance metadata service that check what
/// Entra and IMDS check, and count what they grant.
struct FakeEntra {
    grants: AtomicUsize,
    imds_grants: AtomicUsize,
    down: AtomicBool,
    refused: Mutex<Vec<String>>,
}

impl FakeEntra {
    async fn start() -> (Arc<Self>, Server) {
        let entra = Arc::new(FakeEntra {
            grants: AtomicUsize::new(0),
            imds_grants: AtomicUsize::new(0),
            down: AtomicBool::new(false),
            refused: Mutex::new(Vec::new()),
        });
        let state = Arc::clone(&entra);
        let server = fake(move |seen| state.answer(&seen)).await;
        (entra, server)
    }

    fn answer(&self, seen: &Seen) -> (u16, String) {
        if self.down.load(Ordering::SeqCst) {
            return (503, json!({"error": "temporarily_unavailable"}).to_string());
        }
        let token_path = format!("/{TENANT}/oauth2/v2.0/token");
        let result = match (seen.method.as_str(), seen.path()) {
            ("POST", p) if p == token_path => self.grant(seen),
            ("GET", "/metadata/identity/oauth2/token") => self.imds(seen),
            ("GET", "/msi/token") => self.app_service(seen),
            _ => Err(format!("no route {} {}", seen.method, seen.target)),
        };
        result.unwrap_or_else(|why| {
            self.refused.lock().unwrap().push(why.clone());
            let body = json!({"error": "invalid_client", "error_description": why,
                "error_codes": [7_000_215]});
            (401, body.to_string())
        })
    }

    fn grant(&self, seen: &Seen) -> Result<(u16, String), String> {
        if seen.header("content-type") != Some("application/x-www-form-urlencoded") {
            return Err("not a form".to_owned());
        }
        // A client secret, or (workload identity) the cluster's token as a
        // client assertion.
        let assertion = seen.field("client_assertion_type").is_some();
        let credential = if assertion {
            seen.field("client_assertion_type").as_deref()
                == Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
                && seen.field("client_assertion").as_deref() == Some(PROJECTED)
                && seen.field("client_secret").is_none()
        } else {
            seen.field("client_secret").as_deref() == Some(SECRET)
        };
        let checks = [
            (seen.field("grant_type").as_deref() == Some("client_credentials"), "grant_type"),
            (seen.field("client_id").as_deref() == Some(CLIENT), "client_id"),
            (seen.field("scope").as_deref() == Some(COGNITIVE_SERVICES_SCOPE), "scope"),
            (credential, "AADSTS7000215: Invalid client secret provided."),
        ];
        if let Some((_, what)) = checks.iter().find(|(ok, _)| !ok) {
            return Err((*what).to_owned());
        }
        let n = self.grants.fetch_add(1, Ordering::SeqCst) + 1;
        let body = json!({"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599,
            "access_token": format!("eyJ0eXAi.entra-{n}")});
        Ok((200, body.to_string()))
    }

    fn imds(&self, seen: &Seen) -> Result<(u16, String), String> {
        if seen.header("metadata") != Some("true") {
            return Err("Required metadata header not specified".to_owned());
        }
        let query = seen.target.split_once('?').map_or("", |(_, q)| q);
        let want = "api-version=2018-02-01&resource=https%3A%2F%2Fcognitiveservices.azure.com";
        if !query.starts_with(want) {
            return Err(format!("query {query}"));
        }
        let n = self.imds_grants.fetch_add(1, Ordering::SeqCst) + 1;
        let who = if query.contains("client_id=") { "user" } else { "system" };
        // IMDS writes its numbers as strings.
        let body = json!({"access_token": format!("eyJ0eXAi.imds-{who}-{n}"), "refresh_token": "",
            "expires_in": "86399", "expires_on": "1735776000", "not_before": "1735689300",
            "resource": "https://cognitiveservices.azure.com", "token_type": "Bearer"});
        Ok((200, body.to_string()))
    }
}

impl FakeEntra {
    /// App Service's identity endpoint: its header, its API version, and the
    /// expiry as seconds since the epoch, as a string.
    fn app_service(&self, seen: &Seen) -> Result<(u16, String), String> {
        if seen.header("x-identity-header") != Some(IDENTITY_HEADER) {
            return Err("X-IDENTITY-HEADER missing or wrong".to_owned());
        }
        let query = seen.target.split_once('?').map_or("", |(_, q)| q);
        let want = "api-version=2019-08-01&resource=https%3A%2F%2Fcognitiveservices.azure.com";
        if !query.starts_with(want) {
            return Err(format!("query {query}"));
        }
        let n = self.imds_grants.fetch_add(1, Ordering::SeqCst) + 1;
        let expires_on = (T0.0 / 1000 + 3600).to_string();
        let body = json!({"access_token": format!("eyJ0eXAi.appservice-{n}"),
            "expires_on": expires_on, "resource": "https://cognitiveservices.azure.com",
            "token_type": "Bearer", "client_id": CLIENT});
        Ok((200, body.to_string()))
    }
}

/// App Service's `IDENTITY_HEADER`.
const IDENTITY_HEADER: &str = "0b5c7d9e-app-service-identity-header";
/// The service account token a cluster projects for a workload identity.
const PROJECTED: &str = "eyJhbGciOiJSUzI1NiJ9.k8s-service-account.sig";

fn secret_auth(server: &Server, clock: &ManualClock, secret: &str) -> AzureAuth {
    let creds = AzureCredentials::client_secret(
        TENANT,
        CLIENT,
        Secret::new(secret),
        Some(&server.base),
        None,
    )
    .unwrap();
    AzureAuth::new(creds, http(), clock.clock())
}

#[tokio::test]
async fn a_client_secret_grant_is_made_once_and_cached_until_ahead_of_expiry() {
    let clock = ManualClock::at(T0);
    let (entra, server) = FakeEntra::start().await;
    let auth = secret_auth(&server, &clock, SECRET);
    for _ in 0..5 {
        let token = auth.token().await.unwrap();
        assert_eq!(token.token.expose(), "eyJ0eXAi.entra-1");
        assert_eq!(token.expires_at, T0 + Duration::from_secs(3599));
    }
    assert_eq!(entra.grants.load(Ordering::SeqCst), 1);
    // Five minutes before its expiry it is refreshed (served meanwhile); at
    // its expiry the new one is served.
    clock.advance(Duration::from_secs(3599 - 300));
    assert_eq!(auth.token().await.unwrap().token.expose(), "eyJ0eXAi.entra-1");
    clock.advance(Duration::from_secs(300));
    assert_eq!(auth.token().await.unwrap().token.expose(), "eyJ0eXAi.entra-2");
    assert_eq!(entra.grants.load(Ordering::SeqCst), 2);
    assert!(entra.refused.lock().unwrap().is_empty());
}

#[tokio::test]
async fn fifty_concurrent_callers_cause_one_grant() {
    let clock = ManualClock::at(T0);
    let (entra, server) = FakeEntra::start().await;
    let auth = secret_auth(&server, &clock, SECRET);
    for round in 1..=2 {
        let tokens = futures_util::future::join_all((0..50).map(|_| auth.token())).await;
        let want = format!("eyJ0eXAi.entra-{round}");
        assert!(tokens.iter().all(|t| t.as_ref().unwrap().token.expose() == want));
        assert_eq!(entra.grants.load(Ordering::SeqCst), round);
        clock.advance(HOUR);
    }
}

#[tokio::test]
async fn a_wrong_secret_is_reported_with_entras_reason_and_never_the_secret() {
    let clock = ManualClock::at(T0);
    let (entra, server) = FakeEntra::start().await;
    let auth = secret_auth(&server, &clock, "not-the-secret");
    let err = auth.token().await.unwrap_err();
    let shown = err.to_string();
    assert_eq!(
        shown,
        "Microsoft Entra token endpoint (client secret): HTTP 401: invalid_client: \
         AADSTS7000215: Invalid client secret provided."
    );
    assert!(!shown.contains("not-the-secret"));
    // A failing endpoint is not cached: the next call tries again.
    entra.down.store(true, Ordering::SeqCst);
    let good = secret_auth(&server, &clock, SECRET);
    assert!(matches!(good.token().await, Err(CredentialError::Fetch(_))));
    entra.down.store(false, Ordering::SeqCst);
    assert_eq!(good.token().await.unwrap().token.expose(), "eyJ0eXAi.entra-1");
}

#[tokio::test]
async fn a_managed_identity_asks_imds_with_its_header_and_resource() {
    let clock = ManualClock::at(T0);
    let (entra, server) = FakeEntra::start().await;
    let env = Env::from_pairs([("AZURE_POD_IDENTITY_AUTHORITY_HOST", server.base.as_str())]);
    let system = AzureCredentials::managed_identity(None, None, &env).unwrap();
    assert_eq!(system.describe(), "Azure managed identity (system-assigned)");
    let auth = AzureAuth::new(system, http(), clock.clock());
    let token = auth.token().await.unwrap();
    assert_eq!(token.token.expose(), "eyJ0eXAi.imds-system-1");
    assert_eq!(token.expires_at, T0 + Duration::from_secs(86_399));
    assert_eq!(auth.token().await.unwrap().token.expose(), "eyJ0eXAi.imds-system-1");
    let user = AzureCredentials::managed_identity(Some(CLIENT), None, &env).unwrap();
    let AzureCredentials::ManagedIdentity { url, .. } = &user else { panic!() };
    assert!(url.ends_with(&format!("&client_id={CLIENT}")), "{url}");
    let auth = AzureAuth::new(user, http(), clock.clock());
    assert_eq!(auth.token().await.unwrap().token.expose(), "eyJ0eXAi.imds-user-2");
    assert_eq!(entra.imds_grants.load(Ordering::SeqCst), 2);
    assert!(entra.refused.lock().unwrap().is_empty(), "{:?}", entra.refused.lock().unwrap());
    // Off Azure, the default address.
    let off =
        AzureCredentials::managed_identity(None, None, &Env::from_pairs::<&str, &str>([])).unwrap();
    let AzureCredentials::ManagedIdentity { url, .. } = off else { panic!() };
    assert!(url.starts_with("http://169.254.169.254/metadata/identity/oauth2/token?"), "{url}");
}

#[tokio::test]
async fn app_services_identity_endpoint_is_asked_with_its_header_before_imds() {
    let clock = ManualClock::at(T0);
    let (entra, server) = FakeEntra::start().await;
    let endpoint = format!("{}/msi/token", server.base);
    let env = Env::from_pairs([
        ("IDENTITY_ENDPOINT", endpoint.as_str()),
        ("IDENTITY_HEADER", IDENTITY_HEADER),
        // IMDS is there too, and not asked.
        ("AZURE_POD_IDENTITY_AUTHORITY_HOST", server.base.as_str()),
    ]);
    let creds = AzureCredentials::managed_identity(None, None, &env).unwrap();
    // The header is a secret: scrubbed, never shown.
    assert_eq!(creds.secrets(), vec![Secret::new(IDENTITY_HEADER)]);
    assert!(!format!("{creds:?}").contains(IDENTITY_HEADER));
    let auth = AzureAuth::new(creds, http(), clock.clock());
    let token = auth.token().await.unwrap();
    assert_eq!(token.token.expose(), "eyJ0eXAi.appservice-1");
    // Its expiry, read from `expires_on`.
    assert_eq!(token.expires_at, T0 + Duration::from_secs(3600));
    assert!(entra.refused.lock().unwrap().is_empty(), "{:?}", entra.refused.lock().unwrap());
}

#[tokio::test]
async fn a_workload_identity_exchanges_the_projected_token_read_at_each_grant() {
    let clock = ManualClock::at(T0);
    let (entra, server) = FakeEntra::start().await;
    let file = std::env::temp_dir()
        .join(format!("switchyard-azure-identity-token-{}", crate::clock::unique()));
    std::fs::write(&file, format!("{PROJECTED}\n")).unwrap();
    let path = file.display().to_string();
    let env = Env::from_pairs([
        ("AZURE_FEDERATED_TOKEN_FILE", path.as_str()),
        ("AZURE_TENANT_ID", TENANT),
        ("AZURE_CLIENT_ID", CLIENT),
        ("AZURE_AUTHORITY_HOST", server.base.as_str()),
    ]);
    let creds = AzureCredentials::managed_identity(None, None, &env).unwrap();
    assert_eq!(creds.describe(), format!("Azure workload identity {CLIENT} (tenant {TENANT})"));
    let auth = AzureAuth::new(creds, http(), clock.clock());
    assert_eq!(auth.token().await.unwrap().token.expose(), "eyJ0eXAi.entra-1");
    assert!(entra.refused.lock().unwrap().is_empty(), "{:?}", entra.refused.lock().unwrap());
    // A rotated token is what the next grant sends.
    std::fs::write(&file, "rotated").unwrap();
    clock.advance(Duration::from_secs(3600));
    assert!(auth.token().await.is_err(), "the fake takes only the first token");
    assert_eq!(entra.refused.lock().unwrap().len(), 1);
    // Without its tenant, the configuration is refused naming the variable.
    let env = Env::from_pairs([("AZURE_FEDERATED_TOKEN_FILE", path.as_str())]);
    let err = AzureCredentials::managed_identity(Some(CLIENT), None, &env).unwrap_err();
    assert!(err.to_string().contains("AZURE_TENANT_ID"), "{err}");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn values_that_cannot_work_are_refused_naming_the_field() {
    let secret = || Secret::new(SECRET);
    let cases = [
        (AzureCredentials::client_secret("a/b", CLIENT, secret(), None, None), "tenant_id"),
        (AzureCredentials::client_secret(TENANT, "x?y", secret(), None, None), "client_id"),
        (
            AzureCredentials::client_secret(TENANT, CLIENT, Secret::new(""), None, None),
            "client_secret",
        ),
        (
            AzureCredentials::client_secret(TENANT, CLIENT, secret(), Some("ftp://x"), None),
            "authority_host",
        ),
        (
            AzureCredentials::client_secret(TENANT, CLIENT, secret(), None, Some("not a url")),
            "scope",
        ),
    ];
    for (result, field) in cases {
        let err = result.unwrap_err().to_string();
        assert!(err.starts_with(&format!("credentials.azure: field `{field}`")), "{err}");
        assert!(!err.contains(SECRET), "{err}");
    }
}

#[tokio::test]
async fn debug_and_describe_show_no_secret_or_token() {
    let clock = ManualClock::at(T0);
    let (_entra, server) = FakeEntra::start().await;
    let auth = secret_auth(&server, &clock, SECRET);
    let token = auth.token().await.unwrap();
    for shown in [format!("{auth:?}"), format!("{token:?}"), auth.credentials().describe()] {
        assert!(!shown.contains(SECRET) && !shown.contains("eyJ"), "{shown}");
    }
    assert_eq!(
        auth.credentials().describe(),
        format!("Microsoft Entra app {CLIENT} (tenant {TENANT})")
    );
    assert_eq!(auth.credentials().secrets(), vec![Secret::new(SECRET)]);
}

#[test]
fn the_futures_can_be_spawned() {
    fn send<T: Send>(_: &T) {}
    let env = Env::from_pairs([("AZURE_POD_IDENTITY_AUTHORITY_HOST", "http://127.0.0.1:9")]);
    let creds = AzureCredentials::managed_identity(None, None, &env).unwrap();
    let auth = AzureAuth::new(creds, http(), Clock::system());
    send(&auth.token());
}
