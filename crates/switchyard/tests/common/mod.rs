//! The `serve` process as tests drive it: the real binary in a fresh working
//! directory on `127.0.0.1:0`, synchronised on its own log lines (JSON), never
//! on sleeps.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

pub const WAIT: Duration = Duration::from_secs(20);

pub struct Gateway {
    pub child: Child,
    lines: mpsc::Receiver<Value>,
    dir: std::path::PathBuf,
}

impl Gateway {
    /// `switchyard serve` on the embedded default; with `one_cpu`, under
    /// `taskset -c 0`, which selects the single-threaded scheduler.
    pub fn start(name: &str, one_cpu: bool) -> Gateway {
        let wrapper: &[&str] = if one_cpu { &["taskset", "-c", "0"] } else { &[] };
        Self::start_with(name, wrapper, None)
    }

    /// `switchyard serve` under `wrapper` (a command that runs the binary), with
    /// `config` as its configuration file when given.
    pub fn start_with(name: &str, wrapper: &[&str], config: Option<&str>) -> Gateway {
        Self::start_env(name, wrapper, config, &[])
    }

    /// As [`start_with`](Self::start_with), with `vars` set in its environment
    /// (the proxy variables, which are otherwise removed from it).
    pub fn start_env(
        name: &str,
        wrapper: &[&str],
        config: Option<&str>,
        vars: &[(&str, &str)],
    ) -> Gateway {
        let dir =
            std::env::temp_dir().join(format!("switchyard-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut cmd = binary_under(wrapper);
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--log-format", "json"]);
        if let Some(config) = config {
            std::fs::write(dir.join("switchyard.yaml"), config).unwrap();
            cmd.args(["--config", "switchyard.yaml"]);
        }
        cmd.current_dir(&dir)
            .env_remove("SWITCHYARD_CONFIG")
            .env_remove("SWITCHYARD_LISTEN_ADDR")
            .env_remove("SWITCHYARD_LOG_FORMAT")
            .env("SWITCHYARD_LOG", "info")
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .env_remove("HTTP_PROXY")
            .env_remove("http_proxy")
            .env_remove("ALL_PROXY")
            .env_remove("all_proxy")
            .env_remove("NO_PROXY")
            .env_remove("no_proxy")
            .envs(vars.iter().copied());
        Self::spawn(cmd, dir)
    }

    /// `cmd` (a `serve` that logs JSON to stdout) started, its log lines read
    /// as they come; `dir` is removed when the gateway is dropped.
    pub fn spawn(mut cmd: Command, dir: std::path::PathBuf) -> Gateway {
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && tx.send(v).is_err()
                {
                    return;
                }
            }
        });
        Gateway { child, lines, dir }
    }

    /// The next log line whose message contains `text`.
    pub fn wait_for(&self, text: &str) -> Value {
        loop {
            let line = self
                .lines
                .recv_timeout(WAIT)
                .unwrap_or_else(|_| panic!("no log line containing {text:?} within {WAIT:?}"));
            if line["fields"]["message"].as_str().is_some_and(|m| m.contains(text)) {
                return line;
            }
        }
    }

    /// Its exit status, waited for up to [`WAIT`] (send the signal first).
    pub fn exit_status(&mut self) -> std::process::ExitStatus {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the gateway did not exit within {WAIT:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([format!("-{name}"), self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{name}");
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// An empty folder for a test's data, `switchyard-<name>-<pid>` in the temp
/// folder (what a previous run left is removed first).
pub fn fresh_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("switchyard-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The binary, run by `wrapper` (a command and its arguments, the binary's
/// path after them; none: the binary itself).
pub fn binary_under(wrapper: &[&str]) -> Command {
    let bin = env!("CARGO_BIN_EXE_switchyard");
    match wrapper.split_first() {
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg(bin);
            c
        }
        None => Command::new(bin),
    }
}

pub fn healthz(addr: &str) -> String {
    get(addr, "/healthz", "x")
}

/// `GET path` with `host` as the `Host`: the whole answer.
pub fn get(addr: &str, path: &str, host: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n");
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// `POST path` with a JSON body: the status and the whole answer.
pub fn post(addr: &str, path: &str, body: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n{extra}connection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, out)
}
