//! Bedrock batch inference and S3 on the Bedrock fake, driven over HTTP as the
//! gateway drives them, every request signed with the gateway's own SigV4
//! signer: put the input, create, polls, read the output; each record answered
//! by the fake's own InvokeModel handler.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use reqwest::Method;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use switchyard_core::credentials::aws::{AwsCredentials, sign};

use crate::bedrock::{self, BedrockAuth};
use crate::sigv4::uri_encode;
use crate::{FakeUpstream, Reply};

const BUCKET: &str = "sy-batches";
const INPUT: &str = "runs/job-1/input.jsonl";
const OUTPUT: &str = "s3://sy-batches/runs/job-1/output/";
const MODEL: &str = "anthropic.claude-3-5-haiku-20241022-v1:0";
const ROLE: &str = "arn:aws:iam::123456789012:role/BedrockBatch";

struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Value,
    raw: Vec<u8>,
}

impl Answer {
    fn error_type(&self) -> &str {
        self.headers.get("x-amzn-errortype").and_then(|v| v.to_str().ok()).unwrap_or_default()
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.raw).into_owned()
    }
}

/// How a request is signed (or not).
#[derive(Clone, Copy)]
enum Auth<'a> {
    /// SigV4 with the fake's default key pair, for this service.
    SigV4(&'a str),
    /// SigV4 with another secret.
    WrongSecret(&'a str),
    /// SigV4 for S3, sent without its `x-amz-content-sha256`.
    Unhashed,
    Bearer(&'a str),
    None,
}

async fn start() -> FakeUpstream {
    // reqwest is built with `rustls-no-provider`: install one, even for http.
    let _ = rustls::crypto::ring::default_provider().install_default();
    FakeUpstream::start_bedrock(BedrockAuth::default()).await.unwrap()
}

async fn send(
    fake: &FakeUpstream,
    auth: Auth<'_>,
    method: Method,
    path: &str,
    body: Vec<u8>,
) -> Answer {
    let url = format!("{}{path}", fake.base_url());
    let hash: String = Sha256::digest(&body).iter().map(|b| format!("{b:02x}")).collect();
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut signed = |service: &str, secret: &str, extra: &[(&str, &str)]| {
        let creds = AwsCredentials::new(bedrock::ACCESS_KEY_ID, secret, None);
        let time = SystemTime::now();
        let out = sign(method.as_str(), &url, extra, &body, &creds, bedrock::REGION, service, time);
        let out = out.unwrap();
        // The signer hands back `x-amz-content-sha256` itself, not `content-type`.
        let missing: Vec<_> =
            extra.iter().filter(|(k, _)| out.iter().all(|(o, _)| o != k)).collect();
        headers.extend(out.iter().cloned());
        headers.extend(missing.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    };
    let hashed = [("x-amz-content-sha256", hash.as_str())];
    let typed = [("content-type", "application/json")];
    match auth {
        Auth::SigV4("s3") => signed("s3", bedrock::SECRET_ACCESS_KEY, &hashed),
        Auth::SigV4(service) => signed(service, bedrock::SECRET_ACCESS_KEY, &typed),
        Auth::WrongSecret(service) => signed(service, "not-the-secret", &hashed),
        Auth::Unhashed => {
            signed("s3", bedrock::SECRET_ACCESS_KEY, &hashed);
            headers.retain(|(k, _)| k != "x-amz-content-sha256");
        }
        Auth::Bearer(key) => headers.push(("authorization".into(), format!("Bearer {key}"))),
        Auth::None => {}
    }
    let mut req = reqwest::Client::new().request(method, url).body(body);
    for (k, v) in headers {
        req = req.header(k, v);
    }
    let res = tokio::time::timeout(Duration::from_secs(20), req.send()).await.unwrap().unwrap();
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let raw = res.bytes().await.unwrap().to_vec();
    let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    Answer { status, headers, body, raw }
}

/// A Claude InvokeModel body saying `text`.
fn claude(text: &str) -> Value {
    json!({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64,
           "messages": [{"role": "user", "content": text}]})
}

/// `n` records `R0000000000`… saying `record {i}`.
fn records(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"recordId": format!("R{i:010}"), "modelInput": claude(&format!("record {i}"))}))
        .collect()
}

