//! Usage aggregates and request records.

use serde::Deserialize;
use serde_json::json;
use switchyard_store::{DEFAULT_SLO_MS, RecordFilter, SLO_RANGE_MS, UsageBy};

use std::sync::Arc;

use axum::extract::State;
use switchyard_core::clock::UnixMs;
use switchyard_core::limits::{BudgetMode, Budgeted, budget::MICROS_PER_USD};

use super::{ApiError, ApiResult, Db, Params, Segments, given, list, ok};
use crate::AppState;
use crate::identity::now_ms;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UsageQuery {
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    until: Option<String>,
    #[serde(default)]
    by: Option<UsageBy>,
    #[serde(default)]
    slo_ms: Option<u64>,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    provider: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RequestsQuery {
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    until: Option<String>,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    status: Option<u16>,
    /// An `auto` model's class.
    #[serde(default)]
    intent: Option<String>,
    /// `embeddings`, or `generation`.
    #[serde(default)]
    operation: Option<String>,
    #[serde(default)]
    limit: Option<u32>,
}

/// The time window of a query: `since`/`until` as unix milliseconds or as a
/// duration before now (`90s`, `15m`, `1h`, `7d`, `2w`, `500ms`).
fn window(
    since: Option<String>,
    until: Option<String>,
) -> Result<(Option<i64>, Option<i64>), ApiError> {
    let now = now_ms();
    let parse = |name: &str, v: Option<String>| {
        given(v)
            .map(|s| parse_time(&s, now).map_err(|e| ApiError::invalid(format!("{name}: {e}"))))
            .transpose()
    };
    let since = parse("since", since)?;
    let until = parse("until", until)?;
    if let (Some(s), Some(u)) = (since, until)
        && s > u
    {
        return Err(ApiError::invalid("since is after until"));
    }
    Ok((since, until))
}

/// Unix milliseconds (all digits), or a duration meaning "now minus" it.
pub(crate) fn parse_time(s: &str, now_ms: i64) -> Result<i64, String> {
    const HINT: &str = "expected unix milliseconds or a duration such as 30m, 1h, 7d";
    let s = s.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if digits == 0 {
        return Err(format!("{s:?}: {HINT}"));
    }
    let (num, unit) = s.split_at(digits);
    let n: i64 = num.parse().map_err(|_| format!("{s:?}: number too large"))?;
    let unit_ms: i64 = match unit {
        "" => return Ok(n),
        "ms" => 1,
        "s" => 1_000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 604_800_000,
        _ => return Err(format!("{s:?}: {HINT}")),
    };
    let span = n.checked_mul(unit_ms).ok_or_else(|| format!("{s:?}: duration too large"))?;
    Ok(now_ms.saturating_sub(span).max(0))
}

fn effective_slo(slo_ms: u64) -> u64 {
    if slo_ms == 0 { DEFAULT_SLO_MS } else { slo_ms }
        .clamp(*SLO_RANGE_MS.start(), *SLO_RANGE_MS.end())
}

/// What a usage query asks: its filter, grouping and SLO.
fn usage_query(q: UsageQuery) -> Result<(RecordFilter, UsageBy, u64), ApiError> {
    let (since_ms, until_ms) = window(q.since, q.until)?;
    let filter = RecordFilter {
        since_ms,
        until_ms,
        user: given(q.user),
        project: given(q.project),
        model: given(q.model),
        provider: given(q.provider),
        ..RecordFilter::default()
    };
    Ok((filter, q.by.unwrap_or(UsageBy::Model), q.slo_ms.unwrap_or(0)))
}

pub(crate) async fn usage(Db { store, .. }: Db, Params(q): Params<UsageQuery>) -> ApiResult {
    let (filter, by, slo) = usage_query(q)?;
    let rows = store.usage(&filter, by, slo).await?;
    ok(json!({
        "by": by,
        "since_ms": filter.since_ms,
        "until_ms": filter.until_ms,
        "slo_ms": effective_slo(slo),
        "data": rows,
    }))
}

/// `GET /admin/analytics`: usage hour by hour, from the rollups
/// ([`switchyard_store::Store::usage_series`]), the window widened to whole hours.
pub(crate) async fn analytics(Db { store, .. }: Db, Params(q): Params<UsageQuery>) -> ApiResult {
    let (filter, by, slo) = usage_query(q)?;
    let points = store.usage_series(&filter, by, slo).await?;
    ok(json!({
        "by": by,
        "since_ms": filter.since_ms,
        "until_ms": filter.until_ms,
        "slo_ms": effective_slo(slo),
        "step_ms": 3_600_000,
        "data": points,
    }))
}

/// `GET /admin/budgets`: every configured budget in its period now, live from
/// the counters where they have it, else spent by the records.
pub(crate) async fn budgets(State(state): State<Arc<AppState>>, Db { store, .. }: Db) -> ApiResult {
    let snapshot = state.gateway.snapshot();
    let now = UnixMs::now();
    let mut data = Vec::new();
    for spec in &snapshot.catalog.budgets {
        let b = Budgeted::now(spec, now);
        let live = match &state.gateway.runtime.admission {
            Some(a) => a.read_budget(&b).await.ok().flatten(),
            None => None,
        };
        let usd = |micros: u64| micros as f64 / MICROS_PER_USD;
        let (spent, reserved, uncertain, source) = match live {
            Some(s) => (usd(s.spent), usd(s.reserved), usd(s.uncertain), "counters"),
            None => (store.budget_spent(spec, now).await?, 0.0, 0.0, "records"),
        };
        data.push(json!({
            "scope": spec.scope.to_string(),
            "period": spec.period.label(),
            "window": b.window.id,
            "mode": if spec.mode == BudgetMode::Warn { "warn" } else { "enforce" },
            "limit_usd": spec.limit_usd,
            "spent_usd": spent,
            "reserved_usd": reserved,
            "uncertain_usd": uncertain,
            "source": source,
        }));
    }
    ok(json!({ "data": data }))
}

pub(crate) async fn list_requests(
    Db { store, .. }: Db,
    Params(q): Params<RequestsQuery>,
) -> ApiResult {
    let (since_ms, until_ms) = window(q.since, q.until)?;
    if q.limit == Some(0) {
        return Err(ApiError::invalid(format!("limit must be 1..={}", RecordFilter::MAX_LIMIT)));
    }
    let filter = RecordFilter {
        since_ms,
        until_ms,
        user: given(q.user),
        project: given(q.project),
        model: given(q.model),
        provider: given(q.provider),
        status: q.status,
        intent: given(q.intent),
        operation: given(q.operation),
        limit: q.limit,
        ..RecordFilter::default()
    };
    list(store.list_records(&filter).await?)
}

pub(crate) async fn get_request(Db { store, .. }: Db, Segments(id): Segments<String>) -> ApiResult {
    match store.record(&id).await? {
        Some(r) => ok(r),
        None => Err(ApiError::not_found(format!("request not found: {id}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_unix_ms_or_durations_before_now() {
        let now = 1_000_000_000_000;
        assert_eq!(parse_time("1700000000000", now), Ok(1_700_000_000_000));
        assert_eq!(parse_time("1h", now), Ok(now - 3_600_000));
        assert_eq!(parse_time("7d", now), Ok(now - 7 * 86_400_000));
        assert_eq!(parse_time("30m", now), Ok(now - 1_800_000));
        assert_eq!(parse_time("90s", now), Ok(now - 90_000));
        assert_eq!(parse_time("250ms", now), Ok(now - 250));
        assert_eq!(parse_time("2w", now), Ok(now - 14 * 86_400_000));
        assert_eq!(parse_time(" 5m ", now), Ok(now - 300_000));
        for bad in ["", "h", "1y", "-1h", "1.5h", "yesterday", "99999999999999999999", "1h30m"] {
            assert!(parse_time(bad, now).is_err(), "{bad:?}");
        }
        assert!(parse_time("9223372036854775807d", now).is_err());
        // Far in the past clamps at the epoch.
        assert_eq!(parse_time("100000w", now), Ok(0));
    }

    #[test]
    fn slo_defaults_and_clamps() {
        assert_eq!(effective_slo(0), DEFAULT_SLO_MS);
        assert_eq!(effective_slo(1), *SLO_RANGE_MS.start());
        assert_eq!(effective_slo(2_000), 2_000);
        assert_eq!(effective_slo(u64::MAX), *SLO_RANGE_MS.end());
    }
}
