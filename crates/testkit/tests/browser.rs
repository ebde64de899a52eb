//! The browser harness (`switchyard_testkit::browser`) against a small page of
//! its own, served by axum on 127.0.0.1:0: a form posted to the server and the
//! page after the redirect, a select, an HttpOnly SameSite=Strict cookie, a
//! script that changes the DOM after a click, and the evidence a failing test
//! leaves. Skipped (saying so) without Chromium, unless
//! `SWITCHYARD_REQUIRE_BROWSER=1`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use switchyard_testkit::browser::{Browser, test_output_dir};
use tokio::net::TcpListener;

/// What the form posted, in arrival order.
type Posted = Arc<Mutex<Vec<Vec<(String, String)>>>>;

const FORM: &str = r#"<!doctype html>
<html><head><title>Harness form</title></head>
<body>
  <h1>Form</h1>
  <form method="post" action="/submit">
    <label>Name <input type="text" name="name" value="placeholder"></label>
    <select name="colour">
      <option value="red">Red</option>
      <option value="green">Green</option>
      <option value="blue &quot;navy&quot;">Blue</option>
    </select>
    <button type="submit" name="action" value="save">Save</button>
  </form>
  <button id="reveal" type="button">Reveal</button>
  <div id="slot"></div>
  <script>
    document.getElementById('reveal').addEventListener('click', () => {
      console.log('reveal clicked');
      // Later, not in the click's own task: the test has to wait for it.
      setTimeout(() => {
        const p = document.createElement('p');
        p.id = 'revealed';
        p.textContent = 'revealed by script';
        document.getElementById('slot').appendChild(p);
      }, 30);
    });
  </script>
</body></html>"#;

async fn form() -> Response {
    let cookie = "sy_session=s3cret; Path=/; HttpOnly; SameSite=Strict";
    ([(header::SET_COOKIE, cookie)], Html(FORM)).into_response()
}

async fn submit(State(posted): State<Posted>, headers: HeaderMap, body: Bytes) -> Response {
    // The browser sends its cookie back on a same-site form post.
    let cookie = headers.get(header::COOKIE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !cookie.contains("sy_session=s3cret") {
        return (StatusCode::FORBIDDEN, "no session cookie").into_response();
    }
    let pairs: Vec<(String, String)> =
        form_urlencoded::parse(&body).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    posted.lock().unwrap().push(pairs);
    (StatusCode::SEE_OTHER, [(header::LOCATION, "/done")]).into_response()
}

async fn done(State(posted): State<Posted>) -> Html<String> {
    let last = posted.lock().unwrap().last().cloned().unwrap_or_default();
    let field = |name: &str| {
        let v = last.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).unwrap_or("");
        v.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
    };
    Html(format!(
        "<!doctype html><html><head><title>Saved</title></head><body>\
         <p id=\"got-name\">{}</p><p id=\"got-colour\">{}</p></body></html>",
        field("name"),
        field("colour")
    ))
}

