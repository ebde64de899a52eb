//! Vertex AI's batch prediction and Cloud Storage on the Vertex Gemini fake,
//! driven over HTTP as the gateway drives them: upload, create, polls,
//! listing, download; each request answered by the fake's own
//! generateContent handler.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use switchyard_core::clock::UnixMs;
use switchyard_core::credentials::google::GoogleCredentials;

use crate::sigv4::uri_encode;
use crate::vertex::{PROJECT, service_account_json};
use crate::{FakeUpstream, Reply, Vendor};

const BUCKET: &str = "staging-bucket";
const INPUT: &str = "batches/job-1/input.jsonl";
const MODEL: &str = "gemini-2.5-flash";

/// A Vertex Gemini fake and a bearer header its `/token` granted.
struct Vertex {
    fake: FakeUpstream,
    auth: String,
}

struct Answer {
    status: u16,
    body: Value,
    raw: Vec<u8>,
}

async fn start() -> Vertex {
    // reqwest is built with `rustls-no-provider`: install one, even for http.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = FakeUpstream::start_vertex(Vendor::Gemini).await.unwrap();
    let token_uri = format!("{}/token", fake.base_url());
    let creds = GoogleCredentials::from_json(&service_account_json(&token_uri), "test").unwrap();
    let GoogleCredentials::ServiceAccount(account) = creds else { panic!("not a service account") };
    let assertion = account.assertion(UnixMs::now()).unwrap();
    let form = format!(
        "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion={}",
        assertion.expose()
    );
    let res = reqwest::Client::new().post(&token_uri).body(form).send().await.unwrap();
    let granted: Value = serde_json::from_slice(&res.bytes().await.unwrap()).unwrap();
    let auth = format!("Bearer {}", granted["access_token"].as_str().unwrap());
    Vertex { fake, auth }
}

impl Vertex {
    async fn send_as(
        &self,
        auth: Option<&str>,
        method: Method,
        path: &str,
        body: Option<(&str, Vec<u8>)>,
    ) -> Answer {
        let url = format!("{}{path}", self.fake.base_url());
        let mut req = reqwest::Client::new().request(method, url);
        if let Some(auth) = auth {
            req = req.header("authorization", auth);
        }
        if let Some((content_type, body)) = body {
            req = req.header("content-type", content_type).body(body);
        }
        let res = tokio::time::timeout(Duration::from_secs(10), req.send()).await.unwrap().unwrap();
        let status = res.status().as_u16();
        let raw = res.bytes().await.unwrap().to_vec();
        let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
        Answer { status, body, raw }
    }

    async fn send(&self, method: Method, path: &str, body: Option<Value>) -> Answer {
        let body = body.map(|b| ("application/json", b.to_string().into_bytes()));
        self.send_as(Some(&self.auth), method, path, body).await
    }

    /// Uploads `lines` as JSONL to `gs://BUCKET/{name}`.
    async fn upload(&self, name: &str, lines: &[Value]) -> Answer {
        let jsonl: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let path =
            format!("/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name={}", uri_encode(name));
        let body = Some(("application/jsonl", jsonl.into_bytes()));
        self.send_as(Some(&self.auth), Method::POST, &path, body).await
    }

    /// Creates a job reading `inputs` (object names in BUCKET): its answer.
    async fn create(&self, inputs: &[&str]) -> Answer {
        let uris: Vec<String> = inputs.iter().map(|o| format!("gs://{BUCKET}/{o}")).collect();
        let body = json!({
            "displayName": "switchyard-batch",
            "model": format!("publishers/google/models/{MODEL}"),
            "inputConfig": {"instancesFormat": "jsonl", "gcsSource": {"uris": uris}},
            "outputConfig": {"predictionsFormat": "jsonl",
                             "gcsDestination": {"outputUriPrefix": format!("gs://{BUCKET}/batches/job-1/output")}},
        });
        self.send(Method::POST, &jobs_path(), Some(body)).await
    }

    /// Creates a job of `lines` (uploaded first): its numeric id.
    async fn job(&self, lines: &[Value]) -> String {
        assert_eq!(self.upload(INPUT, lines).await.status, 200);
        let job = self.create(&[INPUT]).await;
        assert_eq!(job.status, 200, "{}", job.body);
        job.body["name"].as_str().unwrap().rsplit('/').next().unwrap().to_owned()
    }

