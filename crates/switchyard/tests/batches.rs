//! A batch survives the gateway running it: the binary keeps files, batches
//! and each line's answer in its database (SQLite here). One process answers
//! two lines and is killed on the third; another picks the batch up once the
//! first one's lease lapses, sends only the third, and finishes it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use serde_json::{Value, json};
use switchyard_testkit::{FakeUpstream, Reply, Vendor};

const KEY: &str = "sk-gw-batch-0123456789abcdef";

fn body_of(answer: &str) -> &str {
    answer.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

fn json_of(answer: &str) -> Value {
    let body = body_of(answer);
    let start = body.find('{').unwrap_or(0);
    let end = body.rfind('}').map_or(body.len(), |e| e + 1);
    serde_json::from_str(&body[start..end]).unwrap_or(Value::Null)
}

/// A batch of `n` chat lines for `model` (custom ids `<prefix>0`…), its file
/// uploaded and the batch created: the batch's id.
fn submit(addr: &str, model: &str, prefix: &str, n: usize) -> String {
    let content: Vec<String> = (0..n)
        .map(|i| {
            json!({"custom_id": format!("{prefix}{i}"), "method": "POST", "url": "/v1/chat/completions",
                   "body": {"model": model, "messages": [{"role": "user", "content": format!("line {i}")}]}})
            .to_string()
        })
        .collect();
    let boundary = "b0undary";
    let upload = format!(
        "--{boundary}\r\ncontent-disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n\
         --{boundary}\r\ncontent-disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n\r\n{}\r\n--{boundary}--\r\n",
        content.join("\n")
    );
    let multipart = format!("multipart/form-data; boundary={boundary}");
    let (status, file) = send(addr, "POST", "/v1/files", &multipart, &upload);
    assert_eq!(status, 200, "{file}");
    let file_id = json_of(&file)["id"].as_str().unwrap().to_owned();
    let create = json!({"input_file_id": file_id, "endpoint": "/v1/chat/completions", "completion_window": "24h"});
    let (status, batch) =
        send(addr, "POST", "/v1/batches", "application/json", &create.to_string());
    assert_eq!(status, 200, "{batch}");
    json_of(&batch)["id"].as_str().unwrap().to_owned()
}

/// `method path` with the key and a raw body: the status and the whole answer.
fn send(addr: &str, method: &str, path: &str, content_type: &str, body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {KEY}\r\n\
         content-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    (out.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0), out)
}

#[test]
fn a_batch_cut_short_by_a_crash_is_finished_by_another_process_without_resending() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(FakeUpstream::start(Vendor::OpenAi)).unwrap();
    // Two answers, then one that never comes: the first process dies on it.
    fake.push_n(2, Reply::auto());
    fake.push(Reply::hang());
    let data = fresh_dir("batches");
    let config = format!(
        r#"
storage: {{ url: "sqlite://{}/sy.db" }}
gateway:
  api_keys: ["{KEY}"]
  batches: {{ poll_interval_ms: 20, concurrency: 1, lease_ms: 1000 }}
providers:
  openai: {{ wire: openai-chat, endpoint: "{}/v1", credentials: {{ keys: ["sk-upstream-batch-1"] }} }}
models:
  - id: m-batch
    deployments: [{{ provider: openai, model: up-batch }}]
    pricing: {{ input: 1.0, output: 2.0, batch: 0.5 }}
"#,
        data.display(),
        fake.base_url()
    );
    let id = {
        let gw = Gateway::start_with("batches-1", &[], Some(&config));
        let addr =
            gw.wait_for("switchyard listening")["fields"]["listen"].as_str().unwrap().to_owned();
        let batch = submit(&addr, "m-batch", "l", 3);
        // Two lines answered and kept; the third in flight when it dies.
        rt.block_on(async { tokio::time::timeout(WAIT, fake.wait_for_requests(3)).await.unwrap() });
        batch
        // Killed here (SIGKILL).
    };
    fake.set_default(Reply::auto());
    let gw = Gateway::start_with("batches-2", &[], Some(&config));
    let addr = gw.wait_for("switchyard listening")["fields"]["listen"].as_str().unwrap().to_owned();
    let ended = gw.wait_for("batch ended");
    assert_eq!(ended["fields"]["batch"], id.as_str(), "{ended}");
    let (status, batch) = send(&addr, "GET", &format!("/v1/batches/{id}"), "application/json", "");
    assert_eq!(status, 200, "{batch}");
    let batch = json_of(&batch);
    assert_eq!(batch["status"], "completed", "{batch}");
    assert_eq!(batch["request_counts"], json!({"total": 3, "completed": 3, "failed": 0}));
    assert_eq!(fake.request_count(), 4, "only the line without an answer was sent again");
    let out = format!("/v1/files/{}/content", batch["output_file_id"].as_str().unwrap());
    let (status, output) = send(&addr, "GET", &out, "application/json", "");
    assert_eq!(status, 200, "{output}");
    let mut ids: Vec<String> = body_of(&output)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|l| l["custom_id"].as_str().map(str::to_owned))
        .collect();
    ids.sort();
    assert_eq!(ids, ["l0", "l1", "l2"]);
    drop(gw);
    let _ = std::fs::remove_dir_all(&data);
}

