//! The results: a markdown report for people, JSON for machines, and the
//! verdicts against the project's performance targets.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::load::{Summary, r1};
use crate::procs::Placement;

pub struct ThroughputRow {
    pub target: &'static str,
    pub requests: u64,
    pub seconds: f64,
    pub rps: f64,
    pub latency: Summary,
    /// CPU time of the target process per request, µs (none for `direct`).
    pub cpu_us_per_request: Option<f64>,
    /// CPU seconds per wall second (1.0 = one core fully busy).
    pub core_use: Option<f64>,
    /// The proxies' CPU during the run (when pinned).
    pub server_core: Option<CoreShare>,
    /// The bench's CPU(s) during the run.
    pub bench_cores: CoreShare,
}

/// How busy a set of CPUs was over a run, in cores (1.0 = one core).
#[derive(Debug, Clone, Copy)]
pub struct CoreShare {
    pub cpus: usize,
    /// Everything not idle (user, system, irq, softirq, steal).
    pub busy: f64,
    /// Charged to the process that should run there (proxy, or the bench).
    pub own: f64,
    /// busy − own: network work charged to no process, and other processes.
    pub rest: f64,
}

impl CoreShare {
    fn json(&self) -> Value {
        json!({"cpus": self.cpus, "busy": r3(self.busy), "own": r3(self.own), "rest": r3(self.rest)})
    }
}

fn r3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn pct(x: f64) -> String {
    format!("{:.0} %", x * 100.0)
}

pub struct StreamRow {
    pub target: &'static str,
    /// Time to first content frame.
    pub ttfc: Summary,
    /// Gaps between content frames at the client.
    pub gaps: Summary,
}

pub struct Memory {
    pub target: &'static str,
    pub idle_rss_kib: u64,
    pub peak_rss_kib: u64,
}

