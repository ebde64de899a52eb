//! Media jobs, black-box: `POST /v1/jobs` onto fal's queue, whose fake moves
//! a job through `IN_QUEUE`, `IN_PROGRESS` and `COMPLETED` one status poll at
//! a time and answers as fal does (the app's id, not the model's sub-path,
//! in the request URLs; `Authorization: Key`). A job is submitted with the
//! route's failover, then followed by the gateway's poller until it ends;
//! only then is it metered, per second of media and per job, and recorded.
//! A cancel reaches the queue, a vanished provider fails the job after a
//! bounded number of polls, and a job is its submitter's alone.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use serde_json::{Value, json};
use switchyard_testkit::FakeFal;

const FAL_KEY: &str = "fal-test-key-0123456789";
const OTHER_KEY: &str = "sk-gw-other-0123456789abcdef";
const KLING: &str = "fal-ai/kling-video/v2.1/standard/text-to-video";

struct Setup {
    h: Harness,
    fal: FakeFal,
    spare: FakeFal,
}

async fn start(gateway_jobs: &str) -> Setup {
    let fal = FakeFal::start(FAL_KEY).await.unwrap();
    let spare = FakeFal::start(FAL_KEY).await.unwrap();
    let providers_extra = format!(
        r#"  fal: {{ wire: fal, endpoint: "{}", credentials: {{ keys: ["{FAL_KEY}"] }} }}
  fal-spare: {{ wire: fal, endpoint: "{}", credentials: {{ keys: ["{FAL_KEY}"] }} }}
"#,
        fal.url(),
        spare.url()
    );
    let extra_models = format!(
        r#"  - id: clips
    kind: media
    deployments: [{{ provider: fal, model: {KLING} }}]
    pricing: {{ per_second: 0.05, per_job: 0.1 }}
  - id: clips-spare-first
    kind: media
    deployments: [{{ provider: fal-spare, model: {KLING} }}, {{ provider: fal, model: {KLING} }}]
    pricing: {{ per_second: 0.05 }}
  - id: pictures
    kind: media
    deployments: [{{ provider: fal, model: fal-ai/flux/dev }}]
    pricing: {{ per_job: 0.025 }}
  - id: mock-clips
    kind: media
    deployments: [{{ provider: mock }}]
    pricing: {{ per_second: 0.01 }}
"#
    );
    let h = Harness::start_with(Options {
        providers_extra,
        extra_models,
        gateway_extra: format!("  jobs: {{ poll_interval_ms: 10{gateway_jobs} }}"),
        extra_keys: vec![OTHER_KEY.to_owned()],
        ..Options::default()
    })
    .await;
    Setup { h, fal, spare }
}

