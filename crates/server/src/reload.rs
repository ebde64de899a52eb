//! Hot reload. The configuration file is watched (its directory, so editors that
//! write a temporary file and rename it are seen), polled as a fallback, and
//! reloaded on demand (SIGHUP, tests). A new file is parsed, validated and compiled
//! off the request path, then swapped in atomically; an invalid file is logged and
//! counted (`gateway_config_reloads_total{result="error"}`) and the old
//! configuration keeps serving.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use switchyard_core::util::fnv1a;
use switchyard_core::{Engine, LoadError};
use switchyard_store::Store;
use tokio::sync::{mpsc, oneshot};

/// Log a warning for each configured access rule that names a user or project
/// the directory does not have (see `switchyard_store::directory`).
pub async fn warn_unknown_rule_subjects(
    store: Option<&Store>,
    rules: &[switchyard_core::access::Rule],
) {
    match switchyard_store::directory::unknown_rule_subjects(store, rules).await {
        Ok(warnings) => {
            for w in warnings {
                tracing::warn!("{w}");
            }
        }
        Err(e) => tracing::warn!("access rule subjects not checked: {e}"),
    }
}

enum Trigger {
    /// The file may have changed: reload only if its content did.
    Changed,
    /// Reload unconditionally and report the result.
    Force(Option<oneshot::Sender<Result<(), String>>>),
}

/// Handle to the reload task.
#[derive(Clone)]
pub struct Reloader {
    tx: mpsc::Sender<Trigger>,
}

impl Reloader {
    /// Start watching `path`. `poll`: fallback polling interval (zero disables it).
    /// `store`: the user directory (None: no database), against which each new
    /// configuration's access rules are checked for names that match no one.
    pub fn spawn(
        gateway: Arc<Engine>,
        path: PathBuf,
        poll: Duration,
        store: Option<Store>,
    ) -> Reloader {
        let (tx, rx) = mpsc::channel(16);
        let watcher = watch(&path, tx.clone());
        if !poll.is_zero() {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(poll);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    if tx.send(Trigger::Changed).await.is_err() {
                        return;
                    }
                }
            });
        }
        // The content being served now, taken before returning so a change made
        // right after `spawn` is never mistaken for the baseline.
        let baseline = content_hash(&path);
        tokio::spawn(run(gateway, path, baseline, rx, watcher, store));
        Reloader { tx }
    }

    /// Reload now (SIGHUP): returns when done, with the outcome.
    pub async fn reload_now(&self) -> Result<(), String> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(Trigger::Force(Some(tx))).await.map_err(|_| "reloader stopped".to_owned())?;
        rx.await.map_err(|_| "reloader stopped".to_owned())?
    }

    /// Ask for a reload without waiting.
    pub fn trigger(&self) {
        let _ = self.tx.try_send(Trigger::Force(None));
    }
}

fn watch(path: &Path, tx: mpsc::Sender<Trigger>) -> Option<notify::RecommendedWatcher> {
    use notify::Watcher;
    let dir =
        path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
    let name = path.file_name().map(|n| n.to_os_string());
    let handler = move |res: notify::Result<notify::Event>| {
        // Reads (ours included) raise access events: only changes matter.
        if let Ok(ev) = res
            && !matches!(ev.kind, notify::EventKind::Access(_))
            && ev.paths.iter().any(|p| p.file_name().map(|n| n.to_os_string()) == name)
        {
            let _ = tx.try_send(Trigger::Changed);
        }
    };
    match notify::recommended_watcher(handler) {
        Ok(mut w) => match w.watch(&dir, notify::RecursiveMode::NonRecursive) {
            Ok(()) => Some(w),
            Err(e) => {
                tracing::warn!(dir = %dir.display(), "config watch unavailable ({e}); polling only");
                None
            }
        },
        Err(e) => {
            tracing::warn!("config watch unavailable ({e}); polling only");
            None
        }
    }
}

fn content_hash(path: &Path) -> Option<u64> {
    std::fs::read(path).ok().map(|b| fnv1a(&b))
}

async fn run(
    gateway: Arc<Engine>,
    path: PathBuf,
    mut last: Option<u64>,
    mut rx: mpsc::Receiver<Trigger>,
    _watcher: Option<notify::RecommendedWatcher>,
    store: Option<Store>,
) {
    while let Some(trigger) = rx.recv().await {
        let reply = match trigger {
            Trigger::Changed => {
                let now = content_hash(&path);
                if now.is_none() || now == last {
                    continue;
                }
                None
            }
            Trigger::Force(reply) => reply,
        };
        last = content_hash(&path);
        let (gw, p) = (gateway.clone(), path.clone());
        // Parse, validate and compile off the async workers.
        let result = tokio::task::spawn_blocking(move || gw.reload_from(&p))
            .await
            .unwrap_or_else(|e| Err(LoadError::Client(format!("reload task failed: {e}"))));
        let outcome = match result {
            Ok(()) => {
                tracing::info!(config = %path.display(), "configuration reloaded");
                let rules = gateway.snapshot().catalog.rules.clone();
                warn_unknown_rule_subjects(store.as_ref(), &rules).await;
                metrics::counter!("gateway_config_reloads_total", "result" => "ok").increment(1);
                Ok(())
            }
            Err(e) => {
                let msg = e.to_string();
                tracing::error!(config = %path.display(), "configuration reload rejected; the previous configuration keeps serving:\n{msg}");
                metrics::counter!("gateway_config_reloads_total", "result" => "error").increment(1);
                Err(msg)
            }
        };
        if let Some(reply) = reply {
            let _ = reply.send(outcome);
        }
    }
}
