//! The batch APIs of the OpenAI and Anthropic fakes, driven over HTTP as the
//! gateway drives them: progress by polls alone, each request answered by the
//! fake's own handler.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::{FakeUpstream, Reply, Vendor};

const BOUNDARY: &str = "----switchyard-batch-test";

struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Value,
    raw: Vec<u8>,
}

async fn start(vendor: Vendor) -> FakeUpstream {
    // reqwest is built with `rustls-no-provider`: install one, even for http.
    let _ = rustls::crypto::ring::default_provider().install_default();
    FakeUpstream::start(vendor).await.unwrap()
}

/// The vendor's credential headers.
fn credentials(vendor: Vendor) -> Vec<(&'static str, &'static str)> {
    match vendor {
        Vendor::Anthropic => {
            vec![("x-api-key", "sk-ant-test"), ("anthropic-version", "2023-06-01")]
        }
        _ => vec![("authorization", "Bearer sk-test")],
    }
}

async fn send_as(
    fake: &FakeUpstream,
    headers: &[(&str, &str)],
    method: Method,
    path: &str,
    body: Option<(&str, Vec<u8>)>,
) -> Answer {
    let mut req = reqwest::Client::new().request(method, format!("{}{path}", fake.base_url()));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some((content_type, body)) = body {
        req = req.header("content-type", content_type).body(body);
    }
    let res = tokio::time::timeout(Duration::from_secs(10), req.send()).await.unwrap().unwrap();
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let raw = res.bytes().await.unwrap().to_vec();
    let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    Answer { status, headers, body, raw }
}

async fn send(fake: &FakeUpstream, method: Method, path: &str, body: Option<Value>) -> Answer {
    let body = body.map(|b| ("application/json", b.to_string().into_bytes()));
    send_as(fake, &credentials(fake.vendor()), method, path, body).await
}

