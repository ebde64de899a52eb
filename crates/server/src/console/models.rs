//! Models and prices: the catalog as the gateway serves it (aliases,
//! deployments, limits, capabilities) with each deployment's prices as billed,
//! for operators; and the public price page at `/pricing`, no sign-in, listing
//! what clients can call. Both read `Catalog::price_list`, what the meter
//! charges, so the price shown is the price billed.

use std::sync::Arc;

use askama::Template;
use axum::extract::State;
use axum::response::Response;
use switchyard_core::catalog::PriceLine;
use switchyard_core::util::Date;

use super::page::{Chrome, PageError, render};
use super::session::Signed;
use crate::AppState;

/// A price line as a table shows it: USD per million tokens.
pub(crate) struct Price {
    pub model: String,
    pub provider: String,
    pub upstream_model: String,
    pub input: String,
    pub output: String,
    pub cache_read: String,
    pub cache_write: String,
    /// The long-context tier, where the deployment has one.
    pub long: Option<LongPrice>,
    /// USD per image (an image model), with the sizes priced apart.
    pub per_image: String,
    /// USD per second of media (a media model's job).
    pub per_second: String,
    /// USD per finished job (a media model).
    pub per_job: String,
    /// The fraction of these prices a batch's line is billed at.
    pub batch: String,
}

/// A long-context tier as a table shows it.
pub(crate) struct LongPrice {
    /// "over 200,000 prompt tokens".
    pub over: String,
    pub input: String,
    pub output: String,
    pub cache_read: String,
    pub cache_write: String,
}

impl Price {
    fn of(l: &PriceLine) -> Price {
        let p = l.billed.clone().unwrap_or_default();
        let usd = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), per_million);
        Price {
            model: l.model.clone(),
            provider: l.provider.clone(),
            upstream_model: l.upstream_model.clone(),
            input: usd(p.input),
            output: usd(p.output),
            cache_read: usd(p.cache_read),
            cache_write: usd(p.cache_write),
            per_image: match (p.per_image, p.per_image_size.is_empty()) {
                (None, true) => "—".to_owned(),
                (each, _) => {
                    let mut parts: Vec<String> = each.map(per_million).into_iter().collect();
                    parts.extend(
                        p.per_image_size
                            .iter()
                            .map(|(size, v)| format!("{size}: {}", per_million(*v))),
                    );
                    parts.join(", ")
                }
            },
            per_second: usd(p.per_second),
            per_job: usd(p.per_job),
            batch: p.batch.map_or_else(|| "—".to_owned(), |f| format!("×{f}")),
            long: p.long_context.map(|t| LongPrice {
                over: format!("over {} prompt tokens", thousands(t.threshold)),
                input: usd(t.input),
                output: usd(t.output),
                cache_read: usd(t.cache_read),
                cache_write: usd(t.cache_write),
            }),
        }
    }
}

/// `n` with thousands separated (`200,000`).
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// USD (per million tokens, or per image), with the digits a price has (no
/// rounding away of a fraction of a cent).
fn per_million(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0');
    let s = s.strip_suffix('.').map_or(s.to_owned(), |t| format!("{t}.00"));
    if s.split('.').nth(1).is_some_and(|f| f.len() < 2) {
        format!("${s}0")
    } else {
        format!("${s}")
    }
}

struct ModelRow {
    id: String,
    aliases: String,
    context_window: String,
    max_output: String,
    capabilities: String,
    hidden: bool,
    retires: String,
    prices: Vec<Price>,
}

#[derive(Template)]
#[template(path = "console/models.html")]
struct ModelsPage {
    chrome: Chrome,
    models: Vec<ModelRow>,
}

