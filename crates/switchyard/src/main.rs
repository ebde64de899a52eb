//! `switchyard`: the gateway binary.
//!
//! - `switchyard serve [--config FILE] [--listen ADDR]` runs the gateway (the
//!   embedded default configuration when no file is given).
//! - `switchyard check [FILE]` validates a configuration and prints what it serves.
//! - `switchyard catalog discover [--provider P]` compares what each provider
//!   lists with what the catalog deploys on it (`cli/catalog.rs`).
//! - Operator subcommands (`migrate`, `users`, `projects`, `groups`, `keys`,
//!   `rules`, `credentials`, `secrets rotate`, `logs`, `usage`) work on the same
//!   database as the gateway: see `cli/`.

use std::ffi::OsString;
use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};

mod cli;
mod storage;
use switchyard_core::util::Date;
use switchyard_core::{Catalog, ConfigSource, Engine, LoadError};

#[derive(Parser)]
#[command(name = "switchyard", version, about = "A self-hosted LLM gateway")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway (the default command).
    Serve {
        /// Configuration file (default: $SWITCHYARD_CONFIG, else the embedded default).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// Listen address, overriding the configuration (e.g. 0.0.0.0:8080).
        #[arg(long, env = "SWITCHYARD_LISTEN_ADDR")]
        listen: Option<String>,
        /// Log format.
        #[arg(long, value_enum, default_value = "text", env = "SWITCHYARD_LOG_FORMAT")]
        log_format: LogFormat,
    },
    /// Validate a configuration and print the models, routes and providers it serves.
    Check {
        /// Configuration file (default: $SWITCHYARD_CONFIG, else the embedded default).
        file: Option<PathBuf>,
    },
    /// The catalog against the providers: what each serves, from its own
    /// model list (`discover`).
    Catalog {
        #[command(subcommand)]
        cmd: cli::catalog::CatalogCmd,
    },
    /// The intent an `auto` model would route a request body by, and why,
    /// without sending it.
    Explain(cli::explain::ExplainArgs),
    /// A running gateway's deployments, live: in flight, outcomes, latency and
    /// speed over their recent window (`GET /admin/destinations`).
    Status(cli::status::StatusArgs),
    /// The version, and with --verbose what it was built from: the commit,
    /// target, profile, compiler and the dependency tree's hash.
    Version {
        /// The build's provenance too.
        #[arg(long, short)]
        verbose: bool,
    },
    /// Operator subcommands: migrate, users, projects, groups, keys, rules,
    /// credentials, secrets, logs, usage (see cli/mod.rs).
    #[command(flatten)]
    Admin(cli::Admin),
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SWITCHYARD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // The logs go to stdout (the subscriber's default writer).
    let ansi = log_colours(std::io::stdout().is_terminal(), std::env::var_os("NO_COLOR"));
    let builder =
        tracing_subscriber::fmt().with_env_filter(filter).with_target(true).with_ansi(ansi);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Colour escapes only for a person at a terminal: a file, a pipe or a log
/// collector would keep them as noise. A non-empty `NO_COLOR` turns them off
/// everywhere (<https://no-color.org>).
fn log_colours(terminal: bool, no_color: Option<OsString>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Serve {
        config: None,
        listen: None,
        log_format: LogFormat::Text,
    }) {
        Command::Check { file } => check(file),
        Command::Catalog { cmd } => cli::catalog::run(cmd),
        Command::Explain(args) => cli::explain::run(args),
        Command::Status(args) => cli::status::run(args),
        Command::Version { verbose } => {
            print!("{}", version(verbose));
            ExitCode::SUCCESS
        }
        Command::Admin(cmd) => cli::run(cmd),
        Command::Serve { config, listen, log_format } => {
            init_logging(log_format);
            // On one CPU a work-stealing pool has nothing to steal: the
            // single-threaded scheduler does the same work with less
            // cross-thread signalling.
            let one_cpu = std::thread::available_parallelism().is_ok_and(|n| n.get() == 1);
            let mut builder = if one_cpu {
                tokio::runtime::Builder::new_current_thread()
            } else {
                tokio::runtime::Builder::new_multi_thread()
            };
            let runtime = match builder.enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("switchyard: cannot start the runtime: {e}");
                    return ExitCode::FAILURE;
                }
            };
            runtime.block_on(serve(config, listen))
        }
    }
}