    async fn poll(&self, id: &str) -> Value {
        let answer = self.send(Method::GET, &format!("{}/{id}", jobs_path()), None).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        answer.body
    }

    async fn cancel(&self, id: &str) -> Answer {
        self.send(Method::POST, &format!("{}/{id}:cancel", jobs_path()), None).await
    }

    /// The output lines of an ended job, found as the gateway finds them: the
    /// listing of its output directory, then each `.jsonl` object's bytes.
    async fn output(&self, job: &Value) -> Vec<Value> {
        let dir = job["outputInfo"]["gcsOutputDirectory"].as_str().unwrap();
        let object = dir.strip_prefix(&format!("gs://{BUCKET}/")).unwrap();
        let list = format!("/storage/v1/b/{BUCKET}/o?prefix={}", uri_encode(&format!("{object}/")));
        let listing = self.send(Method::GET, &list, None).await;
        assert_eq!(listing.status, 200, "{}", listing.body);
        assert_eq!(listing.body["kind"], "storage#objects");
        let mut lines = Vec::new();
        for item in listing.body["items"].as_array().unwrap() {
            let name = item["name"].as_str().unwrap();
            assert_eq!(name, format!("{object}/predictions.jsonl"));
            let path = format!("/storage/v1/b/{BUCKET}/o/{}?alt=media", uri_encode(name));
            let file = self.send(Method::GET, &path, None).await;
            assert_eq!(file.status, 200);
            let text = String::from_utf8(file.raw).unwrap();
            lines.extend(text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()));
        }
        lines
    }
}

fn jobs_path() -> String {
    format!("/v1/projects/{PROJECT}/locations/us-central1/batchPredictionJobs")
}

/// An input line asking `prompt`, labelled with the gateway's id.
fn line(id: &str, prompt: &str) -> Value {
    json!({"request": {"contents": [{"role": "user", "parts": [{"text": prompt}]}],
                       "labels": {"switchyard_line": id}}})
}

fn generate_path() -> String {
    format!(
        "/v1/projects/{PROJECT}/locations/us-central1/publishers/google/models/{MODEL}:generateContent"
    )
}

