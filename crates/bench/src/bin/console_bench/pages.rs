//! The real server, in process, on 127.0.0.1:0 over the seeded database;
//! signed in as the bootstrap admin; every console page (and the admin API's
//! two record reports) timed from the client: request sent to body read.

use std::sync::Arc;
use std::time::{Duration, Instant};

use switchyard_core::record::NullSink;
use switchyard_core::util::Secret;
use switchyard_core::{Catalog, ConfigSource, Engine, SharedSink};
use switchyard_server::AppState;
use switchyard_server::identity::Identity;
use switchyard_store::Store;
use tokio::sync::oneshot;

use crate::traffic::{Key, MODELS, PROVIDERS};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The bootstrap admin key the server is started with.
const ADMIN: &str = "sy-console-bench-admin-0123456789abcdef";
/// A static gateway key (unused: nothing calls the gateway here).
const GATEWAY_KEY: &str = "sy-console-bench-gateway-0123456789abcdef";
/// How deep the keyset walk goes: the page after following `Older →` this often.
pub(crate) const DEEP_PAGES: usize = 100;

/// The catalog the seeded traffic names: the six providers (never called) and
/// the twenty models, each with its fallback.
fn catalog_yaml() -> String {
    let mut y = String::from("providers:\n");
    for p in PROVIDERS {
        y.push_str(&format!(
            "  {p}:\n    wire: openai-chat\n    endpoint: \"http://127.0.0.1:9/{p}/v1\"\n    \
             credentials: {{ none: true }}\n"
        ));
    }
    y.push_str("models:\n");
    for m in &MODELS {
        y.push_str(&format!(
            "  - id: {}\n    deployments: [{{ provider: {} }}, {{ provider: {} }}]\n",
            m.id, PROVIDERS[m.primary], PROVIDERS[m.fallback]
        ));
    }
    y
}

/// A running server and a signed-in client.
pub(crate) struct Console {
    base: String,
    client: reqwest::Client,
    cookie: String,
    shutdown: Option<oneshot::Sender<()>>,
}

impl Drop for Console {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

impl Console {
    pub(crate) async fn start(store: Store) -> Result<Console, Error> {
        let yaml = catalog_yaml();
        let raw = ConfigSource::from_text("console-bench.yaml", &yaml)
            .parse_with(&|_| None)
            .map_err(|e| format!("{e:?}"))?;
        let catalog = Catalog::compile(&raw, "console-bench.yaml", &|_| None)
            .map_err(|e| format!("{e:?}"))?;
        let sink: SharedSink = Arc::new(NullSink);
        let gateway = Arc::new(Engine::new(catalog, sink).map_err(|e| format!("{e:?}"))?);
        let identity = Identity::new(
            vec![Secret::new(GATEWAY_KEY)],
            Some(Secret::new(ADMIN)),
            Some(store),
            None,
            Duration::from_secs(600),
        );
        let state = AppState::with_identity(gateway, identity);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let (tx, rx) = oneshot::channel::<()>();
        tokio::spawn(switchyard_server::serve(listener, state, async move {
            let _ = rx.await;
        }));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        let resp = client
            .post(format!("{base}/console/sign-in"))
            .header("origin", &base)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("key={ADMIN}&next=%2Fconsole%2Foverview"))
            .send()
            .await?;
        let cookie = resp
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .and_then(|c| c.split(';').next())
            .filter(|c| c.starts_with("switchyard_console="))
            .ok_or_else(|| format!("sign-in answered {} without a session", resp.status()))?
            .to_owned();
        Ok(Console { base, client, cookie, shutdown: Some(tx) })
    }

    /// GETs `path` (a console page with the session, `/admin/…` with the admin
    /// key); the time until the whole body was read, and the body. Anything
    /// but 200 is an error: a page that fails is not a fast page.
    pub(crate) async fn get(&self, path: &str) -> Result<(Duration, String), Error> {
        let mut req = self.client.get(format!("{}{path}", self.base));
        req = if path.starts_with("/admin/") {
            req.bearer_auth(ADMIN)
        } else {
            req.header("cookie", &self.cookie)
        };
        let t = Instant::now();
        let resp = req.send().await?;
        let status = resp.status();
        let body = resp.text().await?;
        let took = t.elapsed();
        if !status.is_success() {
            let head: String = body.chars().take(300).collect();
            return Err(format!("{path}: {status}: {head}").into());
        }
        Ok((took, body))
    }
}

/// `Older →`'s link on a requests page, if any (`&amp;` as the page writes it).
pub(crate) fn older_link(page: &str) -> Option<String> {
    let end = page.find("id=\"older\"")?;
    let start = page[..end].rfind("href=\"")? + "href=\"".len();
    let href = page[start..end].split('"').next()?;
    Some(href.replace("&amp;", "&"))
}

/// The first request detail link on a requests page.
pub(crate) fn first_detail(page: &str) -> Option<String> {
    let at = page.find("href=\"/console/requests/req_")? + "href=\"".len();
    Some(page[at..].split('"').next()?.to_owned())
}