/// The page's server on 127.0.0.1:0, and what it was posted.
async fn serve() -> (SocketAddr, Posted) {
    let posted = Posted::default();
    let app = Router::new()
        .route("/", get(form))
        .route("/submit", axum::routing::post(submit))
        .route("/done", get(done))
        .with_state(Arc::clone(&posted));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, posted)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drives_a_form_cookies_scripts_and_waits() -> Result<(), Box<dyn std::error::Error>> {
    let Some(browser) = Browser::start("browser_drives_a_form").await else { return Ok(()) };
    let (addr, posted) = serve().await;
    let base = format!("http://{addr}");

    browser.goto(&format!("{base}/")).await?;
    assert_eq!(browser.title().await?, "Harness form");
    assert_eq!(browser.current_url().await?, format!("{base}/"));
    assert_eq!(browser.find("h1").await?.text().await?, "Form");
    assert!(browser.page_source().await?.contains("<select name=\"colour\">"));
    assert_eq!(browser.find_all("option").await?.len(), 3);
    let missing = browser.find("#nothing-here").await.unwrap_err();
    assert_eq!(missing.code, "no such element");

    // The cookie the page set, with its flags, though scripts cannot see it.
    let cookies = browser.cookies().await?;
    let session = cookies.iter().find(|c| c.name == "sy_session").expect("the session cookie");
    assert_eq!(session.value, "s3cret");
    assert!(session.http_only);
    assert_eq!(session.same_site.as_deref(), Some("Strict"));
    assert_eq!(browser.execute("return document.cookie", vec![]).await?, json!(""));

    // Scripts: arguments in, values out, elements as arguments.
    let sum = browser
        .execute("return arguments[0] + arguments[1].n", vec![json!(40), json!({"n": 2})])
        .await?;
    assert_eq!(sum, json!(42));
    let h1 = browser.find("h1").await?;
    let tag = browser.execute("return arguments[0].tagName", vec![h1.as_arg()]).await?;
    assert_eq!(tag, json!("H1"));

    // A DOM change made later by the page's own script is waited for.
    assert!(browser.find_all("#revealed").await?.is_empty());
    browser.find("#reveal").await?.click().await?;
    let revealed = browser.wait_for("#revealed").await?;
    assert_eq!(revealed.text().await?, "revealed by script");
    browser.wait_for_text("#slot", "by script").await?;
    let console = browser.console_log().await?;
    assert!(
        console.iter().any(|e| e["message"].as_str().unwrap_or("").contains("reveal clicked")),
        "{console:?}"
    );

    // Fill and submit the form; the server sees the values, the next page shows them.
    let name = browser.find("input[name=name]").await?;
    assert_eq!(name.attr("value").await?.as_deref(), Some("placeholder"));
    name.clear().await?;
    name.send_keys("Ada & <Lovelace>").await?;
    assert_eq!(name.value().await?, "Ada & <Lovelace>");
    let select = browser.find("select[name=colour]").await?;
    select.select_by_value("blue \"navy\"").await?;
    assert_eq!(select.value().await?, "blue \"navy\"");
    browser.find("button[type=submit]").await?.submit().await?;

    let got = browser.wait_for("#got-name").await?;
    assert_eq!(got.text().await?, "Ada & <Lovelace>");
    assert_eq!(browser.find("#got-colour").await?.text().await?, "blue \"navy\"");
    assert_eq!(browser.current_url().await?, format!("{base}/done"));
    assert_eq!(browser.title().await?, "Saved");
    let seen = posted.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![vec![
            ("name".to_owned(), "Ada & <Lovelace>".to_owned()),
            ("colour".to_owned(), "blue \"navy\"".to_owned()),
            // The submit button went as the submitter.
            ("action".to_owned(), "save".to_owned()),
        ]]
    );

    // A screenshot kept on success.
    let kept = browser.save_screenshot("after submit").await?;
    assert!(kept.ends_with("after_submit.png"));
    assert!(std::fs::read(&kept)?.starts_with(b"\x89PNG\r\n\x1a\n"));
    browser.close().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_that_times_out_quotes_the_page() -> Result<(), Box<dyn std::error::Error>> {
    let Some(mut browser) = Browser::start("browser_wait_times_out").await else { return Ok(()) };
    let (addr, _) = serve().await;
    browser.goto(&format!("http://{addr}/")).await?;
    // Short: the element never comes, and the test should not sit out 10 s.
    browser.set_wait(std::time::Duration::from_millis(300));
    let err = browser.wait_for("#never").await.unwrap_err();
    assert_eq!(err.code, "timeout");
    assert!(err.message.contains("\"#never\""), "{err}");
    assert!(err.message.contains("<h1>Form</h1>"), "the page source is quoted: {err}");
    let err = browser.wait_until("never true", || async { Ok(false) }).await.unwrap_err();
    assert!(err.message.contains("never true"), "{err}");
    Ok(())
}

/// A test that fails while its browser is open leaves a screenshot, the page
/// and the logs under target/test-output/<name>/.
#[test]
fn a_failing_test_leaves_a_screenshot_and_the_page() {
    let name = "browser_failure_evidence";
    let dir = test_output_dir(name);
    // Nothing from an earlier run can pass for this run's evidence.
    let _ = std::fs::remove_dir_all(&dir);
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
        runtime.block_on(async {
            let Some(browser) = Browser::start(name).await else { return false };
            let (addr, _) = serve().await;
            browser.goto(&format!("http://{addr}/")).await.unwrap();
            browser.find("#reveal").await.unwrap().click().await.unwrap();
            browser.wait_for("#revealed").await.unwrap();
            // The deliberate failure: the browser is dropped while this unwinds.
            let heading = browser.find("h1").await.unwrap().text().await.unwrap();
            assert_eq!(heading, "Not the heading", "deliberate failure");
            true
        })
    }));
    match outcome {
        Ok(false) => return, // skipped: no browser installed
        Ok(true) => panic!("the deliberate failure did not fail"),
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            assert!(message.contains("deliberate failure"), "failed otherwise: {message}");
        }
    }
    let png = std::fs::read(dir.join("screenshot.png")).expect("the failure screenshot");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let page = std::fs::read_to_string(dir.join("page.html")).unwrap();
    // The DOM as the script left it, not the page as served.
    assert!(page.contains("revealed by script"), "{page}");
    let console = std::fs::read_to_string(dir.join("console.json")).unwrap();
    assert!(console.contains("reveal clicked"), "{console}");
    let log = std::fs::read_to_string(dir.join("chromedriver.log")).unwrap();
    assert!(log.contains("started successfully"), "{log}");
}