async fn put(fake: &FakeUpstream, key: &str, lines: &[Value]) -> Answer {
    let jsonl: String = lines.iter().map(|l| format!("{l}\n")).collect();
    send(fake, Auth::SigV4("s3"), Method::PUT, &format!("/{BUCKET}/{key}"), jsonl.into_bytes())
        .await
}

async fn get(fake: &FakeUpstream, key: &str) -> Answer {
    send(fake, Auth::SigV4("s3"), Method::GET, &format!("/{BUCKET}/{key}"), Vec::new()).await
}

fn job_body(name: &str) -> Value {
    json!({
        "jobName": name,
        "roleArn": ROLE,
        "modelId": MODEL,
        "inputDataConfig": {"s3InputDataConfig": {"s3Uri": format!("s3://{BUCKET}/{INPUT}"),
                                                  "s3InputFormat": "JSONL"}},
        "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": OUTPUT}},
    })
}

async fn create(fake: &FakeUpstream, body: &Value) -> Answer {
    let bytes = body.to_string().into_bytes();
    send(fake, Auth::SigV4("bedrock"), Method::POST, "/model-invocation-job", bytes).await
}

/// Puts `lines` as the input and creates a job of it: its id.
async fn job(fake: &FakeUpstream, lines: &[Value]) -> String {
    assert_eq!(put(fake, INPUT, lines).await.status, 200);
    let created = create(fake, &job_body("switchyard-batch-1")).await;
    assert_eq!(created.status, 200, "{}", created.text());
    created.body["jobArn"].as_str().unwrap().rsplit('/').next().unwrap().to_owned()
}

async fn poll(fake: &FakeUpstream, ident: &str) -> Value {
    let path = format!("/model-invocation-job/{}", uri_encode(ident));
    let answer = send(fake, Auth::SigV4("bedrock"), Method::GET, &path, Vec::new()).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    answer.body
}

/// Polls until the job has a status outside `Submitted`…`InProgress`: it.
async fn finish(fake: &FakeUpstream, id: &str) -> Value {
    for _ in 0..10 {
        let job = poll(fake, id).await;
        if !["Submitted", "Validating", "InProgress"].contains(&job["status"].as_str().unwrap()) {
            return job;
        }
    }
    panic!("job {id} did not end in 10 polls");
}

async fn stop(fake: &FakeUpstream, id: &str) -> Answer {
    let path = format!("/model-invocation-job/{id}/stop");
    send(fake, Auth::SigV4("bedrock"), Method::POST, &path, Vec::new()).await
}

