//! The console over HTTP, black box through the real server on a fresh
//! database (both backends): who may sign in, the session cookie's flags,
//! viewers against admins, CSRF and origin checks on every write, revocation
//! (of a session, and of the key a session was opened with), the sign-in
//! limit, and every page rendered with traffic in it and no secret on it.
//! (Chromium drives the same pages in `console_browser.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::time::Duration;

use common::console::{ADMIN, Env, urlencoded};
use common::{ANTHROPIC_KEY, GATEWAY_KEY, OPENAI_KEY, WAIT};
use serde_json::{Value, json};
use switchyard_core::util::Secret;
use switchyard_store::on_both_backends;
use switchyard_store::testing::TestDb;

on_both_backends! {
    case_only_admins_and_viewers_sign_in => only_admins_and_viewers_sign_in_sqlite, only_admins_and_viewers_sign_in_postgres;
    case_viewers_read_admins_change_and_writes_are_checked =>
        viewers_read_admins_change_and_writes_are_checked_sqlite,
        viewers_read_admins_change_and_writes_are_checked_postgres;
    case_revoking_the_key_ends_its_sessions =>
        revoking_the_key_ends_its_sessions_sqlite, revoking_the_key_ends_its_sessions_postgres;
    case_failed_sign_ins_are_limited => failed_sign_ins_are_limited_sqlite, failed_sign_ins_are_limited_postgres;
    case_admins_manage_keys_and_people_viewers_only_look =>
        admins_manage_keys_and_people_viewers_only_look_sqlite,
        admins_manage_keys_and_people_viewers_only_look_postgres;
    case_rules_are_added_removed_and_tested =>
        rules_are_added_removed_and_tested_sqlite, rules_are_added_removed_and_tested_postgres;
    case_the_route_editor_checks_saves_and_reloads =>
        the_route_editor_checks_saves_and_reloads_sqlite, the_route_editor_checks_saves_and_reloads_postgres;
    case_pages_show_the_traffic_and_no_secret =>
        pages_show_the_traffic_and_no_secret_sqlite, pages_show_the_traffic_and_no_secret_postgres;
}

async fn case_only_admins_and_viewers_sign_in(db: TestDb) {
    let env = Env::start(&db).await;
    // Without a session every page goes to the sign-in page, and comes back.
    let p = env.get("/console/requests?model=m-openai", None).await;
    assert_eq!(p.status, 303);
    assert_eq!(
        p.location.as_deref(),
        Some("/console/sign-in?next=/console/requests%3Fmodel%3Dm-openai")
    );
    let form = env.get("/console/sign-in", None).await;
    assert_eq!(form.status, 200);
    assert!(form.text.contains("type=\"password\""));

    // The bootstrap admin key: a session cookie with every flag.
    let p =
        env.post("/console/sign-in", None, &[("key", ADMIN), ("next", "/console/overview")]).await;
    assert_eq!((p.status, p.location.as_deref()), (303, Some("/console/overview")));
    let cookie = p.set_cookie.unwrap();
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(cookie.contains(flag), "{cookie}");
    }
    assert!(!cookie.contains(ADMIN), "the cookie holds a token, never the key");
    let token = cookie.split(';').next().unwrap().strip_prefix("switchyard_console=").unwrap();
    let overview = env.get("/console/overview", Some(token)).await;
    assert_eq!(overview.status, 200, "{}", overview.text);
    assert!(overview.text.contains("bootstrap-admin · admin"));

    // Behind a TLS-terminating proxy the cookie is Secure.
    let req = env
        .client
        .post(format!("{}/console/sign-in", env.base))
        .header("x-forwarded-proto", "https")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(urlencoded(&[("key", ADMIN)]));
    let p = env.answer(req).await;
    assert!(p.set_cookie.unwrap().contains("; Secure"));

    // A viewer's key signs in; a member's, a static key, a wrong key and no key do not.
    let (_, _, viewer) = env.user("vera@example.com", "viewer").await;
    let token = env.sign_in(&viewer).await;
    assert!(
        env.get("/console/overview", Some(&token)).await.text.contains("vera@example.com · viewer")
    );
    let (_, _, member) = env.user("mo@example.com", "member").await;
    for key in [member.as_str(), GATEWAY_KEY, "sy-not-a-key-at-all", ""] {
        let p = env.post("/console/sign-in", None, &[("key", key)]).await;
        assert_eq!(p.status, 401, "{key}: {}", p.text);
        assert!(p.set_cookie.is_none());
        assert!(p.text.contains("does not belong to an admin or a viewer"));
    }
    // A made-up session token, or none, is no session.
    assert_eq!(env.get("/console/overview", Some("sys_forged")).await.status, 303);
    // The redirect after sign-in never leaves the console.
    let p = env
        .post("/console/sign-in", None, &[("key", ADMIN), ("next", "https://evil.example/")])
        .await;
    assert_eq!(p.location.as_deref(), Some("/console/overview"));
    // Signing in from another site's page is refused (login CSRF).
    let p = env
        .post_from("/console/sign-in", None, &[("key", ADMIN)], Some("https://evil.example"))
        .await;
    assert_eq!(p.status, 403);
    assert!(p.set_cookie.is_none());
}

