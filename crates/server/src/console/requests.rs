//! Requests: the records, filtered by time, model, provider, user, project and
//! status, newest first, page by page on a keyset cursor (no OFFSET: a page
//! deep in a large table costs what the first does); and one request in
//! detail, its attempts as a timeline.

use askama::Template;
use axum::extract::{Path, Query};
use axum::response::Response;
use serde::Deserialize;
use switchyard_core::record::RequestRecord;
use switchyard_store::RecordFilter;

use super::page::{Chrome, PageError, encode_query, render};
use super::session::Signed;
use crate::admin::reports::parse_time;
use crate::identity::now_ms;

/// Rows per page.
const PAGE: u32 = 50;

#[derive(Deserialize, Default)]
pub(crate) struct Filters {
    #[serde(default)]
    since: String,
    #[serde(default)]
    until: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    provider: String,
    #[serde(default)]
    user: String,
    #[serde(default)]
    project: String,
    #[serde(default)]
    status: String,
    /// The cursor: `<time_ms>.<id>` of the last row of the previous page.
    #[serde(default)]
    before: String,
}

impl Filters {
    fn filter(&self) -> Result<RecordFilter, PageError> {
        let now = now_ms();
        let time = |name: &str, v: &str| -> Result<Option<i64>, PageError> {
            let v = v.trim();
            if v.is_empty() {
                return Ok(None);
            }
            parse_time(v, now).map(Some).map_err(|e| PageError::invalid(format!("{name}: {e}")))
        };
        let text = |v: &str| Some(v.trim().to_owned()).filter(|s| !s.is_empty());
        let status =
            match self.status.trim() {
                "" => None,
                s => Some(s.parse::<u16>().map_err(|_| {
                    PageError::invalid(format!("status: {s:?} is not an HTTP status"))
                })?),
            };
        let before = match self.before.trim() {
            "" => None,
            c => {
                let parsed = c
                    .split_once('.')
                    .and_then(|(t, id)| Some((t.parse::<i64>().ok()?, id.to_owned())));
                Some(
                    parsed
                        .ok_or_else(|| PageError::invalid("before: not a cursor of this page"))?,
                )
            }
        };
        Ok(RecordFilter {
            since_ms: time("since", &self.since)?,
            until_ms: time("until", &self.until)?,
            user: text(&self.user),
            project: text(&self.project),
            model: text(&self.model),
            provider: text(&self.provider),
            status,
            before,
            limit: Some(PAGE),
            ..RecordFilter::default()
        })
    }

    /// The query string of these filters, without the cursor.
    fn query(&self) -> String {
        [
            ("since", &self.since),
            ("until", &self.until),
            ("model", &self.model),
            ("provider", &self.provider),
            ("user", &self.user),
            ("project", &self.project),
            ("status", &self.status),
        ]
        .iter()
        .filter(|(_, v)| !v.trim().is_empty())
        .map(|(k, v)| format!("{k}={}", encode_query(v.trim())))
        .collect::<Vec<_>>()
        .join("&")
    }
}

struct Row {
    id: String,
    time: String,
    model: String,
    provider: String,
    user: String,
    project: String,
    status: u16,
    total_ms: u64,
    ttft_ms: Option<u64>,
    tokens: String,
    cost: String,
    attempts: usize,
}

impl Row {
    fn of(r: &RequestRecord) -> Row {
        Row {
            id: r.id.clone(),
            time: super::utc(i64::try_from(r.time_ms).unwrap_or(i64::MAX)),
            model: r.resolved_model.clone().unwrap_or_else(|| r.requested_model.clone()),
            provider: r.served_provider.clone().unwrap_or_default(),
            user: r.user.clone().unwrap_or_default(),
            project: r.project.clone().unwrap_or_default(),
            status: r.status,
            total_ms: r.total_ms,
            ttft_ms: r.ttft_ms,
            tokens: tokens(r),
            cost: super::usd(r.cost_usd),
            attempts: r.attempts.len(),
        }
    }
}

fn tokens(r: &RequestRecord) -> String {
    match (r.usage.input_tokens, r.usage.output_tokens) {
        (None, None) => "—".to_owned(),
        (i, o) => format!(
            "{} → {}",
            i.map_or("?".to_owned(), |v| v.to_string()),
            o.map_or("?".to_owned(), |v| v.to_string())
        ),
    }
}

#[derive(Template)]
#[template(path = "console/requests.html")]
struct ListPage {
    chrome: Chrome,
    f: Filters,
    rows: Vec<Row>,
    /// The next page's link, when this one is full.
    older: Option<String>,
    /// The first page's, when this is not it.
    newest: Option<String>,
}

