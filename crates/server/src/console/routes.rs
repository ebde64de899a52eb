//! Routes: the ordered dispatch table, and an editor for the configuration
//! file's `routes:` section.
//!
//! A save is checked the way start-up checks a file: the whole new file,
//! written beside the old one, is parsed and compiled by the same steps
//! (`ConfigSource::from_path`, `Catalog::compile`), and every problem is shown
//! with its field and its line in the editor. A file that passes replaces the
//! old one atomically (a rename), the old one kept as `<file>.bak`, and is
//! reloaded at once, so the next request follows it. A save made from a page
//! older than the file (someone else saved since) is refused rather than
//! overwriting their change.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use askama::Template;
use axum::Form;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use switchyard_core::catalog::{Catalog, ChainSpec, TargetSpec};
use switchyard_core::util::fnv1a;
use switchyard_core::{ConfigSource, LoadError};

use super::page::{Chrome, PageError, render};
use super::providers::credentials;
use super::session::Signed;
use crate::AppState;

/// One target of a chain, in dispatch order.
pub(crate) struct Target {
    pub provider: String,
    pub model: String,
    /// The provider's credentials that are not closed, as `label state`.
    pub trouble: Vec<String>,
}

/// A route's own chain, or a scope's.
pub(crate) struct Chain {
    /// `None` for the route's own chain; `dimension = value` for a scope's.
    pub scope: Option<String>,
    pub strategy: &'static str,
    pub targets: Vec<Target>,
}

/// A route as the dispatch table shows it.
pub(crate) struct RouteRow {
    pub name: String,
    pub pattern: String,
    pub chains: Vec<Chain>,
    pub context_fallbacks: Vec<String>,
}

/// Every route in the order it is matched, each chain in dispatch order, with
/// the targets' providers' troubled credentials (live breaker state).
pub(crate) fn dispatch(state: &AppState) -> Vec<RouteRow> {
    let snapshot = state.gateway.snapshot();
    let catalog = &snapshot.catalog;
    let troubled = |provider: usize| -> Vec<String> {
        catalog
            .providers
            .get(provider)
            .map(|p| {
                credentials(&state.gateway, p)
                    .into_iter()
                    .filter(|c| c.state != "closed")
                    .map(|c| format!("{} {}", c.label, c.state))
                    .collect()
            })
            .unwrap_or_default()
    };
    catalog
        .routes
        .iter()
        .map(|r| {
            let mut chains = vec![chain(catalog, None, &r.chain, &troubled)];
            if let Some(scopes) = &r.scopes {
                let mut sorted: Vec<_> = scopes.chains.iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(b.0));
                for (value, c) in sorted {
                    let scope = format!("{} = {value}", scopes.dimension);
                    chains.push(chain(catalog, Some(scope), c, &troubled));
                }
            }
            RouteRow {
                name: r.name.clone(),
                pattern: r.pattern.clone(),
                chains,
                context_fallbacks: r.context_fallbacks.clone(),
            }
        })
        .collect()
}

fn chain(
    catalog: &Catalog,
    scope: Option<String>,
    c: &ChainSpec,
    troubled: &dyn Fn(usize) -> Vec<String>,
) -> Chain {
    let target = |t: &TargetSpec| Target {
        provider: catalog.providers.get(t.provider).map(|p| p.name.clone()).unwrap_or_default(),
        model: t.model.clone().unwrap_or_else(|| "(the requested model)".to_owned()),
        trouble: troubled(t.provider),
    };
    Chain {
        scope,
        strategy: c.strategy.as_str(),
        targets: std::iter::once(&c.primary).chain(&c.fallbacks).map(target).collect(),
    }
}

/// One problem the check found, placed in the editor where it can be.
struct Problem {
    /// The line in the editor, from 1, when the problem is inside the section.
    line: Option<usize>,
    message: String,
}

#[derive(Template)]
#[template(path = "console/routes.html")]
struct RoutesPage {
    chrome: Chrome,
    routes: Vec<RouteRow>,
    /// The file, when the gateway serves one.
    file: Option<String>,
    /// The editor's text: the file's `routes:` section, or what was submitted.
    text: String,
    /// The file's content hash the editor was opened on.
    base: String,
    problems: Vec<Problem>,
    saved: bool,
}

#[derive(Deserialize, Default)]
pub(crate) struct PageQuery {
    #[serde(default)]
    saved: Option<String>,
}