/// `switchyard version`: the version; `verbose`: what the binary was built
/// from (set by build.rs), to compare with a release's published values.
fn version(verbose: bool) -> String {
    let mut out = format!("switchyard {}\n", env!("CARGO_PKG_VERSION"));
    if verbose {
        let opt = env!("SWITCHYARD_BUILD_OPT_LEVEL");
        let debug = env!("SWITCHYARD_BUILD_DEBUG");
        out.push_str(&format!(
            "commit: {}\ntarget: {}\nprofile: {} (opt-level {opt}, debug {debug})\nrustc: {}\n\
             dependencies: {} packages, Cargo.lock sha256 {}\n",
            env!("SWITCHYARD_COMMIT"),
            env!("SWITCHYARD_BUILD_TARGET"),
            env!("SWITCHYARD_BUILD_PROFILE"),
            env!("SWITCHYARD_RUSTC"),
            env!("SWITCHYARD_LOCK_PACKAGES"),
            env!("SWITCHYARD_LOCK_SHA256"),
        ));
    }
    out
}

/// Raise the soft open-file limit to the hard one, as servers do: every client
/// connection and every upstream connection is a file descriptor, and a soft
/// limit of 1024 is a few hundred clients. The connection cap is set from the
/// result (half of it), and the listener logs both.
fn raise_file_limit() {
    let before = switchyard_server::file_limit();
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(now) if Some(now) != before => {
            tracing::info!(from = before.unwrap_or(0), to = now, "raised the open-file limit");
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "cannot raise the open-file limit"),
    }
}

fn report_load_error(e: &LoadError) {
    match e {
        LoadError::Invalid(inv) => eprint!("{inv}"),
        other => eprintln!("switchyard: {other}"),
    }
}