/// The output's lines, parsed, in file order.
async fn output(fake: &FakeUpstream, id: &str, file: &str) -> Vec<Value> {
    let answer = get(fake, &format!("runs/job-1/output/{id}/{file}")).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    answer
        .raw
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

#[tokio::test]
async fn bedrock_job_runs_every_record_through_invoke_model_last_first() {
    let fake = start().await;
    let mut lines = records(120);
    // One record InvokeModel refuses, one with no recordId.
    lines[5]["modelInput"]["stream"] = json!(true);
    lines[7].as_object_mut().unwrap().remove("recordId");
    let id = job(&fake, &lines).await;
    assert_eq!(id.len(), 12);
    assert!(id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()), "{id}");
    let arn = format!("arn:aws:bedrock:{}:123456789012:model-invocation-job/{id}", bedrock::REGION);

    let first = poll(&fake, &id).await;
    assert_eq!(
        (first["status"].as_str(), first["jobArn"].as_str()),
        (Some("Validating"), Some(arn.as_str()))
    );
    assert_eq!(first["jobName"], "switchyard-batch-1");
    assert_eq!(first["inputDataConfig"], job_body("x")["inputDataConfig"]);
    assert!(first.get("endTime").is_none(), "{first}");
    // By ARN, percent-encoded, as well as by id.
    assert_eq!(poll(&fake, &arn).await["status"], "InProgress");
    let done = poll(&fake, &id).await;
    assert_eq!(done["status"], "PartiallyCompleted", "{done}");
    assert!(done["endTime"].is_string() && done["submitTime"].is_string(), "{done}");

    let out = output(&fake, &id, "input.jsonl.out").await;
    assert_eq!(out.len(), 120);
    assert_eq!(out[0]["recordId"], "R0000000119", "last record first");
    assert_eq!(out[119]["recordId"], "R0000000000");
    let by_id: HashMap<&str, &Value> =
        out.iter().map(|l| (l["recordId"].as_str().unwrap(), l)).collect();
    assert_eq!(by_id.len(), 120, "record ids are unique");
    let answered = by_id["R0000000003"];
    assert_eq!(answered["modelInput"], claude("record 3"));
    assert_eq!(answered["modelOutput"]["content"][0]["text"], "echo: record 3", "{answered}");
    let refused = by_id["R0000000005"];
    assert_eq!(refused["error"]["errorCode"], 400);
    assert!(refused["error"]["errorMessage"].as_str().unwrap().contains("stream"), "{refused}");
    assert!(refused.get("modelOutput").is_none());
    let generated = out.iter().find(|l| l["modelInput"] == claude("record 7")).unwrap();
    let generated_id = generated["recordId"].as_str().unwrap();
    assert!(generated_id.len() == 11 && generated_id.bytes().all(|b| b.is_ascii_alphanumeric()));

    let manifest = output(&fake, &id, "manifest.json.out").await;
    assert_eq!(manifest[0]["totalRecordCount"], 120);
    assert_eq!(manifest[0]["processedRecordCount"], 120);
    assert_eq!(
        (manifest[0]["successRecordCount"].as_u64(), manifest[0]["errorRecordCount"].as_u64()),
        (Some(119), Some(1))
    );
    assert!(manifest[0]["inputTokenCount"].as_u64().unwrap() > 0, "{manifest:?}");

    // Each record is a direct InvokeModel to the fake, signed by the creation.
    let invokes: Vec<_> =
        fake.received().into_iter().filter(|r| r.path.ends_with("/invoke")).collect();
    assert_eq!(invokes.len(), 120);
    assert_eq!(invokes[0].path, "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/invoke");
    assert_eq!(invokes[0].bedrock_model().as_deref(), Some(MODEL));
    assert_eq!(invokes[0].body, claude("record 0"));
    assert!(invokes[0].header("authorization").unwrap().contains("/bedrock/aws4_request"));

    assert_eq!((fake.batch_creates(), fake.batch_status_polls()), (1, 3));
    assert_eq!(fake.batch_ids(), vec![id.clone()]);
    let base = format!("s3://{BUCKET}/runs/job-1");
    assert_eq!(
        fake.s3_objects(),
        vec![
            format!("{base}/input.jsonl"),
            format!("{base}/output/{id}/input.jsonl.out"),
            format!("{base}/output/{id}/manifest.json.out"),
        ]
    );
}

#[tokio::test]
async fn bedrock_job_with_every_record_answered_completes_and_takes_the_script() {
    let fake = start().await;
    fake.set_batch_polls(0);
    fake.push(Reply::error(429, "Too many tokens, please wait."));
    let id = job(&fake, &records(100)).await;
    assert_eq!(poll(&fake, &id).await["status"], "Validating");
    // Zero polls in progress: the records run at the poll that reads the input.
    let done = poll(&fake, &id).await;
    assert_eq!(done["status"], "PartiallyCompleted", "{done}");
    let out = output(&fake, &id, "input.jsonl.out").await;
    let first = out.iter().find(|l| l["recordId"] == "R0000000000").unwrap();
    assert_eq!(first["error"]["errorCode"], 429, "{first}");
    assert_eq!(out.iter().filter(|l| l.get("modelOutput").is_some()).count(), 99);

    let fake = start().await;
    let id = job(&fake, &records(100)).await;
    assert_eq!(finish(&fake, &id).await["status"], "Completed");
}