#[tokio::test]
async fn vertex_job_answers_every_line_through_generate_content_last_first() {
    let v = start().await;
    let lines = [line("line-0", "one"), line("line-1", "two"), line("line-2", "three")];
    let object = v.upload(INPUT, &lines).await;
    assert_eq!(object.status, 200, "{}", object.body);
    assert_eq!(object.body["kind"], "storage#object");
    assert_eq!(object.body["name"], INPUT);
    assert_eq!(object.body["bucket"], BUCKET);
    assert_eq!(object.body["id"], format!("{BUCKET}/{INPUT}/1"));
    assert_eq!(object.body["generation"], "1");
    assert_eq!(object.body["contentType"], "application/jsonl");
    let size: usize = lines.iter().map(|l| l.to_string().len() + 1).sum();
    assert_eq!(object.body["size"], size.to_string());
    // Its metadata and bytes read back.
    let meta = format!("/storage/v1/b/{BUCKET}/o/{}", uri_encode(INPUT));
    assert_eq!(v.send(Method::GET, &meta, None).await.body, object.body);
    let bytes = v.send(Method::GET, &format!("{meta}?alt=media"), None).await;
    assert_eq!(bytes.raw.len(), size);

    let job = v.create(&[INPUT]).await;
    assert_eq!(job.status, 200, "{}", job.body);
    let name = job.body["name"].as_str().unwrap();
    let id = name.rsplit('/').next().unwrap().to_owned();
    assert_eq!(name, format!("projects/{PROJECT}/locations/us-central1/batchPredictionJobs/{id}"));
    assert!(id.len() == 19 && id.bytes().all(|b| b.is_ascii_digit()), "{id}");
    assert_eq!(job.body["state"], "JOB_STATE_PENDING");
    assert_eq!(job.body["displayName"], "switchyard-batch");
    assert_eq!(job.body["model"], format!("publishers/google/models/{MODEL}"));
    assert_eq!(job.body["inputConfig"]["gcsSource"]["uris"][0], format!("gs://{BUCKET}/{INPUT}"));
    assert!(job.body["createTime"].as_str().unwrap().ends_with('Z'));
    assert_eq!(v.fake.batch_ids(), vec![id.clone()]);

    let running = v.poll(&id).await;
    assert_eq!(running["state"], "JOB_STATE_RUNNING");
    assert!(running.get("outputInfo").is_none());
    assert!(v.fake.received().iter().all(|r| r.path != generate_path()));
    let done = v.poll(&id).await;
    assert_eq!(done["state"], "JOB_STATE_SUCCEEDED", "{done}");
    assert_eq!(done["completionStats"], json!({"successfulCount": "3", "failedCount": "0"}));
    let dir = done["outputInfo"]["gcsOutputDirectory"].as_str().unwrap();
    let prefix = format!("gs://{BUCKET}/batches/job-1/output/prediction-model-");
    assert!(dir.starts_with(&prefix), "{dir}");

    let out = v.output(&done).await;
    let ids: Vec<&str> =
        out.iter().map(|l| l["request"]["labels"]["switchyard_line"].as_str().unwrap()).collect();
    assert_eq!(ids, ["line-2", "line-1", "line-0"]);
    for (answer, (prompt, sent)) in
        out.iter().zip(["three", "two", "one"].iter().zip(lines.iter().rev()))
    {
        assert_eq!(answer["status"], "");
        assert!(answer["processed_time"].as_str().unwrap().ends_with('Z'));
        assert_eq!(answer["request"], sent["request"]);
        let text = &answer["response"]["candidates"][0]["content"]["parts"][0]["text"];
        assert_eq!(text, &json!(format!("echo: {prompt}")), "{answer}");
    }
    let output_object = format!("{dir}/predictions.jsonl");
    assert_eq!(v.fake.gcs_objects(), vec![format!("gs://{BUCKET}/{INPUT}"), output_object]);

    // Each request reached the generation handler with the creation's token.
    let calls: Vec<_> =
        v.fake.received().into_iter().filter(|r| r.path == generate_path()).collect();
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[0].body, lines[0]["request"]);
    assert_eq!(calls[0].header("authorization"), Some(v.auth.as_str()));
    assert_eq!((v.fake.batch_creates(), v.fake.batch_status_polls()), (1, 2));
    // Polling an ended job changes nothing.
    assert_eq!(v.poll(&id).await["state"], "JOB_STATE_SUCCEEDED");
}

#[tokio::test]
async fn vertex_refused_and_malformed_lines_get_a_status_and_no_response() {
    let v = start().await;
    let mut bogus = line("line-1", "two");
    bogus["request"]["bogus"] = json!(true);
    let mut shouting = line("line-3", "four");
    shouting["request"]["labels"]["Upper"] = json!("x");
    let lines = [line("line-0", "one"), bogus.clone(), json!({"instance": 1}), shouting];
    v.fake.push(Reply::error(500, "boom"));
    v.fake.set_batch_polls(0);
    let id = v.job(&lines).await;
    let done = v.poll(&id).await;
    assert_eq!(done["state"], "JOB_STATE_SUCCEEDED", "{done}");
    assert_eq!(done["completionStats"], json!({"successfulCount": "0", "failedCount": "4"}));
    let out = v.output(&done).await;
    assert_eq!(out.len(), 4);
    assert!(out.iter().all(|l| l.get("response").is_none()), "{out:?}");
    // Last line first: the bad labels, the line with no request, the unknown
    // field, the scripted 500 (the refused lines took nothing from the script).
    assert!(out[0]["status"].as_str().unwrap().contains("Upper"), "{}", out[0]);
    assert!(out[1]["status"].as_str().unwrap().contains("no `request`"), "{}", out[1]);
    assert_eq!(out[1]["request"], json!({"instance": 1}));
    let unknown = out[2]["status"].as_str().unwrap();
    assert!(unknown.starts_with("Bad Request: "), "{unknown}");
    assert!(unknown.contains("Unknown name \\\"bogus\\\""), "{unknown}");
    assert_eq!(out[2]["request"], bogus["request"]);
    let boom = out[3]["status"].as_str().unwrap();
    assert!(boom.starts_with("Internal Server Error: ") && boom.contains("boom"), "{boom}");

    // The same body sent directly gets the same refusal.
    let direct = v.send(Method::POST, &generate_path(), Some(bogus["request"].clone())).await;
    assert_eq!(direct.status, 400);
    assert_eq!(unknown, format!("Bad Request: {}", direct.body));
    // Good labels pass a direct call.
    let labelled =
        v.send(Method::POST, &generate_path(), Some(line("x", "hi")["request"].clone())).await;
    assert_eq!(labelled.status, 200, "{}", labelled.body);
}

