//! End to end: `switchyard catalog discover` against the test kit's fakes,
//! the built binary run with a temporary configuration file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use switchyard_testkit::{FakeModel, FakeUpstream, Vendor, bedrock};

const OPENAI_KEY: &str = "sk-test-openai-discover-0123456789";
const AWS_SECRET: &str = "not-the-fake-s-secret-0123456789";

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(yaml: &str) -> (Dir, PathBuf) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let dir =
        std::env::temp_dir().join(format!("switchyard-discover-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.yaml");
    std::fs::write(&config, yaml).unwrap();
    (Dir(dir), config)
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// The binary with `args` and `--config`, run off the runtime's threads so
/// the fakes keep answering.
async fn discover(config: &Path, args: &[&str]) -> Out {
    let mut all: Vec<String> = vec!["catalog".into(), "discover".into()];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    all.extend(["--config".into(), config.display().to_string()]);
    let output = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_switchyard"))
            .args(&all)
            .env_remove("SWITCHYARD_CONFIG")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    Out {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discover_reports_each_provider_and_fails_only_on_configuration() {
    let openai = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    openai.set_models(["gpt-a", "gpt-new"].map(FakeModel::new));
    let aws = FakeUpstream::start(Vendor::Bedrock).await.unwrap();
    let yaml = format!(
        r#"storage: {{ url: none }}
providers:
  openai: {{ wire: openai-chat, endpoint: "{}/v1", credentials: {{ keys: ["{OPENAI_KEY}"] }} }}
  azure: {{ wire: azure-openai, endpoint: "https://r.openai.azure.com", credentials: {{ keys: [az-key-0123456789] }} }}
  aws:
    wire: bedrock
    endpoint: "{}"
    region: {}
    credentials: {{ aws: {{ access_key_id: {}, secret_access_key: "{AWS_SECRET}" }} }}
models:
  - id: a
    deployments: [{{ provider: openai, model: gpt-a }}, {{ provider: azure, model: a-prod }}]
  - id: old
    deployments: [{{ provider: openai, model: gpt-old }}]
"#,
        openai.base_url(),
        aws.base_url(),
        bedrock::REGION,
        bedrock::ACCESS_KEY_ID,
    );
    let (_dir, config) = scratch(&yaml);

    let out = discover(&config, &["--json"]).await;
    // One provider failing is reported, not the command's failure.
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    let by = |name: &str| {
        json["providers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["provider"] == name)
            .unwrap()
            .clone()
    };
    let openai_found = by("openai");
    assert_eq!(openai_found["status"], "listed");
    assert_eq!(openai_found["wire"], "openai-chat");
    assert_eq!(openai_found["new"][0]["id"], "gpt-new");
    assert_eq!(openai_found["missing"][0]["model"], "old");
    assert_eq!(openai_found["missing"][0]["upstream_model"], "gpt-old");
    assert_eq!(by("azure")["status"], "unsupported");
    assert_eq!(by("aws")["status"], "failed");
    assert!(by("aws")["reason"].as_str().unwrap().starts_with("403"));

    let out = discover(&config, &[]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let line = |start: &str| out.stdout.lines().find(|l| l.starts_with(start)).unwrap().to_owned();
    let openai_line: Vec<String> = line("openai ").split_whitespace().map(str::to_owned).collect();
    assert_eq!(openai_line, ["openai", "openai-chat", "listed", "2", "1", "1", "1", "0"]);
    assert!(line("azure ").contains("unsupported"), "{}", out.stdout);
    assert!(out.stdout.lines().any(|l| l.split_whitespace().eq(["openai", "new", "-", "gpt-new"])));
    for text in [&out.stdout, &out.stderr] {
        assert!(!text.contains(OPENAI_KEY) && !text.contains(AWS_SECRET), "{text}");
    }

    let out = discover(&config, &["--provider", "openai", "--json"]).await;
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["providers"].as_array().unwrap().len(), 1);

    // What is the configuration's fault fails the command, in one line.
    let out = discover(&config, &["--provider", "nope"]).await;
    assert_eq!((out.code, out.stderr.lines().count()), (1, 1), "{}", out.stderr);
    assert!(out.stderr.starts_with("switchyard: no provider named \"nope\""), "{}", out.stderr);
    std::fs::write(&config, "providers: { x: { wire: nowhere } }\n").unwrap();
    let out = discover(&config, &[]).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
}
