//! `logs list | show` and `usage`: reading the request records.

use std::collections::HashSet;

use clap::{Args, Subcommand, ValueEnum};
use switchyard_core::RequestRecord;
use switchyard_store::{RecordFilter, SLO_RANGE_MS, UsageBy, UsageRow};

use super::fmt::{
    StatusFilter, Table, When, fmt_cost, fmt_count, fmt_ms, fmt_share, fmt_time, fmt_usd,
    parse_status, parse_when,
};
use super::{Ctx, Failure, Names, Result, out, out_json, out_table};
use crate::storage::now_ms;

#[derive(Subcommand)]
pub enum LogsCmd {
    /// List request records, newest first.
    List(ListArgs),
    /// Every field of one request record.
    Show {
        /// The request id (returned to the client; first column of `logs list`).
        id: String,
        #[arg(long)]
        json: bool,
    },
}

/// Which records: a time window and who / what.
#[derive(Args)]
pub struct Window {
    /// From this long ago (30s, 15m, 1h, 7d) or this UTC time (2026-01-31T14:00).
    #[arg(long, value_name = "WHEN", value_parser = parse_when)]
    since: Option<When>,
    /// Up to (not including) this long ago or this UTC time.
    #[arg(long, value_name = "WHEN", value_parser = parse_when)]
    until: Option<When>,
    /// Only this user's requests (id or email).
    #[arg(long)]
    user: Option<String>,
    /// Only requests attributed to this project (id or name).
    #[arg(long)]
    project: Option<String>,
    /// Only requests for this model (resolved or as requested).
    #[arg(long)]
    model: Option<String>,
}