#[tokio::test]
async fn vertex_job_fails_at_its_first_poll_when_its_input_is_missing() {
    let v = start().await;
    let job = v.create(&["nowhere.jsonl"]).await;
    assert_eq!(job.status, 200, "{}", job.body);
    let id = job.body["name"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
    let failed = v.poll(&id).await;
    assert_eq!(failed["state"], "JOB_STATE_FAILED");
    assert_eq!(failed["error"]["code"], 5);
    assert!(failed["error"]["message"].as_str().unwrap().contains("nowhere.jsonl"), "{failed}");
    assert!(failed.get("outputInfo").is_none());
    assert!(v.fake.gcs_objects().is_empty());
    // Cancelling an ended job is refused; an unknown job is not found.
    let refused = v.cancel(&id).await;
    assert_eq!(refused.status, 400);
    assert_eq!(refused.body["error"]["status"], "FAILED_PRECONDITION");
    let missing = v.send(Method::GET, &format!("{}/123", jobs_path()), None).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.body["error"]["status"], "NOT_FOUND");
    // A job is not found from another location.
    let elsewhere =
        format!("/v1/projects/{PROJECT}/locations/europe-west4/batchPredictionJobs/{id}");
    assert_eq!(v.send(Method::GET, &elsewhere, None).await.status, 404);
    // A missing object downloads as GCS's 404.
    let absent = v
        .send(Method::GET, &format!("/storage/v1/b/{BUCKET}/o/nowhere.jsonl?alt=media"), None)
        .await;
    assert_eq!(absent.status, 404);
    assert_eq!(absent.body["error"]["errors"][0]["reason"], "notFound");
}

#[tokio::test]
async fn vertex_cancel_of_a_held_job_writes_no_output() {
    let v = start().await;
    v.fake.hold_batches(true);
    let id = v.job(&[line("line-0", "one"), line("line-1", "two")]).await;
    assert_eq!(v.poll(&id).await["state"], "JOB_STATE_RUNNING");
    assert_eq!(v.poll(&id).await["state"], "JOB_STATE_RUNNING");
    let cancel = v.cancel(&id).await;
    assert_eq!((cancel.status, cancel.body.clone()), (200, json!({})));
    assert_eq!(v.cancel(&id).await.status, 200);
    assert_eq!(v.fake.batch_cancels(), 2);
    // Cancelling until this poll, which ends it.
    let cancelled = v.poll(&id).await;
    assert_eq!(cancelled["state"], "JOB_STATE_CANCELLED");
    assert_eq!(cancelled["completionStats"]["successfulCount"], "0");
    assert_eq!(cancelled["completionStats"]["incompleteCount"], "2");
    assert_eq!(v.fake.gcs_objects(), vec![format!("gs://{BUCKET}/{INPUT}")]);
    assert!(v.fake.received().iter().all(|r| r.path != generate_path()));
}

#[tokio::test]
async fn vertex_expired_job_wrote_only_the_lines_it_ran() {
    let v = start().await;
    v.fake.expire_batches_after(1);
    let id = v.job(&[line("line-0", "one"), line("line-1", "two"), line("line-2", "three")]).await;
    v.poll(&id).await;
    let expired = v.poll(&id).await;
    assert_eq!(expired["state"], "JOB_STATE_EXPIRED");
    assert_eq!(expired["completionStats"]["successfulCount"], "1");
    assert_eq!(expired["completionStats"]["incompleteCount"], "2");
    let out = v.output(&expired).await;
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["request"]["labels"]["switchyard_line"], "line-0");
}