async fn call(
    h: &Harness,
    method: reqwest::Method,
    key: &str,
    path: &str,
    body: Option<&Value>,
) -> (u16, Value, String) {
    let mut req = h.client.request(method, format!("{}{path}", h.base)).bearer_auth(key);
    if let Some(body) = body {
        req = req.json(body);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let request_id = r
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let json = r.json().await.unwrap_or(Value::Null);
    (status, json, request_id)
}

async fn submit(h: &Harness, body: Value) -> (u16, Value, String) {
    call(h, reqwest::Method::POST, GATEWAY_KEY, "/v1/jobs", Some(&body)).await
}

/// The job once it has ended: its record is written then, after the end is
/// stored.
async fn until_ended(h: &Harness, request_id: &str, id: &str) -> Value {
    tokio::time::timeout(WAIT, h.sink.wait_for(request_id)).await.expect("the job ended");
    let (status, job, _) =
        call(h, reqwest::Method::GET, GATEWAY_KEY, &format!("/v1/jobs/{id}"), None).await;
    assert_eq!(status, 200, "{job}");
    assert!(matches!(job["status"].as_str(), Some("completed" | "failed" | "cancelled")), "{job}");
    job
}

#[tokio::test]
async fn a_job_runs_on_the_queue_and_is_metered_per_second_when_it_ends() {
    let Setup { h, fal, .. } = start("").await;
    fal.set_progress(2, 2);
    let (status, job, request_id) = submit(
        &h,
        json!({"model": "clips", "input": {"prompt": "a fox in snow", "duration": "5"}}),
    )
    .await;
    assert_eq!(status, 202, "{job}");
    assert_eq!(job["status"], "queued");
    assert_eq!(job["object"], "job");
    let id = job["id"].as_str().unwrap().to_owned();
    assert_eq!(id, format!("job_{request_id}"));
    // What went to the queue: the input as given, under the model's whole id.
    let (method, path, body) = fal.received().first().cloned().unwrap();
    assert_eq!((method.as_str(), path.as_str()), ("POST", format!("/{KLING}").as_str()));
    assert_eq!(body, json!({"prompt": "a fox in snow", "duration": "5"}));
    let (_, queued, _) =
        call(&h, reqwest::Method::GET, GATEWAY_KEY, &format!("/v1/jobs/{id}"), None).await;
    assert!(matches!(queued["status"].as_str(), Some("queued" | "in_progress")), "{queued}");
    let job = until_ended(&h, &request_id, &id).await;
    assert_eq!(job["status"], "completed", "{job}");
    assert_eq!(job["result"]["video"]["content_type"], "video/mp4", "{job}");
    assert_eq!(job["usage"], json!({"seconds": 5.0, "seconds_from": "request"}));
    let cost = job["cost_usd"].as_f64().unwrap();
    assert!((cost - (0.1 + 5.0 * 0.05)).abs() < 1e-9, "{job}");
    // Polled under the app's id, as fal answers; the result fetched once.
    let polled: Vec<String> =
        fal.received().into_iter().filter(|(m, _, _)| m == "GET").map(|(_, p, _)| p).collect();
    assert!(polled.iter().all(|p| p.starts_with("/fal-ai/kling-video/requests/")), "{polled:?}");
    assert_eq!(fal.result_fetches(), 1);
    // One record, written when the job ended, at the price it was billed.
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&request_id)).await.unwrap();
    assert_eq!(rec.operation.as_deref(), Some("jobs"));
    assert_eq!((rec.status, rec.served_provider.as_deref()), (200, Some("fal")));
    assert_eq!(rec.cost_usd, job["cost_usd"].as_f64());
    assert!(rec.descriptor.contains("seconds:5:request"), "{}", rec.descriptor);
    assert!(rec.descriptor.contains(&format!("job:{id}")), "{}", rec.descriptor);
    // A per-job price needs no length: an image model's job.
    let (_, pic, pic_request) =
        submit(&h, json!({"model": "pictures", "input": {"prompt": "a kite", "num_images": 2}}))
            .await;
    let pic = until_ended(&h, &pic_request, pic["id"].as_str().unwrap()).await;
    assert_eq!(pic["result"]["images"].as_array().map(Vec::len), Some(2), "{pic}");
    assert_eq!(pic["cost_usd"], 0.025);
}

#[tokio::test]
async fn a_submission_fails_over_but_a_queued_job_is_never_sent_again() {
    let Setup { h, fal, spare } = start("").await;
    spare.fail_next_submits(100, 503);
    let (status, job, request_id) = submit(
        &h,
        json!({"model": "clips-spare-first", "input": {"prompt": "rain", "duration": 4}}),
    )
    .await;
    assert_eq!(status, 202, "{job}");
    let retried = spare.submits();
    assert!(retried >= 1, "the spare was tried first");
    assert_eq!(fal.submits(), 1);
    let job = until_ended(&h, &request_id, job["id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "completed");
    assert_eq!((spare.submits(), fal.submits()), (retried, 1), "polled, never submitted again");
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&request_id)).await.unwrap();
    let outcomes: Vec<&str> = rec.attempts.iter().map(|a| a.outcome.as_str()).collect();
    assert_eq!(outcomes.last(), Some(&"ok"));
    assert!(outcomes[..outcomes.len() - 1].iter().all(|o| *o == "status_503"), "{outcomes:?}");
    // A model's own refusal of its input is the caller's to fix: no failover.
    spare.fail_next_submits(0, 503);
    let (status, err, _) =
        submit(&h, json!({"model": "clips-spare-first", "input": {"prompt": ""}})).await;
    assert_eq!(status, 422, "{err}");
    assert!(err.to_string().contains("prompt"), "{err}");
    assert_eq!((spare.submits(), fal.submits()), (retried + 1, 1));
}

