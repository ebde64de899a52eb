//! `switchyard-bench`: the project's own benchmark.
//!
//! One run measures, side by side, a fake OpenAI upstream called directly,
//! nginx `proxy_pass` in front of it (the pure-forwarding reference), and the
//! release gateway in front of it (OpenAI chat in, `openai-chat` provider out:
//! the same-format fast path). Figures are reported as absolute values and as
//! differences / ratios against the direct call. See `docs/benchmark.md`.
//!
//! ```text
//! cargo build --release -p switchyard -p switchyard-bench
//! target/release/switchyard-bench [--gateway PATH] [--requests N] [--duration SECS] [--json]
//! ```

mod client;
mod configs;
mod forward;
mod load;
mod report;

use switchyard_bench::procs;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use serde_json::{Value, json};
use switchyard_testkit::{FakeUpstream, Reply, ReplyBody, Vendor, canned};

use crate::load::{Summary, Target};
use crate::procs::{Placement, Server, TempDir};
use crate::report::{Memory, Report, StreamRow, ThroughputRow};

/// The catalog id the gateway serves.
const MODEL: &str = "bench";
/// What the canned completion says.
const ANSWER: &str = "Hello! How can I help you today?";
/// The gateway key the client sends (to every target; only the gateway checks it).
const API_KEY: &str = "sk-bench-0123456789abcdef";
/// The row of the gateway run with `storage: { url: none }` (no request records).
const NO_RECORDS: &str = "gateway, no records";
/// That gateway with the shared controls on: a deployment's rate, token and
/// concurrency limits and a gateway budget, counted in process.
const CONTROLS_LOCAL: &str = "gateway, no records, controls (local)";
/// The same, counted on Redis (`--redis`).
const CONTROLS_REDIS: &str = "gateway, no records, controls (redis)";
/// The gateway without records, asked in Anthropic's Messages format: the
/// translated path (Messages → canonical → Chat Completions, and back).
const TRANSLATED: &str = "gateway, no records, Anthropic in";
/// The same, streamed: 20 content chunks, each decoded and re-encoded.
const TRANSLATED_STREAMED: &str = "gateway, no records, Anthropic in, streamed";
/// The gateway without records, streamed in its own format: the base the
/// translated stream is compared with.
const NO_RECORDS_STREAMED: &str = "gateway, no records, streamed";
/// nginx forwarding the same stream: what relaying its chunks costs a proxy.
const NGINX_STREAMED: &str = "nginx, streamed";
/// Concurrency levels of the latency phase.
const LATENCY_LEVELS: [usize; 2] = [1, 32];
/// Rounds the latency phase is split into, targets interleaved, so a slow
/// drift of the machine affects every target alike.
const ROUNDS: usize = 4;
/// Concurrency of the throughput phase.
const THROUGHPUT_CONCURRENCY: usize = 64;
/// Streams open at once in the streaming phase.
const STREAM_CONCURRENCY: usize = 8;
/// Content frames per paced stream, and their spacing.
const STREAM_FRAMES: usize = 20;
const STREAM_GAP: Duration = Duration::from_millis(5);

