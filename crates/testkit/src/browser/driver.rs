//! The chromedriver process: found, started on a port of its own choosing,
//! waited for, and killed with everything it started.

use std::io::{BufRead as _, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::oneshot;

use super::BrowserError;

/// How long chromedriver may take to say which port it listens on, and then
/// to report ready on `GET /status` (each).
const START_DEADLINE: Duration = Duration::from_secs(20);
/// How often `/status` is asked while chromedriver starts.
const STATUS_POLL: Duration = Duration::from_millis(25);
/// What chromedriver prints once it listens (`--port=0`: the port it chose).
const STARTED: &str = "started successfully on port ";
/// The most of chromedriver's own output kept as evidence.
const LOG_CAP: usize = 64 * 1024;

/// A running chromedriver on `127.0.0.1:<port>`, and the temporary folder its
/// browser keeps its profile in. Dropping it kills chromedriver; the browser
/// goes with it (its DevTools connection is a pipe, see `Browser::start`), and
/// the folder is removed.
pub(super) struct Driver {
    child: Child,
    /// `http://127.0.0.1:<port>`
    pub(super) base: String,
    /// Everything chromedriver wrote to stdout and stderr, up to [`LOG_CAP`].
    log: Arc<Mutex<Vec<u8>>>,
    /// Holds the browser profile and its XDG folders.
    pub(super) temp: PathBuf,
}

impl Driver {
    /// Starts `chromedriver --port=0` and waits until it answers ready.
    pub(super) async fn start(
        chromedriver: &Path,
        http: &reqwest::Client,
    ) -> Result<Driver, BrowserError> {
        let temp = unique_temp_dir()?;
        let spawned = Command::new(chromedriver)
            // Port 0: chromedriver binds a free port itself and prints it, so
            // there is no window between choosing a port and binding it.
            .arg("--port=0")
            .arg("--allowed-ips=127.0.0.1")
            // Chromium and its crash handler write under these, not under $HOME.
            .env("XDG_CONFIG_HOME", temp.join("config"))
            .env("XDG_CACHE_HOME", temp.join("cache"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&temp);
                return Err(BrowserError::setup(format!(
                    "cannot start {}: {e}",
                    chromedriver.display()
                )));
            }
        };
        let log = Arc::new(Mutex::new(Vec::new()));
        let (port_tx, port_rx) = oneshot::channel();
        if let Some(out) = child.stdout.take() {
            drain(out, Arc::clone(&log), Some(port_tx));
        }
        if let Some(err) = child.stderr.take() {
            drain(err, Arc::clone(&log), None);
        }
        // From here on, dropping `driver` kills the process.
        let mut driver = Driver { child, base: String::new(), log, temp };
        let port = match tokio::time::timeout(START_DEADLINE, port_rx).await {
            Ok(Ok(port)) => port,
            Ok(Err(_)) => {
                return Err(BrowserError::setup(format!(
                    "chromedriver exited before listening: {}",
                    driver.log_text()
                )));
            }
            Err(_) => {
                return Err(BrowserError::setup(format!(
                    "chromedriver did not say its port within {START_DEADLINE:?}: {}",
                    driver.log_text()
                )));
            }
        };
        driver.base = format!("http://127.0.0.1:{port}");
        driver.wait_ready(http).await?;
        Ok(driver)
    }

    /// Polls `GET /status` until `value.ready` is true, within [`START_DEADLINE`].
    async fn wait_ready(&self, http: &reqwest::Client) -> Result<(), BrowserError> {
        let deadline = Instant::now() + START_DEADLINE;
        let url = format!("{}/status", self.base);
        loop {
            let ready = match http.get(&url).send().await {
                Ok(resp) => resp
                    .bytes()
                    .await
                    .ok()
                    .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                    .is_some_and(|v| v["value"]["ready"] == true),
                Err(_) => false,
            };
            if ready {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(BrowserError::setup(format!(
                    "chromedriver at {} not ready within {START_DEADLINE:?}: {}",
                    self.base,
                    self.log_text()
                )));
            }
            tokio::time::sleep(STATUS_POLL).await;
        }
    }

    /// What chromedriver has printed so far (lossy UTF-8).
    pub(super) fn log_text(&self) -> String {
        log_text(&self.log)
    }

    /// A handle on the output, readable after the driver is gone.
    pub(super) fn log_handle(&self) -> Arc<Mutex<Vec<u8>>> {
        Arc::clone(&self.log)
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // Chromium was started with `--remote-debugging-pipe`: when
        // chromedriver dies the pipe closes and the browser exits with it.
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Best effort: a browser still shutting down may recreate a file.
        let _ = std::fs::remove_dir_all(&self.temp);
    }
}

pub(super) fn log_text(log: &Mutex<Vec<u8>>) -> String {
    let bytes = log.lock().map(|l| l.clone()).unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Copies `from` into `log` on a thread of its own until it closes; sends the
/// port on `port` once the startup line passes.
fn drain(
    from: impl Read + Send + 'static,
    log: Arc<Mutex<Vec<u8>>>,
    mut port: Option<oneshot::Sender<u16>>,
) {
    std::thread::spawn(move || {
        let mut lines = BufReader::new(from);
        let mut line = Vec::new();
        loop {
            line.clear();
            match lines.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if let Ok(mut kept) = log.lock() {
                let room = LOG_CAP.saturating_sub(kept.len());
                kept.extend_from_slice(&line[..line.len().min(room)]);
            }
            if let Some(found) = started_port(&String::from_utf8_lossy(&line))
                && let Some(tx) = port.take()
            {
                let _ = tx.send(found);
            }
        }
    });
}

/// The port in chromedriver's "… started successfully on port 41234." line.
pub(super) fn started_port(line: &str) -> Option<u16> {
    let rest = &line[line.find(STARTED)? + STARTED.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok().filter(|p| *p != 0)
}

/// A new, empty folder under the system's temp folder.
fn unique_temp_dir() -> Result<PathBuf, BrowserError> {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let name = format!(
        "switchyard-browser-{}-{}-{nanos}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    );
    let dir = std::env::temp_dir().join(name);
    // `create_dir`, not `create_dir_all`: it fails if the folder exists.
    std::fs::create_dir(&dir)
        .map_err(|e| BrowserError::setup(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir)
}

/// `name` on `$PATH`, as a file.
pub(super) fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| p.is_file())
}