pub(crate) async fn list(signed: Signed, Query(f): Query<Filters>) -> Result<Response, PageError> {
    let filter = f.filter()?;
    let records = signed.store.list_records(&filter).await?;
    let base = f.query();
    let link = |extra: Option<String>| {
        let q: Vec<String> =
            [Some(base.clone()), extra].into_iter().flatten().filter(|s| !s.is_empty()).collect();
        if q.is_empty() {
            "/console/requests".to_owned()
        } else {
            format!("/console/requests?{}", q.join("&"))
        }
    };
    let older = (records.len() == PAGE as usize)
        .then(|| records.last())
        .flatten()
        .map(|r| link(Some(format!("before={}.{}", r.time_ms, encode_query(&r.id)))));
    let newest = filter.before.is_some().then(|| link(None));
    Ok(render(&ListPage {
        chrome: Chrome::new(&signed, "requests", "Requests"),
        rows: records.iter().map(Row::of).collect(),
        f,
        older,
        newest,
    }))
}

/// One attempt on the timeline.
struct Bar {
    deployment: String,
    credential: String,
    kind: String,
    outcome: String,
    /// When it started, in ms from the request's arrival.
    started_ms: u64,
    latency_ms: u64,
    tokens: String,
    cost: String,
    /// Its place on the chart, in percent of the request's time.
    x: f64,
    width: f64,
    ok: bool,
}

#[derive(Template)]
#[template(path = "console/request.html")]
struct DetailPage {
    chrome: Chrome,
    r: Row,
    record: RequestRecord,
    bars: Vec<Bar>,
    /// Logged content, shown to admins only.
    content: Option<String>,
    content_hidden: bool,
}

pub(crate) async fn detail(signed: Signed, Path(id): Path<String>) -> Result<Response, PageError> {
    let Some(record) = signed.store.record(&id).await? else {
        return Err(PageError::not_found(format!("no request {id:?} (or retention removed it)")));
    };
    let bars = timeline(&record);
    let content_hidden = record.content.is_some() && !signed.is_admin();
    let content = if signed.is_admin() { record.content.clone() } else { None };
    Ok(render(&DetailPage {
        chrome: Chrome::new(&signed, "requests", format!("Request {id}")),
        r: Row::of(&record),
        bars,
        content,
        content_hidden,
        record,
    }))
}

/// The attempts on the scale of the whole request, each where it started and
/// as long as it took. Records written before attempts kept their start
/// (`started_ms` 0 on every attempt after the first) are laid end to end.
fn timeline(r: &RequestRecord) -> Vec<Bar> {
    let laid_out = r.attempts.iter().skip(1).any(|a| a.started_ms > 0);
    let mut at = 0u64;
    let starts: Vec<u64> = r
        .attempts
        .iter()
        .map(|a| {
            let start = if laid_out { a.started_ms } else { at };
            at = start + a.latency_ms;
            start
        })
        .collect();
    let end = r.attempts.iter().zip(&starts).map(|(a, s)| s + a.latency_ms).max().unwrap_or(0);
    let span = r.total_ms.max(end).max(1) as f64;
    r.attempts
        .iter()
        .zip(starts)
        .map(|(a, start)| Bar {
            deployment: a.deployment.clone(),
            credential: a.credential.clone().unwrap_or_default(),
            kind: a.kind.to_string(),
            outcome: a.outcome.clone(),
            started_ms: start,
            latency_ms: a.latency_ms,
            tokens: a
                .usage
                .map(|u| {
                    format!("{} → {}", u.input_tokens.unwrap_or(0), u.output_tokens.unwrap_or(0))
                })
                .unwrap_or_else(|| "—".to_owned()),
            cost: super::usd(a.cost_usd),
            x: start as f64 / span * 100.0,
            width: (a.latency_ms as f64 / span * 100.0).max(0.5),
            ok: a.outcome == "ok",
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_core::record::AttemptRecord;

    fn attempt(started_ms: u64, latency_ms: u64) -> AttemptRecord {
        let mut a = AttemptRecord::new("p/m", "ok", latency_ms, "primary");
        a.started_ms = started_ms;
        a
    }

    #[test]
    fn attempts_sit_where_they_started_or_end_to_end_in_old_records() {
        let mut r = RequestRecord::new("r", 0);
        r.total_ms = 1000;
        r.attempts = vec![attempt(10, 200), attempt(500, 400)];
        let bars = timeline(&r);
        assert_eq!((bars[0].x, bars[0].width), (1.0, 20.0));
        assert_eq!((bars[1].x, bars[1].width), (50.0, 40.0));
        // Written before the start was kept: one after the other.
        r.attempts = vec![attempt(0, 200), attempt(0, 400)];
        let bars = timeline(&r);
        assert_eq!((bars[1].started_ms, bars[1].x), (200, 20.0));
    }
}
