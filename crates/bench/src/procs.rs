//! The processes under test (gateway, nginx), CPU pinning, and what `/proc`
//! says about them.

use std::fs;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A scratch directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> Result<TempDir, String> {
        let path = std::env::temp_dir().join(format!("switchyard-bench-{}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok(TempDir(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A free port on 127.0.0.1: bind `:0`, read the port, let it go.
pub fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    let port = l.local_addr().map_err(|e| format!("local_addr: {e}"))?.port();
    Ok(port)
}

/// Whether `program` can be run (looked up on `PATH` when it has no slash).
pub fn which(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return p.is_file().then_some(p);
    }
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| Path::new(dir).join(program))
        .find(|p| p.is_file())
}

/// The release gateway binary: `explicit`, else `target/release/switchyard`,
/// else `switchyard` next to this binary; or an error saying how to build it.
pub fn gateway_binary(explicit: Option<&Path>) -> Result<PathBuf, String> {
    let build = "build it first: `cargo build --release -p switchyard` (or pass --gateway PATH)";
    if let Some(p) = explicit {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(format!("gateway binary not found at {}; {build}", p.display()))
        };
    }
    let default = PathBuf::from("target/release/switchyard");
    if default.is_file() {
        return Ok(default);
    }
    let sibling = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join("switchyard")))
        .filter(|p| p.is_file());
    sibling.ok_or_else(|| {
        format!(
            "gateway binary not found at {} (nor next to this binary); {build}",
            default.display()
        )
    })
}

/// A child process killed (and reaped) on drop.
pub struct Server {
    pub name: &'static str,
    child: Child,
    pub addr: SocketAddr,
    /// The exact command line, for the report.
    pub command: String,
    /// Where its stderr goes.
    pub log: PathBuf,
}

impl Server {
    /// Spawns `argv` (optionally under `taskset -c CPU`, without the variables
    /// `env_remove`, with `env_set`) and waits until `addr` accepts connections.
    pub fn spawn(
        name: &'static str,
        argv: &[String],
        pin: Option<&str>,
        addr: SocketAddr,
        log: PathBuf,
        env_remove: &[&str],
        env_set: &[(&str, &str)],
    ) -> Result<Server, String> {
        let mut full: Vec<String> = Vec::new();
        if let Some(cpus) = pin {
            full.extend(["taskset".to_owned(), "-c".to_owned(), cpus.to_owned()]);
        }
        full.extend(argv.iter().cloned());
        let command = full.join(" ");
        let (program, args) = full.split_first().ok_or("empty command")?;
        let stderr =
            fs::File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let mut cmd = Command::new(program);
        cmd.args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(stderr);
        for var in env_remove {
            cmd.env_remove(var);
        }
        cmd.envs(env_set.iter().copied());
        let child = cmd.spawn().map_err(|e| format!("cannot start {name} ({command}): {e}"))?;
        let mut server = Server { name, child, addr, command, log };
        server.wait_ready()?;
        Ok(server)
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "{} exited at start ({status}); command: {}\n{}",
                    self.name,
                    self.command,
                    self.log_tail()
                ));
            }
            if TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if start.elapsed() > Duration::from_secs(15) {
                return Err(format!(
                    "{} did not listen on {} within 15 s; command: {}\n{}",
                    self.name,
                    self.addr,
                    self.command,
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The last lines of its stderr.
    pub fn log_tail(&self) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let from = lines.len().saturating_sub(20);
        lines.get(from..).unwrap_or(&[]).join("\n")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `VmHWM` (peak resident set) and `VmRSS`, in KiB.
    pub fn memory_kib(&self) -> Result<(u64, u64), String> {
        let path = format!("/proc/{}/status", self.pid());
        let text = fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .ok_or_else(|| format!("{path}: no {name}"))
        };
        Ok((field("VmHWM:")?, field("VmRSS:")?))
    }
}

impl Server {
    /// Sends SIGTERM (the gateway drains: streams finish, queued records are
    /// written) and waits up to `within` for the exit.
    pub fn terminate(mut self, within: Duration) -> Result<std::process::ExitStatus, String> {
        let pid = self.pid().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        if !sent.is_ok_and(|s| s.success()) {
            return Err(format!("cannot send SIGTERM to {} ({pid})", self.name));
        }
        let start = Instant::now();
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) if start.elapsed() < within => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Ok(None) => {
                    return Err(format!("{} did not exit within {within:?} of SIGTERM", self.name));
                }
                Err(e) => return Err(format!("{}: {e}", self.name)),
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CPU ticks used by every process but `exclude`: utime + stime + cutime +
/// cstime summed over `/proc`. Between two calls the difference counts the
/// work of other processes, including short-lived ones (a compiler started
/// and reaped in between shows up in its parent's cutime).
pub fn others_ticks(exclude: &[u32]) -> u64 {
    let Ok(dir) = fs::read_dir("/proc") else { return 0 };
    let mut sum = 0;
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if exclude.contains(&pid) {
            continue;
        }
        let Ok(text) = fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some((_, rest)) = text.rsplit_once(')') else { continue };
        // Fields 14..=17: utime stime cutime cstime.
        sum += rest
            .split_whitespace()
            .skip(11)
            .take(4)
            .map(|f| f.parse::<i64>().unwrap_or(0).max(0) as u64)
            .sum::<u64>();
    }
    sum
}

/// utime + stime of a process (all its threads), in clock ticks.
pub fn cpu_ticks(pid: u32) -> Result<u64, String> {
    let path = format!("/proc/{pid}/stat");
    let text = fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    // The command name (field 2) may hold spaces: count fields after its ')'.
    let rest = text.rsplit_once(')').map(|(_, r)| r).ok_or_else(|| format!("{path}: no ')'"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state); utime is field 14, stime field 15.
    let num = |i: usize| {
        fields
            .get(i)
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| format!("{path}: bad field {}", i + 3))
    };
    Ok(num(11)? + num(12)?)
}

/// One CPU's counters from `/proc/stat`, in clock ticks.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuTimes {
    /// user + nice + system + irq + softirq + steal.
    pub busy: u64,
    /// irq + softirq: mostly the loopback network stack, charged to no process.
    pub irq: u64,
    /// idle + iowait.
    pub idle: u64,
}