#[tokio::test]
async fn vertex_creation_is_checked_strictly_and_can_be_scripted_to_fail() {
    let v = start().await;
    let good = json!({
        "displayName": "d",
        "model": "publishers/google/models/gemini-2.5-flash",
        "inputConfig": {"instancesFormat": "jsonl", "gcsSource": {"uris": ["gs://b1x/in.jsonl"]}},
        "outputConfig": {"predictionsFormat": "jsonl", "gcsDestination": {"outputUriPrefix": "gs://b1x"}},
    });
    let mut cases = Vec::new();
    let mut extra = good.clone();
    extra["priority"] = json!(1);
    cases.push((extra, "Unknown name \"priority\""));
    let mut model = good.clone();
    model["model"] = json!("gemini-2.5-flash");
    cases.push((model, "publishers/google/models/"));
    let mut format = good.clone();
    format["inputConfig"]["instancesFormat"] = json!("csv");
    cases.push((format, "instances_format"));
    let mut out_format = good.clone();
    out_format["outputConfig"]["predictionsFormat"] = json!("bigquery");
    cases.push((out_format, "predictions_format"));
    let mut uri = good.clone();
    uri["inputConfig"]["gcsSource"]["uris"] = json!(["s3://b/in.jsonl"]);
    cases.push((uri, "s3://"));
    for (body, wanted) in cases {
        let answer = v.send(Method::POST, &jobs_path(), Some(body)).await;
        assert_eq!(answer.status, 400, "{}", answer.body);
        assert_eq!(answer.body["error"]["status"], "INVALID_ARGUMENT");
        let message = answer.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(wanted), "{message} lacks {wanted}");
    }
    v.fake.fail_next_batch_creates(1, 429);
    let throttled = v.send(Method::POST, &jobs_path(), Some(good.clone())).await;
    assert_eq!(throttled.status, 429);
    assert_eq!(throttled.body["error"]["status"], "RESOURCE_EXHAUSTED");
    assert_eq!(v.send(Method::POST, &jobs_path(), Some(good)).await.status, 200);
    assert_eq!(v.fake.batch_creates(), 7);
    assert_eq!(v.fake.batch_ids().len(), 1);
}

#[tokio::test]
async fn vertex_and_storage_routes_need_the_fakes_token() {
    let v = start().await;
    let upload = format!("/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name=x");
    let storage = v.send_as(None, Method::POST, &upload, Some(("text/plain", b"x".to_vec()))).await;
    assert_eq!(storage.status, 401);
    assert_eq!(storage.body["error"]["errors"][0]["reason"], "authError");
    let jobs = v.send_as(Some("Bearer nope"), Method::POST, &jobs_path(), None).await;
    assert_eq!(jobs.status, 401);
    assert_eq!(jobs.body["error"]["status"], "UNAUTHENTICATED");
    assert_eq!(v.fake.batch_creates(), 1);
    assert!(v.fake.gcs_objects().is_empty());

    // Cloud Storage's own refusals.
    let resumable = format!("/upload/storage/v1/b/{BUCKET}/o?uploadType=resumable&name=x");
    let answer =
        v.send_as(Some(&v.auth), Method::POST, &resumable, Some(("text/plain", vec![]))).await;
    assert_eq!(answer.status, 400);
    assert_eq!(answer.body["error"]["code"], 400);
    let nameless = format!("/upload/storage/v1/b/{BUCKET}/o?uploadType=media");
    let answer =
        v.send_as(Some(&v.auth), Method::POST, &nameless, Some(("text/plain", vec![]))).await;
    assert_eq!(answer.status, 400);
    assert_eq!(answer.body["error"]["errors"][0]["reason"], "required");
    // A listing with nothing under the prefix has no `items`.
    let empty = v.send(Method::GET, &format!("/storage/v1/b/{BUCKET}/o?prefix=none/"), None).await;
    assert_eq!(empty.body, json!({"kind": "storage#objects"}));
    // Names are listed in order, and only under the prefix.
    for name in ["p/b", "p/a", "q/c"] {
        let path =
            format!("/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name={}", uri_encode(name));
        let body = Some(("text/plain", name.as_bytes().to_vec()));
        assert_eq!(v.send_as(Some(&v.auth), Method::POST, &path, body).await.status, 200);
    }
    let listing = v.send(Method::GET, &format!("/storage/v1/b/{BUCKET}/o?prefix=p%2F"), None).await;
    let names: Vec<&str> = listing.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["p/a", "p/b"]);
    let text =
        v.send(Method::GET, &format!("/storage/v1/b/{BUCKET}/o/p%2Fa?alt=media"), None).await;
    assert_eq!(text.raw, b"p/a");
}