#[tokio::test]
async fn bedrock_job_fails_with_too_few_records_or_no_input() {
    let fake = start().await;
    let id = job(&fake, &records(99)).await;
    let failed = finish(&fake, &id).await;
    assert_eq!(failed["status"], "Failed");
    assert!(failed["message"].as_str().unwrap().contains("minimum number of records"), "{failed}");
    assert_eq!(fake.s3_objects(), vec![format!("s3://{BUCKET}/{INPUT}")], "no output");
    assert!(fake.received().iter().all(|r| !r.path.ends_with("/invoke")));

    let fake = start().await;
    let created = create(&fake, &job_body("no-input")).await;
    assert_eq!(created.status, 200);
    let id = fake.batch_ids()[0].clone();
    let failed = finish(&fake, &id).await;
    assert_eq!(failed["status"], "Failed");
    assert!(failed["message"].as_str().unwrap().contains("does not exist"), "{failed}");
}

#[tokio::test]
async fn s3_takes_only_sigv4_for_s3_with_the_payload_hash() {
    let fake = start().await;
    let path = format!("/{BUCKET}/a/b.jsonl");
    let body = b"{}\n".to_vec();
    let put = send(&fake, Auth::SigV4("s3"), Method::PUT, &path, body.clone()).await;
    assert_eq!(put.status, 200, "{}", put.text());
    let etag = put.headers["etag"].to_str().unwrap().to_owned();
    assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
    let got = send(&fake, Auth::SigV4("s3"), Method::GET, &path, Vec::new()).await;
    assert_eq!((got.status, got.raw.as_slice()), (200, body.as_slice()));
    assert_eq!(got.headers["etag"].to_str().unwrap(), etag);

    for (auth, code) in [
        (Auth::None, "AccessDenied"),
        (Auth::Bearer(bedrock::API_KEY), "AccessDenied"),
        (Auth::SigV4("bedrock"), "SignatureDoesNotMatch"),
        (Auth::WrongSecret("s3"), "SignatureDoesNotMatch"),
        (Auth::Unhashed, "SignatureDoesNotMatch"),
    ] {
        let refused = send(&fake, auth, Method::PUT, &path, body.clone()).await;
        assert_eq!(refused.status, 403, "{code}: {}", refused.text());
        assert!(
            refused.text().contains(&format!("<Error><Code>{code}</Code>")),
            "{}",
            refused.text()
        );
        assert_eq!(refused.headers["content-type"], "application/xml");
    }
    // S3 signs the path as sent (`%24` stays `%24`; other services sign
    // `%2524`): the gateway's signer and the fake's verifier agree on it.
    let odd = format!("/{BUCKET}/a/x%24y");
    let put = send(&fake, Auth::SigV4("s3"), Method::PUT, &odd, body).await;
    assert_eq!(put.status, 200, "{}", put.text());

    let missing = get(&fake, "a/none.jsonl").await;
    assert_eq!(missing.status, 404);
    assert!(missing.text().contains("<Code>NoSuchKey</Code>"), "{}", missing.text());
    let objects = vec![format!("s3://{BUCKET}/a/b.jsonl"), format!("s3://{BUCKET}/a/x$y")];
    assert_eq!(fake.s3_objects(), objects);
    assert_eq!(fake.batch_creates(), 0, "S3 calls are not creations");
}

