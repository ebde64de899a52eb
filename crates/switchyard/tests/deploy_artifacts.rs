//! The monitoring shipped in `deploy/` names only metrics the binary exports:
//! the real binary runs on SQLite (so its request records go through the audit
//! writer), serves a request that fails over, one from the cache, and one a
//! budget refuses; then every `gateway_…` name in the Grafana dashboard and the
//! alert rules must be a series in its `/metrics`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};

use common::*;

const KEY: &str = "sk-gw-deploy-0123456789abcdef";

/// Every `gateway_…` name in `text`.
fn names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("gateway_") {
        let tail = &rest[at..];
        let end = tail.find(|c: char| !(c.is_ascii_lowercase() || c == '_')).unwrap_or(tail.len());
        out.insert(tail[..end].to_owned());
        rest = &tail[end..];
    }
    out
}

fn metrics(addr: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let request = format!(
        "GET /metrics HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {KEY}\r\nconnection: close\r\n\r\n"
    );
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    out
}

fn chat(addr: &str, text: &str) -> u16 {
    let body = format!(
        r#"{{"model": "m", "max_tokens": 16, "messages": [{{"role": "user", "content": "{text}"}}]}}"#
    );
    let auth = format!("Bearer {KEY}");
    post(addr, "/v1/chat/completions", &body, &[("authorization", &auth)]).0
}

#[test]
fn the_dashboard_and_alerts_name_only_metrics_the_binary_exports() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dashboard = std::fs::read_to_string(root.join("deploy/grafana/switchyard.json")).unwrap();
    let rules =
        std::fs::read_to_string(root.join("deploy/kubernetes/prometheusrule.yaml")).unwrap();
    let dashboard_json: serde_json::Value = serde_json::from_str(&dashboard).unwrap();
    assert!(dashboard_json["panels"].as_array().is_some_and(|p| p.len() >= 10));
    let wanted: BTreeSet<String> = names(&dashboard).union(&names(&rules)).cloned().collect();
    assert!(wanted.len() >= 12, "{wanted:?}");

    let data = fresh_dir("deploy");
    let config = format!(
        r#"
storage: {{ url: "sqlite://{}/sy.db" }}
gateway:
  api_keys: ["{KEY}"]
providers:
  dead: {{ wire: openai-chat, endpoint: "http://127.0.0.1:1/v1", credentials: {{ none: true }} }}
  mock: {{ wire: mock }}
models:
  - id: m
    deployments: [{{ provider: dead, model: up-dead }}, {{ provider: mock, model: m }}]
    pricing: {{ input: 1.0, output: 1.0 }}
    cache: {{ ttl_ms: 60000 }}
budgets:
  - {{ scope: gateway, limit_usd: 0.0001, period: day }}
"#,
        data.display()
    );
    let gw = Gateway::start_with("deploy", &[], Some(&config));
    let addr = gw.wait_for("switchyard listening")["fields"]["listen"].as_str().unwrap().to_owned();
    // Fails over from the dead deployment to the mock; kept in the cache.
    assert_eq!(chat(&addr, "first"), 200);
    // The same again: from the cache.
    assert_eq!(chat(&addr, "first"), 200);
    // New requests until the budget refuses one.
    let refused = (0..50).any(|i| chat(&addr, &format!("more {i}")) == 402);
    assert!(refused, "the budget refused a request");
    let exported = metrics(&addr);
    let series: BTreeSet<String> = exported
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_owned)
        .collect();
    let missing: Vec<&String> = wanted.iter().filter(|n| !series.contains(*n)).collect();
    assert!(missing.is_empty(), "named in deploy/ but not exported: {missing:?}\n{exported}");
    drop(gw);
    let _ = std::fs::remove_dir_all(&data);
}

/// `switchyard check` passes on `config`, with its `${VARIABLES}` from the
/// example Secret (every one it names is there, with a made-up value).
fn check_with_the_secrets_variables(root: &std::path::Path, config: &str, what: &str) {
    let dir =
        std::env::temp_dir().join(format!("switchyard-deploy-check-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("config.yaml");
    std::fs::write(&file, config).unwrap();
    let secret =
        std::fs::read_to_string(root.join("deploy/kubernetes/secret.example.yaml")).unwrap();
    let mut check = std::process::Command::new(env!("CARGO_BIN_EXE_switchyard"));
    check.arg("check").arg(&file);
    // Every variable the config names is one the example Secret holds.
    for name in ["DATABASE_URL", "REDIS_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"] {
        assert!(secret.contains(&format!("  {name}: ")), "{name} is in the Secret");
        assert!(config.contains(&format!("${{{name}}}")), "{name} is used in {what}");
    }
    check
        .env("DATABASE_URL", "postgres://switchyard:x@127.0.0.1:1/switchyard")
        .env("REDIS_URL", "redis://127.0.0.1:1/0")
        .env("OPENAI_API_KEY", "sk-check-0123456789abcdef")
        .env("ANTHROPIC_API_KEY", "sk-ant-check-0123456789abcdef");
    let out = check.output().unwrap();
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The configuration the Kubernetes manifests mount is one the binary takes:
/// `switchyard check` passes on it, with its `${VARIABLES}` from the Secret.
#[test]
fn the_kubernetes_config_map_is_a_valid_configuration() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let map = std::fs::read_to_string(root.join("deploy/kubernetes/configmap.yaml")).unwrap();
    let (_, block) = map.split_once("config.yaml: |\n").expect("a config.yaml entry");
    let config: String = block
        .lines()
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .map(|l| format!("{l}\n"))
        .collect();
    check_with_the_secrets_variables(&root, &config, "configmap");
}

/// The Helm chart's default `config` value (rendered into its ConfigMap as it
/// is) passes the same check. scripts/validate-deploy.sh compares it with the
/// ConfigMap's once rendered; this reads values.yaml's block as text: the
/// lines under `config:` up to the next top-level key.
#[test]
fn the_helm_charts_default_config_is_a_valid_configuration() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let values = std::fs::read_to_string(root.join("deploy/helm/switchyard/values.yaml")).unwrap();
    let (_, block) = values.split_once("\nconfig:\n").expect("a top-level config value");
    let config: String = block
        .lines()
        .take_while(|l| l.is_empty() || l.starts_with(' ') || l.starts_with('#'))
        .map(|l| l.strip_prefix("  ").unwrap_or(l))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(config.contains("shutdown_grace_secs: "), "{config}");
    check_with_the_secrets_variables(&root, &config, "chart");
}