#[derive(Args)]
pub struct ListArgs {
    #[command(flatten)]
    window: Window,
    /// A status code (200, 429) or class (4xx, 5xx).
    #[arg(long, value_parser = parse_status)]
    status: Option<StatusFilter>,
    /// At most this many records.
    #[arg(long, default_value_t = RecordFilter::DEFAULT_LIMIT, value_parser = clap::value_parser!(u32).range(1..=i64::from(RecordFilter::MAX_LIMIT)))]
    limit: u32,
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ByArg {
    Model,
    Provider,
    User,
    Project,
}

#[derive(Args)]
pub struct UsageArgs {
    /// From this long ago or this UTC time.
    #[arg(long, value_name = "WHEN", value_parser = parse_when, default_value = "7d")]
    since: When,
    /// Up to (not including) this long ago or this UTC time.
    #[arg(long, value_name = "WHEN", value_parser = parse_when)]
    until: Option<When>,
    /// Only this user's requests (id or email).
    #[arg(long)]
    user: Option<String>,
    /// Only requests attributed to this project (id or name).
    #[arg(long)]
    project: Option<String>,
    /// Only requests for this model (the resolved one, else as requested).
    #[arg(long)]
    model: Option<String>,
    /// Group by (the provider is the one that served the request).
    #[arg(long, value_enum, default_value = "model")]
    by: ByArg,
    /// Latency objective: the share of requests slower than this is reported.
    #[arg(long, default_value_t = switchyard_store::DEFAULT_SLO_MS, value_parser = clap::value_parser!(u64).range(*SLO_RANGE_MS.start()..=*SLO_RANGE_MS.end()))]
    slo_ms: u64,
    #[arg(long)]
    json: bool,
}

pub async fn logs(ctx: &Ctx, cmd: LogsCmd) -> Result<()> {
    match cmd {
        LogsCmd::List(a) => list(ctx, a).await,
        LogsCmd::Show { id, json } => show(ctx, &id, json).await,
    }
}

/// The store filter for a window, with emails and project names turned into ids
/// (an id that matches nothing stored is kept as given: records outlive rows).
async fn filter(ctx: &Ctx, w: &Window, now: i64) -> Result<RecordFilter> {
    let since_ms = w.since.map(|t| t.resolve(now));
    let until_ms = w.until.map(|t| t.resolve(now));
    if let (Some(s), Some(u)) = (since_ms, until_ms)
        && s >= u
    {
        return Err("--since must be before --until".into());
    }
    let user = match &w.user {
        Some(u) if u.contains('@') => Some(ctx.user(u).await?.id),
        Some(u) => Some(u.clone()),
        None => None,
    };
    let project = match &w.project {
        Some(p) => Some(match ctx.store.project(p).await? {
            Some(found) => found.id,
            None => ctx.store.project_by_name(p).await?.map_or_else(|| p.clone(), |found| found.id),
        }),
        None => None,
    };
    Ok(RecordFilter {
        since_ms,
        until_ms,
        user,
        project,
        model: w.model.clone(),
        ..RecordFilter::default()
    })
}

async fn list(ctx: &Ctx, a: ListArgs) -> Result<()> {
    let mut f = filter(ctx, &a.window, now_ms()).await?;
    let records = match a.status {
        None => {
            f.limit = Some(a.limit);
            ctx.store.list_records(&f).await?
        }
        Some(StatusFilter::Code(code)) => {
            f.status = Some(code);
            f.limit = Some(a.limit);
            ctx.store.list_records(&f).await?
        }
        Some(class) => list_by_class(ctx, f, class, a.limit).await?,
    };
    if a.json {
        return out_json(&records);
    }
    let names = ctx.names().await?;
    let mut t = Table::new(&[
        "TIME",
        "ID",
        "USER",
        "PROJECT",
        "MODEL",
        "SERVED BY",
        ">STATUS",
        ">TOKENS IN/OUT",
        ">COST",
        ">LATENCY",
    ]);
    for r in &records {
        t.row(vec![
            fmt_time(as_ms(r.time_ms)),
            r.id.clone(),
            names.user(r.user.as_deref()),
            names.project(r.project.as_deref()),
            r.resolved_model.clone().unwrap_or_else(|| r.requested_model.clone()),
            r.served_provider.clone().unwrap_or_else(|| "-".into()),
            r.status.to_string(),
            tokens(r),
            fmt_cost(r.cost_usd),
            fmt_ms(r.total_ms),
        ]);
    }
    out_table(&t, "no request records match")?;
    if records.iter().any(|r| r.estimated) {
        super::note("~ token counts estimated from the text (the provider sent none)");
    }
    Ok(())
}

/// Records whose status is in a class (`4xx`). The store filters by one code, so
/// this pages through the window newest first (a page ends at the oldest time it
/// saw; rows at that millisecond are read again and skipped) and keeps matches.
async fn list_by_class(
    ctx: &Ctx,
    mut f: RecordFilter,
    class: StatusFilter,
    limit: u32,
) -> Result<Vec<RequestRecord>> {
    let page = RecordFilter::MAX_LIMIT;
    f.limit = Some(page);
    let want = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut seen = HashSet::new();
    let mut found = Vec::new();
    loop {
        let rows = ctx.store.list_records(&f).await?;
        let full = rows.len() >= usize::try_from(page).unwrap_or(usize::MAX);
        let Some(oldest) = rows.last().map(|r| as_ms(r.time_ms)) else {
            break;
        };
        for r in rows {
            if seen.insert(r.id.clone()) && class.matches(r.status) {
                found.push(r);
                if found.len() >= want {
                    return Ok(found);
                }
            }
        }
        if !full {
            break;
        }
        // Next page: up to and including the oldest millisecond seen, unless the
        // whole page was that millisecond (then past it, to make progress).
        let next = oldest.saturating_add(1);
        f.until_ms = Some(if f.until_ms == Some(next) { oldest } else { next });
    }
    Ok(found)
}

async fn show(ctx: &Ctx, id: &str, json: bool) -> Result<()> {
    let Some(r) = ctx.store.record(id).await? else {
        return Err(Failure(format!("no request record with id {id:?}")));
    };
    if json {
        return out_json(&r);
    }
    let names = ctx.names().await?;
    let dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    let with_id = |name: String, id: &Option<String>| match id {
        Some(id) if name != *id => format!("{name} ({id})"),
        _ => name,
    };
    let served = match (&r.provider, &r.served_provider) {
        (Some(p), Some(s)) if p != s => format!("{s} (failed over from {p})"),
        (_, s) => dash(s),
    };
    let u = &r.usage;
    let usage = format!(
        "input {}, output {}, cache read {}, cache write {}, reasoning {}{}",
        fmt_count(u.input_tokens),
        fmt_count(u.output_tokens),
        fmt_count(u.cache_read_tokens),
        fmt_count(u.cache_write_tokens),
        fmt_count(u.reasoning_tokens),
        if r.estimated { " (estimated from the text)" } else { "" }
    );
    let cost = match r.cost_usd {
        Some(c) => {
            format!("{}{}", fmt_usd(c), if r.estimated { " (from estimated tokens)" } else { "" })
        }
        None => "unknown (no price for this model, or no token counts)".into(),
    };
    let fields: Vec<(&str, String)> = vec![
        ("id", r.id.clone()),
        ("time", fmt_time(as_ms(r.time_ms))),
        ("user", with_id(names.user(r.user.as_deref()), &r.user)),
        ("key", dash(&r.key_prefix)),
        ("project", with_id(names.project(r.project.as_deref()), &r.project)),
        ("client format", r.client_format.to_string()),
        ("requested model", r.requested_model.clone()),
        ("resolved model", dash(&r.resolved_model)),
        ("route", dash(&r.route_id)),
        ("provider", dash(&r.provider)),
        ("served provider", served),
        ("upstream model", dash(&r.upstream_model)),
        ("descriptor", if r.descriptor.is_empty() { "-".into() } else { r.descriptor.clone() }),
        ("status", r.status.to_string()),
        ("error", dash(&r.error_code)),
        ("stream", if r.stream { "yes" } else { "no" }.into()),
        ("first token", r.ttft_ms.map_or_else(|| "-".into(), fmt_ms)),
        ("total", fmt_ms(r.total_ms)),
        ("usage", usage),
        ("cost", cost),
        ("estimated", if r.estimated { "yes" } else { "no" }.into()),
        ("session", dash(&r.session_id)),
        (
            "field edits",
            if r.field_edits.is_empty() { "-".into() } else { r.field_edits.join("; ") },
        ),
    ];
    let width = fields.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut text = String::new();
    for (k, v) in &fields {
        text.push_str(&format!("{k:<width$}  {v}\n"));
    }
    text.push_str(&format!("attempts ({})\n", r.attempts.len()));
    let mut t = Table::new(&[">#", "DEPLOYMENT", "CREDENTIAL", "OUTCOME", ">LATENCY", "KIND"]);
    for (i, a) in r.attempts.iter().enumerate() {
        t.row(vec![
            (i + 1).to_string(),
            a.deployment.clone(),
            dash(&a.credential),
            a.outcome.clone(),
            fmt_ms(a.latency_ms),
            a.kind.to_string(),
        ]);
    }
    if !t.is_empty() {
        for line in t.render().lines() {
            text.push_str("  ");
            text.push_str(line);
            text.push('\n');
        }
    }
    out(&text)
}

pub async fn usage(ctx: &Ctx, a: UsageArgs) -> Result<()> {
    let now = now_ms();
    let window = Window {
        since: Some(a.since),
        until: a.until,
        user: a.user,
        project: a.project,
        model: a.model,
    };
    let f = filter(ctx, &window, now).await?;
    let by = match a.by {
        ByArg::Model => UsageBy::Model,
        ByArg::Provider => UsageBy::Provider,
        ByArg::User => UsageBy::User,
        ByArg::Project => UsageBy::Project,
    };
    let rows = ctx.store.usage(&f, by, a.slo_ms).await?;
    if a.json {
        return out_json(&rows);
    }
    let names = ctx.names().await?;
    let (label, key): (&'static str, fn(&Names, &UsageRow) -> String) = match a.by {
        ByArg::Model => ("MODEL", |_, r| r.key.clone().unwrap_or_else(|| "(none)".into())),
        ByArg::Provider => ("PROVIDER", |_, r| r.key.clone().unwrap_or_else(|| "(none)".into())),
        ByArg::User => ("USER", |n, r| {
            r.key.as_deref().map_or_else(|| "(anonymous)".into(), |k| n.user(Some(k)))
        }),
        ByArg::Project => ("PROJECT", |n, r| {
            r.key.as_deref().map_or_else(|| "(none)".into(), |k| n.project(Some(k)))
        }),
    };
    let mut header = format!("usage since {}", fmt_time(f.since_ms.unwrap_or(0)));
    if let Some(u) = f.until_ms {
        header.push_str(&format!(" until {}", fmt_time(u)));
    }
    header.push_str(&format!(", by {}, SLO {}\n", label.to_lowercase(), fmt_ms(a.slo_ms)));
    let mut t = Table::new(&[
        label,
        ">REQUESTS",
        ">ERRORS",
        ">INPUT TOK",
        ">OUTPUT TOK",
        ">COST",
        ">P50",
        ">P95",
        ">OVER SLO",
    ]);
    let mut incomplete = false;
    for r in &rows {
        let cost = match r.cost_usd {
            Some(c) if r.cost_complete => fmt_usd(c),
            Some(c) => {
                incomplete = true;
                format!("{}*", fmt_usd(c))
            }
            None => {
                incomplete = true;
                "?".into()
            }
        };
        t.row(vec![
            key(&names, r),
            r.requests.to_string(),
            r.errors.to_string(),
            r.input_tokens.to_string(),
            r.output_tokens.to_string(),
            cost,
            fmt_ms(r.p50_ms),
            fmt_ms(r.p95_ms),
            fmt_share(r.slo_breach_share),
        ]);
    }
    out(&header)?;
    out_table(&t, "no requests in this window")?;
    if incomplete {
        out("* a lower bound: some requests have no known price (?: none has one)\n")?;
    }
    Ok(())
}

fn tokens(r: &RequestRecord) -> String {
    let u = &r.usage;
    if u.input_tokens.is_none() && u.output_tokens.is_none() {
        return "-".into();
    }
    format!(
        "{}{}/{}",
        if r.estimated { "~" } else { "" },
        fmt_count(u.input_tokens),
        fmt_count(u.output_tokens)
    )
}

fn as_ms(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}