#[tokio::test]
async fn control_plane_takes_bedrock_sigv4_or_the_api_key() {
    let fake = start().await;
    let body = job_body("auth-check").to_string().into_bytes();
    let path = "/model-invocation-job";
    for (auth, kind) in [
        (Auth::None, "MissingAuthenticationTokenException"),
        (Auth::SigV4("s3"), "InvalidSignatureException"),
        (Auth::WrongSecret("bedrock"), "InvalidSignatureException"),
        (Auth::Bearer("ABSKwrong"), "UnrecognizedClientException"),
    ] {
        let refused = send(&fake, auth, Method::POST, path, body.clone()).await;
        assert_eq!((refused.status, refused.error_type()), (403, kind), "{}", refused.text());
    }
    assert!(fake.batch_ids().is_empty());
    let keyed = send(&fake, Auth::Bearer(bedrock::API_KEY), Method::POST, path, body.clone()).await;
    assert_eq!(keyed.status, 200, "{}", keyed.text());
    // The records of a job created with the API key run under it too.
    let id = fake.batch_ids()[0].clone();
    let status = format!("{path}/{id}");
    let polled =
        send(&fake, Auth::Bearer(bedrock::API_KEY), Method::GET, &status, Vec::new()).await;
    assert_eq!(polled.body["status"], "Validating");

    // A fake without an API key refuses it on the control plane.
    let strict = FakeUpstream::start_bedrock(BedrockAuth::sigv4(
        bedrock::ACCESS_KEY_ID,
        bedrock::SECRET_ACCESS_KEY,
        bedrock::REGION,
    ))
    .await
    .unwrap();
    let refused = send(&strict, Auth::Bearer(bedrock::API_KEY), Method::POST, path, body).await;
    assert_eq!(refused.status, 403);
    let unknown = send(
        &fake,
        Auth::SigV4("bedrock"),
        Method::GET,
        &format!("{path}/nosuchjob000"),
        Vec::new(),
    )
    .await;
    assert_eq!((unknown.status, unknown.error_type()), (404, "ResourceNotFoundException"));
}

#[tokio::test]
async fn bedrock_creation_is_checked_strictly_and_idempotent_by_token() {
    let fake = start().await;
    let refusals = [
        ("jobName", json!("-starts-with-a-dash")),
        ("jobName", json!("under_score")),
        ("jobName", json!("x".repeat(64))),
        ("roleArn", json!("arn:aws:iam::123:role/x")),
        ("roleArn", json!("role/BedrockBatch")),
        ("timeoutDurationInHours", json!(12)),
        ("vpcConfig", json!({})),
        ("unknownField", json!(1)),
    ];
    let refused_count = refusals.len();
    for (field, value) in refusals {
        let mut body = job_body("checked");
        body[field] = value;
        let refused = create(&fake, &body).await;
        assert_eq!((refused.status, refused.error_type()), (400, "ValidationException"), "{field}");
        assert!(refused.body["message"].as_str().unwrap().contains(field), "{}", refused.text());
    }
    let mut no_output = job_body("checked");
    no_output["outputDataConfig"] = json!({"s3OutputDataConfig": {"s3Uri": "gs://b/x"}});
    assert_eq!(create(&fake, &no_output).await.status, 400);
    for ok_arn in [ROLE, "arn:aws-us-gov:iam::123456789012:role/path/to/R", "arn:aws:iam:::role/r"]
    {
        let mut body = job_body("checked");
        body["roleArn"] = json!(ok_arn);
        assert_eq!(create(&fake, &body).await.status, 200, "{ok_arn}");
    }
    assert_eq!(fake.batch_ids().len(), 3);

    let mut body = job_body("idempotent");
    body["clientRequestToken"] = json!("switchyard-batch-1");
    let first = create(&fake, &body).await;
    let again = create(&fake, &body).await;
    assert_eq!(first.status, 200);
    assert_eq!(again.body["jobArn"], first.body["jobArn"]);
    assert_eq!(fake.batch_ids().len(), 4, "the same job");
    assert_eq!(fake.batch_creates(), refused_count + 1 + 3 + 2);
    let id = fake.batch_ids()[3].clone();
    assert_eq!(poll(&fake, &id).await["clientRequestToken"], "switchyard-batch-1");
}

#[tokio::test]
async fn bedrock_stop_of_a_held_job_writes_no_output() {
    let fake = start().await;
    fake.hold_batches(true);
    let id = job(&fake, &records(100)).await;
    for _ in 0..4 {
        poll(&fake, &id).await;
    }
    assert_eq!(poll(&fake, &id).await["status"], "InProgress");
    let stopped = stop(&fake, &id).await;
    assert_eq!((stopped.status, &stopped.body), (200, &json!({})));
    let stopped = poll(&fake, &id).await;
    assert_eq!(stopped["status"], "Stopped");
    assert!(stopped["endTime"].is_string());
    assert_eq!(stop(&fake, &id).await.status, 200, "stopping a stopped job is a no-op");
    assert_eq!(fake.batch_cancels(), 2);
    assert_eq!(fake.s3_objects(), vec![format!("s3://{BUCKET}/{INPUT}")]);
    assert!(fake.received().iter().all(|r| !r.path.ends_with("/invoke")));

    // A job that ended otherwise cannot be stopped.
    fake.hold_batches(false);
    let done = job(&fake, &records(100)).await;
    assert_eq!(finish(&fake, &done).await["status"], "Completed");
    let refused = stop(&fake, &done).await;
    assert_eq!((refused.status, refused.error_type()), (400, "ValidationException"));
}