/// One timed page: its label, the path, and every run's time.
pub(crate) struct Timing {
    pub(crate) label: String,
    pub(crate) path: String,
    pub(crate) runs: Vec<Duration>,
}

impl Timing {
    /// (p50, p95, max) in milliseconds, nearest rank.
    pub(crate) fn summary(&self) -> (f64, f64, f64) {
        let mut ms: Vec<f64> = self.runs.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
        ms.sort_by(f64::total_cmp);
        let rank = |q: f64| {
            let i = ((q * ms.len() as f64).ceil() as usize).clamp(1, ms.len().max(1)) - 1;
            ms.get(i).copied().unwrap_or(0.0)
        };
        (rank(0.5), rank(0.95), ms.last().copied().unwrap_or(0.0))
    }
}

/// The pages to time, with the values the seeded traffic has: a busy model,
/// a provider, a busy user and project, an error status.
pub(crate) fn plan(keys: &[Key]) -> Vec<(String, String)> {
    let key = keys.first();
    let user = key.map(|k| k.user.clone()).unwrap_or_default();
    let project = key.map(|k| k.project.clone()).unwrap_or_default();
    let mut pages = vec![
        ("overview".into(), "/console/overview".into()),
        ("providers".into(), "/console/providers".into()),
        ("requests".into(), "/console/requests".into()),
        ("requests ?model".into(), format!("/console/requests?model={}", MODELS[0].id)),
        ("requests ?provider".into(), format!("/console/requests?provider={}", PROVIDERS[2])),
        ("requests ?user".into(), format!("/console/requests?user={user}")),
        ("requests ?project".into(), format!("/console/requests?project={project}")),
        ("requests ?status=503".into(), "/console/requests?status=503".into()),
        ("requests ?since=1h".into(), "/console/requests?since=1h".into()),
    ];
    for since in ["24h", "7d", "30d"] {
        for by in ["model", "provider", "project", "key", "user"] {
            pages.push((
                format!("analytics {since} by {by}"),
                format!("/console/analytics?since={since}&by={by}"),
            ));
        }
    }
    // Filtered on one dimension and grouped by another: the fine rollups.
    pages.push((
        "analytics 24h by key ?model".into(),
        format!("/console/analytics?since=24h&by=key&model={}", MODELS[0].id),
    ));
    pages.push((
        "analytics 7d by model ?project".into(),
        format!("/console/analytics?since=7d&by=model&project={project}"),
    ));
    for (label, path) in [
        ("keys", "/console/keys"),
        ("people", "/console/people"),
        ("rules", "/console/rules"),
        ("sessions", "/console/sessions"),
        ("/admin/usage?since=30d", "/admin/usage?since=30d"),
        ("/admin/requests", "/admin/requests"),
    ] {
        pages.push((label.into(), path.into()));
    }
    pages
}

/// Fewest timed runs of a page, whatever its budget.
const MIN_RUNS: usize = 3;

/// Times `path`: up to `warmup` runs thrown away (while under a quarter of
/// `budget`), then `runs` kept, or fewer (never under [`MIN_RUNS`]) when the
/// page has used up `budget`: a page taking seconds is not timed for minutes
/// to say it is slow.
pub(crate) async fn time(
    c: &Console,
    label: &str,
    path: &str,
    warmup: usize,
    runs: usize,
    budget: Duration,
) -> Result<Timing, Error> {
    let start = Instant::now();
    for _ in 0..warmup {
        if start.elapsed() > budget / 4 {
            break;
        }
        c.get(path).await?;
    }
    let mut kept = Vec::with_capacity(runs);
    while kept.len() < runs && (kept.len() < MIN_RUNS || start.elapsed() < budget) {
        kept.push(c.get(path).await?.0);
    }
    Ok(Timing { label: label.to_owned(), path: path.to_owned(), runs: kept })
}

/// Follows `Older →` from the unfiltered list `DEEP_PAGES` times; returns the
/// deep page's path and how long each step of the walk took.
pub(crate) async fn walk(c: &Console) -> Result<(String, Vec<Duration>), Error> {
    let (_, mut page) = c.get("/console/requests").await?;
    let mut steps = Vec::with_capacity(DEEP_PAGES);
    let mut path = String::from("/console/requests");
    for i in 0..DEEP_PAGES {
        path = older_link(&page).ok_or_else(|| format!("page {i} has no Older link"))?;
        let (took, body) = c.get(&path).await?;
        steps.push(took);
        page = body;
    }
    Ok((path, steps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_read_off_the_requests_page() {
        let page = r#"<td><a href="/console/requests/req_0190abc">x</a></td>
            <a href="/console/requests?model=m&amp;before=1700000000000.req_01" id="older">Older →</a>"#;
        assert_eq!(
            older_link(page).as_deref(),
            Some("/console/requests?model=m&before=1700000000000.req_01")
        );
        assert_eq!(first_detail(page).as_deref(), Some("/console/requests/req_0190abc"));
        assert_eq!(older_link("<p>no more</p>"), None);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let t = Timing {
            label: String::new(),
            path: String::new(),
            runs: (1..=20).map(Duration::from_millis).collect(),
        };
        assert_eq!(t.summary(), (10.0, 19.0, 20.0));
    }
}