pub(crate) async fn page(
    signed: Signed,
    State(state): State<Arc<AppState>>,
    axum::extract::Query(q): axum::extract::Query<PageQuery>,
) -> Result<Response, PageError> {
    let (file, text, base) = match state.config_file.get() {
        Some(f) => {
            let current = read(&f.path)?;
            let (start, end) = section(&current);
            let lines: Vec<&str> = current.lines().collect();
            let text = match (start, end) {
                (Some(s), e) => lines[s..e].join("\n"),
                (None, _) => "routes:\n".to_owned(),
            };
            (Some(f.path.display().to_string()), text, hash(&current))
        }
        None => (None, String::new(), String::new()),
    };
    Ok(render(&RoutesPage {
        chrome: Chrome::new(&signed, "routes", "Routes"),
        routes: dispatch(&state),
        file,
        text,
        base,
        problems: Vec::new(),
        saved: q.saved.is_some(),
    }))
}

#[derive(Deserialize)]
pub(crate) struct SaveForm {
    csrf: String,
    routes: String,
    base: String,
}

pub(crate) async fn save(
    signed: Signed,
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Form(f): Form<SaveForm>,
) -> Result<Response, PageError> {
    signed.admin_write(&headers, &f.csrf)?;
    let Some(file) = state.config_file.get() else {
        return Err(PageError::invalid(
            "the gateway runs on its embedded defaults: start it with a configuration file to edit routes here",
        ));
    };
    // Browsers send a textarea with CRLF line ends.
    let text = f.routes.replace("\r\n", "\n");
    let refused = |problems: Vec<Problem>| {
        let mut page = render(&RoutesPage {
            chrome: Chrome::new(&signed, "routes", "Routes"),
            routes: dispatch(&state),
            file: Some(file.path.display().to_string()),
            text: text.clone(),
            base: f.base.clone(),
            problems,
            saved: false,
        });
        *page.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
        Ok(page)
    };
    let current = read(&file.path)?;
    if hash(&current) != f.base {
        return refused(vec![Problem {
            line: None,
            message:
                "the file changed since this editor was opened (another save, or an edit on disk): \
                      your text is kept below; open Routes again to see the file as it is now"
                    .to_owned(),
        }]);
    }
    if let Err(message) = only_routes(&text) {
        return refused(vec![Problem { line: None, message }]);
    }
    let (next, offset) = splice(&current, &text);
    // The whole new file is checked beside the old one (its relative paths
    // resolve as they will), by the steps start-up and reload take.
    let tmp = sibling(&file.path, "new");
    write_synced(&tmp, &next, &file.path)
        .map_err(|e| PageError::internal(format!("writing {}: {e}", tmp.display())))?;
    let checked = tokio::task::spawn_blocking({
        let tmp = tmp.clone();
        move || check(&tmp)
    })
    .await
    .map_err(|e| PageError::internal(format!("the check failed: {e}")))?;
    if let Err(e) = checked {
        let _ = std::fs::remove_file(&tmp);
        return refused(problems(e, offset, text.lines().count()));
    }
    let backup = sibling(&file.path, "bak");
    std::fs::write(&backup, &current)
        .and_then(|()| std::fs::rename(&tmp, &file.path))
        .map_err(|e| PageError::internal(format!("replacing {}: {e}", file.path.display())))?;
    if let Err(e) = file.reloader.reload_now().await {
        // It compiled but could not be served (a provider's client): put the
        // previous file back, so what is on disk is what serves.
        let _ = std::fs::rename(&backup, &file.path);
        let _ = file.reloader.reload_now().await;
        return refused(vec![Problem { line: None, message: e }]);
    }
    tracing::info!(target: "switchyard::admin", actor = %signed.who, config = %file.path.display(), "routes edited in the console");
    Ok(Redirect::to("/console/routes?saved=1").into_response())
}

fn read(path: &Path) -> Result<String, PageError> {
    std::fs::read_to_string(path)
        .map_err(|e| PageError::unavailable(format!("cannot read {}: {e}", path.display())))
}

fn hash(text: &str) -> String {
    format!("{:016x}", fnv1a(text.as_bytes()))
}

/// `<file>.<suffix>` beside `path`.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(format!(".{suffix}"));
    path.with_file_name(name)
}