async fn case_viewers_read_admins_change_and_writes_are_checked(db: TestDb) {
    let env = Env::start(&db).await;
    let (_, _, viewer) = env.user("vera@example.com", "viewer").await;
    let admin = env.sign_in(ADMIN).await;
    let seen = env.sign_in(&viewer).await;
    let sessions = env.get("/console/sessions", Some(&admin)).await;
    assert_eq!(sessions.status, 200);
    assert!(sessions.text.contains("vera@example.com"));
    let csrf = Env::csrf(&sessions);
    // The viewer's session id, as the page names it in its revoke form.
    let viewer_id = {
        let row = sessions.text.split("<tr>").find(|r| r.contains("vera@example.com")).unwrap();
        let at = row.find("/console/sessions/").unwrap() + "/console/sessions/".len();
        row[at..].split('/').next().unwrap().to_owned()
    };
    let revoke = format!("/console/sessions/{viewer_id}/revoke");

    // A viewer sees the list without revoke buttons, and may not revoke.
    let as_viewer = env.get("/console/sessions", Some(&seen)).await;
    assert_eq!(as_viewer.status, 200);
    assert!(!as_viewer.text.contains("/revoke"));
    let viewer_csrf = Env::csrf(&as_viewer);
    let p = env.post(&revoke, Some(&seen), &[("csrf", &viewer_csrf)]).await;
    assert_eq!(p.status, 403, "{}", p.text);
    assert!(p.text.contains("needs an admin"));

    // An admin's write without the session's token, with another session's,
    // or from another origin, is refused.
    for bad in ["", "0000", viewer_csrf.as_str()] {
        let p = env.post(&revoke, Some(&admin), &[("csrf", bad)]).await;
        assert_eq!(p.status, 403, "csrf {bad:?}");
    }
    let p = env
        .post_from(&revoke, Some(&admin), &[("csrf", &csrf)], Some("https://evil.example"))
        .await;
    assert_eq!(p.status, 403);
    assert_eq!(env.get("/console/overview", Some(&seen)).await.status, 200, "still signed in");

    // The admin revokes the viewer's session: its next page asks to sign in.
    let p = env.post(&revoke, Some(&admin), &[("csrf", &csrf)]).await;
    assert_eq!((p.status, p.location.as_deref()), (303, Some("/console/sessions")));
    assert_eq!(env.get("/console/overview", Some(&seen)).await.status, 303);
    assert_eq!(env.post(&revoke, Some(&admin), &[("csrf", &csrf)]).await.status, 404);

    // Signing out ends the admin's own session, and clears the cookie.
    let p = env.post("/console/sign-out", Some(&admin), &[("csrf", &csrf)]).await;
    assert_eq!(p.status, 303);
    assert!(p.set_cookie.unwrap().contains("Max-Age=0"));
    assert_eq!(env.get("/console/overview", Some(&admin)).await.status, 303);
}

