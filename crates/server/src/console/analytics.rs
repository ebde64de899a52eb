//! Analytics per model, provider, project or key over a window: latency
//! percentiles and the share over an SLO, time to first token, tokens, cost,
//! errors, failovers and cache hits, hour by hour. Everything is read from the
//! hourly rollups (the window's partial edge hours from the records), so a page
//! costs the same on ten rows or ten million.

use std::collections::BTreeMap;

use askama::Template;
use axum::extract::Query;
use axum::response::Response;
use serde::Deserialize;
use switchyard_store::{DEFAULT_SLO_MS, RecordFilter, SLO_RANGE_MS, SeriesOf, UsageBy, UsageRow};

use super::chart::Chart;
use super::page::{Chrome, PageError, render};
use super::session::Signed;
use crate::admin::reports::parse_time;
use crate::identity::now_ms;

const HOUR_MS: i64 = 3_600_000;
/// Groups drawn as their own line; the rest are summed as "other".
const LINES: usize = 5;
/// The longest window the hourly charts cover.
const MAX_HOURS: i64 = 24 * 31;

#[derive(Deserialize)]
pub(crate) struct Params {
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    by: Option<String>,
    #[serde(default)]
    slo_ms: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    project: Option<String>,
}

struct GroupRow {
    key: String,
    u: UsageRow,
    error_rate: String,
    over_slo: String,
    cost: String,
}

#[derive(Template)]
#[template(path = "console/analytics.html")]
struct AnalyticsPage {
    chrome: Chrome,
    since: String,
    by: &'static str,
    slo_ms: u64,
    model: String,
    provider: String,
    project: String,
    groups: Vec<GroupRow>,
    charts: Vec<Chart>,
}

fn grouping(by: &str) -> Result<(UsageBy, &'static str), PageError> {
    Ok(match by {
        "" | "model" => (UsageBy::Model, "model"),
        "provider" => (UsageBy::Provider, "provider"),
        "project" => (UsageBy::Project, "project"),
        "key" => (UsageBy::Key, "key"),
        "user" => (UsageBy::User, "user"),
        other => {
            return Err(PageError::invalid(format!(
                "by: {other:?} is not model, provider, project, key or user"
            )));
        }
    })
}

