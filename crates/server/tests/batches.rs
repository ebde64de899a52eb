//! Batches, black-box, in OpenAI's shape: a JSONL file uploaded
//! (`multipart/form-data`, as the SDKs send it), a batch created on it and
//! polled as a client polls one, its answers read back from its output and
//! error files. Each line goes through the pipeline against the fakes, is
//! billed at the catalog's batch price, and has its own record.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::batches::{chat_line, lines_of, until_ended, upload};
use common::*;
use serde_json::{Value, json};
use switchyard_testkit::Reply;

const OTHER_KEY: &str = "sk-gw-other-0123456789abcdef";

async fn start(batches: &str) -> Harness {
    let extra_models = r#"  - id: m-batch
    deployments: [{ provider: openai, model: up-batch }]
    pricing: { input: 1.0, output: 2.0, batch: 0.5 }
"#
    .to_owned();
    Harness::start_with(Options {
        extra_models,
        gateway_extra: format!("  batches: {{ poll_interval_ms: 10{batches} }}"),
        extra_keys: vec![OTHER_KEY.to_owned()],
        ..Options::default()
    })
    .await
}

async fn call(
    h: &Harness,
    method: reqwest::Method,
    key: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, String) {
    let mut req = h.client.request(method, format!("{}{path}", h.base)).bearer_auth(key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

async fn json_of(h: &Harness, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
    let (status, text) = call(h, method, GATEWAY_KEY, path, body).await;
    assert_eq!(status, 200, "{path}: {text}");
    serde_json::from_str(&text).unwrap()
}

#[tokio::test]
async fn a_batch_runs_each_line_through_the_pipeline_at_the_batch_price() {
    let h = start("").await;
    let content = [
        chat_line("first", "m-batch", "one"),
        chat_line("second", "m-batch", "two"),
        chat_line("lost", "no-such-model", "three"),
    ]
    .join("\n");
    let (status, file) = upload(&h, GATEWAY_KEY, "batch", &content).await;
    assert_eq!(status, 200, "{file}");
    assert_eq!((file["object"].as_str(), file["purpose"].as_str()), (Some("file"), Some("batch")));
    assert_eq!(file["bytes"], content.len());
    let created = json_of(
        &h,
        reqwest::Method::POST,
        "/v1/batches",
        Some(json!({"input_file_id": file["id"], "endpoint": "/v1/chat/completions",
                    "completion_window": "24h", "metadata": {"team": "nightly"}})),
    )
    .await;
    assert_eq!(created["object"], "batch");
    assert_eq!(created["request_counts"]["total"], 3);
    let id = created["id"].as_str().unwrap().to_owned();
    let b = until_ended(&h, &id).await;
    assert_eq!(b["status"], "completed", "{b}");
    assert_eq!(b["request_counts"], json!({"total": 3, "completed": 2, "failed": 1}));
    assert_eq!(b["metadata"]["team"], "nightly");
    assert!(b["completed_at"].as_u64().is_some() && b["finalizing_at"].as_u64().is_some(), "{b}");
    // The answers, as the endpoint gave them; the failure in the error file.
    let out_path = format!("/v1/files/{}/content", b["output_file_id"].as_str().unwrap());
    let (_, output) = call(&h, reqwest::Method::GET, GATEWAY_KEY, &out_path, None).await;
    let output = lines_of(&output);
    let mut ids: Vec<&str> = output.iter().map(|l| l["custom_id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["first", "second"]);
    for l in &output {
        assert_eq!(l["response"]["status_code"], 200, "{l}");
        assert_eq!(l["response"]["body"]["object"], "chat.completion", "{l}");
        assert!(l["id"].as_str().unwrap().starts_with("batch_req_"));
    }
    let err_path = format!("/v1/files/{}/content", b["error_file_id"].as_str().unwrap());
    let (_, errors) = call(&h, reqwest::Method::GET, GATEWAY_KEY, &err_path, None).await;
    let errors = lines_of(&errors);
    assert_eq!(errors.len(), 1);
    assert_eq!(
        (errors[0]["custom_id"].as_str(), errors[0]["response"]["status_code"].as_u64()),
        (Some("lost"), Some(404))
    );
    assert_eq!(h.openai.received().len(), 2, "two lines reached the upstream");
    // A record per line sent, billed at half the price.
    let records = h.sink.wait_len(2).await;
    let billed: Vec<_> = records
        .iter()
        .filter(|r| r.descriptor.contains(&format!("batch:{id}")) && r.status == 200)
        .collect();
    assert_eq!(billed.len(), 2, "{records:?}");
    for r in billed {
        let (input, output) =
            (r.usage.input_tokens.unwrap() as f64, r.usage.output_tokens.unwrap() as f64);
        let expected = (input * 1.0 + output * 2.0) / 1e6 * 0.5;
        assert!((r.cost_usd.unwrap() - expected).abs() < 1e-12, "{:?} vs {expected}", r.cost_usd);
    }
    let list = json_of(&h, reqwest::Method::GET, "/v1/batches", None).await;
    assert_eq!(list["data"][0]["id"], id.as_str());
}

#[tokio::test]
async fn uploads_are_checked_and_files_and_batches_are_their_owners() {
    let h = start(", max_file_bytes: 2000").await;
    let line = chat_line("a", "m-batch", "x");
    let (status, err) = upload(&h, GATEWAY_KEY, "fine-tune", &line).await;
    assert_eq!(status, 400, "{err}");
    assert!(err["error"]["message"].as_str().unwrap().contains("purpose"), "{err}");
    let (status, err) =
        upload(&h, GATEWAY_KEY, "batch", &format!("{line}\n{{\"custom_id\": 5}}")).await;
    assert_eq!(status, 400, "{err}");
    assert!(err["error"]["message"].as_str().unwrap().contains("line 2: custom_id"), "{err}");
    let big =
        (0..40).map(|i| chat_line(&format!("l{i}"), "m-batch", "x")).collect::<Vec<_>>().join("\n");
    let (status, err) = upload(&h, GATEWAY_KEY, "batch", &big).await;
    assert_eq!(status, 413, "{err}");
    let (status, file) = upload(&h, GATEWAY_KEY, "batch", &line).await;
    assert_eq!(status, 200, "{file}");
    let path = format!("/v1/files/{}", file["id"].as_str().unwrap());
    for (method, p) in [
        (reqwest::Method::GET, path.clone()),
        (reqwest::Method::GET, format!("{path}/content")),
        (reqwest::Method::DELETE, path.clone()),
    ] {
        let (status, _) = call(&h, method, OTHER_KEY, &p, None).await;
        assert_eq!(status, 404, "another key's file is unknown: {p}");
    }
    let (status, text) = call(
        &h,
        reqwest::Method::POST,
        OTHER_KEY,
        "/v1/batches",
        Some(json!({"input_file_id": file["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h"})),
    )
    .await;
    assert_eq!(status, 404, "{text}");
    let (status, text) = call(
        &h,
        reqwest::Method::POST,
        GATEWAY_KEY,
        "/v1/batches",
        Some(json!({"input_file_id": file["id"], "endpoint": "/v1/embeddings", "completion_window": "24h"})),
    )
    .await;
    assert_eq!(status, 400, "{text}");
    assert!(
        text.contains("line 1: url /v1/chat/completions is not the batch's endpoint"),
        "{text}"
    );
    let listed = json_of(&h, reqwest::Method::GET, "/v1/files", None).await;
    assert_eq!(listed["data"].as_array().map(Vec::len), Some(1));
    let (status, _) = call(&h, reqwest::Method::DELETE, GATEWAY_KEY, &path, None).await;
    assert_eq!(status, 200);
    let (status, _) = call(&h, reqwest::Method::GET, GATEWAY_KEY, &path, None).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_cancelled_batch_ends_with_its_unrun_lines_in_the_error_file() {
    let h = start(", concurrency: 1").await;
    // The first line is slow: the batch is cancelled while it runs.
    h.openai.push(Reply::auto().first_byte_delay(std::time::Duration::from_millis(1500)));
    let content =
        (0..3).map(|i| chat_line(&format!("l{i}"), "m-batch", "x")).collect::<Vec<_>>().join("\n");
    let (_, file) = upload(&h, GATEWAY_KEY, "batch", &content).await;
    let created = json_of(
        &h,
        reqwest::Method::POST,
        "/v1/batches",
        Some(json!({"input_file_id": file["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h"})),
    )
    .await;
    let id = created["id"].as_str().unwrap().to_owned();
    h.openai.wait_for_requests(1).await;
    let cancelling =
        json_of(&h, reqwest::Method::POST, &format!("/v1/batches/{id}/cancel"), None).await;
    assert_eq!(cancelling["status"], "cancelling", "{cancelling}");
    let b = until_ended(&h, &id).await;
    assert_eq!(b["status"], "cancelled", "{b}");
    let ran = b["request_counts"]["completed"].as_u64().unwrap();
    assert!((1..3).contains(&ran), "the line in flight finished, not every line ran: {b}");
    let err_path = format!("/v1/files/{}/content", b["error_file_id"].as_str().unwrap());
    let (_, errors) = call(&h, reqwest::Method::GET, GATEWAY_KEY, &err_path, None).await;
    let errors = lines_of(&errors);
    assert_eq!(errors.len() as u64, 3 - ran);
    assert!(
        errors.iter().all(|e| e["error"]["code"] == "batch_cancelled" && e["response"].is_null())
    );
    assert_eq!(h.openai.received().len() as u64, ran, "no line started after the cancel");
}