async fn case_revoking_the_key_ends_its_sessions(db: TestDb) {
    let env = Env::start(&db).await;
    let (uid, kid, key) = env.user("vera@example.com", "viewer").await;
    let token = env.sign_in(&key).await;
    assert_eq!(env.get("/console/requests", Some(&token)).await.status, 200);
    // Demoted to member: the session no longer lets them in.
    env.admin("PATCH", &format!("/admin/users/{uid}"), json!({"role": "member"})).await;
    assert_eq!(env.get("/console/requests", Some(&token)).await.status, 303);
    // Promoted again, signed in again; then the key is revoked.
    env.admin("PATCH", &format!("/admin/users/{uid}"), json!({"role": "admin"})).await;
    let token = env.sign_in(&key).await;
    assert!(env.get("/console/overview", Some(&token)).await.text.contains("· admin"));
    env.admin("DELETE", &format!("/admin/keys/{kid}"), json!({})).await;
    assert_eq!(env.get("/console/overview", Some(&token)).await.status, 303);
}

async fn case_failed_sign_ins_are_limited(db: TestDb) {
    let env = Env::start(&db).await;
    for _ in 0..10 {
        assert_eq!(env.post("/console/sign-in", None, &[("key", "sy-wrong")]).await.status, 401);
    }
    // The eleventh is held back, even with the right key.
    let p = env.post("/console/sign-in", None, &[("key", ADMIN)]).await;
    assert_eq!(p.status, 429, "{}", p.text);
    let wait: u64 = p.retry_after.unwrap().parse().unwrap();
    assert!((1..=300).contains(&wait));
    assert!(p.set_cookie.is_none());
}

