//! The `serve` process and its signals: the real binary, embedded default
//! configuration, a fresh working directory, `127.0.0.1:0`. Synchronised on the
//! gateway's own log lines (JSON), never on sleeps.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::TcpStream;
use std::process::Command;

use common::*;

/// `gateway.metrics_listen`: a second address serving `/metrics` alone, with no
/// key, which stops with the gateway. The gateway itself is open (no key), and
/// refuses a request addressed to a name it was not told of.
#[test]
fn the_metrics_address_serves_without_a_key_and_stops_with_the_gateway() {
    let config = r#"
storage: { url: none }
gateway: { metrics_listen: "127.0.0.1:0" }
providers: { mock: { wire: mock } }
models: [{ id: mock-echo, deployments: [{ provider: mock }] }]
"#;
    let mut gw = Gateway::start_with("metrics", &[], Some(config));
    let listening = gw.wait_for("switchyard listening");
    let addr = listening["fields"]["listen"].as_str().unwrap().to_owned();
    let metrics = gw.wait_for("/metrics served without a key");
    let metrics = metrics["fields"]["listen"].as_str().unwrap().to_owned();
    let answer = get(&metrics, "/metrics", &metrics);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("gateway_requests_in_flight"), "{answer}");
    assert!(get(&metrics, "/v1/models", &metrics).starts_with("HTTP/1.1 404"));
    assert!(get(&addr, "/v1/models", &addr).starts_with("HTTP/1.1 200"));
    let refused = get(&addr, "/v1/models", "evil.example");
    assert!(
        refused.starts_with("HTTP/1.1 403") && refused.contains("host_not_allowed"),
        "{refused}"
    );

    gw.signal("TERM");
    let status = gw.exit_status();
    assert!(status.success(), "exit status after SIGTERM: {status}");
}

/// SIGHUP's default action would end the process; with nothing to reload it is
/// logged and the gateway keeps serving. SIGTERM then drains and exits cleanly.
/// Run on every CPU (work-stealing scheduler) and on one (single-threaded).
#[test]
fn sighup_without_a_config_file_does_not_stop_the_gateway() {
    let has_taskset = Command::new("taskset").arg("-V").output().is_ok_and(|o| o.status.success());
    for one_cpu in [false, true] {
        if one_cpu && !has_taskset {
            eprintln!("SKIPPED: the one-CPU case needs `taskset` (util-linux)");
            continue;
        }
        hup_then_term(one_cpu);
    }
}

fn hup_then_term(one_cpu: bool) {
    let mut gw = Gateway::start(if one_cpu { "hup-1cpu" } else { "hup" }, one_cpu);
    let listening = gw.wait_for("switchyard listening");
    let addr = listening["fields"]["listen"].as_str().unwrap().to_owned();
    assert!(healthz(&addr).starts_with("HTTP/1.1 200"));

    gw.signal("HUP");
    gw.wait_for("SIGHUP");
    assert!(gw.child.try_wait().unwrap().is_none(), "the gateway exited on SIGHUP");
    assert!(healthz(&addr).starts_with("HTTP/1.1 200"));

    gw.signal("TERM");
    gw.wait_for("shutdown: no longer accepting");
    let status = gw.exit_status();
    assert!(status.success(), "exit status after SIGTERM (one CPU: {one_cpu}): {status}");
}

/// Under a file limit of 256, 300 clients that connect and send nothing do not
/// stop the gateway answering: it caps its connections below the limit (128,
/// half of it, as it logs) and cuts each silent one at the header deadline.
#[test]
fn a_flood_of_silent_connections_under_a_low_file_limit_does_not_stop_healthz() {
    let has_prlimit = Command::new("prlimit").arg("-V").output().is_ok_and(|o| o.status.success());
    if !has_prlimit {
        eprintln!("SKIPPED: needs `prlimit` (util-linux)");
        return;
    }
    let config =
        "storage: { url: none }\ngateway:\n  connections: { header_read_timeout_ms: 500 }\n";
    let mut gw = Gateway::start_with("flood", &["prlimit", "--nofile=256:256", "--"], Some(config));
    let listening = gw.wait_for("switchyard listening");
    let addr = listening["fields"]["listen"].as_str().unwrap().to_owned();
    let accepting = gw.wait_for("accepting client connections");
    assert_eq!(accepting["fields"]["max_connections"], 128, "{accepting}");
    assert_eq!(accepting["fields"]["file_limit"], "256", "{accepting}");
    let flood: Vec<TcpStream> = (0..300).map(|_| TcpStream::connect(&addr).unwrap()).collect();
    assert!(healthz(&addr).starts_with("HTTP/1.1 200"), "answered despite the flood");
    assert!(gw.child.try_wait().unwrap().is_none(), "the gateway is still running");
    drop(flood);
}