impl CpuTimes {
    pub fn since(&self, before: &CpuTimes) -> CpuTimes {
        CpuTimes {
            busy: self.busy.saturating_sub(before.busy),
            irq: self.irq.saturating_sub(before.irq),
            idle: self.idle.saturating_sub(before.idle),
        }
    }

    pub fn add(&mut self, other: &CpuTimes) {
        self.busy += other.busy;
        self.irq += other.irq;
        self.idle += other.idle;
    }
}

/// Per-CPU counters, indexed by CPU number (missing CPUs are zero).
pub fn cpu_times() -> Vec<CpuTimes> {
    let mut out = Vec::new();
    let Ok(text) = fs::read_to_string("/proc/stat") else { return out };
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("cpu") else { continue };
        let mut fields = rest.split_whitespace();
        let Some(Ok(cpu)) = fields.next().map(str::parse::<usize>) else { continue };
        let v: Vec<u64> = fields.map(|f| f.parse().unwrap_or(0)).collect();
        let g = |i: usize| v.get(i).copied().unwrap_or(0);
        // user nice system idle iowait irq softirq steal
        let t = CpuTimes {
            busy: g(0) + g(1) + g(2) + g(5) + g(6) + g(7),
            irq: g(5) + g(6),
            idle: g(3) + g(4),
        };
        if out.len() <= cpu {
            out.resize(cpu + 1, CpuTimes::default());
        }
        if let Some(slot) = out.get_mut(cpu) {
            *slot = t;
        }
    }
    out
}

/// Sums the deltas of `cpus` between two snapshots.
pub fn cpu_delta(before: &[CpuTimes], after: &[CpuTimes], cpus: &[usize]) -> CpuTimes {
    let mut sum = CpuTimes::default();
    for &c in cpus {
        if let (Some(b), Some(a)) = (before.get(c), after.get(c)) {
            sum.add(&a.since(b));
        }
    }
    sum
}

/// Clock ticks per second (`getconf CLK_TCK`), and whether it was read.
pub fn clock_ticks() -> (u64, bool) {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse::<u64>().ok())
        .filter(|t| *t > 0)
        .map_or((100, false), |t| (t, true))
}

/// Parses a kernel CPU list (`0-3,6`).
pub fn parse_cpu_list(s: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<usize>(), b.trim().parse::<usize>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.trim().parse::<usize>().ok()),
        }
    }
    out
}