pub(crate) async fn page(signed: Signed, Query(p): Query<Params>) -> Result<Response, PageError> {
    let now = now_ms();
    let since =
        p.since.as_deref().map(str::trim).filter(|s| !s.is_empty()).unwrap_or("24h").to_owned();
    let since_ms =
        parse_time(&since, now).map_err(|e| PageError::invalid(format!("since: {e}")))?;
    let since_ms = since_ms.max(now - MAX_HOURS * HOUR_MS);
    let (by, by_name) = grouping(p.by.as_deref().unwrap_or_default().trim())?;
    // The SLO, clamped as the API clamps it (500 ms to 60 s; 5 s by default).
    let slo_ms = match p.slo_ms.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        None => DEFAULT_SLO_MS,
        Some(s) => s.parse::<u64>().map_err(|_| {
            PageError::invalid(format!("slo_ms: {s:?} is not a number of milliseconds"))
        })?,
    }
    .clamp(*SLO_RANGE_MS.start(), *SLO_RANGE_MS.end());
    let text = |v: &Option<String>| {
        v.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
    };
    let filter = RecordFilter {
        since_ms: Some(since_ms),
        model: text(&p.model),
        provider: text(&p.provider),
        project: text(&p.project),
        ..RecordFilter::default()
    };
    let rows = signed.store.usage(&filter, by, slo_ms).await?;
    // The charts' lines: the busiest groups, and all the traffic (the rest is
    // the difference), not every group's every hour.
    let top: Vec<Option<String>> = rows.iter().take(LINES).map(|u| u.key.clone()).collect();
    let series = signed.store.usage_series_of(&filter, by, slo_ms, &top).await?;
    let mut groups: Vec<GroupRow> = rows
        .into_iter()
        .map(|u| GroupRow {
            key: u.key.clone().unwrap_or_else(|| "(none)".to_owned()),
            error_rate: percent(u.errors, u.requests),
            over_slo: format!("{:.1}%", u.slo_breach_share * 100.0),
            cost: super::usd(u.cost_usd),
            u,
        })
        .collect();
    groups.sort_by(|a, b| b.u.requests.cmp(&a.u.requests).then(a.key.cmp(&b.key)));
    let charts = charts(&series, since_ms, now, &groups);
    Ok(render(&AnalyticsPage {
        chrome: Chrome::new(&signed, "analytics", "Analytics"),
        since,
        by: by_name,
        slo_ms,
        model: text(&p.model).unwrap_or_default(),
        provider: text(&p.provider).unwrap_or_default(),
        project: text(&p.project).unwrap_or_default(),
        groups,
        charts,
    }))
}

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "—".to_owned()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// The hourly charts: requests per group (the busiest groups, the rest as
/// "other"), p95 time to first token per group, tokens, cost, and the error,
/// failover and cache-hit rates of all traffic.
fn charts(series: &SeriesOf, since_ms: i64, now: i64, groups: &[GroupRow]) -> Vec<Chart> {
    let first = since_ms - since_ms.rem_euclid(HOUR_MS);
    let last = now - now.rem_euclid(HOUR_MS);
    let hours: Vec<i64> = (0..).map(|i| first + i * HOUR_MS).take_while(|h| *h <= last).collect();
    let xs: Vec<String> = hours
        .iter()
        .map(|h| {
            let t = super::utc(*h);
            if hours.len() > 24 {
                t.get(5..13).unwrap_or_default().to_owned() + "h"
            } else {
                t.get(11..16).unwrap_or_default().to_owned()
            }
        })
        .collect();
    let at = |h: i64| usize::try_from((h - first) / HOUR_MS).ok().filter(|i| *i < hours.len());
    let top: Vec<&str> = groups.iter().take(LINES).map(|g| g.key.as_str()).collect();
    // Requests and p95 TTFT per group.
    let mut requests: BTreeMap<String, Vec<Option<f64>>> = BTreeMap::new();
    let mut ttft: BTreeMap<String, Vec<Option<f64>>> = BTreeMap::new();
    // Counts are 0 in an hour without requests; a latency or a rate there is
    // unknown (a gap in its line).
    let blank = || vec![None; hours.len()];
    let zeros = || vec![Some(0.0); hours.len()];
    let (mut tokens_in, mut tokens_out, mut cost) = (zeros(), zeros(), zeros());
    let (mut total, mut errors, mut failovers, mut hits) = (
        vec![0u64; hours.len()],
        vec![0u64; hours.len()],
        vec![0u64; hours.len()],
        vec![0u64; hours.len()],
    );
    let add = |v: &mut Vec<Option<f64>>, i: usize, x: f64| {
        if let Some(slot) = v.get_mut(i) {
            *slot = Some(slot.unwrap_or(0.0) + x);
        }
    };
    let mut named = vec![0u64; hours.len()];
    for p in &series.groups {
        let Some(i) = at(p.hour_ms) else { continue };
        let name = p.usage.key.clone().unwrap_or_else(|| "(none)".to_owned());
        add(requests.entry(name.clone()).or_insert_with(zeros), i, p.usage.requests as f64);
        named[i] += p.usage.requests;
        if let Some(t) = p.ttft_p95_ms {
            let slot = ttft.entry(name).or_insert_with(blank);
            if let Some(s) = slot.get_mut(i) {
                *s = Some(t as f64);
            }
        }
    }
    for p in &series.total {
        let Some(i) = at(p.hour_ms) else { continue };
        add(&mut tokens_in, i, p.usage.input_tokens as f64);
        add(&mut tokens_out, i, p.usage.output_tokens as f64);
        if let Some(c) = p.usage.cost_usd {
            add(&mut cost, i, c);
        }
        total[i] += p.usage.requests;
        errors[i] += p.usage.errors;
        failovers[i] += p.failovers;
        hits[i] += p.cache_hits;
    }
    if groups.len() > top.len() {
        let other = total.iter().zip(&named).map(|(t, n)| Some(t.saturating_sub(*n) as f64));
        requests.insert("other".to_owned(), other.collect());
    }
    let rate = |part: &[u64]| -> Vec<Option<f64>> {
        part.iter()
            .zip(&total)
            .map(|(p, t)| (*t > 0).then(|| *p as f64 * 100.0 / *t as f64))
            .collect()
    };
    // Lines in the order of the table (busiest first), "other" last.
    let ordered = |mut m: BTreeMap<String, Vec<Option<f64>>>| -> Vec<(String, Vec<Option<f64>>)> {
        let mut out: Vec<_> =
            top.iter().filter_map(|k| m.remove(*k).map(|v| ((*k).to_owned(), v))).collect();
        out.extend(m);
        out
    };
    vec![
        Chart::new(
            "chart-requests",
            "Requests per hour",
            "requests",
            xs.clone(),
            ordered(requests),
        ),
        Chart::new("chart-ttft", "Time to first token, p95", "ms", xs.clone(), ordered(ttft)),
        Chart::new(
            "chart-tokens",
            "Tokens per hour",
            "tokens",
            xs.clone(),
            vec![("input".to_owned(), tokens_in), ("output".to_owned(), tokens_out)],
        ),
        Chart::new(
            "chart-cost",
            "Cost per hour",
            "USD",
            xs.clone(),
            vec![("cost".to_owned(), cost)],
        ),
        Chart::new(
            "chart-rates",
            "Errors, failovers and cache hits",
            "%",
            xs,
            vec![
                ("errors".to_owned(), rate(&errors)),
                ("failovers".to_owned(), rate(&failovers)),
                ("cache hits".to_owned(), rate(&hits)),
            ],
        ),
    ]
}

#[cfg(test)]
#[path = "analytics_tests.rs"]
mod tests;