pub struct Report {
    pub date: String,
    pub cores_online: usize,
    pub cpu_model: String,
    pub kernel: String,
    pub clk_tck: u64,
    pub placement: Placement,
    /// (what, exact command line).
    pub commands: Vec<(String, String)>,
    pub gateway_version: Option<String>,
    pub gateway_path: String,
    /// The binary's modification time.
    pub gateway_built: Option<String>,
    pub nginx_version: Option<String>,
    pub git: Option<String>,
    pub upstream: String,
    pub canned_bytes: usize,
    pub requests: usize,
    pub duration_s: u64,
    pub streams: usize,
    /// (concurrency, target, summary).
    pub latency: Vec<(usize, &'static str, Summary)>,
    pub throughput: Vec<ThroughputRow>,
    pub streaming: Vec<StreamRow>,
    pub memory: Vec<Memory>,
    pub notes: Vec<String>,
    /// (phase, seconds kept, CPU other processes used meanwhile in cores,
    /// pieces thrown away and rerun because the machine was busy).
    pub others: Vec<(String, f64, f64, usize)>,
    /// (process, CPU in cores) over one idle second before the load.
    pub idle_cpu: Vec<(&'static str, f64)>,
    pub gateway_config: String,
    pub nginx_config: Option<String>,
}

/// Decimal megabytes from KiB.
fn mb(kib: u64) -> f64 {
    kib as f64 * 1024.0 / 1e6
}

fn f1(x: f64) -> String {
    format!("{x:.1}")
}

fn signed(x: f64) -> String {
    format!("{x:+.1}")
}

fn ratio(x: Option<f64>) -> String {
    x.map_or_else(|| "—".to_owned(), |r| format!("{r:.2}"))
}

/// One target verdict.
struct Verdict {
    name: &'static str,
    threshold: &'static str,
    measured: String,
    met: Option<bool>,
}

impl Report {
    fn lat(&self, c: usize, target: &str) -> Option<Summary> {
        self.latency.iter().find(|(cc, t, _)| *cc == c && *t == target).map(|(_, _, s)| *s)
    }

    fn tput(&self, target: &str) -> Option<&ThroughputRow> {
        self.throughput.iter().find(|r| r.target == target)
    }

    fn stream(&self, target: &str) -> Option<&StreamRow> {
        self.streaming.iter().find(|r| r.target == target)
    }

    fn mem(&self, target: &str) -> Option<&Memory> {
        self.memory.iter().find(|r| r.target == target)
    }

    /// gateway req/s ÷ nginx req/s.
    fn throughput_ratio(&self) -> Option<f64> {
        Some(self.tput("gateway")?.rps / self.tput("nginx")?.rps)
    }

    /// nginx CPU/request ÷ gateway CPU/request: the one-core capacity ratio
    /// the CPU cost predicts, whoever set the pace.
    fn cpu_capacity_ratio(&self) -> Option<f64> {
        Some(self.tput("nginx")?.cpu_us_per_request? / self.tput("gateway")?.cpu_us_per_request?)
    }

    /// What the stack floor rows say: each forwarder against nginx, and the CPU
    /// the gateway spends above the stack it is built on.
    fn floor_lines(&self) -> Vec<String> {
        let nginx = self.tput("nginx");
        let gateway_cpu = self.tput("gateway").and_then(|r| r.cpu_us_per_request);
        let mut lines = Vec::new();
        for (name, what) in [
            ("axum+reqwest", "axum + reqwest, the gateway's HTTP stack until hyper-util's client"),
            ("axum+hyper", "axum + hyper-util's client, the gateway's HTTP stack"),
        ] {
            let Some(row) = self.tput(name) else { continue };
            let vs_nginx = nginx.map(|n| row.rps / n.rps);
            let cpu_ratio = nginx
                .and_then(|n| n.cpu_us_per_request)
                .zip(row.cpu_us_per_request)
                .map(|(n, f)| n / f);
            let above = gateway_cpu.zip(row.cpu_us_per_request).map(|(g, f)| g - f);
            lines.push(format!(
                "\nStack floor, {what}, forwarding only (no parsing, no records): {} of nginx's \
                 throughput ({} by CPU per request); the gateway spends {} µs of CPU per request above it.",
                ratio(vs_nginx),
                ratio(cpu_ratio),
                above.map_or_else(|| "—".into(), f1),
            ));
        }
        if let (Some(bare), Some(gateway)) =
            (self.tput(crate::NO_RECORDS).and_then(|r| r.cpu_us_per_request), gateway_cpu)
        {
            lines.push(format!(
                "\nThe gateway with `storage: {{ url: none }}` (no request records): {} µs of CPU per \
                 request; the request record and its SQLite row cost {} µs of the gateway's {}.",
                f1(bare),
                f1(gateway - bare),
                f1(gateway),
            ));
            for name in [crate::CONTROLS_LOCAL, crate::CONTROLS_REDIS] {
                let Some(with) = self.tput(name).and_then(|r| r.cpu_us_per_request) else {
                    continue;
                };
                lines.push(format!(
                    "\n{name}: {} µs of CPU per request, {} µs above the gateway without records \
                     (a deployment's rpm, tpm and concurrency limits and a gateway budget, \
                     reserved and settled on every request).",
                    f1(with),
                    f1(with - bare),
                ));
            }
        }
        lines
    }

    fn verdicts(&self) -> Vec<Verdict> {
        let mut v = Vec::new();
        let tr = self.throughput_ratio();
        v.push(Verdict {
            name: "throughput on one core vs nginx",
            threshold: "≥ 70 % of nginx",
            measured: tr.map_or_else(|| "n/a (no nginx)".into(), |r| format!("{:.0} %", r * 100.0)),
            met: tr.map(|r| r >= 0.70),
        });
        let p50 = |t: &str| self.lat(1, t).map(|s| s.p50);
        let diff = p50("gateway").zip(p50("nginx")).map(|(g, n)| g - n);
        v.push(Verdict {
            name: "added p50 at concurrency 1 vs nginx's",
            threshold: "within 0.1 ms (100 µs) of nginx's",
            measured: diff.map_or_else(|| "n/a (no nginx)".into(), |d| format!("{} µs", signed(d))),
            met: diff.map(|d| d <= 100.0),
        });
        let ttfc = self.stream("gateway").zip(self.stream("direct"));
        let added_ttfc = ttfc.map(|(g, d)| g.ttfc.p50 - d.ttfc.p50);
        v.push(Verdict {
            name: "streaming: added time to first content (p50)",
            threshold: "≤ 0.5 ms (500 µs)",
            measured: added_ttfc.map_or_else(|| "n/a".into(), |d| format!("{} µs", signed(d))),
            met: added_ttfc.map(|d| d <= 500.0),
        });
        let added_gap = ttfc.map(|(g, d)| g.gaps.mean - d.gaps.mean);
        v.push(Verdict {
            name: "streaming: added inter-chunk gap (mean)",
            threshold: "nothing (mean within 0.1 ms of direct)",
            measured: added_gap.map_or_else(|| "n/a".into(), |d| format!("{} µs", signed(d))),
            met: added_gap.map(|d| d <= 100.0),
        });
        let peak = self.mem("gateway").map(|m| mb(m.peak_rss_kib));
        v.push(Verdict {
            name: "gateway peak RSS under load",
            threshold: "≤ 30 MB",
            measured: peak.map_or_else(|| "n/a".into(), |p| format!("{p:.1} MB")),
            met: peak.map(|p| p <= 30.0),
        });
        v
    }

    /// Observations the numbers need next to them.
    fn derived_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.placement.server_cpus.is_none() {
            notes.push(format!(
                "{} — throughput and CPU figures are not one-core figures.",
                self.placement.note
            ));
        }
        let bench_list = crate::procs::format_cpu_list(&self.placement.bench_cpus);
        let server = self.placement.server_cpus.as_deref().unwrap_or("?");
        let busy: Vec<String> = self
            .others
            .iter()
            .filter(|(_, _, cores, _)| *cores > crate::QUIET_CORES)
            .map(|(p, _, cores, _)| format!("{p}: {cores:.2}"))
            .collect();
        if !busy.is_empty() {
            notes.push(format!(
                "**the machine was not quiet**: other processes used CPU during the measurement \
                 (in cores: {}); the figures of those phases are disturbed. Rerun on a quiet machine.",
                busy.join("; ")
            ));
        }
        for (name, cores) in &self.idle_cpu {
            if *cores > 0.05 {
                notes.push(format!(
                    "**{name} used {} of a core while idle** (one second with no requests, before the load): \
                     a busy loop or a background task; it inflates its CPU figures and steals from its own requests.",
                    pct(*cores)
                ));
            }
        }
        for r in &self.throughput {
            let name = r.target;
            let b = r.bench_cores;
            if b.cpus > 0 && b.busy / b.cpus as f64 >= 0.9 {
                notes.push(format!(
                    "during the {name} throughput run the load generator's CPU(s) {bench_list} were {} busy: \
                     the load generator was (near) saturated{}.",
                    pct(b.busy / b.cpus as f64),
                    if name == "direct" { "" } else { ", so this req/s may be a floor" }
                ));
            }
            let Some(sc) = r.server_core else { continue };
            if name == "direct" {
                continue;
            }
            if sc.busy < 0.9 {
                notes.push(format!(
                    "{name} left CPU {server} idle {} of the time during the throughput run: it was not \
                     saturated, so its req/s is a floor{}. CPU µs/request does not depend on who set the pace.",
                    pct(1.0 - sc.busy),
                    if name == "nginx" { " and the gateway/nginx ratio an upper bound" } else { "" }
                ));
            }
        }
        notes.extend(self.notes.iter().cloned());
        notes
    }

    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "## Switchyard benchmark — {}\n", self.date);
        let _ = writeln!(
            s,
            "- machine: {} CPU(s) online, {}, {}; CLK_TCK {}",
            self.cores_online, self.cpu_model, self.kernel, self.clk_tck
        );
        let _ = writeln!(s, "- placement: {}", self.placement.note);
        let _ = writeln!(
            s,
            "- gateway: `{}` ({}, built {}); nginx: {}; source tree in the current directory: {}",
            self.gateway_path,
            self.gateway_version.as_deref().unwrap_or("unknown version"),
            self.gateway_built.as_deref().unwrap_or("at an unknown time"),
            self.nginx_version.as_deref().unwrap_or("absent"),
            self.git
                .as_deref()
                .map_or_else(|| "not a git checkout".to_owned(), |g| format!("git {g}")),
        );
        let _ = writeln!(
            s,
            "- fake upstream: in the bench process on {}, a fixed {}-byte OpenAI chat completion (non-stream); \
             client: keep-alive HTTP/1.1, TCP_NODELAY, one request at a time per connection",
            self.upstream, self.canned_bytes
        );
        let _ = writeln!(s, "- commands:");
        for (what, cmd) in &self.commands {
            let _ = writeln!(s, "  - {what}: `{cmd}`");
        }

