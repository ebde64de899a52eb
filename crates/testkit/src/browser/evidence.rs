//! What a test leaves behind: the folder under `target/test-output/`, and the
//! screenshot, page, console and chromedriver output saved when it fails.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use base64::Engine as _;
use reqwest::Method;
use serde_json::{Value, json};

use super::wire::{call, client};
use super::{BrowserError, DROP_TIMEOUT, driver};

/// From `Drop`: saves the evidence into `out_dir` when given, then ends the
/// session when open. Says what was saved.
pub(super) fn finish(
    session: Option<String>,
    out_dir: Option<PathBuf>,
    log: &Mutex<Vec<u8>>,
) -> Option<String> {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return out_dir.map(|d| format!("{}: no runtime to save it: {e}", d.display())),
    };
    runtime.block_on(async move {
        let http = client(DROP_TIMEOUT).ok()?;
        let report = match (&out_dir, &session) {
            (Some(dir), Some(session)) => Some(save_evidence(&http, session, dir, log).await),
            (Some(dir), None) => Some(save_log(dir, log)),
            _ => None,
        };
        if let Some(session) = &session {
            let _ = call(&http, Method::DELETE, session, None).await;
        }
        report
    })
}

/// Screenshot, page source, console and chromedriver's output into `dir`.
async fn save_evidence(
    http: &reqwest::Client,
    session: &str,
    dir: &Path,
    log: &Mutex<Vec<u8>>,
) -> String {
    let mut notes = Vec::new();
    match call(http, Method::GET, &format!("{session}/screenshot"), None)
        .await
        .and_then(|v| decode_png(&v))
    {
        Ok(png) => notes.push(written(&dir.join("screenshot.png"), &png)),
        Err(e) => notes.push(format!("no screenshot ({e})")),
    }
    match call(http, Method::GET, &format!("{session}/source"), None).await {
        Ok(v) => {
            notes.push(written(&dir.join("page.html"), v.as_str().unwrap_or_default().as_bytes()))
        }
        Err(e) => notes.push(format!("no page source ({e})")),
    }
    let log_url = format!("{session}/se/log");
    match call(http, Method::POST, &log_url, Some(json!({ "type": "browser" }))).await {
        Ok(v) => {
            let text = serde_json::to_string_pretty(&v).unwrap_or_default();
            notes.push(written(&dir.join("console.json"), text.as_bytes()));
        }
        Err(e) => notes.push(format!("no console ({e})")),
    }
    notes.push(save_log(dir, log));
    format!("{} ({})", dir.display(), notes.join(", "))
}

fn save_log(dir: &Path, log: &Mutex<Vec<u8>>) -> String {
    written(&dir.join("chromedriver.log"), driver::log_text(log).as_bytes())
}

fn written(path: &Path, bytes: &[u8]) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    match write_file(path, bytes) {
        Ok(()) => name,
        Err(e) => format!("{name} not written: {e}"),
    }
}

pub(super) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), BrowserError> {
    let io = |e: std::io::Error| BrowserError::new("io", format!("{}: {e}", path.display()));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::write(path, bytes).map_err(io)
}

pub(super) fn decode_png(v: &Value) -> Result<Vec<u8>, BrowserError> {
    let b64 = v.as_str().unwrap_or_default();
    base64::engine::general_purpose::STANDARD.decode(b64).map_err(|e| {
        BrowserError::new("unexpected answer", format!("screenshot is not base64: {e}"))
    })
}

/// The folder a test's screenshots and failure evidence go in:
/// `<target>/test-output/<test_name>/` (see the module docs).
pub fn test_output_dir(test_name: &str) -> PathBuf {
    let root = workspace_root();
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        // `join` keeps an absolute path as it is.
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    };
    target.join("test-output").join(file_name(test_name))
}

/// The nearest folder holding `Cargo.lock` above the crate under test (cargo
/// sets `CARGO_MANIFEST_DIR` when it runs a test), else above this crate.
pub(super) fn workspace_root() -> PathBuf {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    let root = manifest.ancestors().find(|dir| dir.join("Cargo.lock").is_file());
    root.map(Path::to_path_buf).unwrap_or(manifest)
}

/// `name` as one safe path component: letters, digits, `-` and `_`; anything
/// else (`::` in a test path, a `/`, a dot) becomes `_`.
pub(super) fn file_name(name: &str) -> String {
    let safe: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    if safe.is_empty() { "unnamed".to_owned() } else { safe }
}