#[derive(Parser, Debug, Clone)]
#[command(
    name = "switchyard-bench",
    version,
    about = "Switchyard's own benchmark: the gateway against a direct call and nginx",
    long_about = "Switchyard's own benchmark: added latency, throughput on one core, streaming, \
                  CPU per request and peak memory of the release gateway, against a fake upstream \
                  called directly and through nginx. Build first: \
                  `cargo build --release -p switchyard -p switchyard-bench`. See docs/benchmark.md."
)]
struct Cli {
    /// The gateway binary (default: target/release/switchyard, else next to this binary).
    #[arg(long)]
    gateway: Option<PathBuf>,
    /// Requests per target and concurrency level in the latency phase.
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..))]
    requests: u64,
    /// Seconds per target of the throughput phase.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    duration: u64,
    /// Paced streams per target in the streaming phase.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    streams: u64,
    /// The nginx binary (default: `nginx` on PATH, else /usr/sbin/nginx).
    #[arg(long)]
    nginx: Option<PathBuf>,
    /// Skip nginx even when it is installed.
    #[arg(long)]
    no_nginx: bool,
    /// Rerun a measured piece up to this many times when other processes used
    /// more than 5 % of a core during it (0: keep every piece, flag it).
    #[arg(long, default_value_t = 3)]
    retries: u64,
    /// Do not pin anything to CPUs.
    #[arg(long)]
    no_pin: bool,
    /// Print the results as JSON on stdout (the markdown report then goes to stderr).
    #[arg(long)]
    json: bool,
    /// Leave out the stack floor: the two forwarders (axum + reqwest, axum +
    /// hyper-util's client) and the gateway without request records, measured in
    /// the throughput phase beside the gateway.
    #[arg(long)]
    no_floor: bool,
    /// A Redis server (`redis://127.0.0.1:6379`) to measure the controls on, beside
    /// the in-process ones (left out without it).
    #[arg(long)]
    redis: Option<String>,
    /// Internal: run as a stack-floor forwarder (with --listen and --upstream).
    #[arg(long, hide = true, value_enum, requires_all = ["listen", "upstream"])]
    forwarder: Option<forward::Kind>,
    #[arg(long, hide = true)]
    listen: Option<SocketAddr>,
    #[arg(long, hide = true)]
    upstream: Option<SocketAddr>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let (Some(kind), Some(listen), Some(upstream)) = (cli.forwarder, cli.listen, cli.upstream) {
        return match forward::run(kind, listen, upstream) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("switchyard-bench forwarder: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let argv: Vec<String> = std::env::args().collect();
    // Pin before the runtime starts any thread: threads inherit the affinity.
    let placement = procs::place(cli.no_pin);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("switchyard-bench: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&cli, argv, placement)) {
        Ok(report) => {
            let md = report.markdown();
            if cli.json {
                eprintln!("{md}");
                println!("{}", serde_json::to_string_pretty(&report.json()).unwrap_or_default());
            } else {
                println!("{md}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("switchyard-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Other processes may use at most this much CPU (in cores) during a
/// measured piece for it to count as quiet.
const QUIET_CORES: f64 = 0.05;

/// Watches the rest of the machine: CPU used by every other process during
/// each measured piece, which is rerun (up to `retries` times) when the
/// machine was not quiet.
struct Watch {
    exclude: Vec<u32>,
    clk_tck: u64,
    retries: usize,
    phases: Vec<PhaseLog>,
}

struct PhaseLog {
    phase: String,
    /// Kept pieces only.
    secs: f64,
    ticks: u64,
    /// Pieces thrown away because the machine was busy.
    reruns: usize,
}

/// Where a measured piece started.
struct Mark {
    ticks: u64,
    at: std::time::Instant,
}

impl Watch {
    fn start(&self) -> Mark {
        Mark { ticks: procs::others_ticks(&self.exclude), at: std::time::Instant::now() }
    }

    /// Other processes' CPU since `mark`: (seconds, ticks, cores).
    fn since(&self, mark: &Mark) -> (f64, u64, f64) {
        let secs = mark.at.elapsed().as_secs_f64();
        let used = procs::others_ticks(&self.exclude).saturating_sub(mark.ticks);
        (secs, used, used as f64 / self.clk_tck as f64 / secs.max(1e-9))
    }

    fn log(&mut self, phase: &str) -> &mut PhaseLog {
        let i = match self.phases.iter().position(|p| p.phase == phase) {
            Some(i) => i,
            None => {
                self.phases.push(PhaseLog {
                    phase: phase.to_owned(),
                    secs: 0.0,
                    ticks: 0,
                    reruns: 0,
                });
                self.phases.len() - 1
            }
        };
        &mut self.phases[i]
    }

    /// Ends a measured piece. False: the machine was busy and the piece should
    /// be thrown away and rerun (after [`Watch::settle`]); `attempt` counts from 0.
    fn end(&mut self, phase: &str, mark: Mark, attempt: usize) -> bool {
        let (secs, used, cores) = self.since(&mark);
        if cores > QUIET_CORES && attempt < self.retries {
            progress(format!(
                "{phase}: other processes used {cores:.2} cores meanwhile; rerunning this piece ({}/{})",
                attempt + 1,
                self.retries
            ));
            self.log(phase).reruns += 1;
            return false;
        }
        let entry = self.log(phase);
        entry.secs += secs;
        entry.ticks += used;
        true
    }

    /// Waits (up to 30 s) for a quiet second.
    async fn settle(&self) {
        for _ in 0..30 {
            let mark = self.start();
            tokio::time::sleep(Duration::from_secs(1)).await;
            if self.since(&mark).2 <= QUIET_CORES {
                return;
            }
        }
    }

    /// (phase, seconds, other processes' CPU in cores, reruns).
    fn summary(&self) -> Vec<(String, f64, f64, usize)> {
        self.phases
            .iter()
            .map(|p| {
                let cores = p.ticks as f64 / self.clk_tck as f64 / p.secs.max(1e-9);
                (p.phase.clone(), p.secs, cores, p.reruns)
            })
            .collect()
    }
}

fn progress(msg: impl AsRef<str>) {
    eprintln!("[bench] {}", msg.as_ref());
}

fn command_output(program: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    Some(text.trim().to_owned())
}

/// Starts a server on a free port, with a new port if it fails (another
/// process may take the port between the probe and the server's bind).
fn spawn_on_free_port<T>(
    name: &str,
    mut start: impl FnMut(u16) -> Result<T, String>,
) -> Result<T, String> {
    let mut errors = Vec::new();
    for _ in 0..3 {
        let port = procs::free_port()?;
        progress(format!("starting {name} on {}", local(port)));
        match start(port) {
            Ok(t) => return Ok(t),
            Err(e) => {
                progress(format!("{name} did not start: {e}"));
                errors.push(e);
            }
        }
    }
    Err(errors.join("\n"))
}

fn local(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

fn request_body(stream: bool) -> Value {
    let mut v = json!({
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Say hello in one short sentence."}
        ],
        "max_tokens": 64
    });
    if stream && let Some(o) = v.as_object_mut() {
        o.insert("stream".into(), Value::Bool(true));
    }
    v
}

fn target(name: &'static str, addr: SocketAddr, pid: Option<u32>) -> Target {
    Target {
        name,
        addr,
        request: Arc::new(load::build_request(addr, API_KEY, &request_body(false))),
        stream_request: Arc::new(load::build_request(addr, API_KEY, &request_body(true))),
        pid,
        streamed: false,
    }
}

/// The same question in Anthropic's Messages format, as its SDK sends it.
fn messages_body(stream: bool) -> Value {
    json!({
        "model": MODEL,
        "system": "You are a helpful assistant.",
        "messages": [{"role": "user", "content": "Say hello in one short sentence."}],
        "max_tokens": 64,
        "stream": stream
    })
}

/// A target that asks in Anthropic's Messages format.
fn messages_target(name: &'static str, addr: SocketAddr, pid: Option<u32>) -> Target {
    let auth = format!("x-api-key: {API_KEY}\r\nanthropic-version: 2023-06-01");
    let build =
        |stream| load::build_request_at(addr, "/v1/messages", &auth, &messages_body(stream));
    Target {
        name,
        addr,
        request: Arc::new(build(false)),
        stream_request: Arc::new(build(true)),
        pid,
        streamed: false,
    }
}

fn memory(server: &Server) -> Result<(u64, u64), String> {
    server.memory_kib()
}

async fn run(cli: &Cli, argv: Vec<String>, placement: Placement) -> Result<Report, String> {
    let gateway_bin = procs::gateway_binary(cli.gateway.as_deref())?;
    let (clk_tck, clk_read) = procs::clock_ticks();
    let tmp = TempDir::new()?;
    let pin = placement.server_cpus.as_deref();
    progress(&placement.note);

    // The fake upstream: a fixed canned answer, nothing recorded.
    let fake = FakeUpstream::start(Vendor::OpenAi)
        .await
        .map_err(|e| format!("cannot start the fake upstream: {e}"))?;
    fake.set_recording(false);
    let canned_json = match canned::text(Vendor::OpenAi, MODEL, ANSWER, false) {
        ReplyBody::Json(v) => v.to_string(),
        other => return Err(format!("unexpected canned body {other:?}")),
    };
    let canned_len = canned_json.len();
    fake.set_default(Reply::raw(canned_json.clone(), "application/json"));
    let upstream = fake.addr();

    // nginx, when there is one.
    let mut notes: Vec<String> = Vec::new();
    let nginx_bin = if cli.no_nginx {
        notes.push("nginx skipped (--no-nginx): no forwarding reference in this run.".into());
        None
    } else {
        let found = match &cli.nginx {
            Some(p) => procs::which(&p.to_string_lossy()),
            None => procs::which("nginx").or_else(|| procs::which("/usr/sbin/nginx")),
        };
        if found.is_none() {
            notes.push(
                "nginx not found (looked for `nginx` on PATH and /usr/sbin/nginx): no forwarding reference; the nginx rows and ratios are absent."
                    .into(),
            );
        }
        found
    };
    let mut nginx = None;
    let mut nginx_version = None;
    let mut nginx_config = None;
    if let Some(bin) = &nginx_bin {
        let conf_path = tmp.0.join("nginx.conf");
        let (server, conf) = spawn_on_free_port("nginx", |port| {
            let conf = configs::nginx_conf(&tmp.0, local(port), upstream);
            std::fs::write(&conf_path, &conf).map_err(|e| format!("write nginx.conf: {e}"))?;
            let argv = vec![
                bin.display().to_string(),
                "-p".to_owned(),
                tmp.0.display().to_string(),
                "-e".to_owned(),
                tmp.0.join("nginx-error.log").display().to_string(),
                "-c".to_owned(),
                conf_path.display().to_string(),
            ];
            let server = Server::spawn(
                "nginx",
                &argv,
                pin,
                local(port),
                tmp.0.join("nginx.stderr"),
                &[],
                &[],
            )?;
            Ok((server, conf))
        })?;
        nginx = Some(server);
        nginx_version = command_output(bin, &["-v"]);
        nginx_config = Some(conf);
    }

    // The gateway.
    let yaml = configs::gateway_yaml(upstream);
    let yaml_path = tmp.0.join("gateway.yaml");
    std::fs::write(&yaml_path, &yaml).map_err(|e| format!("write gateway.yaml: {e}"))?;
    let start_gateway = |name: &'static str, config: &Path, env: &[(&str, &str)]| {
        spawn_on_free_port(name, |port| {
            let argv = vec![
                gateway_bin.display().to_string(),
                "serve".to_owned(),
                "--config".to_owned(),
                config.display().to_string(),
                "--listen".to_owned(),
                local(port).to_string(),
            ];
            Server::spawn(
                name,
                &argv,
                pin,
                local(port),
                tmp.0.join(format!("{name}.stderr")),
                &[
                    "SWITCHYARD_LOG",
                    "SWITCHYARD_LOG_FORMAT",
                    "SWITCHYARD_CONFIG",
                    "SWITCHYARD_API_KEY",
                    "SWITCHYARD_LISTEN_ADDR",
                ],
                env,
            )
        })
    };
    let gateway = start_gateway("gateway", &yaml_path, &[])?;
    let gateway_version = command_output(&gateway_bin, &["--version"]);

    // The stack floor: the gateway's HTTP stack with no gateway in it.
    let mut floors = Vec::new();
    if !cli.no_floor {
        let me =
            std::env::current_exe().map_err(|e| format!("cannot find the bench binary: {e}"))?;
        for kind in [forward::Kind::Reqwest, forward::Kind::Hyper] {
            let server = spawn_on_free_port(kind.label(), |port| {
                let argv = vec![
                    me.display().to_string(),
                    "--forwarder".to_owned(),
                    kind.arg(),
                    "--listen".to_owned(),
                    local(port).to_string(),
                    "--upstream".to_owned(),
                    upstream.to_string(),
                ];
                let log = tmp.0.join(format!("{}.stderr", kind.label()));
                Server::spawn(kind.label(), &argv, pin, local(port), log, &[], &[])
            })?;
            floors.push(server);
        }
        // The gateway without request records: what the audit row costs. With
        // `storage: none` records go to the log at `info`; at `warn` they are dropped.
        let bare_path = tmp.0.join("gateway-no-records.yaml");
        std::fs::write(&bare_path, format!("{yaml}storage:\n  url: none\n"))
            .map_err(|e| format!("write gateway-no-records.yaml: {e}"))?;
        match start_gateway(NO_RECORDS, &bare_path, &[("SWITCHYARD_LOG", "warn")]) {
            Ok(server) => floors.push(server),
            // A revision from before `storage` existed refuses the field.
            Err(e) => notes.push(format!("{NO_RECORDS} not measured: {e}")),
        }
        // The controls, at limits no run reaches: what counting costs per request.
        let mut controls = vec![(CONTROLS_LOCAL, String::new())];
        match &cli.redis {
            Some(url) => controls.push((
                CONTROLS_REDIS,
                format!(
                    "state:\n  backend: redis\n  redis: {{ url: \"{url}\", prefix: \"bench-{}\" }}\n",
                    std::process::id()
                ),
            )),
            None => notes.push(format!("{CONTROLS_REDIS} not measured: no --redis")),
        }
        for (name, state) in controls {
            let path = tmp.0.join(format!("{}.yaml", name.replace([' ', ',', '(', ')'], "")));
            let config = configs::controls_yaml(&yaml, &state);
            std::fs::write(&path, config).map_err(|e| format!("write {name}: {e}"))?;
            match start_gateway(name, &path, &[("SWITCHYARD_LOG", "warn")]) {
                Ok(server) => floors.push(server),
                // A revision from before the controls refuses the fields.
                Err(e) => notes.push(format!("{name} not measured: {e}")),
            }
        }
    }

    let mut targets = vec![target("direct", upstream, None)];
    if let Some(n) = &nginx {
        targets.push(target("nginx", n.addr, Some(n.pid())));
    }
    targets.push(target("gateway", gateway.addr, Some(gateway.pid())));

    let mut floor_targets: Vec<Target> =
        floors.iter().map(|f| target(f.name, f.addr, Some(f.pid()))).collect();
    // What translation costs, and what a stream costs per request, on the
    // gateway without records (after the floors: `zip` below verifies those).
    let bare = floors.iter().find(|f| f.name == NO_RECORDS);
    let variants: Vec<Target> = bare
        .map(|f| {
            let translated = messages_target(TRANSLATED, f.addr, Some(f.pid()));
            let streamed = |t: Target, name| Target { name, streamed: true, ..t };
            vec![
                streamed(target(f.name, f.addr, Some(f.pid())), NO_RECORDS_STREAMED),
                streamed(translated.clone(), TRANSLATED_STREAMED),
                translated,
            ]
        })
        .unwrap_or_default();
    for t in &targets {
        load::verify(t, ANSWER).await.map_err(|e| {
            let log = if t.name == "gateway" { gateway.log_tail() } else { String::new() };
            format!("{e}\n{log}")
        })?;
    }
    for (t, f) in floor_targets.iter().zip(&floors) {
        load::verify(t, ANSWER).await.map_err(|e| format!("{e}\n{}", f.log_tail()))?;
    }
    if let (Some(t), Some(f)) = (variants.iter().find(|t| !t.streamed), bare) {
        load::verify(t, ANSWER).await.map_err(|e| format!("{e}\n{}", f.log_tail()))?;
    }
    floor_targets.extend(variants);
    if let Some(n) = &nginx {
        let t = target(NGINX_STREAMED, n.addr, Some(n.pid()));
        floor_targets.push(Target { streamed: true, ..t });
    }
    // The fake's answers: a completion, or (to a streamed target) a stream of
    // STREAM_FRAMES chunks with no pause between them.
    let frames = load::stream_frames(MODEL, STREAM_FRAMES);
    let answer_for = |t: &Target| {
        fake.set_default(if t.streamed {
            Reply::sse(frames.clone())
        } else {
            Reply::raw(canned_json.clone(), "application/json")
        })
    };
    let mut exclude = vec![std::process::id(), gateway.pid()];
    exclude.extend(nginx.as_ref().map(Server::pid));
    exclude.extend(floors.iter().map(Server::pid));
    let mut watch = Watch { exclude, clk_tck, retries: cli.retries as usize, phases: Vec::new() };
    let servers: Vec<&Server> = nginx.iter().chain(std::iter::once(&gateway)).collect();
    let mut attempt = 0;
    let (before, idle_secs) = loop {
        let before: Vec<Option<u64>> =
            servers.iter().map(|s| procs::cpu_ticks(s.pid()).ok()).collect();
        let w = watch.start();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let secs = w.at.elapsed().as_secs_f64();
        if watch.end("before the load (1 s, idle)", w, attempt) {
            break (before, secs);
        }
        attempt += 1;
        watch.settle().await;
    };
    let mut idle_cpu = Vec::new();
    for (s, b) in servers.iter().zip(before) {
        if let (Some(b), Ok(a)) = (b, procs::cpu_ticks(s.pid())) {
            idle_cpu.push((s.name, a.saturating_sub(b) as f64 / clk_tck as f64 / idle_secs));
        }
    }

    let mut idle = Vec::new();
    for s in nginx.iter().chain(std::iter::once(&gateway)) {
        idle.push((s.name, memory(s)?.1));
    }

    // Warm-up: every connection pool filled, every code path hot.
    for t in &targets {
        progress(format!("warming up {}", t.name));
        load::throughput(t, THROUGHPUT_CONCURRENCY, Duration::from_secs(1)).await?;
        load::latency(t, 1, 200).await?;
    }

    // 1. Latency.
    let per_round = (cli.requests as usize).div_ceil(ROUNDS);
    let mut latency: Vec<(usize, &'static str, Summary)> = Vec::new();
    for &c in &LATENCY_LEVELS {
        progress(format!(
            "latency, concurrency {c}: {} requests per target in {ROUNDS} rounds",
            per_round * ROUNDS
        ));
        let mut samples: Vec<Vec<u64>> = vec![Vec::new(); targets.len()];
        for _ in 0..ROUNDS {
            for (t, s) in targets.iter().zip(samples.iter_mut()) {
                let phase = format!("latency, concurrency {c}");
                let mut attempt = 0;
                let got = loop {
                    let w = watch.start();
                    let got = load::latency(t, c, per_round).await?;
                    if watch.end(&phase, w, attempt) {
                        break got;
                    }
                    attempt += 1;
                    watch.settle().await;
                };
                s.extend(got);
            }
        }
        for (t, s) in targets.iter().zip(&samples) {
            latency.push((c, t.name, Summary::of(s)));
        }
    }

    // 2. Throughput (and 4. CPU per request), the stack floor after the gateway.
    for t in &floor_targets {
        progress(format!("warming up {}", t.name));
        answer_for(t);
        load::throughput(t, THROUGHPUT_CONCURRENCY, Duration::from_secs(1)).await?;
    }
    let duration = Duration::from_secs(cli.duration);
    let mut throughput = Vec::new();
    for t in targets.iter().chain(&floor_targets) {
        progress(format!(
            "throughput, concurrency {THROUGHPUT_CONCURRENCY}, {} s: {}",
            cli.duration, t.name
        ));
        let phase = format!("throughput, {}", t.name);
        answer_for(t);
        let mut attempt = 0;
        let r = loop {
            let w = watch.start();
            let r = load::throughput(t, THROUGHPUT_CONCURRENCY, duration).await?;
            if watch.end(&phase, w, attempt) {
                break r;
            }
            attempt += 1;
            watch.settle().await;
        };
        let secs = r.elapsed.as_secs_f64();
        let cpu_s = r.cpu_ticks.map(|ticks| ticks as f64 / clk_tck as f64);
        let cores = |ticks: u64| ticks as f64 / clk_tck as f64 / secs;
        let share = |cpus: &[usize], own: Option<u64>| {
            let d = procs::cpu_delta(&r.cpus_before, &r.cpus_after, cpus);
            let busy = cores(d.busy);
            let own = own.map_or(0.0, cores);
            report::CoreShare { cpus: cpus.len(), busy, own, rest: (busy - own).max(0.0) }
        };
        let server_cpus: Vec<usize> =
            placement.server_cpus.as_deref().map(procs::parse_cpu_list).unwrap_or_default();
        throughput.push(ThroughputRow {
            target: t.name,
            requests: r.requests,
            seconds: secs,
            rps: r.requests as f64 / secs,
            latency: Summary::of(&r.latencies),
            cpu_us_per_request: cpu_s.map(|c| c * 1e6 / r.requests.max(1) as f64),
            core_use: cpu_s.map(|c| c / secs),
            server_core: (!server_cpus.is_empty()).then(|| share(&server_cpus, r.cpu_ticks)),
            bench_cores: share(&placement.bench_cpus, r.bench_ticks),
        });
    }

    // 3. Streaming.
    fake.set_default(Reply::sse(frames).chunk_delay(STREAM_GAP));
    for t in &targets {
        load::streaming(t, STREAM_CONCURRENCY, 2 * STREAM_CONCURRENCY, STREAM_FRAMES).await?;
    }
    let streams = cli.streams as usize;
    progress(format!(
        "streaming: {streams} streams per target, {STREAM_CONCURRENCY} at a time, {STREAM_FRAMES} frames {} ms apart",
        STREAM_GAP.as_millis()
    ));
    let mut stream_samples: Vec<load::StreamSamples> =
        targets.iter().map(|_| load::StreamSamples::default()).collect();
    let halves = [streams / 2, streams - streams / 2];
    for n in halves.into_iter().filter(|n| *n > 0) {
        for (t, s) in targets.iter().zip(stream_samples.iter_mut()) {
            let mut attempt = 0;
            let got = loop {
                let w = watch.start();
                let got = load::streaming(t, STREAM_CONCURRENCY, n, STREAM_FRAMES).await?;
                if watch.end("streaming", w, attempt) {
                    break got;
                }
                attempt += 1;
                watch.settle().await;
            };
            s.ttfc.extend(got.ttfc);
            s.gaps.extend(got.gaps);
        }
    }
    let streaming: Vec<StreamRow> = targets
        .iter()
        .zip(&stream_samples)
        .map(|(t, s)| StreamRow {
            target: t.name,
            ttfc: Summary::of(&s.ttfc),
            gaps: Summary::of(&s.gaps),
        })
        .collect();

    // 5. Memory, after all the load.
    let mut memory_rows = Vec::new();
    for s in nginx.iter().chain(std::iter::once(&gateway)) {
        let (hwm, _) = memory(s)?;
        let idle_kib = idle.iter().find(|(n, _)| *n == s.name).map_or(0, |(_, k)| *k);
        memory_rows.push(Memory { target: s.name, idle_rss_kib: idle_kib, peak_rss_kib: hwm });
    }

    if !clk_read {
        notes.push("`getconf CLK_TCK` failed: assumed 100 ticks per second.".into());
    }
    let mut commands = vec![("bench".to_owned(), argv.join(" "))];
    if let Some(c) = &placement.self_pin_command {
        commands.push(("bench pinned itself".to_owned(), c.clone()));
    }
    if let Some(n) = &nginx {
        commands.push(("nginx".to_owned(), n.command.clone()));
    }
    commands.push(("gateway".to_owned(), gateway.command.clone()));
    for f in &floors {
        commands.push((f.name.to_owned(), f.command.clone()));
    }

    let report = Report {
        date: report::utc_now(),
        cores_online: procs::online_cpus().len(),
        cpu_model: procs::cpu_model(),
        kernel: procs::kernel(),
        clk_tck,
        placement,
        commands,
        gateway_version,
        gateway_path: gateway_bin.display().to_string(),
        gateway_built: std::fs::metadata(&gateway_bin)
            .and_then(|m| m.modified())
            .ok()
            .map(report::utc),
        nginx_version,
        git: git_revision(),
        upstream: upstream.to_string(),
        canned_bytes: canned_len,
        requests: per_round * ROUNDS,
        duration_s: cli.duration,
        streams,
        latency,
        throughput,
        streaming,
        memory: memory_rows,
        notes,
        others: watch.summary(),
        idle_cpu,
        gateway_config: yaml,
        nginx_config,
    };
    drop(gateway);
    drop(nginx);
    drop(floors);
    drop(tmp);
    Ok(report)
}

/// `abc1234` (`+dirty` when the tree has changes), when run inside the repository.
fn git_revision() -> Option<String> {
    let git = procs::which("git")?;
    let rev = Command::new(&git).args(["rev-parse", "--short", "HEAD"]).output().ok()?;
    if !rev.status.success() {
        return None;
    }
    let rev = String::from_utf8_lossy(&rev.stdout).trim().to_owned();
    let dirty = Command::new(&git)
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .is_some_and(|o| !o.stdout.is_empty());
    Some(if dirty { format!("{rev}+dirty") } else { rev })
}
