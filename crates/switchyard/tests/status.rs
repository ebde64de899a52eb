//! `switchyard status`: the built binary reads a running gateway's
//! destinations with an admin key and prints them as a table (the deployments
//! with traffic) or as the gateway's JSON; a wrong key is a one-line failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::process::Command;

use common::{Gateway, post};
use serde_json::Value;

const ADMIN: &str = "sk-status-admin-0123456789abcdef";

fn status(addr: &str, key: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["status", "--url", &format!("http://{addr}"), "--key", key])
        .args(args)
        .env_remove("SWITCHYARD_URL")
        .env_remove("SWITCHYARD_ADMIN_KEY")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn status_shows_the_deployments_with_traffic() {
    let config = r#"
storage: { url: none }
providers: { mock: { wire: mock } }
models:
  - { id: mock-echo, deployments: [{ provider: mock }] }
  - { id: mock-idle, deployments: [{ provider: mock, model: mock-echo }] }
"#;
    let gw = Gateway::start_env("status", &[], Some(config), &[("SWITCHYARD_ADMIN_KEY", ADMIN)]);
    let listening = gw.wait_for("switchyard listening");
    let addr = listening["fields"]["listen"].as_str().unwrap().to_owned();
    let auth = format!("Bearer {ADMIN}");
    for _ in 0..3 {
        let body = r#"{"model":"mock-echo","messages":[{"role":"user","content":"hi"}]}"#;
        let (code, answer) = post(&addr, "/v1/chat/completions", body, &[("authorization", &auth)]);
        assert_eq!(code, 200, "{answer}");
    }

    let (ok, out, err) = status(&addr, ADMIN, &[]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("MODEL") && lines[0].contains("TTFT P95"), "{out}");
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(&row[..7], ["mock-echo", "mock", "mock-echo", "0", "3", "0", "0"], "{out}");
    assert_eq!(lines.len(), 2, "the idle deployment is left out: {out}");
    let (_, all, _) = status(&addr, ADMIN, &["--all"]);
    assert!(all.contains("mock-idle"), "{all}");

    let (ok, json, err) = status(&addr, ADMIN, &["--json"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&json).unwrap();
    let echo = v["data"].as_array().unwrap().iter().find(|r| r["model"] == "mock-echo").unwrap();
    assert_eq!((echo["successes"].as_u64(), echo["samples"].as_u64()), (Some(3), Some(3)));

    let (ok, out, err) = status(&addr, "sk-not-the-admin-key-000000000000", &[]);
    assert!(!ok && out.is_empty(), "{out}");
    assert!(err.starts_with("switchyard: ") && err.contains("401"), "{err}");
    assert!(!err.contains(ADMIN));
}