pub(crate) async fn page(
    signed: Signed,
    State(state): State<Arc<AppState>>,
) -> Result<Response, PageError> {
    let snapshot = state.gateway.snapshot();
    let catalog = &snapshot.catalog;
    let list = catalog.price_list(Date::today());
    let models = catalog
        .models
        .iter()
        .map(|m| {
            let caps = m.capabilities.map(|c| {
                [
                    ("vision", c.vision),
                    ("tools", c.tools),
                    ("structured output", c.structured_output),
                    ("reasoning", c.reasoning),
                ]
                .iter()
                .filter(|(_, on)| *on)
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
            });
            ModelRow {
                id: m.id.clone(),
                aliases: m.aliases.join(", "),
                context_window: m.context_window.map(|v| v.to_string()).unwrap_or_default(),
                max_output: m.max_output_tokens.map(|v| v.to_string()).unwrap_or_default(),
                capabilities: caps.unwrap_or_else(|| "not stated".to_owned()),
                hidden: m.hidden,
                retires: m.retires.map(|d| d.to_string()).unwrap_or_default(),
                prices: list.iter().filter(|l| l.model == m.id).map(Price::of).collect(),
            }
        })
        .collect();
    Ok(render(&ModelsPage { chrome: Chrome::new(&signed, "models", "Models and prices"), models }))
}

#[derive(Template)]
#[template(path = "console/pricing.html")]
struct PricingPage {
    prices: Vec<Price>,
}

/// What a client can call, as billed: listed models, on providers that can
/// serve without the caller's own key (as `/v1/models` lists them).
fn public_lines(catalog: &switchyard_core::Catalog) -> Vec<PriceLine> {
    let served = |l: &PriceLine| {
        l.visible && catalog.provider(&l.provider).is_some_and(|p| p.reachable_with(&[]))
    };
    catalog.price_list(Date::today()).into_iter().filter(served).collect()
}

/// `GET /pricing`: public, what clients can call and what it costs them.
pub(crate) async fn public(State(state): State<Arc<AppState>>) -> Response {
    let snapshot = state.gateway.snapshot();
    let prices = public_lines(&snapshot.catalog).iter().map(Price::of).collect();
    let mut page = render(&PricingPage { prices });
    // Public and the same for everyone: a short shared cache is fine.
    page.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("public, max-age=60"),
    );
    page
}

/// `GET /v1/pricing`: the public price page's lines as JSON, no key: per
/// deployment, its kind and its prices as billed (USD per million tokens),
/// with its long-context tier where it has one.
pub(crate) async fn public_json(State(state): State<Arc<AppState>>) -> Response {
    use axum::response::IntoResponse;
    let snapshot = state.gateway.snapshot();
    let catalog = &snapshot.catalog;
    let data: Vec<serde_json::Value> = public_lines(catalog)
        .iter()
        .map(|l| {
            let kind =
                catalog.models.iter().find(|m| m.id == l.model).map_or("chat", |m| m.kind.as_str());
            let p = l.billed.clone().unwrap_or_default();
            serde_json::json!({
                "model": l.model,
                "kind": kind,
                "provider": l.provider,
                "upstream_model": l.upstream_model,
                "currency": "USD",
                "unit": "token prices per million tokens; per_image per image; per_second per \
                         second of media; per_job per finished job",
                "input": p.input,
                "output": p.output,
                "cache_read": p.cache_read,
                "cache_write": p.cache_write,
                "per_image": p.per_image,
                "per_image_size": p.per_image_size,
                "per_second": p.per_second,
                "per_job": p.per_job,
                "batch": p.batch,
                "long_context": p.long_context.map(|t| serde_json::json!({
                    "threshold_tokens": t.threshold,
                    "input": t.input,
                    "output": t.output,
                    "cache_read": t.cache_read,
                    "cache_write": t.cache_write,
                })),
            })
        })
        .collect();
    let body = serde_json::json!({"object": "list", "data": data});
    let mut resp = ([(axum::http::header::CONTENT_TYPE, "application/json")], body.to_string())
        .into_response();
    resp.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("public, max-age=60"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_keep_their_digits() {
        assert_eq!(per_million(3.0), "$3.00");
        assert_eq!(per_million(0.3), "$0.30");
        assert_eq!(per_million(0.075), "$0.075");
        assert_eq!(per_million(15.0), "$15.00");
        assert_eq!(per_million(1.234567), "$1.234567");
    }

    #[test]
    fn thresholds_read_as_written() {
        assert_eq!(thousands(200_000), "200,000");
        assert_eq!(thousands(1_048_576), "1,048,576");
        assert_eq!(thousands(999), "999");
    }
}
