//! `switchyard explain`: the built binary classifies a request body from a
//! file or standard input, in any client format, without a configuration.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write as _;
use std::process::{Command, Stdio};

use serde_json::Value;

fn explain(args: &[&str], stdin: &str) -> (bool, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .arg("explain")
        .args(args)
        .env_remove("SWITCHYARD_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_coding_agents_tool_loop_from_a_file_is_code_by_its_rule() {
    let body = r#"{"model":"auto","max_tokens":1024,
        "tools":[{"name":"Read","input_schema":{"type":"object"}},{"name":"Bash","input_schema":{"type":"object"}}],
        "messages":[{"role":"user","content":"Why does tests/retry.rs fail?"},
          {"role":"assistant","content":[{"type":"tool_use","id":"toolu_01","name":"Read","input":{"path":"tests/retry.rs"}}]},
          {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"assert_eq!(backoff(3), 800);"}]}]}"#;
    let path = std::env::temp_dir().join(format!("switchyard-explain-{}.json", std::process::id()));
    std::fs::write(&path, body).unwrap();
    let (ok, out, err) = explain(&[path.to_str().unwrap()], "");
    let _ = std::fs::remove_file(&path);
    assert!(ok, "{err}");
    assert!(out.contains("format      anthropic (guessed"), "{out}");
    assert!(out.contains("intent      code\nrule        tool_loop\n"), "{out}");
    assert!(out.contains("tool_results_last  1"), "{out}");
}

#[test]
fn each_format_from_standard_input_as_json() {
    let cases = [
        (
            "gemini",
            r#"{"contents":[{"role":"user","parts":[{"text":"Prove that there are infinitely many primes."}]}]}"#,
            "reasoning",
        ),
        ("openai-responses", r#"{"model":"auto","input":"thanks!"}"#, "cheap"),
        (
            "openai-chat",
            r#"{"model":"auto","messages":[{"role":"user","content":"Write a short poem about autumn rain"}]}"#,
            "ordinary",
        ),
    ];
    for (format, body, intent) in cases {
        for args in [vec!["-", "--json"], vec!["-", "--json", "--format", format]] {
            let (ok, out, err) = explain(&args, body);
            assert!(ok, "{err}");
            let v: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(v["format"], format, "{out}");
            assert_eq!(v["intent"], intent, "{out}");
            assert_eq!(v["descriptor"], format!("auto:{intent}"));
        }
    }
}

#[test]
fn a_body_that_is_not_the_format_is_refused_in_one_line() {
    let (ok, _, err) =
        explain(&["-", "--format", "anthropic"], r#"{"model":"auto","messages":"no"}"#);
    assert!(!ok);
    assert!(err.starts_with("switchyard: not a valid anthropic request"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let (ok, _, err) = explain(&["-"], "not json");
    assert!(!ok);
    assert!(err.contains("not JSON"), "{err}");
}