        // 1. Latency.
        let _ = writeln!(
            s,
            "\n### 1. Added latency, non-stream ({} requests per target and concurrency, {} interleaved rounds)\n",
            self.requests,
            crate::ROUNDS
        );
        let _ = writeln!(
            s,
            "| concurrency | target | p50 µs | p99 µs | mean µs | added p50 µs | added p99 µs | p50 × direct |"
        );
        let _ = writeln!(s, "|---:|---|---:|---:|---:|---:|---:|---:|");
        for &(c, t, sum) in &self.latency {
            let direct = self.lat(c, "direct");
            let (ap50, ap99, x) = match (t, direct) {
                ("direct", _) | (_, None) => ("—".to_owned(), "—".to_owned(), "1.00".to_owned()),
                (_, Some(d)) => {
                    (signed(sum.p50 - d.p50), signed(sum.p99 - d.p99), ratio(Some(sum.p50 / d.p50)))
                }
            };
            let _ = writeln!(
                s,
                "| {c} | {t} | {} | {} | {} | {ap50} | {ap99} | {x} |",
                f1(sum.p50),
                f1(sum.p99),
                f1(sum.mean)
            );
        }

        // 2. Throughput + 4. CPU.
        let _ = writeln!(
            s,
            "\n### 2. Throughput at concurrency {}, {} s per target ({})\n",
            crate::THROUGHPUT_CONCURRENCY,
            self.duration_s,
            if self.placement.server_cpus.is_some() { "proxies on one core" } else { "unpinned" }
        );
        let _ = writeln!(
            s,
            "| target | requests | req/s | × direct | p50 µs | p99 µs | CPU µs/request | CPU use of its core |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|");
        let direct_rps = self.tput("direct").map(|r| r.rps);
        for r in &self.throughput {
            let _ = writeln!(
                s,
                "| {} | {} | {:.0} | {} | {} | {} | {} | {} |",
                r.target,
                r.requests,
                r.rps,
                ratio(direct_rps.map(|d| r.rps / d)),
                f1(r.latency.p50),
                f1(r.latency.p99),
                r.cpu_us_per_request.map_or_else(|| "—".into(), f1),
                r.core_use.map_or_else(|| "—".into(), |u| format!("{:.0} %", u * 100.0)),
            );
        }
        let _ = writeln!(
            s,
            "\n**gateway / nginx throughput: {}**; nginx CPU per request ÷ gateway CPU per request \
             (the one-core capacity ratio the CPU cost predicts): {}",
            ratio(self.throughput_ratio()),
            ratio(self.cpu_capacity_ratio())
        );
        for line in self.floor_lines() {
            let _ = writeln!(s, "{line}");
        }

