//! `switchyard status`: a running gateway's destinations, live: each
//! deployment's requests in flight and, over its recent window, successes,
//! errors, client cancellations, latency percentiles, time to first token and
//! output speed. Read from the gateway's `GET /admin/destinations` with an
//! admin key; `--watch` redraws the table every few seconds.

use std::process::ExitCode;
use std::time::Duration;

use serde::Deserialize;
use switchyard_core::client::{ClientOptions, service_client};
use switchyard_core::destinations::Summary;

use super::fmt::Table;
use super::{Failure, Result, out, out_json, out_table};

#[derive(clap::Args)]
pub struct StatusArgs {
    /// The gateway's base URL.
    #[arg(long, env = "SWITCHYARD_URL", default_value = "http://127.0.0.1:8080")]
    url: String,
    /// An admin key (the bootstrap admin key, or an admin user's).
    #[arg(long, env = "SWITCHYARD_ADMIN_KEY", hide_env_values = true)]
    key: String,
    /// Redraw every SECONDS until interrupted.
    #[arg(long, value_name = "SECONDS")]
    watch: Option<u64>,
    /// Every deployment of the catalog, those with nothing in their window too.
    #[arg(long)]
    all: bool,
    /// The gateway's answer as JSON (once).
    #[arg(long, conflicts_with = "watch")]
    json: bool,
}

/// `GET /admin/destinations`, as read here.
#[derive(Debug, Deserialize)]
pub struct Destinations {
    pub window_ms: u64,
    pub data: Vec<Row>,
}

#[derive(Debug, Deserialize)]
pub struct Row {
    pub model: String,
    pub provider: String,
    pub upstream_model: String,
    pub in_flight: u64,
    #[serde(flatten)]
    pub window: Summary,
}

impl Row {
    /// Nothing in its window and nothing in flight.
    fn idle(&self) -> bool {
        self.in_flight == 0 && self.window.samples == 0
    }
}

pub fn run(args: StatusArgs) -> ExitCode {
    super::block_on(status(args))
}

async fn status(args: StatusArgs) -> Result<()> {
    let client = service_client(&ClientOptions::default(), Duration::from_secs(5))
        .map_err(|e| Failure(format!("cannot make an HTTP client: {e}")))?;
    let url = format!("{}/admin/destinations", args.url.trim_end_matches('/'));
    loop {
        let (raw, got) = fetch(&client, &url, &args.key).await?;
        if args.json {
            return out_json(&raw);
        }
        let empty = if args.all { "no deployments" } else { "no traffic in the window" };
        let t = table(&got, args.all);
        let Some(every) = args.watch else {
            return out_table(&t, empty);
        };
        // Clear the screen and home the cursor, then the table.
        out(&format!(
            "\x1b[2J\x1b[H{}  window {}s  (every {every}s; Ctrl-C to stop)\n\n",
            args.url,
            got.window_ms / 1000
        ))?;
        out_table(&t, empty)?;
        tokio::time::sleep(Duration::from_secs(every.max(1))).await;
    }
}

/// The gateway's answer as it came, and as read here.
async fn fetch(
    client: &reqwest::Client,
    url: &str,
    key: &str,
) -> Result<(serde_json::Value, Destinations)> {
    let resp = client
        .get(url)
        .bearer_auth(key)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .map_err(|e| Failure(format!("{url}: {e}")))?;
    let status = resp.status();
    let body = resp.bytes().await.map_err(|e| Failure(format!("{url}: {e}")))?;
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body);
        return Err(Failure(format!("{url}: {status}: {}", text.trim())));
    }
    let unexpected = |e: serde_json::Error| Failure(format!("{url}: unexpected answer: {e}"));
    let raw: serde_json::Value = serde_json::from_slice(&body).map_err(unexpected)?;
    let read = serde_json::from_value(raw.clone()).map_err(unexpected)?;
    Ok((raw, read))
}

/// The destinations as a table: one row per deployment (only those with
/// something in their window or in flight, unless `all`).
pub fn table(d: &Destinations, all: bool) -> Table {
    let mut t = Table::new(&[
        "MODEL",
        "PROVIDER",
        "UPSTREAM",
        ">IN FLIGHT",
        ">OK",
        ">ERR",
        ">CANCEL",
        ">ERR%",
        ">P50",
        ">P95",
        ">TTFT P95",
        ">TOK/S",
    ]);
    let ms = |v: Option<f64>| match v {
        None => "-".to_owned(),
        Some(v) if v < 10.0 => format!("{v:.1}ms"),
        Some(v) => format!("{v:.0}ms"),
    };
    for r in d.data.iter().filter(|r| all || !r.idle()) {
        let w = &r.window;
        t.row(vec![
            r.model.clone(),
            r.provider.clone(),
            r.upstream_model.clone(),
            r.in_flight.to_string(),
            w.successes.to_string(),
            w.errors.to_string(),
            w.cancellations.to_string(),
            w.error_rate.map_or_else(|| "-".to_owned(), |e| format!("{:.1}", e * 100.0)),
            ms(w.p50_ms),
            ms(w.p95_ms),
            ms(w.ttft_p95_ms),
            w.tokens_per_s.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}")),
        ]);
    }
    t
}