async fn serve(config: Option<PathBuf>, listen: Option<String>) -> ExitCode {
    raise_file_limit();
    let (source, catalog) = match switchyard_core::load(config.as_deref()) {
        Ok(x) => x,
        Err(e) => {
            report_load_error(&e);
            return ExitCode::FAILURE;
        }
    };
    for w in &catalog.warnings {
        tracing::warn!("{w}");
    }
    if catalog.settings.api_keys.is_empty() && storage::admin_key(&catalog.security).is_none() {
        tracing::warn!(
            "no gateway API keys configured: until a key exists (switchyard keys create), any \
             client that can reach the listen address may call this gateway and spend its \
             provider keys. Web pages in a browser may not: a request is served only when its \
             Host is an IP address, localhost or in gateway.allowed_hosts, and its Origin, if \
             it has one, is in gateway.allowed_origins"
        );
    }
    let addr = listen.unwrap_or_else(|| catalog.settings.listen.clone());
    let config_path = source.path.as_deref();
    let url = storage::database_url(&catalog.storage, config_path);
    // Where records go when the database cannot take them: checked before the
    // start, not found unwritable when the database first fails.
    if url.is_some()
        && let Err(e) = storage::check_spill(&catalog.storage, config_path)
    {
        eprintln!("switchyard: {e}");
        return ExitCode::FAILURE;
    }
    let store = match url {
        Some(url) => match storage::open(&url, &catalog.storage).await {
            Ok(s) => {
                tracing::info!(backend = s.backend().as_str(), "database ready");
                Some(s)
            }
            Err(e) => {
                eprintln!("switchyard: {e}");
                return ExitCode::FAILURE;
            }
        },
        None => None,
    };
    let sealer = match storage::sealer(&catalog.security) {
        Ok(s) => s.map(Arc::new),
        Err(e) => {
            eprintln!("switchyard: {e}");
            return ExitCode::FAILURE;
        }
    };
    if sealer.is_none() && store.is_some() {
        tracing::info!(
            "{} is not set: users' own provider keys (BYOK) are disabled",
            catalog.security.secret_env
        );
    }
    let admin_key = storage::admin_key(&catalog.security);
    // The metrics recorder first: what the audit writer and the limits record
    // from their start (their series at zero) is kept.
    switchyard_server::install_metrics();
    let (sink, audit_task): (switchyard_core::SharedSink, _) = match &store {
        Some(s) => match storage::start_audit(s, &catalog, config_path).await {
            Ok((writer, task)) => (Arc::new(writer), Some(task)),
            Err(e) => {
                eprintln!("switchyard: cannot start the audit writer: {e}");
                return ExitCode::FAILURE;
            }
        },
        None => (Arc::new(switchyard_store::LogSink), None),
    };
    let static_keys = catalog.settings.api_keys.clone();
    for w in switchyard_server::identity::short_key_warnings(
        &static_keys,
        admin_key.as_ref(),
        &catalog.security.admin_key_env,
    ) {
        tracing::warn!("{w}");
    }
    let key_cache = std::time::Duration::from_millis(catalog.security.key_cache_ms);
    let retention_days = catalog.storage.retention_days;
    let rollup_retention_days = catalog.storage.rollup_retention_days;
    let seal = match storage::continuity_seal(&catalog.security) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("switchyard: {e}");
            return ExitCode::FAILURE;
        }
    };
    let admission = match storage::limiter(&catalog, store.as_ref()).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("switchyard: {e}");
            return ExitCode::FAILURE;
        }
    };
    let cache = match storage::response_cache(&catalog) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("switchyard: {e}");
            return ExitCode::FAILURE;
        }
    };
    let affinity = match storage::affinity_store(&catalog) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("switchyard: {e}");
            return ExitCode::FAILURE;
        }
    };
    let intent_decisions = match storage::intent_store(&catalog) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("switchyard: {e}");
            return ExitCode::FAILURE;
        }
    };
    let continuity = match storage::continuity_store(&catalog) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("switchyard: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut runtime = switchyard_core::runtime::Runtime {
        seal: Some(seal),
        admission: Some(Arc::new(admission)),
        cache,
        affinity,
        intent_decisions,
        continuity,
        ..Default::default()
    };
    // Stored Responses in the database, across restarts and instances.
    if let Some(s) = &store {
        runtime.responses = Arc::new(s.clone());
        runtime.jobs = Arc::new(s.clone());
        runtime.batches = Arc::new(s.clone());
    }
    runtime.images = match storage::image_store(&catalog) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("switchyard: {e}");
            return ExitCode::FAILURE;
        }
    };
    match storage::shared_health(&catalog) {
        Ok(Some(shared)) => {
            runtime.health = shared.health;
            runtime.latency = shared.latency;
            runtime.destinations = shared.destinations;
        }
        Ok(None) => {}
        Err(e) => {
            eprintln!("switchyard: {e}");
            return ExitCode::FAILURE;
        }
    }
    // Traces over OTLP (`telemetry.otlp`): the exporter runs until shutdown,
    // with the endpoint it started with (a reload changes sampling and
    // content capture, not where spans go).
    let trace_task = match catalog.telemetry.as_deref().map(switchyard_core::otel::start) {
        None => None,
        Some(Ok((traces, task))) => {
            // The host only: a URL's query may carry a key.
            let t = catalog.telemetry.as_deref();
            tracing::info!(
                host = t.and_then(|t| t.endpoint.host_str()).unwrap_or(""),
                protocol = t.map_or("", |t| t.protocol.as_str()),
                "exporting traces over OTLP"
            );
            runtime.traces = Some(traces);
            Some(task)
        }
        Some(Err(e)) => {
            eprintln!("switchyard: cannot start the trace exporter: {e}");
            return ExitCode::FAILURE;
        }
    };
    let gateway = match Engine::with_runtime(catalog, sink, runtime) {
        Ok(g) => Arc::new(g),
        Err(e) => {
            report_load_error(&e);
            return ExitCode::FAILURE;
        }
    };
    switchyard_server::reload::warn_unknown_rule_subjects(
        store.as_ref(),
        &gateway.snapshot().catalog.rules,
    )
    .await;
    if let Some(s) = &store {
        if let Err(e) = storage::load_rules(s, &gateway).await {
            eprintln!("switchyard: cannot load access rules: {e}");
            return ExitCode::FAILURE;
        }
        storage::spawn_retention(s.clone(), retention_days, rollup_retention_days);
        storage::spawn_rule_refresh(s.clone(), gateway.clone(), std::time::Duration::from_secs(10));
    }
    let listener = match switchyard_server::bind(&addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("switchyard: cannot listen on {addr}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let local = listener.local_addr().map(|a| a.to_string()).unwrap_or(addr);
    tracing::info!(config = %source.name, listen = %local, "switchyard listening");
    let metrics_listener = match gateway.snapshot().catalog.settings.metrics_listen.clone() {
        None => None,
        Some(addr) => match switchyard_server::bind(&addr).await {
            Ok(l) => {
                let local = l.local_addr().map(|a| a.to_string()).unwrap_or(addr);
                tracing::info!(listen = %local, "/metrics served without a key on its own address");
                Some(l)
            }
            Err(e) => {
                eprintln!("switchyard: cannot listen on {addr} (gateway.metrics_listen): {e}");
                return ExitCode::FAILURE;
            }
        },
    };
    // SIGHUP's default action ends the process: it is handled even when there is
    // no file to reload (the embedded default), so a routine `kill -HUP` never
    // stops a gateway.
    let reloader = source.path.clone().map(|path| {
        let poll = gateway.snapshot().catalog.settings.reload_poll;
        switchyard_server::reload::Reloader::spawn(gateway.clone(), path, poll, store.clone())
    });
    spawn_sighup(reloader.clone());
    let identity = switchyard_server::identity::Identity::new(
        static_keys,
        admin_key,
        store,
        sealer,
        key_cache,
    );
    let state = switchyard_server::AppState::with_identity(gateway, identity);
    if let (Some(path), Some(reloader)) = (source.path.clone(), reloader.clone()) {
        state.attach_config(switchyard_server::ConfigFile { path, reloader });
    }
    // The metrics address stays up while the gateway drains (so the drain can be
    // watched) and stops when it is done.
    let (drained, metrics_stop) = tokio::sync::oneshot::channel::<()>();
    let metrics = metrics_listener.map(|l| {
        tokio::spawn(switchyard_server::serve_metrics(l, state.clone(), async move {
            let _ = metrics_stop.await;
        }))
    });
    let served = switchyard_server::serve(listener, state, shutdown_signal()).await;
    drop(drained);
    if let Some(task) = metrics {
        // A scrape is quick; a connection that holds on is not waited for long.
        match tokio::time::timeout(std::time::Duration::from_secs(5), task).await {
            Ok(Ok(Ok(()))) | Err(_) => {}
            Ok(Ok(Err(e))) => tracing::error!("metrics address: {e}"),
            Ok(Err(e)) => tracing::error!("metrics address: {e}"),
        }
    }
    if let Some(task) = trace_task {
        // Export the spans still queued; a collector that does not answer is
        // not waited for long.
        if tokio::time::timeout(std::time::Duration::from_secs(10), task.shutdown()).await.is_err()
        {
            tracing::warn!("trace export on shutdown timed out after 10 s (queued spans lost)");
        }
    }
    if let Some(task) = audit_task {
        // Flush queued request records before exiting.
        match tokio::time::timeout(std::time::Duration::from_secs(30), task.shutdown()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!("audit flush on shutdown: {e}"),
            Err(_) => tracing::error!(
                "audit flush on shutdown timed out after 30 s (rows still queued are in the spill file or lost)"
            ),
        }
    }
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("switchyard: server error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// SIGHUP reloads the configuration file (without one, it is logged and ignored).
fn spawn_sighup(reloader: Option<switchyard_server::reload::Reloader>) {
    #[cfg(unix)]
    tokio::spawn(async move {
        let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        else {
            return;
        };
        while hup.recv().await.is_some() {
            match &reloader {
                Some(r) => {
                    tracing::info!("SIGHUP: reloading configuration");
                    r.trigger();
                }
                None => tracing::info!(
                    "SIGHUP: serving the embedded default configuration; nothing to reload"
                ),
            }
        }
    });
    #[cfg(not(unix))]
    drop(reloader);
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

fn check(file: Option<PathBuf>) -> ExitCode {
    let source = match ConfigSource::locate(file.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("switchyard: {e}");
            return ExitCode::FAILURE;
        }
    };
    let raw = match source.parse() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("switchyard: {e}");
            return ExitCode::FAILURE;
        }
    };
    let catalog = match Catalog::compile(&raw, &source.name, &|k| std::env::var(k).ok()) {
        Ok(c) => c,
        Err(e) => {
            eprint!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let directory = directory_warnings(&catalog, source.path.as_deref());
    print_catalog(&source.name, &catalog, &directory);
    ExitCode::SUCCESS
}

/// Warnings about the file's access rules naming users or projects the database
/// does not have. An absent SQLite file is not created for this: it has no one.
fn directory_warnings(catalog: &Catalog, config: Option<&std::path::Path>) -> Vec<String> {
    if !catalog.rules.iter().any(|r| {
        matches!(
            r.subject,
            switchyard_core::access::Subject::Project(_)
                | switchyard_core::access::Subject::User(_)
        )
    }) {
        return Vec::new();
    }
    let url = storage::database_url(&catalog.storage, config);
    let exists = url.as_deref().is_some_and(|u| {
        u.strip_prefix("sqlite://")
            .map(|f| f.split('?').next().is_some_and(|f| std::path::Path::new(f).exists()))
            .unwrap_or(true)
    });
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return vec![format!("access rule subjects not checked: {e}")],
    };
    runtime.block_on(async {
        let store = match (&url, exists) {
            // As it is: a check never migrates (a schema this binary's
            // lookups do not fit makes them fail, and says so).
            (Some(u), true) => match storage::open_as_is(u, &catalog.storage).await {
                Ok(s) => Some(s),
                Err(e) => return vec![format!("access rule subjects not checked: {e}")],
            },
            _ => None,
        };
        switchyard_store::directory::unknown_rule_subjects(store.as_ref(), &catalog.rules)
            .await
            .unwrap_or_else(|e| vec![format!("access rule subjects not checked: {e}")])
    })
}

fn print_catalog(name: &str, c: &Catalog, more_warnings: &[String]) {
    let today = Date::today();
    println!("{name}: OK");
    println!("\nproviders:");
    for p in &c.providers {
        let state = match (&p.unavailable, &p.cloud) {
            (Some(why), _) => format!("DISABLED ({why})"),
            (None, Some(cloud)) => cloud.describe(),
            (None, None) => format!("{} key(s)", p.keys.len()),
        };
        // An endpoint may carry a password (`https://user:pass@host`).
        let endpoint = switchyard_core::util::redact_userinfo(&p.endpoint);
        println!("  {:<14} {:<12} {:<48} {state}", p.name, p.wire_name(), endpoint);
    }
    println!("\nmodels:");
    for m in &c.models {
        let mut flags = Vec::new();
        if m.hidden {
            flags.push("hidden".to_owned());
        }
        if let Some(d) = m.retires {
            flags.push(if m.is_retired(today) {
                format!("RETIRED {d}")
            } else {
                format!("retires {d}")
            });
        }
        let deployments: Vec<String> = m
            .deployments
            .iter()
            .filter_map(|d| {
                c.providers.get(d.provider).map(|p| format!("{}/{}", p.name, d.upstream_model))
            })
            .collect();
        // How requests carry reasoning, sampling and the output limit to the first
        // deployment (OpenAI-chat always takes `reasoning_effort`).
        let first = m.deployments.first().and_then(|d| Some((c.providers.get(d.provider)?, d)));
        if let Some((p, d)) = first
            && let Some(wire) = p.wire()
        {
            let traits = m.traits(wire, &d.upstream_model);
            if wire != switchyard_core::protocol::Wire::OpenAiChat {
                flags.push(format!("reasoning:{}", traits.reasoning.as_str()));
            }
            if !traits.sampling {
                flags.push("no-sampling".to_owned());
            } else if traits.one_sampler {
                flags.push("one-sampler".to_owned());
            }
            if !traits.takes_max_tokens {
                flags.push("max_completion_tokens-only".to_owned());
            }
        }
        let price = m
            .pricing
            .as_ref()
            .map(|p| format!("${}/{} per Mtok", fmt_price(p.input), fmt_price(p.output)))
            .unwrap_or_else(|| "unpriced".to_owned());
        println!("  {:<28} -> {:<40} {price} {}", m.id, deployments.join(", "), flags.join(" "));
        if !m.aliases.is_empty() {
            println!("  {:<28}    aliases: {}", "", m.aliases.join(", "));
        }
    }
    if !c.routes.is_empty() {
        println!("\nroutes (first match wins):");
        for r in &c.routes {
            let chain_text = |chain: &switchyard_core::catalog::ChainSpec| {
                let mut parts = Vec::new();
                for t in std::iter::once(&chain.primary).chain(&chain.fallbacks) {
                    if let Some(p) = c.providers.get(t.provider) {
                        let mut s = match &t.model {
                            Some(m) => format!("{}/{m}", p.name),
                            None => p.name.clone(),
                        };
                        if chain.strategy == switchyard_core::catalog::Strategy::Weighted {
                            s.push_str(&format!(" (w{})", t.weight));
                        }
                        parts.push(s);
                    }
                }
                format!("{} [{}]", parts.join(" -> "), chain.strategy.as_str())
            };
            println!("  {:<24} match {:<20} -> {}", r.id, r.pattern, chain_text(&r.chain));
            if let Some(scopes) = &r.scopes {
                let mut names: Vec<_> = scopes.chains.keys().collect();
                names.sort();
                for name in names {
                    if let Some(chain) = scopes.chains.get(name) {
                        println!(
                            "  {:<24}   {}={name} -> {}",
                            "",
                            scopes.dimension,
                            chain_text(chain)
                        );
                    }
                }
                let unmapped = if scopes.unmapped_shared { "the route's chain" } else { "refused" };
                println!("  {:<24}   other {}s -> {unmapped}", "", scopes.dimension);
            }
            if !r.context_fallbacks.is_empty() {
                println!("  {:<24}   context fallbacks: {}", "", r.context_fallbacks.join(", "));
            }
        }
    }
    if !c.warnings.is_empty() || !more_warnings.is_empty() {
        println!("\nwarnings:");
        for w in c.warnings.iter().chain(more_warnings) {
            println!("  {w}");
        }
    }
}

/// A price per million tokens as the user wrote it. `{}` alone prints the shortest
/// decimal that round-trips the f64, which is the written number only while no
/// arithmetic has touched it: a price that went through a per-token scale and back
/// prints as 0.09999999999999999. Rounding to 12 significant digits (more than any
/// price is written with, fewer than the 17 where that error lives) first gives the
/// written number back.
fn fmt_price(p: Option<f64>) -> String {
    let Some(v) = p else { return "?".to_owned() };
    let rounded = format!("{v:.11e}").parse::<f64>().unwrap_or(v);
    format!("{rounded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_print_as_written_even_after_float_arithmetic() {
        assert_eq!(fmt_price(None), "?");
        for (value, shown) in [
            (0.1, "0.1"),
            (0.1e-6 * 1e6, "0.1"),
            (0.09999999999999999, "0.1"),
            (0.39999999999999997, "0.4"),
            (0.1 + 0.2, "0.3"),
            (0.0, "0"),
            (8.0, "8"),
            (1.25, "1.25"),
            (0.125, "0.125"),
            (0.0001, "0.0001"),
            (123456.789, "123456.789"),
        ] {
            assert_eq!(fmt_price(Some(value)), shown, "{value:?}");
        }
    }

    #[test]
    fn logs_are_coloured_only_at_a_terminal_without_no_color() {
        assert!(log_colours(true, None));
        assert!(log_colours(true, Some(OsString::new())), "an empty NO_COLOR is unset");
        assert!(!log_colours(true, Some(OsString::from("1"))));
        assert!(!log_colours(false, None));
        assert!(!log_colours(false, Some(OsString::from("1"))));
    }
}