/// A batch handed to the provider's own batch API outlives the process that
/// handed it over: the provider batch is kept before anything else, so
/// another process follows the same one (never submitting it again) and
/// brings its answers back.
#[test]
fn a_provider_batch_handed_over_before_a_crash_is_followed_by_another_process() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(FakeUpstream::start(Vendor::OpenAi)).unwrap();
    fake.hold_batches(true);
    let data = fresh_dir("pbatches");
    let config = format!(
        r#"
storage: {{ url: "sqlite://{}/sy.db" }}
gateway:
  api_keys: ["{KEY}"]
  batches: {{ poll_interval_ms: 20, provider_poll_interval_ms: 20, lease_ms: 1000 }}
providers:
  openai: {{ wire: openai-chat, endpoint: "{}/v1", credentials: {{ keys: ["sk-upstream-batch-1"] }}, batch_api: true }}
models:
  - id: m-native
    deployments: [{{ provider: openai, model: up-native }}]
    pricing: {{ input: 1.0, output: 2.0, batch: 0.5 }}
"#,
        data.display(),
        fake.base_url()
    );
    let id = {
        let gw = Gateway::start_with("pbatches-1", &[], Some(&config));
        let addr =
            gw.wait_for("switchyard listening")["fields"]["listen"].as_str().unwrap().to_owned();
        let batch = submit(&addr, "m-native", "n", 2);
        let handed = gw.wait_for("batch handed to the provider's batch API");
        assert_eq!(handed["fields"]["lines"], 2, "{handed}");
        batch
        // Killed here (SIGKILL), the provider batch still running.
    };
    fake.hold_batches(false);
    let gw = Gateway::start_with("pbatches-2", &[], Some(&config));
    let addr = gw.wait_for("switchyard listening")["fields"]["listen"].as_str().unwrap().to_owned();
    let ended = gw.wait_for("batch ended");
    assert_eq!(ended["fields"]["batch"], id.as_str(), "{ended}");
    let (status, batch) = send(&addr, "GET", &format!("/v1/batches/{id}"), "application/json", "");
    assert_eq!(status, 200, "{batch}");
    let batch = json_of(&batch);
    assert_eq!(batch["status"], "completed", "{batch}");
    assert_eq!(batch["request_counts"], json!({"total": 2, "completed": 2, "failed": 0}));
    assert_eq!(fake.batch_creates(), 1, "the provider batch was followed, not submitted again");
    let direct = fake.received().iter().filter(|r| r.path == "/v1/chat/completions").count();
    assert_eq!(direct, 2, "each line ran once, inside the provider's batch");
    drop(gw);
    let _ = std::fs::remove_dir_all(&data);
}