fn jsonl(raw: &[u8]) -> Vec<Value> {
    std::str::from_utf8(raw).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

// ---------------------------------------------------------------------------
// OpenAI

/// A multipart form of `purpose` and a file `filename` holding `content`.
fn form(purpose: &str, filename: &str, content: &str) -> Vec<u8> {
    format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n{purpose}\r\n\
         --{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n\
         Content-Type: application/jsonl\r\n\r\n{content}\r\n--{BOUNDARY}--\r\n"
    )
    .into_bytes()
}

async fn upload_as(fake: &FakeUpstream, path: &str, purpose: &str, name: &str, c: &str) -> Answer {
    let content_type = format!("multipart/form-data; boundary={BOUNDARY}");
    let body = Some((content_type.as_str(), form(purpose, name, c)));
    send_as(fake, &credentials(Vendor::OpenAi), Method::POST, path, body).await
}

/// A chat completions line asking `model` to answer `prompt`.
fn chat_line(id: &str, model: &str, prompt: &str) -> Value {
    json!({"custom_id": id, "method": "POST", "url": "/v1/chat/completions",
           "body": {"model": model, "messages": [{"role": "user", "content": prompt}]}})
}

fn file_of(lines: &[Value]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// Uploads `lines` and creates a chat completions batch of them: the batch.
async fn openai_batch(fake: &FakeUpstream, lines: &[Value]) -> Value {
    let file = upload_as(fake, "/v1/files", "batch", "requests.jsonl", &file_of(lines)).await;
    assert_eq!(file.status, 200, "{}", file.body);
    let create = json!({"input_file_id": file.body["id"], "endpoint": "/v1/chat/completions",
                        "completion_window": "24h", "metadata": {"job": "t"}});
    let batch = send(fake, Method::POST, "/v1/batches", Some(create)).await;
    assert_eq!(batch.status, 200, "{}", batch.body);
    batch.body
}

async fn poll(fake: &FakeUpstream, path: &str) -> Value {
    let answer = send(fake, Method::GET, path, None).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.body
}

async fn file_lines(fake: &FakeUpstream, id: &Value) -> Vec<Value> {
    let answer =
        send(fake, Method::GET, &format!("/v1/files/{}/content", id.as_str().unwrap()), None).await;
    assert_eq!(answer.status, 200);
    jsonl(&answer.raw)
}

#[tokio::test]
async fn openai_batch_answers_every_line_by_custom_id_last_first() {
    let fake = start(Vendor::OpenAi).await;
    let lines = [
        chat_line("a", "gpt-test", "one"),
        chat_line("b", "gpt-test", "two"),
        chat_line("c", "gpt-test", "three"),
    ];
    let file = upload_as(&fake, "/v1/files", "batch", "in.jsonl", &file_of(&lines)).await;
    assert_eq!(file.body["object"], "file");
    assert_eq!(file.body["purpose"], "batch");
    assert_eq!(file.body["filename"], "in.jsonl");
    assert_eq!(file.body["bytes"], file_of(&lines).len());
    assert!(file.body["id"].as_str().unwrap().starts_with("file-"));

    let batch = openai_batch(&fake, &lines).await;
    let id = batch["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("batch_"), "{id}");
    assert_eq!(batch["object"], "batch");
    assert_eq!(batch["status"], "validating");
    assert_eq!(batch["endpoint"], "/v1/chat/completions");
    assert_eq!(batch["completion_window"], "24h");
    assert_eq!(batch["errors"], Value::Null);
    assert_eq!(batch["output_file_id"], Value::Null);
    assert_eq!(batch["metadata"], json!({"job": "t"}));
    assert_eq!(batch["request_counts"], json!({"total": 0, "completed": 0, "failed": 0}));
    assert_eq!(fake.batch_ids(), vec![id.clone()]);

    let path = format!("/v1/batches/{id}");
    let first = poll(&fake, &path).await;
    assert_eq!(first["status"], "in_progress");
    assert_eq!(first["request_counts"]["total"], 3);
    let done = poll(&fake, &path).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["request_counts"], json!({"total": 3, "completed": 3, "failed": 0}));
    assert_eq!(done["error_file_id"], Value::Null);
    assert!(done["completed_at"].is_u64());

    let out = file_lines(&fake, &done["output_file_id"]).await;
    let ids: Vec<&str> = out.iter().map(|l| l["custom_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["c", "b", "a"]);
    for (line, prompt) in out.iter().zip(["three", "two", "one"]) {
        assert!(line["id"].as_str().unwrap().starts_with("batch_req_"), "{line}");
        assert_eq!(line["error"], Value::Null);
        assert_eq!(line["response"]["status_code"], 200);
        assert!(line["response"]["request_id"].as_str().unwrap().starts_with("req_"));
        let body = &line["response"]["body"];
        assert_eq!(body["object"], "chat.completion");
        assert_eq!(body["choices"][0]["message"]["content"], format!("echo: {prompt}"));
    }

    // Each line reached the fake's own handler, recorded under its real path.
    let calls: Vec<_> =
        fake.received().into_iter().filter(|r| r.path == "/v1/chat/completions").collect();
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[0].body, lines[0]["body"]);
    assert_eq!(calls[0].header("authorization"), Some("Bearer sk-test"));
    assert_eq!((fake.batch_creates(), fake.batch_status_polls()), (1, 2));
    // Polling an ended batch changes nothing.
    assert_eq!(poll(&fake, &path).await["status"], "completed");
}

#[tokio::test]
async fn openai_lines_are_refused_and_scripted_as_direct_calls_are() {
    let fake = start(Vendor::OpenAi).await;
    let mut bogus = chat_line("b", "gpt-test", "two");
    bogus["body"]["bogus"] = json!(true);
    let lines = [chat_line("a", "gpt-test", "one"), bogus.clone(), chat_line("c", "gpt-test", "x")];
    // The first line the API takes gets the script's reply; the refused one takes none.
    fake.push(Reply::error(500, "boom"));
    let id = openai_batch(&fake, &lines).await["id"].as_str().unwrap().to_owned();
    poll(&fake, &format!("/v1/batches/{id}")).await;
    let done = poll(&fake, &format!("/v1/batches/{id}")).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["request_counts"], json!({"total": 3, "completed": 1, "failed": 2}));

    let out = file_lines(&fake, &done["output_file_id"]).await;
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["custom_id"], "c");
    let errors = file_lines(&fake, &done["error_file_id"]).await;
    let ids: Vec<&str> = errors.iter().map(|l| l["custom_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["b", "a"]);
    assert_eq!(errors[0]["response"]["status_code"], 400);
    assert_eq!(errors[1]["response"]["status_code"], 500);
    assert_eq!(errors[1]["response"]["body"]["error"]["message"], "boom");
    assert_eq!(errors[1]["error"], Value::Null);

    // The same body sent directly gets the same refusal.
    let direct =
        send(&fake, Method::POST, "/v1/chat/completions", Some(bogus["body"].clone())).await;
    assert_eq!(direct.status, 400);
    assert_eq!(errors[0]["response"]["body"], direct.body);
}

#[tokio::test]
async fn openai_mixed_models_fail_the_batch_at_its_first_poll() {
    let fake = start(Vendor::OpenAi).await;
    let lines =
        [chat_line("a", "gpt-a", "1"), chat_line("b", "gpt-a", "2"), chat_line("c", "gpt-b", "3")];
    let id = openai_batch(&fake, &lines).await["id"].as_str().unwrap().to_owned();
    let failed = poll(&fake, &format!("/v1/batches/{id}")).await;
    assert_eq!(failed["status"], "failed");
    assert!(failed["failed_at"].is_u64());
    let data = failed["errors"]["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{data:?}");
    assert_eq!(data[0]["code"], "model_mismatch");
    assert_eq!(data[0]["line"], 3);
    assert!(data[0]["message"].as_str().unwrap().contains("same model"));
    assert_eq!(failed["output_file_id"], Value::Null);
    assert_eq!(failed["request_counts"]["total"], 0);
    assert!(fake.received().iter().all(|r| r.path != "/v1/chat/completions"));
}

#[tokio::test]
async fn openai_file_faults_are_reported_with_their_lines() {
    let fake = start(Vendor::OpenAi).await;
    let mut embed = chat_line("d", "gpt-test", "4");
    embed["url"] = json!("/v1/embeddings");
    let mut get = chat_line("e", "gpt-test", "5");
    get["method"] = json!("GET");
    let content = format!(
        "{}not json\n{}{}{}",
        file_of(&[chat_line("a", "gpt-test", "1")]),
        file_of(&[chat_line("a", "gpt-test", "2")]),
        file_of(&[embed]),
        file_of(&[get]),
    );
    let file = upload_as(&fake, "/v1/files", "batch", "in.jsonl", &content).await;
    assert_eq!(file.status, 200, "a bad file is accepted by the upload");
    let create = json!({"input_file_id": file.body["id"], "endpoint": "/v1/chat/completions",
                        "completion_window": "24h"});
    let id = send(&fake, Method::POST, "/v1/batches", Some(create)).await.body["id"].clone();
    let failed = poll(&fake, &format!("/v1/batches/{}", id.as_str().unwrap())).await;
    let found: Vec<(&str, u64)> = failed["errors"]["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["code"].as_str().unwrap(), e["line"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        found,
        [
            ("invalid_json_line", 2),
            ("duplicate_custom_id", 3),
            ("url_mismatch", 4),
            ("invalid_request", 5)
        ]
    );
}

#[tokio::test]
async fn openai_requests_are_checked_as_the_api_checks_them() {
    let fake = start(Vendor::OpenAi).await;
    let content = file_of(&[chat_line("a", "gpt-test", "1")]);
    let wrong = upload_as(&fake, "/v1/files", "fine-tune", "in.jsonl", &content).await;
    assert_eq!(wrong.status, 400);
    assert_eq!(wrong.body["error"]["type"], "invalid_request_error");
    assert_eq!(upload_as(&fake, "/v1/files", "batch", "in.json", &content).await.status, 400);
    let anonymous = send_as(
        &fake,
        &[],
        Method::POST,
        "/v1/batches",
        Some(("application/json", b"{}".to_vec())),
    )
    .await;
    assert_eq!(anonymous.status, 401);

    // The routes are served without `/v1` too, as chat completions are.
    let file = upload_as(&fake, "/files", "batch", "in.jsonl", &content).await;
    assert_eq!(file.status, 200);
    let meta_path = format!("/files/{}", file.body["id"].as_str().unwrap());
    assert_eq!(send(&fake, Method::GET, &meta_path, None).await.body, file.body);
    let create = |window: &str, endpoint: &str, file: &Value| json!({"input_file_id": file, "endpoint": endpoint, "completion_window": window});
    let chat = "/v1/chat/completions";
    let unknown =
        send(&fake, Method::POST, "/batches", Some(create("24h", chat, &json!("file-x"))));
    assert_eq!(unknown.await.status, 404);
    let window = send(&fake, Method::POST, "/batches", Some(create("1h", chat, &file.body["id"])));
    assert_eq!(window.await.status, 400);
    let endpoint = create("24h", "/v1/completions", &file.body["id"]);
    assert_eq!(send(&fake, Method::POST, "/batches", Some(endpoint)).await.status, 400);
    let ok = send(&fake, Method::POST, "/batches", Some(create("24h", chat, &file.body["id"])));
    assert_eq!(ok.await.status, 200);

    let missing = send(&fake, Method::GET, "/v1/batches/batch_nope", None).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.body["error"]["type"], "invalid_request_error");
    assert_eq!(send(&fake, Method::GET, "/v1/files/file-nope/content", None).await.status, 404);
    assert_eq!(fake.batch_creates(), 5);
    assert_eq!(fake.batch_ids().len(), 1);
}

#[tokio::test]
async fn openai_cancel_stops_a_held_batch_at_the_next_poll() {
    let fake = start(Vendor::OpenAi).await;
    fake.hold_batches(true);
    let id = openai_batch(&fake, &[chat_line("a", "gpt-test", "1")]).await["id"].clone();
    let path = format!("/v1/batches/{}", id.as_str().unwrap());
    for _ in 0..3 {
        assert_eq!(poll(&fake, &path).await["status"], "in_progress");
    }
    let cancelling = send(&fake, Method::POST, &format!("{path}/cancel"), None).await;
    assert_eq!(cancelling.body["status"], "cancelling");
    assert!(cancelling.body["cancelling_at"].is_u64());
    let cancelled = poll(&fake, &path).await;
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["output_file_id"], Value::Null);
    assert_eq!(cancelled["error_file_id"], Value::Null);
    assert_eq!(cancelled["request_counts"], json!({"total": 1, "completed": 0, "failed": 0}));
    assert_eq!(fake.batch_cancels(), 1);
    assert!(fake.received().iter().all(|r| r.path != "/v1/chat/completions"));

    // A completed batch cannot be cancelled.
    fake.hold_batches(false);
    fake.set_batch_polls(0);
    let id = openai_batch(&fake, &[chat_line("a", "gpt-test", "1")]).await["id"].clone();
    let path = format!("/v1/batches/{}", id.as_str().unwrap());
    assert_eq!(poll(&fake, &path).await["status"], "completed");
    assert_eq!(send(&fake, Method::POST, &format!("{path}/cancel"), None).await.status, 400);
}

#[tokio::test]
async fn openai_expired_batch_reports_the_lines_it_never_ran() {
    let fake = start(Vendor::OpenAi).await;
    fake.expire_batches_after(1);
    let lines = [
        chat_line("a", "gpt-test", "1"),
        chat_line("b", "gpt-test", "2"),
        chat_line("c", "gpt-test", "3"),
    ];
    let id = openai_batch(&fake, &lines).await["id"].clone();
    let path = format!("/v1/batches/{}", id.as_str().unwrap());
    poll(&fake, &path).await;
    let expired = poll(&fake, &path).await;
    assert_eq!(expired["status"], "expired");
    assert!(expired["expired_at"].is_u64());
    assert_eq!(expired["request_counts"], json!({"total": 3, "completed": 1, "failed": 2}));
    let out = file_lines(&fake, &expired["output_file_id"]).await;
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["custom_id"], "a");
    let errors = file_lines(&fake, &expired["error_file_id"]).await;
    let ids: Vec<&str> = errors.iter().map(|l| l["custom_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["c", "b"]);
    assert_eq!(errors[0]["response"], Value::Null);
    assert_eq!(errors[0]["error"]["code"], "batch_expired");
}

// ---------------------------------------------------------------------------
// Anthropic

fn message(id: &str, prompt: &str) -> Value {
    json!({"custom_id": id, "params": {"model": "claude-test", "max_tokens": 64,
                                       "messages": [{"role": "user", "content": prompt}]}})
}

async fn anthropic_batch(fake: &FakeUpstream, requests: &[Value]) -> Answer {
    send(fake, Method::POST, "/v1/messages/batches", Some(json!({"requests": requests}))).await
}

#[tokio::test]
async fn anthropic_batch_runs_each_request_through_messages() {
    let fake = start(Vendor::Anthropic).await;
    let mut bad = message("b-2", "two");
    bad["params"]["bogus"] = json!(1);
    let created =
        anthropic_batch(&fake, &[message("a_1", "one"), bad.clone(), message("c", "3")]).await;
    assert_eq!(created.status, 200, "{}", created.body);
    let batch = created.body;
    let id = batch["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("msgbatch_"));
    assert_eq!(batch["type"], "message_batch");
    assert_eq!(batch["processing_status"], "in_progress");
    assert_eq!(
        batch["request_counts"],
        json!({"processing": 3, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0})
    );
    assert_eq!(batch["results_url"], Value::Null);
    assert_eq!(batch["cancel_initiated_at"], Value::Null);
    assert!(batch["created_at"].as_str().unwrap().ends_with('Z'));

    let results = format!("/v1/messages/batches/{id}/results");
    let early = send(&fake, Method::GET, &results, None).await;
    assert_eq!(early.status, 400);
    assert_eq!(early.body["error"]["type"], "invalid_request_error");

    let ended = poll(&fake, &format!("/v1/messages/batches/{id}")).await;
    assert_eq!(ended["processing_status"], "ended");
    assert_eq!(
        ended["request_counts"],
        json!({"processing": 0, "succeeded": 2, "errored": 1, "canceled": 0, "expired": 0})
    );
    assert_eq!(ended["results_url"], format!("{}{results}", fake.base_url()));
    assert!(ended["ended_at"].is_string());

    let lines = jsonl(&send(&fake, Method::GET, &results, None).await.raw);
    let ids: Vec<&str> = lines.iter().map(|l| l["custom_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["c", "b-2", "a_1"]);
    assert_eq!(lines[2]["result"]["type"], "succeeded");
    assert_eq!(lines[2]["result"]["message"]["type"], "message");
    assert_eq!(lines[2]["result"]["message"]["content"][0]["text"], "echo: one");
    assert_eq!(lines[0]["result"]["message"]["content"][0]["text"], "echo: 3");
    assert_eq!(lines[1]["result"]["type"], "errored");
    // The error body as the handler gave it to a direct call.
    let direct = send(&fake, Method::POST, "/v1/messages", Some(bad["params"].clone())).await;
    assert_eq!(direct.status, 400);
    assert_eq!(lines[1]["result"]["error"], direct.body);
    assert_eq!(direct.body["error"]["type"], "invalid_request_error");

    let calls: Vec<_> = fake.received().into_iter().filter(|r| r.path == "/v1/messages").collect();
    assert_eq!(calls.len(), 4);
    assert_eq!(calls[0].body, message("a_1", "one")["params"]);
    assert_eq!(calls[0].header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(calls[0].header("anthropic-version"), Some("2023-06-01"));
}

#[tokio::test]
async fn anthropic_creation_checks_its_envelope_at_once() {
    let fake = start(Vendor::Anthropic).await;
    let mut streamed = message("s", "x");
    streamed["params"]["stream"] = json!(true);
    let long = "x".repeat(65);
    for requests in [
        vec![message("has space", "x")],
        vec![message(&long, "x")],
        vec![message("", "x")],
        vec![message("same", "x"), message("same", "y")],
        vec![streamed],
        vec![],
    ] {
        let refused = anthropic_batch(&fake, &requests).await;
        assert_eq!(refused.status, 400, "{requests:?}");
        assert_eq!(refused.body["type"], "error");
        assert_eq!(refused.body["error"]["type"], "invalid_request_error", "{}", refused.body);
    }
    let ok = anthropic_batch(&fake, &[message(&"x".repeat(64), "x")]).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    let body = Some((
        "application/json",
        json!({"requests": [message("a", "x")]}).to_string().into_bytes(),
    ));
    let keyless = [("anthropic-version", "2023-06-01")];
    let no_key = send_as(&fake, &keyless, Method::POST, "/v1/messages/batches", body.clone()).await;
    assert_eq!(no_key.status, 401);
    let unversioned = [("x-api-key", "k")];
    let no_version = send_as(&fake, &unversioned, Method::POST, "/v1/messages/batches", body).await;
    assert_eq!(no_version.status, 400);
    assert_eq!(fake.batch_creates(), 9);
    assert_eq!(fake.batch_ids().len(), 1);
    let missing = send(&fake, Method::GET, "/v1/messages/batches/msgbatch_nope", None).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.body["error"]["type"], "not_found_error");
}

#[tokio::test]
async fn anthropic_cancel_ends_a_held_batch_with_its_requests_canceled() {
    let fake = start(Vendor::Anthropic).await;
    fake.hold_batches(true);
    let batch = anthropic_batch(&fake, &[message("a", "1"), message("b", "2")]).await.body;
    let path = format!("/v1/messages/batches/{}", batch["id"].as_str().unwrap());
    assert_eq!(poll(&fake, &path).await["processing_status"], "in_progress");
    let canceling = send(&fake, Method::POST, &format!("{path}/cancel"), None).await.body;
    assert_eq!(canceling["processing_status"], "canceling");
    assert!(canceling["cancel_initiated_at"].is_string());
    let ended = poll(&fake, &path).await;
    assert_eq!(ended["processing_status"], "ended");
    assert_eq!(ended["request_counts"]["canceled"], 2);
    let lines = jsonl(&send(&fake, Method::GET, &format!("{path}/results"), None).await.raw);
    assert!(lines.iter().all(|l| l["result"] == json!({"type": "canceled"})), "{lines:?}");
    assert_eq!(fake.batch_cancels(), 1);
    assert!(fake.received().iter().all(|r| r.path != "/v1/messages"));
}

#[tokio::test]
async fn anthropic_expired_batch_ran_only_its_first_requests() {
    let fake = start(Vendor::Anthropic).await;
    fake.expire_batches_after(2);
    let requests = [message("a", "1"), message("b", "2"), message("c", "3")];
    let batch = anthropic_batch(&fake, &requests).await.body;
    let path = format!("/v1/messages/batches/{}", batch["id"].as_str().unwrap());
    let ended = poll(&fake, &path).await;
    assert_eq!(ended["processing_status"], "ended");
    assert_eq!(ended["request_counts"]["succeeded"], 2);
    assert_eq!(ended["request_counts"]["expired"], 1);
    let lines = jsonl(&send(&fake, Method::GET, &format!("{path}/results"), None).await.raw);
    let kinds: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| (l["custom_id"].as_str().unwrap(), l["result"]["type"].as_str().unwrap()))
        .collect();
    assert_eq!(kinds, [("c", "expired"), ("b", "succeeded"), ("a", "succeeded")]);
}

// ---------------------------------------------------------------------------
// Both

#[tokio::test]
async fn scripted_creation_failures_answer_in_the_vendors_shape() {
    let openai = start(Vendor::OpenAi).await;
    openai.fail_next_batch_creates(1, 503);
    let content = file_of(&[chat_line("a", "m", "1")]);
    let file = upload_as(&openai, "/v1/files", "batch", "in.jsonl", &content).await;
    let create = json!({"input_file_id": file.body["id"], "endpoint": "/v1/chat/completions",
                        "completion_window": "24h"});
    let failed = send(&openai, Method::POST, "/v1/batches", Some(create.clone())).await;
    assert_eq!(failed.status, 503);
    assert_eq!(failed.body["error"]["type"], "server_error");
    assert_eq!(send(&openai, Method::POST, "/v1/batches", Some(create)).await.status, 200);
    assert_eq!((openai.batch_creates(), openai.batch_ids().len()), (2, 1));

    let anthropic = start(Vendor::Anthropic).await;
    anthropic.fail_next_batch_creates(2, 429);
    for _ in 0..2 {
        let limited = anthropic_batch(&anthropic, &[message("a", "1")]).await;
        assert_eq!(limited.status, 429);
        assert_eq!(limited.body["error"]["type"], "rate_limit_error");
        assert_eq!(limited.headers["retry-after"], "0");
    }
    assert_eq!(anthropic_batch(&anthropic, &[message("a", "1")]).await.status, 200);
    assert_eq!((anthropic.batch_creates(), anthropic.batch_ids().len()), (3, 1));
}

#[tokio::test]
async fn batch_polls_set_how_long_a_batch_runs() {
    let anthropic = start(Vendor::Anthropic).await;
    anthropic.set_batch_polls(3);
    let batch = anthropic_batch(&anthropic, &[message("a", "1")]).await.body;
    let path = format!("/v1/messages/batches/{}", batch["id"].as_str().unwrap());
    for _ in 0..2 {
        assert_eq!(poll(&anthropic, &path).await["processing_status"], "in_progress");
    }
    assert_eq!(poll(&anthropic, &path).await["processing_status"], "ended");
    assert_eq!(anthropic.batch_status_polls(), 3);

    // Held, a batch waits whatever the polls; let go, the next poll runs it.
    let openai = start(Vendor::OpenAi).await;
    openai.hold_batches(true);
    let id = openai_batch(&openai, &[chat_line("a", "gpt-test", "1")]).await["id"].clone();
    let path = format!("/v1/batches/{}", id.as_str().unwrap());
    for _ in 0..4 {
        assert_eq!(poll(&openai, &path).await["status"], "in_progress");
    }
    openai.hold_batches(false);
    assert_eq!(poll(&openai, &path).await["status"], "completed");
}

#[tokio::test]
async fn only_openai_and_anthropic_fakes_have_batches() {
    let gemini = start(Vendor::Gemini).await;
    gemini.set_batch_polls(0);
    assert_eq!(gemini.batch_creates(), 0);
    assert!(gemini.batch_ids().is_empty());
    let azure = FakeUpstream::start_azure().await.unwrap();
    let answer = send(&azure, Method::POST, "/v1/batches", Some(json!({}))).await;
    assert_ne!(answer.status, 200, "{}", answer.body);
    assert_eq!(azure.batch_creates(), 0);
}