        let _ = writeln!(
            s,
            "\nCPU during each throughput run, in cores (1.00 = one core busy): `busy` is everything but idle \
             from /proc/stat; `own` is what the process that should run there was charged (utime+stime); \
             `rest` = busy − own: loopback network work charged to no process, plus any other process.\n"
        );
        let _ = writeln!(
            s,
            "| target | proxy CPU busy | proxy own | proxy rest | bench CPU(s) busy | bench own | bench rest |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|");
        for r in &self.throughput {
            let (pb, po, pr) = r.server_core.map_or_else(
                || ("—".to_owned(), "—".to_owned(), "—".to_owned()),
                |c| (format!("{:.2}", c.busy), format!("{:.2}", c.own), format!("{:.2}", c.rest)),
            );
            let b = r.bench_cores;
            let _ = writeln!(
                s,
                "| {} | {pb} | {po} | {pr} | {:.2} of {} | {:.2} | {:.2} |",
                r.target, b.busy, b.cpus, b.own, b.rest
            );
        }

        // 3. Streaming.
        let _ = writeln!(
            s,
            "\n### 3. Streaming ({} streams per target, {} at a time; {} content frames {} ms apart, no first-byte delay)\n",
            self.streams,
            crate::STREAM_CONCURRENCY,
            crate::STREAM_FRAMES,
            crate::STREAM_GAP.as_millis()
        );
        let _ = writeln!(
            s,
            "| target | first content p50 µs | p99 µs | added p50 µs | added p99 µs | gap mean µs | gap p99 µs | added gap mean µs | added gap p99 µs |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        let d = self.stream("direct");
        for r in &self.streaming {
            let added = |f: &dyn Fn(&StreamRow) -> f64| match d {
                Some(d) if r.target != "direct" => signed(f(r) - f(d)),
                _ => "—".to_owned(),
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                r.target,
                f1(r.ttfc.p50),
                f1(r.ttfc.p99),
                added(&|x| x.ttfc.p50),
                added(&|x| x.ttfc.p99),
                f1(r.gaps.mean),
                f1(r.gaps.p99),
                added(&|x| x.gaps.mean),
                added(&|x| x.gaps.p99),
            );
        }

        // 4. CPU.
        let _ = writeln!(
            s,
            "\n### 4. CPU time per request (utime + stime over the throughput phase)\n"
        );
        let _ = writeln!(s, "| target | CPU µs/request | × nginx |");
        let _ = writeln!(s, "|---|---:|---:|");
        let nginx_cpu = self.tput("nginx").and_then(|r| r.cpu_us_per_request);
        // A streamed row (20 chunks each) is compared with nginx relaying the same.
        let nginx_streamed = self.tput("nginx, streamed").and_then(|r| r.cpu_us_per_request);
        for r in self.throughput.iter().filter(|r| r.cpu_us_per_request.is_some()) {
            let cpu = r.cpu_us_per_request.unwrap_or(0.0);
            let base = if r.target.ends_with("streamed") { nginx_streamed } else { nginx_cpu };
            let _ =
                writeln!(s, "| {} | {} | {} |", r.target, f1(cpu), ratio(base.map(|n| cpu / n)));
        }

        // 5. Memory.
        let _ = writeln!(s, "\n### 5. Memory (MB = 10⁶ bytes)\n");
        let _ = writeln!(s, "| target | RSS at start | peak RSS (VmHWM) after all the load |");
        let _ = writeln!(s, "|---|---:|---:|");
        for m in &self.memory {
            let _ = writeln!(
                s,
                "| {} | {:.1} MB | {:.1} MB |",
                m.target,
                mb(m.idle_rss_kib),
                mb(m.peak_rss_kib)
            );
        }

        let _ = writeln!(
            s,
            "\nCPU while idle (one second, no requests, before the load): {}.",
            self.idle_cpu
                .iter()
                .map(|(n, c)| format!("{n} {}", pct(*c)))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(s, "\n### Other processes during the measurement\n");
        let _ = writeln!(
            s,
            "| phase | seconds measured | CPU used by other processes meanwhile (cores) | pieces rerun because the machine was busy |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|");
        for (p, secs, cores, reruns) in &self.others {
            let _ = writeln!(s, "| {p} | {secs:.1} | {cores:.3} | {reruns} |");
        }

        // Targets.
        let _ = writeln!(s, "\n### Targets\n");
        let _ = writeln!(s, "| target | threshold | measured | verdict |");
        let _ = writeln!(s, "|---|---|---:|---|");
        for v in self.verdicts() {
            let verdict = match v.met {
                Some(true) => "met",
                Some(false) => "**missed**",
                None => "n/a",
            };
            let _ = writeln!(s, "| {} | {} | {} | {verdict} |", v.name, v.threshold, v.measured);
        }

        let notes = self.derived_notes();
        if !notes.is_empty() {
            let _ = writeln!(s, "\n### Notes\n");
            for n in notes {
                let _ = writeln!(s, "- {n}");
            }
        }

        let _ = writeln!(s, "\n### Generated configuration\n");
        let _ = writeln!(s, "gateway (`--config`):\n\n```yaml\n{}```", self.gateway_config);
        if let Some(n) = &self.nginx_config {
            let _ = writeln!(s, "\nnginx (`-c`):\n\n```nginx\n{n}```");
        }
        s
    }

    pub fn json(&self) -> Value {
        let latency: Vec<Value> = self
            .latency
            .iter()
            .map(|&(c, t, sum)| {
                let direct = self.lat(c, "direct");
                json!({
                    "concurrency": c,
                    "target": t,
                    "latency": sum.json(),
                    "added_p50_us": direct.filter(|_| t != "direct").map(|d| r1(sum.p50 - d.p50)),
                    "added_p99_us": direct.filter(|_| t != "direct").map(|d| r1(sum.p99 - d.p99)),
                })
            })
            .collect();
        let direct_rps = self.tput("direct").map(|r| r.rps);
        let throughput: Vec<Value> = self
            .throughput
            .iter()
            .map(|r| {
                json!({
                    "target": r.target,
                    "requests": r.requests,
                    "seconds": r.seconds,
                    "rps": r1(r.rps),
                    "ratio_to_direct": direct_rps.map(|d| r.rps / d),
                    "latency": r.latency.json(),
                    "cpu_us_per_request": r.cpu_us_per_request.map(r1),
                    "core_use": r.core_use,
                    "proxy_cpu": r.server_core.map(|c| c.json()),
                    "bench_cpus": r.bench_cores.json(),
                })
            })
            .collect();
        let d = self.stream("direct");
        let streaming: Vec<Value> = self
            .streaming
            .iter()
            .map(|r| {
                let other = d.filter(|_| r.target != "direct");
                json!({
                    "target": r.target,
                    "time_to_first_content": r.ttfc.json(),
                    "inter_chunk_gap": r.gaps.json(),
                    "added_ttfc_p50_us": other.map(|d| r1(r.ttfc.p50 - d.ttfc.p50)),
                    "added_ttfc_p99_us": other.map(|d| r1(r.ttfc.p99 - d.ttfc.p99)),
                    "added_gap_mean_us": other.map(|d| r1(r.gaps.mean - d.gaps.mean)),
                    "added_gap_p99_us": other.map(|d| r1(r.gaps.p99 - d.gaps.p99)),
                })
            })
            .collect();
        let memory: Vec<Value> = self
            .memory
            .iter()
            .map(|m| {
                json!({
                    "target": m.target,
                    "rss_start_kib": m.idle_rss_kib,
                    "peak_rss_kib": m.peak_rss_kib,
                    "peak_rss_mb": r1(mb(m.peak_rss_kib)),
                })
            })
            .collect();
        let targets: Vec<Value> = self
            .verdicts()
            .into_iter()
            .map(|v| {
                json!({"target": v.name, "threshold": v.threshold, "measured": v.measured, "met": v.met})
            })
            .collect();
        json!({
            "date": self.date,
            "machine": {
                "cores_online": self.cores_online,
                "cpu_model": self.cpu_model,
                "kernel": self.kernel,
                "clk_tck": self.clk_tck,
            },
            "placement": {
                "note": self.placement.note,
                "server_cpus": self.placement.server_cpus,
                "bench_cpus": self.placement.bench_cpus,
            },
            "commands": self.commands.iter().map(|(w, c)| json!({"what": w, "command": c})).collect::<Vec<_>>(),
            "gateway_version": self.gateway_version,
            "gateway_path": self.gateway_path,
            "gateway_built": self.gateway_built,
            "nginx_version": self.nginx_version,
            "git": self.git,
            "parameters": {
                "latency_requests": self.requests,
                "latency_concurrency": crate::LATENCY_LEVELS,
                "throughput_concurrency": crate::THROUGHPUT_CONCURRENCY,
                "throughput_seconds": self.duration_s,
                "streams": self.streams,
                "stream_concurrency": crate::STREAM_CONCURRENCY,
                "stream_frames": crate::STREAM_FRAMES,
                "stream_gap_ms": crate::STREAM_GAP.as_millis() as u64,
                "canned_bytes": self.canned_bytes,
            },
            "latency": latency,
            "throughput": throughput,
            "gateway_to_nginx_throughput": self.throughput_ratio(),
            "cpu_capacity_ratio_gateway_to_nginx": self.cpu_capacity_ratio(),
            "streaming": streaming,
            "memory": memory,
            "targets": targets,
            "notes": self.derived_notes(),
            "idle_cpu": self.idle_cpu.iter().map(|(n, c)| json!({"process": n, "cores": r3(*c)})).collect::<Vec<_>>(),
            "other_processes": self.others.iter().map(|(p, secs, cores, reruns)| json!({"phase": p, "seconds": secs, "cores": r3(*cores), "reruns": reruns})).collect::<Vec<_>>(),
            "gateway_config": self.gateway_config,
            "nginx_config": self.nginx_config,
        })
    }
}

/// `YYYY-MM-DD HH:MM UTC`, from the system clock.
pub fn utc_now() -> String {
    utc(std::time::SystemTime::now())
}

/// `YYYY-MM-DD HH:MM UTC`.
pub fn utc(at: std::time::SystemTime) -> String {
    let secs = at.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", rem / 3600, rem % 3600 / 60)
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_513), (2026, 3, 1));
    }
}