#[tokio::test]
async fn bedrock_expired_job_wrote_only_the_records_it_ran() {
    let fake = start().await;
    fake.expire_batches_after(3);
    let id = job(&fake, &records(100)).await;
    assert_eq!(finish(&fake, &id).await["status"], "Expired");
    let out = output(&fake, &id, "input.jsonl.out").await;
    let ids: Vec<_> = out.iter().map(|l| l["recordId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["R0000000002", "R0000000001", "R0000000000"]);
    let manifest = output(&fake, &id, "manifest.json.out").await;
    assert_eq!(
        (manifest[0]["totalRecordCount"].as_u64(), manifest[0]["processedRecordCount"].as_u64()),
        (Some(100), Some(3))
    );
}

#[tokio::test]
async fn bedrock_creation_can_be_scripted_to_fail() {
    let fake = start().await;
    assert_eq!(put(&fake, INPUT, &records(100)).await.status, 200);
    for (status, kind) in [
        (429, "ThrottlingException"),
        (503, "InternalServerException"),
        (409, "ValidationException"),
    ] {
        fake.fail_next_batch_creates(1, status);
        let refused = create(&fake, &job_body("scripted")).await;
        assert_eq!((refused.status, refused.error_type()), (status, kind), "{}", refused.text());
        assert!(refused.body["message"].is_string());
    }
    assert!(fake.batch_ids().is_empty());
    assert_eq!(create(&fake, &job_body("scripted")).await.status, 200);
    assert_eq!((fake.batch_creates(), fake.batch_ids().len()), (4, 1));
}

#[tokio::test]
async fn bedrock_malformed_lines_error_without_running() {
    let fake = start().await;
    let mut lines = records(100);
    lines.push(json!({"recordId": "short", "modelInput": claude("short id")}));
    lines.push(json!({"recordId": "R0000000001", "modelInput": claude("repeated")}));
    lines.push(json!({"recordId": "X0000000001"}));
    let mut jsonl: String = lines.iter().map(|l| format!("{l}\n")).collect();
    jsonl.push_str("not json\n\n");
    let key = format!("/{BUCKET}/{INPUT}");
    assert_eq!(
        send(&fake, Auth::SigV4("s3"), Method::PUT, &key, jsonl.into_bytes()).await.status,
        200
    );
    assert_eq!(create(&fake, &job_body("malformed")).await.status, 200);
    let id = fake.batch_ids()[0].clone();
    assert_eq!(finish(&fake, &id).await["status"], "PartiallyCompleted");

    let out = output(&fake, &id, "input.jsonl.out").await;
    assert_eq!(out.len(), 104, "the blank line is no record");
    let message = |l: &Value| l["error"]["errorMessage"].as_str().unwrap_or_default().to_owned();
    assert!(message(&out[0]).contains("not valid JSON"), "{}", out[0]);
    assert_eq!(out[0]["modelInput"], "not json");
    assert!(message(&out[1]).contains("modelInput"), "{}", out[1]);
    assert!(message(&out[2]).contains("repeated"), "{}", out[2]);
    assert!(message(&out[3]).contains("11-character"), "{}", out[3]);
    assert_eq!(
        (out[3]["recordId"].as_str(), out[3]["error"]["errorCode"].as_u64()),
        (Some("short"), Some(400))
    );
    let invokes = fake.received().into_iter().filter(|r| r.path.ends_with("/invoke")).count();
    assert_eq!(invokes, 100, "only the well-formed records ran");
}