/// Writes `text` to `path` with `like`'s permissions, flushed to disk, so the
/// rename that follows never exposes a partial file.
fn write_synced(path: &Path, text: &str, like: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::File::create(path)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    if let Ok(meta) = std::fs::metadata(like) {
        std::fs::set_permissions(path, meta.permissions())?;
    }
    Ok(())
}

/// The start-up check: parse (with `${ENV}` from the environment) and compile.
fn check(path: &Path) -> Result<(), LoadError> {
    let source = ConfigSource::from_path(path)?;
    let raw = source.parse()?;
    Catalog::compile(&raw, &source.name, &|k| std::env::var(k).ok())?;
    Ok(())
}

/// The check's problems, each placed on the editor's line where it falls in
/// the section (`offset`: the section's first line in the file, from 0).
fn problems(e: LoadError, offset: usize, lines: usize) -> Vec<Problem> {
    let place = |line: Option<u64>| {
        let line = usize::try_from(line?).ok()?;
        (line > offset && line <= offset + lines).then(|| line - offset)
    };
    match e {
        LoadError::Invalid(invalid) => invalid
            .problems
            .into_iter()
            .map(|p| Problem { line: place(p.line), message: p.message })
            .collect(),
        LoadError::Config(c) => {
            let (line, message) = match &c {
                switchyard_core::ConfigError::Parse { line, message, .. } => {
                    (line.map(|l| l as u64), message.clone())
                }
                switchyard_core::ConfigError::Interpolation { line, message, .. } => {
                    (Some(*line as u64), message.clone())
                }
                other => (None, other.to_string()),
            };
            vec![Problem { line: place(line), message }]
        }
        LoadError::Client(m) => vec![Problem { line: None, message: m }],
    }
}

/// The lines `[start, end)` of the file's top-level `routes:` section (the key
/// and everything under it, up to the next top-level key); `None` when the
/// file has none.
fn section(text: &str) -> (Option<usize>, usize) {
    let lines: Vec<&str> = text.lines().collect();
    let Some(start) = lines.iter().position(|l| is_key(l, "routes")) else {
        return (None, lines.len());
    };
    let mut end = lines.len();
    for (i, l) in lines.iter().enumerate().skip(start + 1) {
        if top_level(l) {
            end = i;
            break;
        }
    }
    // Blank lines and unindented comments just before the next key belong to it.
    while end > start + 1 && (lines[end - 1].trim().is_empty() || lines[end - 1].starts_with('#')) {
        end -= 1;
    }
    (Some(start), end)
}

/// A line that opens a top-level mapping key (or ends the document).
fn top_level(line: &str) -> bool {
    let first = line.chars().next();
    matches!(first, Some(c) if !c.is_whitespace() && c != '#' && c != '-')
        || line.starts_with("---")
        || line.starts_with("...")
}

fn is_key(line: &str, key: &str) -> bool {
    line.strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with(':'))
}

/// The editor's text may hold the `routes:` key and what is under it, nothing
/// else: the editor changes routes, not providers or keys.
fn only_routes(text: &str) -> Result<(), String> {
    let mut keys = text.lines().enumerate().filter(|(_, l)| top_level(l));
    match keys.next() {
        Some((_, l)) if is_key(l, "routes") => {}
        _ => return Err("the text must begin with `routes:`".to_owned()),
    }
    if let Some((i, l)) = keys.next() {
        return Err(format!(
            "line {}: {:?} is another top-level key: this editor changes `routes:` only",
            i + 1,
            l.trim()
        ));
    }
    Ok(())
}

/// The file with its `routes:` section replaced by `routes` (appended when it
/// had none), and the section's first line in the new file (from 0).
fn splice(file: &str, routes: &str) -> (String, usize) {
    let lines: Vec<&str> = file.lines().collect();
    let routes = routes.trim_end_matches('\n');
    let (before, after): (&[&str], &[&str]) = match section(file) {
        (Some(start), end) => (&lines[..start], &lines[end..]),
        (None, _) => (&lines[..], &[]),
    };
    let mut out = String::with_capacity(file.len() + routes.len());
    for l in before {
        out.push_str(l);
        out.push('\n');
    }
    let offset = before.len();
    out.push_str(routes);
    out.push('\n');
    for l in after {
        out.push_str(l);
        out.push('\n');
    }
    (out, offset)
}

#[cfg(test)]
#[path = "routes_tests.rs"]
mod tests;