async fn case_pages_show_the_traffic_and_no_secret(db: TestDb) {
    let env = Env::start(&db).await;
    let (_, _, viewer) = env.user("vera@example.com", "viewer").await;
    // Traffic: a chat request through the gateway, its record stored.
    let body = json!({"model": "m-openai", "messages": [{"role": "user", "content": "hi"}]});
    let resp = env
        .client
        .post(format!("{}/v1/chat/completions", env.base))
        .bearer_auth(GATEWAY_KEY)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let id = resp.headers()["x-request-id"].to_str().unwrap().to_owned();
    tokio::time::timeout(WAIT, async {
        loop {
            let r = env
                .client
                .get(format!("{}/admin/requests/{id}", env.base))
                .bearer_auth(ADMIN)
                .send()
                .await
                .unwrap();
            if r.status() == 200 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();

    // The public price page shows what the meter charged: the request's cost is
    // its tokens at the page's prices.
    let pricing = env.get("/pricing", None).await;
    assert_eq!(pricing.status, 200);
    assert!(!pricing.text.contains("m-hidden"), "hidden models are not listed");
    let row = pricing
        .text
        .split("<tr ")
        .find(|r| r.contains("data-model=\"m-openai\" data-provider=\"openai\""))
        .unwrap();
    let prices: Vec<f64> = row
        .split("<td class=\"num\">$")
        .skip(1)
        .map(|c| c.split('<').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(
        prices,
        [1.0, 2.0, 1.0, 1.0],
        "input, output, cache read and write (falling back to input)"
    );
    let record = env
        .client
        .get(format!("{}/admin/requests/{id}", env.base))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    let record: Value = record.json().await.unwrap();
    let (input, output) = (
        record["usage"]["input_tokens"].as_f64().unwrap(),
        record["usage"]["output_tokens"].as_f64().unwrap(),
    );
    let billed = record["cost_usd"].as_f64().unwrap();
    let shown = (input * prices[0] + output * prices[1]) / 1e6;
    assert!(billed > 0.0 && (billed - shown).abs() < 1e-12, "billed {billed}, page says {shown}");

    let admin = env.sign_in(ADMIN).await;
    let token = env.sign_in(&viewer).await;
    let mut seen = Vec::new();
    for session in [&admin, &token] {
        let overview = env.get("/console/overview", Some(session)).await;
        assert_eq!(overview.status, 200, "{}", overview.text);
        assert!(overview.text.contains("id=\"routes\""));
        assert!(overview.text.contains("<span class=\"state closed\">closed</span>"));
        assert!(overview.text.contains("<b id=\"hour-requests\">1</b>"), "{}", overview.text);

        let providers = env.get("/console/providers", Some(session)).await;
        assert_eq!(providers.status, 200);
        assert!(providers.text.contains("id=\"provider-openai\""));
        assert!(providers.text.contains("<code>openai-chat</code>"));
        // The key's fingerprint, never the key.
        let fingerprint = Secret::new(OPENAI_KEY).fingerprint();
        assert!(providers.text.contains(&fingerprint), "{}", providers.text);

        let list =
            env.get("/console/requests?since=1h&provider=openai&status=200", Some(session)).await;
        assert_eq!(list.status, 200);
        assert!(list.text.contains(&format!("/console/requests/{id}")), "{}", list.text);
        let none = env.get("/console/requests?provider=anthropic", Some(session)).await;
        assert!(none.text.contains("No requests match."));
        let bad = env.get("/console/requests?status=abc", Some(session)).await;
        assert_eq!(bad.status, 400);

        let detail = env.get(&format!("/console/requests/{id}"), Some(session)).await;
        assert_eq!(detail.status, 200);
        assert!(detail.text.contains("id=\"descriptor\""));
        assert!(detail.text.contains("id=\"timeline\""));
        assert!(detail.text.contains("<td class=\"status-ok\">ok</td>"), "{}", detail.text);
        assert_eq!(env.get("/console/requests/req_missing", Some(session)).await.status, 404);

        let analytics = env.get("/console/analytics?by=provider&slo_ms=10", Some(session)).await;
        assert_eq!(analytics.status, 200, "{}", analytics.text);
        // The SLO is clamped as the API clamps it.
        assert!(analytics.text.contains("Over 500 ms"));
        assert!(
            analytics.text.contains("<code>openai</code></td><td class=\"num\">1</td>"),
            "{}",
            analytics.text
        );
        for chart in ["chart-requests", "chart-ttft", "chart-tokens", "chart-cost", "chart-rates"] {
            assert!(analytics.text.contains(&format!("id=\"{chart}\"")), "{chart}");
        }
        assert!(analytics.text.contains("<svg viewBox"));
        assert_eq!(env.get("/console/analytics?by=colour", Some(session)).await.status, 400);
        let models = env.get("/console/models", Some(session)).await;
        assert_eq!(models.status, 200);
        assert!(models.text.contains("<code>m-hidden</code>"), "operators see hidden models");
        assert!(models.text.contains("<td class=\"num\">$3.00</td><td class=\"num\">$15.00</td><td class=\"num\">$0.30</td><td class=\"num\">$3.75</td>"));
        seen.extend([
            overview.text,
            providers.text,
            list.text,
            detail.text,
            analytics.text,
            models.text,
        ]);
        seen.push(env.get("/console/sessions", Some(session)).await.text);
    }
    let css = env.get("/console/assets/console.css", None).await;
    assert_eq!(css.status, 200);
    assert!(css.text.contains("prefers-color-scheme: dark"));
    for page in &seen {
        for secret in [
            OPENAI_KEY,
            ANTHROPIC_KEY,
            GATEWAY_KEY,
            ADMIN,
            viewer.as_str(),
            admin.as_str(),
            token.as_str(),
        ] {
            assert!(!page.contains(secret), "a page shows a secret");
        }
    }
}

async fn case_admins_manage_keys_and_people_viewers_only_look(db: TestDb) {
    let env = Env::start(&db).await;
    let admin = env.sign_in(ADMIN).await;
    let people = env.get("/console/people", Some(&admin)).await;
    assert_eq!(people.status, 200, "{}", people.text);
    let csrf = Env::csrf(&people);
    // A user, a project and a group, through the page's forms.
    let p = env
        .post(
            "/console/people/users",
            Some(&admin),
            &[("csrf", &csrf), ("email", "ann@example.com"), ("role", "member")],
        )
        .await;
    assert_eq!((p.status, p.location.as_deref()), (303, Some("/console/people")), "{}", p.text);
    let dup = env
        .post(
            "/console/people/users",
            Some(&admin),
            &[("csrf", &csrf), ("email", "ann@example.com")],
        )
        .await;
    assert_eq!(dup.status, 400);
    assert!(dup.text.contains("already exists"), "{}", dup.text);
    for (what, name) in [("projects", "search"), ("groups", "oncall")] {
        let p = env
            .post(
                &format!("/console/people/{what}"),
                Some(&admin),
                &[("csrf", &csrf), ("name", name)],
            )
            .await;
        assert_eq!(p.status, 303, "{what}: {}", p.text);
    }
    let users = env.admin("GET", "/admin/users", json!(null)).await;
    let ann = users["data"][0]["id"].as_str().unwrap().to_owned();
    let groups = env.admin("GET", "/admin/groups", json!(null)).await;
    let group = groups["data"][0]["id"].as_str().unwrap().to_owned();
    let p = env
        .post(
            &format!("/console/people/group-members/{group}"),
            Some(&admin),
            &[("csrf", &csrf), ("user_id", &ann)],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.text);
    let page = env.get("/console/people", Some(&admin)).await;
    let row = page.text.split("<tr id=\"user-").find(|r| r.starts_with(&ann)).unwrap();
    assert!(row.contains("oncall"), "{row}");

    // A key for her, with a limit; its secret is on the answer, once.
    let keys = env.get("/console/keys", Some(&admin)).await;
    let csrf = Env::csrf(&keys);
    let bad = env
        .post("/console/keys", Some(&admin), &[("csrf", &csrf), ("user_id", &ann), ("rpm", "lots")])
        .await;
    assert_eq!(bad.status, 400);
    assert!(
        bad.text.contains("rpm: &#34;lots&#34; is not a whole number")
            || bad.text.contains("rpm: &quot;lots&quot; is not a whole number"),
        "{}",
        bad.text
    );
    let zero = env
        .post("/console/keys", Some(&admin), &[("csrf", &csrf), ("user_id", &ann), ("rpm", "0")])
        .await;
    assert_eq!(zero.status, 400, "the directory's own check refuses a zero limit");
    let made = env
        .post(
            "/console/keys",
            Some(&admin),
            &[("csrf", &csrf), ("user_id", &ann), ("label", "laptop"), ("rpm", "60")],
        )
        .await;
    assert_eq!(made.status, 200, "{}", made.text);
    let at = made.text.find("id=\"new-key-secret\"").unwrap();
    let before = &made.text[..at];
    let secret = before.rsplit("value=\"").next().unwrap().split('"').next().unwrap().to_owned();
    assert!(secret.starts_with("sy-"), "{secret}");
    // The key works, and the listing never shows it again.
    let chat = json!({"model": "m-openai", "messages": [{"role": "user", "content": "hi"}]});
    let call = |key: String| {
        let req = env
            .client
            .post(format!("{}/v1/chat/completions", env.base))
            .bearer_auth(key)
            .json(&chat);
        async move { req.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(call(secret.clone()).await, 200);
    let listed = env.get("/console/keys", Some(&admin)).await;
    assert!(!listed.text.contains(&secret));
    assert!(listed.text.contains("laptop"));
    let kid = env.admin("GET", "/admin/keys", json!(null)).await["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Its limits change from the page.
    let p = env
        .post(
            &format!("/console/keys/{kid}/limits"),
            Some(&admin),
            &[("csrf", &csrf), ("rpm", "120"), ("tpm", ""), ("concurrent", "2")],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.text);
    let key = env.admin("GET", "/admin/keys", json!(null)).await;
    assert_eq!(key["data"][0]["limits"], json!({"rpm": 120, "concurrent": 2}));

    // A viewer sees the pages without forms, and cannot post them.
    let (_, _, viewer_key) = env.user("vera@example.com", "viewer").await;
    let viewer = env.sign_in(&viewer_key).await;
    let seen = env.get("/console/keys", Some(&viewer)).await;
    assert_eq!(seen.status, 200);
    assert!(!seen.text.contains("id=\"create-key\""));
    assert!(!seen.text.contains("/revoke"));
    let viewer_csrf = Env::csrf(&seen);
    let p = env
        .post(&format!("/console/keys/{kid}/revoke"), Some(&viewer), &[("csrf", &viewer_csrf)])
        .await;
    assert_eq!(p.status, 403);
    let p = env
        .post("/console/people/groups", Some(&viewer), &[("csrf", &viewer_csrf), ("name", "x")])
        .await;
    assert_eq!(p.status, 403);
    assert!(!env.get("/console/people", Some(&viewer)).await.text.contains("id=\"create-user\""));

    // The admin revokes it: it stops working at once.
    let p =
        env.post(&format!("/console/keys/{kid}/revoke"), Some(&admin), &[("csrf", &csrf)]).await;
    assert_eq!(p.status, 303);
    assert_eq!(call(secret).await, 401);
}

async fn case_rules_are_added_removed_and_tested(db: TestDb) {
    let env = Env::start(&db).await;
    let admin = env.sign_in(ADMIN).await;
    let (_, _, member) = env.user("mo@example.com", "member").await;
    let prefix = env.admin("GET", "/admin/keys", json!(null)).await["data"][0]["prefix"]
        .as_str()
        .unwrap()
        .to_owned();
    let page = env.get("/console/rules", Some(&admin)).await;
    assert_eq!(page.status, 200, "{}", page.text);
    let csrf = Env::csrf(&page);
    let tester = |session: String| {
        let path = format!("/console/rules?key={prefix}&model=m-openai");
        let env = &env;
        async move { env.get(&path, Some(&session)).await.text }
    };
    assert!(
        tester(admin.clone()).await.contains("Allowed</b>: no rule matches: allowed by default")
    );
    // A bad rule is refused with its reason; a good one is stored and applies.
    let bad = env
        .post(
            "/console/rules",
            Some(&admin),
            &[
                ("csrf", &csrf),
                ("name", "x"),
                ("effect", "deny"),
                ("pattern", "*"),
                ("subject_kind", "role"),
                ("subject_value", "wizard"),
            ],
        )
        .await;
    assert_eq!(bad.status, 400);
    assert!(bad.text.contains("is not admin, member or viewer"));
    let made = env
        .post(
            "/console/rules",
            Some(&admin),
            &[
                ("csrf", &csrf),
                ("name", "no-openai-for-members"),
                ("effect", "deny"),
                ("pattern", "m-openai"),
                ("subject_kind", "role"),
                ("subject_value", "member"),
                ("reason", "ask first"),
                ("priority", "5"),
            ],
        )
        .await;
    assert_eq!(made.status, 303, "{}", made.text);
    let verdict = tester(admin.clone()).await;
    assert!(
        verdict.contains(
            "Denied</b>: rule &#34;no-openai-for-members&#34; (deny, priority 5): ask first"
        ) || verdict.contains(
            "Denied</b>: rule &quot;no-openai-for-members&quot; (deny, priority 5): ask first"
        ),
        "{verdict}"
    );
    // The tester says what a request gets.
    let chat = json!({"model": "m-openai", "messages": [{"role": "user", "content": "hi"}]});
    let r = env
        .client
        .post(format!("{}/v1/chat/completions", env.base))
        .bearer_auth(&member)
        .json(&chat)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    // A viewer may test, not change.
    let (_, _, viewer_key) = env.user("vera@example.com", "viewer").await;
    let viewer = env.sign_in(&viewer_key).await;
    assert!(tester(viewer.clone()).await.contains("Denied</b>"));
    let seen = env.get("/console/rules", Some(&viewer)).await;
    assert!(!seen.text.contains("id=\"create-rule\""));
    let id = env.admin("GET", "/admin/rules", json!(null)).await["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let p = env
        .post(&format!("/console/rules/{id}/delete"), Some(&viewer), &[("csrf", &Env::csrf(&seen))])
        .await;
    assert_eq!(p.status, 403);
    let p =
        env.post(&format!("/console/rules/{id}/delete"), Some(&admin), &[("csrf", &csrf)]).await;
    assert_eq!(p.status, 303);
    assert!(tester(admin).await.contains("Allowed</b>"));
    let r = env
        .client
        .post(format!("{}/v1/chat/completions", env.base))
        .bearer_auth(&member)
        .json(&chat)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let unknown = env.get("/console/rules?key=sy-nothing&model=m-openai", Some(&viewer)).await;
    assert_eq!(unknown.status, 400);
}

const PINNED: &str = "routes:\n  - name: pinned\n    match: \"m-openai\"\n    provider: openai\n";

async fn case_the_route_editor_checks_saves_and_reloads(db: TestDb) {
    let env = Env::start_with(&db, Some(PINNED)).await;
    let path = env.dir.join("config.yaml");
    let original = std::fs::read_to_string(&path).unwrap();
    let chat = json!({"model": "m-openai", "messages": [{"role": "user", "content": "hi"}]});
    let served_by = || {
        let req = env
            .client
            .post(format!("{}/v1/chat/completions", env.base))
            .bearer_auth(GATEWAY_KEY)
            .json(&chat);
        async move {
            let r = req.send().await.unwrap();
            assert_eq!(r.status(), 200);
            r.headers()["x-gateway-provider"].to_str().unwrap().to_owned()
        }
    };
    assert_eq!(served_by().await, "openai");
    let admin = env.sign_in(ADMIN).await;
    let page = env.get("/console/routes", Some(&admin)).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.text.contains("<b>pinned</b>"));
    assert!(page.text.contains("name: pinned"), "the editor holds the section");
    let csrf = Env::csrf(&page);
    let base = {
        let at = page.text.find("name=\"base\" value=\"").unwrap() + "name=\"base\" value=\"".len();
        page.text[at..].split('"').next().unwrap().to_owned()
    };
    let save = |text: &str, base: &str| {
        let form = [("csrf", csrf.as_str()), ("base", base), ("routes", text)];
        let form: Vec<(String, String)> =
            form.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let env = &env;
        let admin = admin.clone();
        async move {
            let form: Vec<(&str, &str)> =
                form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            env.post("/console/routes", Some(&admin), &form).await
        }
    };

    // A provider that does not exist: refused by the start-up check, with the
    // field and the editor's line; the file is as it was.
    let bad =
        save("routes:\n  - name: pinned\n    match: \"m-openai\"\n    provider: nowhere\n", &base)
            .await;
    assert_eq!(bad.status, 422, "{}", bad.text);
    assert!(bad.text.contains("id=\"problems\""));
    assert!(bad.text.contains("nowhere"), "{}", bad.text);
    assert!(
        bad.text.contains("line 2: ") || bad.text.contains("line 4: "),
        "the problem is placed on its line: {}",
        bad.text
    );
    assert!(bad.text.contains("provider: nowhere"), "the text is kept for fixing");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
    // YAML that does not parse, and a section that reaches past routes.
    assert_eq!(save("routes:\n  - name: [unclosed\n", &base).await.status, 422);
    let smuggled = save("routes: []\nproviders:\n  evil: { wire: mock }\n", &base).await;
    assert_eq!(smuggled.status, 422);
    assert!(smuggled.text.contains("changes `routes:` only"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);

    // A good change: saved, the old file kept, reloaded, and followed at once.
    let good = "routes:\n  - name: pinned\n    match: \"m-openai\"\n    provider: anthropic\n    model: up-anthropic\n";
    let p = save(good, &base).await;
    assert_eq!(
        (p.status, p.location.as_deref()),
        (303, Some("/console/routes?saved=1")),
        "{}",
        p.text
    );
    assert_eq!(std::fs::read_to_string(env.dir.join("config.yaml.bak")).unwrap(), original);
    let now = std::fs::read_to_string(&path).unwrap();
    assert!(now.contains("provider: anthropic\n    model: up-anthropic"));
    assert_eq!(now.replace(good, PINNED), original, "nothing else in the file changed");
    assert_eq!(served_by().await, "anthropic");
    assert!(env.get("/console/routes?saved=1", Some(&admin)).await.text.contains("id=\"saved\""));
    // A second save from the page opened before the first is refused.
    let stale = save(PINNED, &base).await;
    assert_eq!(stale.status, 422);
    assert!(stale.text.contains("the file changed since this editor was opened"));
    assert_eq!(served_by().await, "anthropic");

    // A viewer sees the table and the section, not the form, and cannot save.
    let (_, _, viewer_key) = env.user("vera@example.com", "viewer").await;
    let viewer = env.sign_in(&viewer_key).await;
    let seen = env.get("/console/routes", Some(&viewer)).await;
    assert!(!seen.text.contains("id=\"edit-routes\""));
    let p = env
        .post(
            "/console/routes",
            Some(&viewer),
            &[("csrf", &Env::csrf(&seen)), ("base", "x"), ("routes", PINNED)],
        )
        .await;
    assert_eq!(p.status, 403);
}