/// Formats CPUs as a list `taskset -c` accepts.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    cpus.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
}

/// The CPUs this process may run on.
pub fn own_affinity() -> Vec<usize> {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).map(parse_cpu_list)
        })
        .unwrap_or_default()
}

/// CPUs online on the machine.
pub fn online_cpus() -> Vec<usize> {
    let listed = fs::read_to_string("/sys/devices/system/cpu/online")
        .map(|s| parse_cpu_list(&s))
        .unwrap_or_default();
    if listed.is_empty() {
        let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        (0..n).collect()
    } else {
        listed
    }
}

/// The CPU model name, if `/proc/cpuinfo` tells.
pub fn cpu_model() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned())
}

/// Kernel release.
pub fn kernel() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| format!("Linux {}", s.trim()))
        .unwrap_or_else(|_| "unknown kernel".to_owned())
}

/// How the run is laid out on the CPUs.
#[derive(Debug, Clone)]
pub struct Placement {
    /// `taskset -c` argument for the gateway and nginx, when pinning.
    pub server_cpus: Option<String>,
    /// The CPUs the bench (load generator + fake upstream) runs on.
    pub bench_cpus: Vec<usize>,
    /// What was done, or why not.
    pub note: String,
    /// The command used to pin the bench itself, if any.
    pub self_pin_command: Option<String>,
}

/// Pins the bench itself off CPU 0 (before any other thread exists, so every
/// thread inherits it) and reserves CPU 0 for the process under test.
pub fn place(no_pin: bool) -> Placement {
    let mine = own_affinity();
    let unpinned = |note: String| Placement {
        server_cpus: None,
        bench_cpus: own_affinity(),
        note,
        self_pin_command: None,
    };
    if no_pin {
        return unpinned(
            "unpinned (--no-pin): the proxies share all CPUs with the load generator".into(),
        );
    }
    if which("taskset").is_none() {
        return unpinned(
            "unpinned: `taskset` not found (util-linux); the proxies share all CPUs with the load generator"
                .into(),
        );
    }
    let online = online_cpus();
    // Already pinned by the caller (`taskset -c 1 switchyard-bench`): the
    // proxies get the first CPU the bench does not use.
    if let Some(free) = online.iter().copied().find(|c| !mine.contains(c)) {
        if mine.is_empty() {
            return unpinned("unpinned: cannot read this process's CPU affinity".into());
        }
        return Placement {
            server_cpus: Some(free.to_string()),
            bench_cpus: mine.clone(),
            note: format!(
                "gateway and nginx pinned to CPU {free} (`taskset -c {free}`); load generator and fake upstream on CPU(s) {} (as the bench was started)",
                format_cpu_list(&mine)
            ),
            self_pin_command: None,
        };
    }
    let server_cpu = mine.first().copied().unwrap_or(0);
    let rest: Vec<usize> = mine.iter().copied().filter(|c| *c != server_cpu).collect();
    if rest.is_empty() {
        return unpinned(format!(
            "unpinned: only CPU {server_cpu} is available, nothing to separate the load generator onto"
        ));
    }
    let list = format_cpu_list(&rest);
    let pid = std::process::id().to_string();
    let cmd = format!("taskset -p -c {list} <bench pid>");
    let ok = Command::new("taskset")
        .args(["-p", "-c", &list, &pid])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    let now = own_affinity();
    if !ok || now.contains(&server_cpu) {
        return unpinned(format!("unpinned: `{cmd}` failed"));
    }
    Placement {
        server_cpus: Some(server_cpu.to_string()),
        bench_cpus: now,
        note: format!(
            "gateway and nginx pinned to CPU {server_cpu} (`taskset -c {server_cpu}`); load generator and fake upstream on CPU(s) {list} (the bench pinned itself there at start)"
        ),
        self_pin_command: Some(cmd),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-1\n"), vec![0, 1]);
        assert_eq!(parse_cpu_list("0,2-4,7"), vec![0, 2, 3, 4, 7]);
        assert_eq!(format_cpu_list(&[1, 2, 5]), "1,2,5");
    }

    #[test]
    fn own_process_has_cpu_time() {
        assert!(cpu_ticks(std::process::id()).is_ok());
    }
}
