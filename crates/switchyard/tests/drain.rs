//! SIGTERM while a stream is in flight: the real binary, a configuration file
//! whose provider is the test kit's fake upstream holding its stream mid-way
//! (`FakeUpstream::hold_streams`), SQLite in the test's folder. Readiness fails
//! first, while new connections are still served (`shutdown_delay_secs`);
//! then the listening socket closes; the stream in flight finishes when the
//! upstream goes on; the process exits 0 with the stream's record written.
//! Synchronised on the gateway's log lines and the client's bytes, never on
//! sleeps.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;
use switchyard_testkit::{FakeUpstream, Vendor};

const NAME: &str = "drain";

/// SQLite beside the configuration; one OpenAI-compatible provider, the fake;
/// readiness off for a few seconds before the listener closes (long enough
/// for the test's probes however loaded the machine).
fn config(endpoint: &str) -> String {
    format!(
        "gateway: {{ shutdown_delay_secs: 3 }}\n\
         storage: {{ url: \"sqlite://data/switchyard.db\" }}\n\
         providers:\n  up:\n    wire: openai-chat\n    endpoint: \"{endpoint}/v1\"\n    \
         credentials: {{ none: true }}\n\
         models:\n  - id: held\n    deployments: [{{ provider: up }}]\n"
    )
}

/// What the client has read of one answer so far: its head, its body
/// (de-chunked), whether the chunked body was terminated properly, and
/// whether the connection has ended.
#[derive(Debug, Clone, Default)]
struct Progress {
    head: String,
    body: String,
    complete: bool,
    ended: bool,
}

impl Progress {
    /// The text of the Chat Completions stream's content deltas read so far.
    fn text(&self) -> String {
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter_map(|v| v["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
            .collect()
    }

    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }
}

/// `body` (a chunked HTTP/1.1 body, possibly cut short): the data of its whole
/// chunks, and whether the last (empty) chunk was read.
fn dechunk(mut body: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    loop {
        let Some(eol) = body.windows(2).position(|w| w == b"\r\n") else {
            return (out, false);
        };
        let size = std::str::from_utf8(&body[..eol]).unwrap();
        let size = usize::from_str_radix(size.split(';').next().unwrap().trim(), 16).unwrap();
        let rest = &body[eol + 2..];
        if size == 0 {
            return (out, true);
        }
        if rest.len() < size + 2 {
            return (out, false);
        }
        out.extend_from_slice(&rest[..size]);
        body = &rest[size + 2..];
    }
}

/// A streamed chat request through the gateway at `addr`, read on a thread of
/// its own: every read is reported as the whole [`Progress`] so far.
fn stream_chat(addr: &str, text: &str) -> mpsc::Receiver<Progress> {
    let body = serde_json::json!({
        "model": "held",
        "stream": true,
        "messages": [{ "role": "user", "content": text }],
    })
    .to_string();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(request.as_bytes()).unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut raw = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            let n = s.read(&mut buf).unwrap_or(0);
            raw.extend_from_slice(&buf[..n]);
            let mut p = Progress { ended: n == 0, ..Progress::default() };
            if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                p.head = String::from_utf8_lossy(&raw[..end]).into_owned();
                let chunked = p.header("transfer-encoding").is_some_and(|v| v.contains("chunked"));
                let (body, complete) = if chunked {
                    dechunk(&raw[end + 4..])
                } else {
                    (raw[end + 4..].to_vec(), false)
                };
                p.body = String::from_utf8_lossy(&body).into_owned();
                p.complete = complete;
            }
            if tx.send(p).is_err() || n == 0 {
                return;
            }
        }
    });
    rx
}

/// The first progress report that `done` accepts.
fn until(rx: &mpsc::Receiver<Progress>, what: &str, done: impl Fn(&Progress) -> bool) -> Progress {
    loop {
        let p = rx.recv_timeout(WAIT).unwrap_or_else(|_| panic!("no {what} within {WAIT:?}"));
        if done(&p) {
            return p;
        }
        assert!(!p.ended, "the stream ended before {what}: {p:?}");
    }
}

#[test]
fn sigterm_drains_a_held_stream_then_exits_with_its_record_written() {
    // The fake runs on a runtime of its own; the test drives the gateway
    // with blocking sockets.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(FakeUpstream::start(Vendor::OpenAi)).unwrap();
    // The role chunk and the first content delta ("echo: "), then held.
    fake.hold_streams(2);
    let mut gw = Gateway::start_with(NAME, &[], Some(&config(&fake.base_url())));
    let listening = gw.wait_for("switchyard listening");
    let addr = listening["fields"]["listen"].as_str().unwrap().to_owned();
    assert!(get(&addr, "/readyz", "x").starts_with("HTTP/1.1 200"));

    let stream = stream_chat(&addr, "hello drain");
    let first = until(&stream, "the first content event", |p| !p.text().is_empty());
    assert!(first.head.starts_with("HTTP/1.1 200"), "{first:?}");
    assert_eq!(first.text(), "echo: ", "held after the first content delta");
    let id = first.header("x-request-id").expect("the answer names its request id");

    gw.signal("TERM");
    gw.wait_for("shutdown: /readyz answers 503");
    // Readiness fails first: /readyz answers 503 while a new request, on a
    // new connection, is still served.
    let probe = get(&addr, "/readyz", "x");
    assert!(probe.starts_with("HTTP/1.1 503"), "/readyz after SIGTERM: {probe}");
    let (status, answer) = post(
        &addr,
        "/v1/chat/completions",
        r#"{"model":"held","messages":[{"role":"user","content":"still served"}]}"#,
        &[],
    );
    assert_eq!(status, 200, "a request while readiness is off: {answer}");

    // Then the listener closes: a new connection is refused.
    gw.wait_for("shutdown: no longer accepting");
    let deadline = Instant::now() + WAIT;
    loop {
        match TcpStream::connect(&addr) {
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => break,
            Err(e) => panic!("connecting after the listener closed: {e}"),
            Ok(_) => {}
        }
        assert!(Instant::now() < deadline, "the listener was still open after {WAIT:?}");
        std::thread::sleep(Duration::from_millis(10));
    }

    // The stream in flight is still held, and open.
    while let Ok(p) = stream.try_recv() {
        assert!(!p.ended && p.text() == "echo: ", "the stream moved while held: {p:?}");
    }
    assert!(gw.child.try_wait().unwrap().is_none(), "the gateway exited with a stream in flight");

    fake.release_streams();
    let last = until(&stream, "the end of the stream", |p| p.ended);
    assert!(last.complete, "the chunked body ended with its last chunk: {last:?}");
    assert_eq!(last.text(), "echo: hello drain", "{last:?}");
    assert!(last.body.trim_end().ends_with("data: [DONE]"), "{}", last.body);

    let status = gw.exit_status();
    assert!(status.success(), "exit status after the drain: {status}");

    // The stream's record, read by the binary's own `logs show`.
    let dir = std::env::temp_dir().join(format!("switchyard-test-{NAME}-{}", std::process::id()));
    let shown = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["logs", "show", &id, "--json", "--config"])
        .arg(dir.join("switchyard.yaml"))
        .env_remove("SWITCHYARD_CONFIG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success(), "{stdout}{}", String::from_utf8_lossy(&shown.stderr));
    let record: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(record["id"], id.as_str(), "{record}");
    assert_eq!(record["status"], 200, "{record}");
    assert_eq!(record["stream"], true, "{record}");
    assert_eq!(record["requested_model"], "held", "{record}");
    drop(gw);
    drop(fake);
}
