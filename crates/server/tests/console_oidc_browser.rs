//! Console sign-in through an OpenID Connect provider in a real browser:
//! headless Chromium from the sign-in page, through the fake provider's login
//! form, back into the console signed in as an admin. The provider is at
//! `localhost` and the gateway at `127.0.0.1`, two sites to the browser, so the
//! redirects are cross-site as with a real provider: the pending sign-in's
//! `SameSite=Lax` cookie must survive the way back, and the `SameSite=Strict`
//! session cookie must be sent on the first console page after it. Skipped
//! without Chromium unless `SWITCHYARD_REQUIRE_BROWSER=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::sync::Arc;
use std::time::Duration;

use switchyard_core::util::Secret;
use switchyard_core::{Catalog, ConfigSource, Engine, SharedSink};
use switchyard_server::AppState;
use switchyard_server::identity::Identity;
use switchyard_store::testing::sqlite_temp;
use switchyard_testkit::browser::Browser;
use switchyard_testkit::oidc::{FakeIdp, IdpConfig, IdpUser};
use tokio::sync::oneshot;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signs_in_through_the_identity_provider() {
    let Some(browser) = Browser::start("console_oidc_sign_in").await else { return };
    let idp =
        FakeIdp::start(IdpConfig { host: "localhost", ..IdpConfig::default() }).await.unwrap();
    idp.add_user(IdpUser::new("alice", "alice@example.com", &["ops-admins"]));
    idp.add_user(IdpUser::new("eve", "eve@example.com", &["marketing"]));
    let yaml = format!(
        "storage: {{ url: none }}\n\
         providers:\n  mock: {{ wire: mock }}\n\
         models:\n  - id: mock-echo\n    deployments: [{{ provider: mock }}]\n\
         console:\n  oidc:\n    issuer: {}\n    client_id: switchyard-console\n\
         \x20   client_secret_env: IDP_SECRET\n    admin_groups: [ops-admins]\n\
         \x20   display_name: Fake IdP\n",
        idp.issuer()
    );
    let env = |k: &str| (k == "IDP_SECRET").then(|| "idp-client-secret-4f1c9a7e".to_owned());
    let raw = ConfigSource::from_text("test.yaml", &yaml).parse_with(&env).unwrap();
    let catalog = Catalog::compile(&raw, "test.yaml", &env).unwrap();
    let db = sqlite_temp().await;
    let sink: SharedSink = Arc::new(switchyard_core::record::NullSink);
    let gateway = Arc::new(Engine::new(catalog, sink).unwrap());
    let identity = Identity::new(
        vec![Secret::new(common::GATEWAY_KEY)],
        None,
        Some(db.store().clone()),
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

    // A console page without a session: the sign-in page, offering the provider.
    browser.goto(&format!("{base}/console/requests")).await.unwrap();
    let button = browser.wait_for("#oidc").await.unwrap();
    assert_eq!(button.text().await.unwrap(), "Sign in with Fake IdP");
    button.click().await.unwrap();

    // At the provider (another site): its login form; pick the admin.
    browser.wait_for("#login_user").await.unwrap().select_by_value("alice").await.unwrap();
    assert!(browser.current_url().await.unwrap().starts_with("http://localhost:"));
    browser.find("#login_submit").await.unwrap().click().await.unwrap();

    // Back in the console, where the sign-in started, signed in as an admin.
    browser.wait_for_text("header .who", "alice@example.com · admin").await.unwrap();
    let url = browser.current_url().await.unwrap();
    assert_eq!(url, format!("{base}/console/requests"));
    let cookies = browser.cookies().await.unwrap();
    let session = cookies.iter().find(|c| c.name == "switchyard_console").unwrap();
    assert!(session.http_only);
    assert_eq!(session.same_site.as_deref(), Some("Strict"));
    // Signing out and in as someone in no console group: refused, with why.
    browser.find("header .who button").await.unwrap().click().await.unwrap();
    browser.wait_for("#oidc").await.unwrap().click().await.unwrap();
    browser.wait_for("#login_user").await.unwrap().select_by_value("eve").await.unwrap();
    browser.find("#login_submit").await.unwrap().click().await.unwrap();
    browser.wait_for_text("p.error", "none of the groups allowed").await.unwrap();
    browser.close().await.unwrap();
    let _ = tx.send(());
    db.cleanup().await;
}
