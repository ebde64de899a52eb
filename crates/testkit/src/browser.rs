//! A **real browser** for end-to-end tests of pages the gateway serves: headless
//! Chromium driven over the W3C WebDriver protocol by `chromedriver`.
//!
//! ```text
//! let Some(browser) = Browser::start("console_login").await else { return }; // skipped
//! browser.goto(&format!("{base}/console")).await?;
//! browser.find("input[name=key]").await?.send_keys("sk-test").await?;
//! browser.find("form").await?.submit().await?;
//! assert_eq!(browser.wait_for("h1").await?.text().await?, "Keys");
//! ```
//!
//! * **Setup.** [`Browser::start`] starts a `chromedriver` of its own with
//!   `--port=0` (it binds a free port and prints it: no fixed port, no race),
//!   waits until `GET /status` says ready, and opens one session of headless
//!   Chromium with a fresh profile in a temporary folder. Each test gets its own
//!   chromedriver and browser, so tests run in parallel without sharing state.
//!   One costs about 350 MB of memory (proportional set size of chromedriver and
//!   Chromium's processes, a small page open) and starts in well under a second.
//! * **Skipping.** Without `chromedriver` on `$PATH` or Chromium (`/usr/bin/chromium`,
//!   or `chromium` on `$PATH`) it prints `SKIPPED: browser tests: … not installed …` once per test
//!   binary and returns `None`, unless `SWITCHYARD_REQUIRE_BROWSER=1` (CI sets it),
//!   which makes it panic. [`CHROMEDRIVER_VAR`] and [`CHROMIUM_VAR`] name other
//!   binaries. Install with `apt-get install chromium chromium-driver`.
//! * **Waiting.** Pages change on their own time: [`Browser::wait_for`],
//!   [`Browser::wait_for_text`] and [`Browser::wait_until`] poll the DOM every
//!   50 ms until the condition holds, failing after [`DEFAULT_WAIT`] (10 s;
//!   [`Browser::set_wait`]) with the page's source in the error.
//! * **Evidence.** When a test panics while a [`Browser`] is alive, dropping it
//!   saves `screenshot.png`, `page.html`, `console.json` (the page's console) and
//!   `chromedriver.log` under [`test_output_dir`]`(name)`:
//!   `<target>/test-output/<name>/`, where `<target>` is `$CARGO_TARGET_DIR`
//!   (relative to the workspace root), else `target/` in the workspace root.
//!   The folder is emptied when the browser starts, so what is there is from the
//!   last run. [`Browser::save_screenshot`] keeps one there on success too.
//!
//! A panicking test's browser is dropped while the panic unwinds (`#[tokio::test]`
//! drops the test's future on the way out), blocking that thread while the
//! evidence is fetched on a thread of its own. On a current-thread runtime the
//! test's own servers are stalled meanwhile, so a page still loading from them
//! cannot finish: use `#[tokio::test(flavor = "multi_thread")]` for browser tests.
//!
//! Operations return [`BrowserError`] (WebDriver's error code and message);
//! setup failures panic, as the store's test fixtures do.

mod driver;
mod element;
mod evidence;
mod wire;

use std::future::Future;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use driver::Driver;
pub use element::Element;
pub use evidence::test_output_dir;
use evidence::{decode_png, file_name, finish, write_file};
use wire::{call, client};

/// `1`: a missing `chromedriver` or Chromium fails the test instead of skipping it.
pub const REQUIRE_BROWSER_VAR: &str = "SWITCHYARD_REQUIRE_BROWSER";
/// The Chromium binary to drive (default `/usr/bin/chromium`, else `chromium` on `$PATH`).
pub const CHROMIUM_VAR: &str = "SWITCHYARD_CHROMIUM";
/// The chromedriver binary (default `chromedriver` on `$PATH`).
pub const CHROMEDRIVER_VAR: &str = "SWITCHYARD_CHROMEDRIVER";
/// How long the `wait_*` operations poll before failing.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(10);
/// Between two looks at the page while waiting.
const POLL: Duration = Duration::from_millis(50);
/// One WebDriver command, navigation included (its page load is capped at 30 s).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// Each request made while saving evidence or closing from `Drop`.
const DROP_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of the page's source quoted in a wait's error.
const SOURCE_IN_ERROR: usize = 16 * 1024;
/// W3C's key for an element reference in JSON.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Chromium's flags. Root needs `--no-sandbox`; the `--disable-*` networking
/// flags keep it from calling Google's services (refused on a closed network,
/// and noise anywhere); the DevTools pipe makes it exit when chromedriver does.
const CHROMIUM_ARGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--disable-crash-reporter",
    "--disable-breakpad",
    "--no-proxy-server",
    "--remote-debugging-pipe",
    "--window-size=1280,900",
];

