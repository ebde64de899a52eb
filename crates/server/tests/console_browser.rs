//! The console end to end in headless Chromium: sign in with a key, add a
//! user and make them a key, use the key, edit a route and see the next
//! request follow it, open a request's detail, and render the analytics with
//! data. Screenshots of each page are kept under
//! `target/test-output/console_end_to_end/` (and the page's source and console
//! on failure). Skipped without Chromium unless `SWITCHYARD_REQUIRE_BROWSER=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::GATEWAY_KEY;
use common::console::{ADMIN, Env};
use serde_json::json;
use switchyard_testkit::browser::Browser;

const PINNED: &str = "routes:\n  - name: pinned\n    match: \"m-openai\"\n    provider: openai\n";
const MOVED: &str = "routes:\n  - name: pinned\n    match: \"m-openai\"\n    provider: anthropic\n    model: up-anthropic\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_end_to_end() {
    let Some(browser) = Browser::start("console_end_to_end").await else { return };
    let db = switchyard_store::testing::sqlite_temp().await;
    let env = Env::start_with(&db, Some(PINNED)).await;
    let chat = json!({"model": "m-openai", "messages": [{"role": "user", "content": "hi"}]});
    let served_by = |key: String| {
        let req = env
            .client
            .post(format!("{}/v1/chat/completions", env.base))
            .bearer_auth(key)
            .json(&chat);
        async move {
            let r = req.send().await.unwrap();
            assert_eq!(r.status(), 200);
            r.headers()["x-gateway-provider"].to_str().unwrap().to_owned()
        }
    };
    assert_eq!(served_by(GATEWAY_KEY.to_owned()).await, "openai");

    // Sign in: the console sends us to the form and back.
    browser.goto(&format!("{}/console/requests", env.base)).await.unwrap();
    browser.wait_for("input[name=key]").await.unwrap().send_keys(ADMIN).await.unwrap();
    browser.find("form").await.unwrap().submit().await.unwrap();
    browser.wait_for_text("h1", "Requests").await.unwrap();
    let cookies = browser.cookies().await.unwrap();
    let session = cookies.iter().find(|c| c.name == "switchyard_console").unwrap();
    assert!(session.http_only);
    assert_eq!(session.same_site.as_deref(), Some("Strict"));
    browser.goto(&format!("{}/console/overview", env.base)).await.unwrap();
    browser.wait_for("#routes").await.unwrap();
    browser.save_screenshot("overview").await.unwrap();

    // A user, then a key for them: the secret is shown once, and it works.
    browser.goto(&format!("{}/console/people", env.base)).await.unwrap();
    let form = browser.wait_for("#create-user").await.unwrap();
    form.find("input[name=email]").await.unwrap().send_keys("ann@example.com").await.unwrap();
    form.submit().await.unwrap();
    browser.wait_for_text("#users", "ann@example.com").await.unwrap();
    let users = env.admin("GET", "/admin/users", json!(null)).await;
    let ann = users["data"][0]["id"].as_str().unwrap().to_owned();
    browser.goto(&format!("{}/console/keys", env.base)).await.unwrap();
    let form = browser.wait_for("#create-key").await.unwrap();
    form.find("select[name=user_id]").await.unwrap().select_by_value(&ann).await.unwrap();
    form.find("input[name=label]").await.unwrap().send_keys("laptop").await.unwrap();
    form.submit().await.unwrap();
    let secret = browser.wait_for("#new-key-secret").await.unwrap().value().await.unwrap();
    assert!(secret.starts_with("sy-"), "{secret}");
    browser.save_screenshot("keys").await.unwrap();
    assert_eq!(served_by(secret.clone()).await, "openai");

    // Edit the route: the next request follows it.
    browser.goto(&format!("{}/console/routes", env.base)).await.unwrap();
    let editor = browser.wait_for("#edit-routes textarea").await.unwrap();
    editor.clear().await.unwrap();
    editor.send_keys(MOVED).await.unwrap();
    browser.find("#edit-routes").await.unwrap().submit().await.unwrap();
    browser.wait_for("#saved").await.unwrap();
    browser.wait_for_text("#routes", "anthropic").await.unwrap();
    browser.save_screenshot("routes").await.unwrap();
    assert_eq!(served_by(secret).await, "anthropic");

    // The request list, and one request's detail with its timeline.
    browser.goto(&format!("{}/console/requests", env.base)).await.unwrap();
    browser
        .wait_until("three requests listed", || async {
            // Records reach the database a moment after their answers.
            if browser.find_all("#requests a.mono").await?.len() >= 3 {
                return Ok(true);
            }
            browser.goto(&format!("{}/console/requests", env.base)).await?;
            Ok(false)
        })
        .await
        .unwrap();
    browser.save_screenshot("requests").await.unwrap();
    browser.find("#requests a.mono").await.unwrap().click().await.unwrap();
    browser.wait_for("#timeline svg rect").await.unwrap();
    // Each attempt's bar is filled in its outcome's colour (the series' stroke),
    // not the SVG default black.
    let bars = browser
        .execute(
            "return [...document.querySelectorAll('#timeline svg rect')].map(r => \
             [getComputedStyle(r).fill, getComputedStyle(r).stroke])",
            vec![],
        )
        .await
        .unwrap();
    for bar in bars.as_array().unwrap() {
        assert!(bar[0] == bar[1] && bar[0] != "rgb(0, 0, 0)", "a bar's fill: {bar}");
    }
    let descriptor = browser.find("#descriptor").await.unwrap().text().await.unwrap();
    assert!(descriptor.contains("route:pinned"), "{descriptor}");
    browser.save_screenshot("request-detail").await.unwrap();

    // Analytics with data: the charts are drawn, each beside its table.
    browser.goto(&format!("{}/console/analytics?since=2h&by=provider", env.base)).await.unwrap();
    browser.wait_for_text("#groups", "anthropic").await.unwrap();
    let drawn = browser
        .execute(
            "return document.querySelectorAll('#chart-requests svg polyline, #chart-requests svg circle').length",
            vec![],
        )
        .await
        .unwrap();
    assert!(drawn.as_u64().unwrap() >= 1, "the requests chart plots something: {drawn}");
    // Lines, not filled polygons (a series class's fill once outranked the
    // polyline's `fill: none`).
    let fills = browser
        .execute(
            "return [...document.querySelectorAll('svg polyline')].map(p => getComputedStyle(p).fill)",
            vec![],
        )
        .await
        .unwrap();
    let fills = fills.as_array().unwrap();
    assert!(
        !fills.is_empty() && fills.iter().all(|f| f == "none"),
        "every line unfilled: {fills:?}"
    );
    browser.save_screenshot("analytics").await.unwrap();

    // Sign out: the console asks to sign in again.
    browser.find("form.who button").await.unwrap().click().await.unwrap();
    browser.wait_for("input[name=key]").await.unwrap();
    browser.close().await.unwrap();
}
