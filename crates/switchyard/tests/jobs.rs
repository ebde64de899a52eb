//! A media job survives the gateway that took it: the binary keeps jobs in
//! its database (SQLite here), and another process on the same database
//! follows the job to its end, meters it and writes its record.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use serde_json::Value;
use switchyard_testkit::FakeFal;

const KEY: &str = "sk-gw-jobs-0123456789abcdef";
const ADMIN: &str = "sk-gw-jobs-admin-0123456789abcdef";

fn body_of(answer: &str) -> Value {
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let start = body.find('{').unwrap_or(0);
    let end = body.rfind('}').map_or(body.len(), |e| e + 1);
    serde_json::from_str(&body[start..end]).unwrap_or(Value::Null)
}

/// `GET path` with `key`: the status and the whole answer.
fn get_with(addr: &str, path: &str, key: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {key}\r\nconnection: close\r\n\r\n"
    );
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    (out.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0), out)
}

#[test]
fn a_job_taken_before_a_crash_is_followed_to_its_end_after_it() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fal = rt.block_on(FakeFal::start("fal-restart-key")).unwrap();
    let data = fresh_dir("jobs");
    let config = |poll_ms: u64| {
        format!(
            r#"
storage: {{ url: "sqlite://{}/sy.db" }}
gateway: {{ api_keys: ["{KEY}"], jobs: {{ poll_interval_ms: {poll_ms} }} }}
providers:
  fal: {{ wire: fal, endpoint: "{}", credentials: {{ keys: ["fal-restart-key"] }} }}
models:
  - id: clips
    kind: media
    deployments: [{{ provider: fal, model: fal-ai/kling-video/v2.1/standard/text-to-video }}]
    pricing: {{ per_second: 0.07 }}
"#,
            data.display(),
            fal.url()
        )
    };
    let auth = format!("Bearer {KEY}");
    let key = [("authorization", auth.as_str())];
    let (id, request_id) = {
        // This one never gets to poll: its first tick is ten minutes away.
        let gw = Gateway::start_with("jobs-1", &[], Some(&config(600_000)));
        let addr =
            gw.wait_for("switchyard listening")["fields"]["listen"].as_str().unwrap().to_owned();
        let body = r#"{"model": "clips", "input": {"prompt": "a heron", "duration": "10"}}"#;
        let (status, answer) = post(&addr, "/v1/jobs", body, &key);
        assert_eq!(status, 202, "{answer}");
        let job = body_of(&answer);
        assert_eq!(job["status"], "queued", "{answer}");
        let request_id = answer
            .lines()
            .find_map(|l| l.strip_prefix("x-request-id: "))
            .unwrap()
            .trim()
            .to_owned();
        (job["id"].as_str().unwrap().to_owned(), request_id)
        // Killed here (SIGKILL): a crash with the job on the queue.
    };
    assert_eq!((fal.submits(), fal.status_polls()), (1, 0));
    let gw = Gateway::start_with("jobs-2", &[], Some(&config(20)));
    let addr = gw.wait_for("switchyard listening")["fields"]["listen"].as_str().unwrap().to_owned();
    let ended = gw.wait_for("media job ended");
    assert_eq!(ended["fields"]["job"], id.as_str(), "{ended}");
    let (status, answer) = get_with(&addr, &format!("/v1/jobs/{id}"), KEY);
    assert_eq!(status, 200, "{answer}");
    let job = body_of(&answer);
    assert_eq!(job["status"], "completed", "{answer}");
    assert_eq!(job["usage"]["seconds"], 10.0);
    assert!((job["cost_usd"].as_f64().unwrap() - 0.7).abs() < 1e-9, "{answer}");
    assert_eq!(fal.submits(), 1, "followed, never submitted again");
    // The record the first process opened, written by the second: read once
    // it has stopped (its writer flushed) by a third.
    let mut gw = gw;
    gw.signal("TERM");
    assert!(gw.exit_status().success());
    drop(gw);
    let gw = Gateway::start_env(
        "jobs-3",
        &[],
        Some(&config(600_000)),
        &[("SWITCHYARD_ADMIN_KEY", ADMIN)],
    );
    let addr = gw.wait_for("switchyard listening")["fields"]["listen"].as_str().unwrap().to_owned();
    let (status, listed) = get_with(&addr, "/admin/requests?operation=jobs", ADMIN);
    assert_eq!(status, 200, "{listed}");
    let listed = body_of(&listed);
    let rec = listed["data"].as_array().and_then(|d| d.first()).cloned().unwrap_or(Value::Null);
    assert_eq!(rec["id"], request_id.as_str(), "{listed}");
    assert!((rec["cost_usd"].as_f64().unwrap() - 0.7).abs() < 1e-9, "{rec}");
    assert_eq!(listed["data"].as_array().map(Vec::len), Some(1), "written once: {listed}");
    drop(gw);
    let _ = std::fs::remove_dir_all(&data);
}