/// A WebDriver command that failed: the protocol's error code (`no such
/// element`, `timeout`, …; `setup` and `http` are this harness's) and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserError {
    pub code: String,
    pub message: String,
}

impl BrowserError {
    fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        BrowserError { code: code.into(), message: message.into() }
    }

    fn setup(message: impl Into<String>) -> Self {
        BrowserError::new("setup", message)
    }

    /// Errors a wait looks past: the page is not there yet, or changed under it.
    fn is_transient(&self) -> bool {
        matches!(self.code.as_str(), "no such element" | "stale element reference")
    }
}

impl std::fmt::Display for BrowserError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for BrowserError {}

/// A cookie as the browser holds it (WebDriver's cookie object).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cookie {
    pub name: String,
    pub value: String,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub domain: Option<String>,
    #[serde(default)]
    pub secure: bool,
    #[serde(default)]
    pub http_only: bool,
    /// Unix seconds; `None` for a session cookie.
    #[serde(default)]
    pub expiry: Option<u64>,
    /// `Strict`, `Lax` or `None`.
    #[serde(default)]
    pub same_site: Option<String>,
}

/// One headless Chromium session with its own chromedriver; see the module docs.
pub struct Browser {
    http: reqwest::Client,
    /// `http://127.0.0.1:<port>/session/<id>`
    session_url: String,
    name: String,
    out_dir: PathBuf,
    wait: Duration,
    closed: bool,
    // Declared last: dropped after the session is closed.
    driver: Driver,
}

impl std::fmt::Debug for Browser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Browser")
            .field("name", &self.name)
            .field("session", &self.session_url)
            .finish_non_exhaustive()
    }
}

impl Browser {
    /// A new browser for the test `test_name` (names its evidence folder), or
    /// `None` (after saying `SKIPPED: …` once) when Chromium or chromedriver is
    /// not installed. Panics when they are missing and `SWITCHYARD_REQUIRE_BROWSER=1`,
    /// or when the browser cannot be started.
    #[allow(clippy::panic, reason = "test fixture: a failed setup fails the test (documented)")]
    pub async fn start(test_name: &str) -> Option<Browser> {
        let required = std::env::var(REQUIRE_BROWSER_VAR).is_ok_and(|v| v == "1");
        let (chromedriver, chromium) = match locate() {
            Ok(found) => found,
            Err(why) if required => panic!("{REQUIRE_BROWSER_VAR}=1 but {why}"),
            Err(why) => {
                skipped(&why);
                return None;
            }
        };
        match Browser::launch(test_name, &chromedriver, &chromium).await {
            Ok(browser) => Some(browser),
            Err(e) => panic!("cannot start a browser for {test_name}: {e}"),
        }
    }