#[tokio::test]
async fn a_job_is_its_submitter_s_and_a_cancel_stops_it_on_the_queue() {
    let Setup { h, fal, .. } = start("").await;
    fal.hold(true);
    let (_, job, request_id) =
        submit(&h, json!({"model": "clips", "input": {"prompt": "waves", "duration": "10"}})).await;
    let id = job["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/jobs/{id}");
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let (status, err, _) = call(&h, method, OTHER_KEY, &path, None).await;
        assert_eq!(status, 404, "another key's job is unknown: {err}");
    }
    let (status, _, _) =
        call(&h, reqwest::Method::GET, GATEWAY_KEY, "/v1/jobs/job_nope", None).await;
    assert_eq!(status, 404);
    fal.wait_for_status_polls(2).await;
    let (status, cancelled, _) = call(&h, reqwest::Method::DELETE, GATEWAY_KEY, &path, None).await;
    assert_eq!((status, cancelled["status"].as_str()), (200, Some("cancelled")), "{cancelled}");
    assert_eq!(fal.cancels(), 1);
    let upstream = fal.job_ids().pop().unwrap();
    assert_eq!(fal.job_status(&upstream).as_deref(), Some("CANCELLED"));
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&request_id)).await.unwrap();
    assert_eq!(
        (rec.status, rec.error_code.as_deref(), rec.cost_usd),
        (499, Some("job_cancelled"), Some(0.0))
    );
    // Ended: the poller leaves it, and a second cancel changes nothing.
    let polls = fal.status_polls();
    let (_, again, _) = call(&h, reqwest::Method::DELETE, GATEWAY_KEY, &path, None).await;
    assert_eq!(again["status"], "cancelled");
    assert_eq!(fal.cancels(), 1);
    let (_, other, _) =
        submit(&h, json!({"model": "clips", "input": {"prompt": "poll me", "duration": "5"}}))
            .await;
    fal.wait_for_status_polls(polls + 2).await;
    let other_upstream = fal.job_ids().pop().unwrap();
    assert_ne!(other_upstream, upstream);
    let cancelled_polls = fal
        .received()
        .iter()
        .filter(|(_, p, _)| p.ends_with(&format!("{upstream}/status")))
        .count();
    assert!(cancelled_polls <= 2, "an ended job is not polled: {cancelled_polls}");
    drop(other);
}

#[tokio::test]
async fn a_job_whose_provider_vanished_fails_after_a_bounded_number_of_polls() {
    let Setup { h, fal, .. } = start(", max_failed_polls: 3").await;
    fal.hold(true);
    let (_, job, request_id) =
        submit(&h, json!({"model": "clips", "input": {"prompt": "fog", "duration": "5"}})).await;
    fal.wait_for_status_polls(1).await;
    fal.vanish(true);
    let before = fal.status_polls();
    let job = until_ended(&h, &request_id, job["id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "failed", "{job}");
    assert_eq!(job["error"]["code"], "job_lost", "{job}");
    assert!(job["error"]["message"].as_str().unwrap().contains("for 3 polls"), "{job}");
    // Three unanswered polls (one may have been on its way as the provider
    // went), then no more.
    let after = fal.status_polls() - before;
    assert!((2..=3).contains(&after), "{after}");
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&request_id)).await.unwrap();
    assert_eq!((rec.status, rec.error_code.as_deref()), (502, Some("job_lost")));
}

#[tokio::test]
async fn a_job_the_model_fails_or_that_runs_too_long_ends_failed_and_unbilled() {
    let Setup { h, fal, .. } = start(", max_polls: 4").await;
    fal.fail_next_jobs(1, "the prompt was refused by the safety checker");
    let (_, job, request_id) =
        submit(&h, json!({"model": "clips", "input": {"prompt": "x", "duration": "5"}})).await;
    let job = until_ended(&h, &request_id, job["id"].as_str().unwrap()).await;
    assert_eq!(
        (job["status"].as_str(), job["error"]["code"].as_str()),
        (Some("failed"), Some("job_failed"))
    );
    assert!(job["error"]["message"].as_str().unwrap().contains("safety checker"), "{job}");
    assert_eq!(job["cost_usd"], 0.0);
    // Held running past the most polls: cancelled on the queue, failed here.
    fal.hold(true);
    let (_, job, request_id) =
        submit(&h, json!({"model": "clips", "input": {"prompt": "y", "duration": "5"}})).await;
    let job = until_ended(&h, &request_id, job["id"].as_str().unwrap()).await;
    assert_eq!(job["error"]["code"], "job_timeout", "{job}");
    assert_eq!(fal.cancels(), 1);
}

#[tokio::test]
async fn jobs_take_media_models_only_and_the_mock_runs_one_at_once() {
    let Setup { h, .. } = start("").await;
    let (status, err, _) =
        submit(&h, json!({"model": "m-openai", "input": {"prompt": "hi"}})).await;
    assert_eq!((status, err["error"]["code"].as_str()), (400, Some("wrong_model_kind")), "{err}");
    let r = h
        .post(
            "/v1/chat/completions",
            &json!({"model": "clips", "messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
    assert_eq!(r.status().as_u16(), 400);
    let (status, err, _) = submit(&h, json!({"model": "clips", "prompt": "flat"})).await;
    assert_eq!(status, 400, "{err}");
    assert!(err["error"]["message"].as_str().unwrap().contains("input"), "{err}");
    let (status, job, request_id) =
        submit(&h, json!({"model": "mock-clips", "input": {"prompt": "a dune", "duration": 8}}))
            .await;
    assert_eq!((status, job["status"].as_str()), (200, Some("completed")), "{job}");
    assert!((job["cost_usd"].as_f64().unwrap() - 0.08).abs() < 1e-9, "{job}");
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&request_id)).await.unwrap();
    assert_eq!((rec.operation.as_deref(), rec.status), (Some("jobs"), 200));
}