    async fn launch(
        test_name: &str,
        chromedriver: &Path,
        chromium: &Path,
    ) -> Result<Browser, BrowserError> {
        let out_dir = test_output_dir(test_name);
        match std::fs::remove_dir_all(&out_dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(BrowserError::setup(format!(
                    "cannot empty {}: {e}",
                    out_dir.display()
                )));
            }
            _ => {}
        }
        let http = client(COMMAND_TIMEOUT)?;
        let driver = Driver::start(chromedriver, &http).await?;
        let mut args: Vec<String> = CHROMIUM_ARGS.iter().map(|a| (*a).to_owned()).collect();
        args.push(format!("--user-data-dir={}", driver.temp.join("profile").display()));
        let capabilities = json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome",
            "pageLoadStrategy": "normal",
            "timeouts": { "implicit": 0, "pageLoad": 30_000, "script": 10_000 },
            "goog:loggingPrefs": { "browser": "ALL" },
            "goog:chromeOptions": { "binary": chromium, "args": args },
        }}});
        let url = format!("{}/session", driver.base);
        let session = call(&http, Method::POST, &url, Some(capabilities)).await.map_err(|e| {
            BrowserError::setup(format!("{e}; chromedriver said: {}", driver.log_text()))
        })?;
        let Some(id) = session["sessionId"].as_str() else {
            return Err(BrowserError::setup(format!("no sessionId in {session}")));
        };
        Ok(Browser {
            http,
            session_url: format!("{url}/{id}"),
            name: test_name.to_owned(),
            out_dir,
            wait: DEFAULT_WAIT,
            closed: false,
            driver,
        })
    }

    /// Where this test's screenshots and failure evidence go.
    pub fn out_dir(&self) -> &Path {
        &self.out_dir
    }

    /// How long the `wait_*` operations poll (default [`DEFAULT_WAIT`]).
    pub fn set_wait(&mut self, wait: Duration) {
        self.wait = wait;
    }

    async fn command(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, BrowserError> {
        call(&self.http, method, &format!("{}{path}", self.session_url), body).await
    }

    async fn get(&self, path: &str) -> Result<Value, BrowserError> {
        self.command(Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value, BrowserError> {
        self.command(Method::POST, path, Some(body)).await
    }

    fn element(&self, v: &Value) -> Result<Element<'_>, BrowserError> {
        match v[ELEMENT_KEY].as_str() {
            Some(id) => Ok(Element { browser: self, id: id.to_owned() }),
            None => Err(BrowserError::new("unexpected answer", format!("not an element: {v}"))),
        }
    }

    fn elements(&self, v: &Value) -> Result<Vec<Element<'_>>, BrowserError> {
        match v.as_array() {
            Some(all) => all.iter().map(|e| self.element(e)).collect(),
            None => Err(BrowserError::new("unexpected answer", format!("not a list: {v}"))),
        }
    }

    /// Navigates and waits for the page to load.
    pub async fn goto(&self, url: &str) -> Result<(), BrowserError> {
        self.post("/url", json!({ "url": url })).await.map(drop)
    }

    pub async fn current_url(&self) -> Result<String, BrowserError> {
        Ok(self.get("/url").await?.as_str().unwrap_or_default().to_owned())
    }

    pub async fn title(&self) -> Result<String, BrowserError> {
        Ok(self.get("/title").await?.as_str().unwrap_or_default().to_owned())
    }

    /// The current DOM serialised as HTML (scripts' changes included).
    pub async fn page_source(&self) -> Result<String, BrowserError> {
        Ok(self.get("/source").await?.as_str().unwrap_or_default().to_owned())
    }

    /// The first element matching `css` now (`no such element` if none; to wait
    /// for one, [`Browser::wait_for`]).
    pub async fn find(&self, css: &str) -> Result<Element<'_>, BrowserError> {
        let v = self.post("/element", by_css(css)).await?;
        self.element(&v)
    }

    /// Every element matching `css` now, in document order (maybe none).
    pub async fn find_all(&self, css: &str) -> Result<Vec<Element<'_>>, BrowserError> {
        let v = self.post("/elements", by_css(css)).await?;
        self.elements(&v)
    }

    /// Runs `script` as a function body in the page (`arguments[i]` are `args`;
    /// pass elements with [`Element::as_arg`]) and returns what it returns.
    pub async fn execute(&self, script: &str, args: Vec<Value>) -> Result<Value, BrowserError> {
        self.post("/execute/sync", json!({ "script": script, "args": args })).await
    }

    /// The cookies visible to the current page, `HttpOnly` ones included.
    pub async fn cookies(&self) -> Result<Vec<Cookie>, BrowserError> {
        let v = self.get("/cookie").await?;
        serde_json::from_value(v).map_err(|e| BrowserError::new("unexpected answer", e.to_string()))
    }

    /// The viewport as PNG bytes.
    pub async fn screenshot(&self) -> Result<Vec<u8>, BrowserError> {
        decode_png(&self.get("/screenshot").await?)
    }

    /// Saves a screenshot as `<name>.png` in [`Browser::out_dir`]; returns its path.
    pub async fn save_screenshot(&self, name: &str) -> Result<PathBuf, BrowserError> {
        let png = self.screenshot().await?;
        let path = self.out_dir.join(format!("{}.png", file_name(name)));
        write_file(&path, &png)?;
        Ok(path)
    }

    /// The page's console entries since the last call (`level`, `message`, …).
    pub async fn console_log(&self) -> Result<Vec<Value>, BrowserError> {
        let v = self.post("/se/log", json!({ "type": "browser" })).await?;
        Ok(v.as_array().cloned().unwrap_or_default())
    }

    /// Waits until an element matches `css`, and returns it.
    pub async fn wait_for(&self, css: &str) -> Result<Element<'_>, BrowserError> {
        let what = format!("an element matching {css:?}");
        let deadline = Instant::now() + self.wait;
        loop {
            match self.find(css).await {
                Ok(found) => return Ok(found),
                Err(e) if e.is_transient() => {}
                Err(e) => return Err(e),
            }
            if Instant::now() >= deadline {
                return Err(self.timed_out(&what).await);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits until an element matching `css` has `needle` in its text, and returns it.
    pub async fn wait_for_text(
        &self,
        css: &str,
        needle: &str,
    ) -> Result<Element<'_>, BrowserError> {
        let what = format!("an element matching {css:?} with text {needle:?}");
        let deadline = Instant::now() + self.wait;
        loop {
            match self.text_match(css, needle).await {
                Ok(Some(found)) => return Ok(found),
                Ok(None) => {}
                Err(e) if e.is_transient() => {}
                Err(e) => return Err(e),
            }
            if Instant::now() >= deadline {
                return Err(self.timed_out(&what).await);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn text_match(
        &self,
        css: &str,
        needle: &str,
    ) -> Result<Option<Element<'_>>, BrowserError> {
        for el in self.find_all(css).await? {
            if el.text().await?.contains(needle) {
                return Ok(Some(el));
            }
        }
        Ok(None)
    }

    /// Waits until `check` answers true; `what` names the condition in the
    /// error. An element missing or gone stale while checking counts as false.
    pub async fn wait_until<F, Fut>(&self, what: &str, mut check: F) -> Result<(), BrowserError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<bool, BrowserError>>,
    {
        let deadline = Instant::now() + self.wait;
        loop {
            match check().await {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) if e.is_transient() => {}
                Err(e) => return Err(e),
            }
            if Instant::now() >= deadline {
                return Err(self.timed_out(what).await);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// A wait's failure, quoting where the browser is and what the page holds.
    async fn timed_out(&self, what: &str) -> BrowserError {
        let url = self.current_url().await.unwrap_or_else(|e| format!("(url unknown: {e})"));
        let source = match self.page_source().await {
            Ok(s) if s.len() > SOURCE_IN_ERROR => {
                let cut = (0..=SOURCE_IN_ERROR).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0);
                format!("{}\n… ({} bytes in all)", &s[..cut], s.len())
            }
            Ok(s) => s,
            Err(e) => format!("(source unavailable: {e})"),
        };
        BrowserError::new(
            "timeout",
            format!("waited {:?} for {what}; the page at {url} is:\n{source}", self.wait),
        )
    }

    /// Ends the session (the browser quits) and stops chromedriver. Dropping
    /// the browser does the same, blocking while it does.
    pub async fn close(mut self) -> Result<(), BrowserError> {
        self.closed = true;
        self.command(Method::DELETE, "", None).await.map(drop)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let failed = std::thread::panicking();
        if self.closed && !failed {
            return;
        }
        let session = (!self.closed).then(|| self.session_url.clone());
        let out_dir = failed.then(|| self.out_dir.clone());
        let log = self.driver.log_handle();
        // The test's runtime may be the one blocked here, and the client's
        // connections belong to it: a thread with a runtime and client of its own.
        // `Builder::spawn`, not `thread::spawn`: a panic here, during a panic, aborts.
        let spawned = std::thread::Builder::new()
            .name("browser-drop".to_owned())
            .spawn(move || finish(session, out_dir, &log));
        match spawned.map(|thread| thread.join()) {
            Ok(Ok(Some(report))) => eprintln!("browser evidence for {}: {report}", self.name),
            Ok(Ok(None)) => {}
            Ok(Err(_)) => {
                eprintln!("browser evidence for {}: the saving thread panicked", self.name)
            }
            Err(e) => eprintln!("browser evidence for {}: no thread to save it: {e}", self.name),
        }
    }
}

fn by_css(css: &str) -> Value {
    json!({ "using": "css selector", "value": css })
}

/// `s` as a CSS string literal (`"…"`, escaped), for attribute selectors.
pub fn css_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            // A control character as a hex escape; the space ends the escape.
            c if c.is_control() => out.push_str(&format!("\\{:x} ", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// chromedriver and Chromium, or why not.
fn locate() -> Result<(PathBuf, PathBuf), String> {
    let given = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from);
    let chromedriver = given(CHROMEDRIVER_VAR).or_else(|| driver::on_path("chromedriver"));
    let chromium = given(CHROMIUM_VAR)
        .or_else(|| Some(PathBuf::from("/usr/bin/chromium")).filter(|p| p.is_file()))
        .or_else(|| driver::on_path("chromium"));
    match (chromedriver, chromium) {
        (Some(d), Some(c)) if d.is_file() && c.is_file() => Ok((d, c)),
        (d, c) => {
            let missing: Vec<&str> = [(d, "chromedriver"), (c, "chromium")]
                .into_iter()
                .filter(|(p, _)| !p.as_ref().is_some_and(|p| p.is_file()))
                .map(|(_, name)| name)
                .collect();
            Err(format!(
                "{} not installed (apt-get install chromium chromium-driver)",
                missing.join(" and ")
            ))
        }
    }
}

/// Says once per test binary, past libtest's output capture, that browser
/// tests did not run.
fn skipped(why: &str) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = writeln!(std::io::stderr(), "SKIPPED: browser tests: {why}");
    });
}

#[cfg(test)]
#[path = "browser_tests.rs"]
mod tests;
