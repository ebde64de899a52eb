//! The fal queue fake, driven over HTTP as the gateway drives it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::*;

const KEY: &str = "fal-test-key";
const FLUX: &str = "fal-ai/flux/dev";
const KLING: &str = "fal-ai/kling-video/v2.1/standard/text-to-video";

struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Value,
    raw: Vec<u8>,
}

async fn start() -> (FakeFal, reqwest::Client) {
    // reqwest is built with `rustls-no-provider`: install one, even for http.
    let _ = rustls::crypto::ring::default_provider().install_default();
    (FakeFal::start(KEY).await.unwrap(), reqwest::Client::new())
}

/// `target` is a path on the fake or a whole URL it handed out.
async fn send_as(
    http: &reqwest::Client,
    fal: &FakeFal,
    auth: Option<&str>,
    method: Method,
    target: &str,
    body: Option<String>,
) -> Answer {
    let url = if target.starts_with("http") {
        target.to_owned()
    } else {
        format!("{}{target}", fal.url())
    };
    let mut req = http.request(method, url);
    if let Some(auth) = auth {
        req = req.header("authorization", auth);
    }
    if let Some(body) = body {
        req = req.header("content-type", "application/json").body(body);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let raw = res.bytes().await.unwrap().to_vec();
    let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    Answer { status, headers, body, raw }
}

async fn send(http: &reqwest::Client, fal: &FakeFal, method: Method, target: &str) -> Answer {
    send_as(http, fal, Some("Key fal-test-key"), method, target, None).await
}

async fn submit(http: &reqwest::Client, fal: &FakeFal, model: &str, body: Value) -> Answer {
    let auth = Some("Key fal-test-key");
    send_as(http, fal, auth, Method::POST, &format!("/{model}"), Some(body.to_string())).await
}

/// Submits and answers the request id, checking the submit succeeded.
async fn job(http: &reqwest::Client, fal: &FakeFal, model: &str, body: Value) -> String {
    let a = submit(http, fal, model, body).await;
    assert_eq!(a.status, 200, "{}", a.body);
    a.body["request_id"].as_str().unwrap().to_owned()
}

fn status_path(app: &str, id: &str) -> String {
    format!("/{app}/requests/{id}/status")
}

fn prompt() -> Value {
    json!({"prompt": "a lighthouse at dusk"})
}

#[tokio::test]
async fn refuses_a_missing_or_wrong_key() {
    let (fal, http) = start().await;
    let body = Some(prompt().to_string());
    let none = send_as(&http, &fal, None, Method::POST, "/fal-ai/flux/dev", body.clone()).await;
    assert_eq!((none.status, none.body), (401, json!({"detail": "Missing authorization header"})));
    for auth in ["Key wrong", "Bearer fal-test-key", "fal-test-key", "Key "] {
        let a =
            send_as(&http, &fal, Some(auth), Method::POST, "/fal-ai/flux/dev", body.clone()).await;
        assert_eq!(a.status, 401, "{auth}");
        assert_eq!(a.body, json!({"detail": "No user found for Key ID and Secret"}));
    }
    assert!(fal.job_ids().is_empty());
    // A status poll needs the key too.
    let id = job(&http, &fal, FLUX, prompt()).await;
    let a = send_as(&http, &fal, None, Method::GET, &status_path("fal-ai/flux", &id), None).await;
    assert_eq!(a.status, 401);
    assert_eq!(fal.submits(), 6, "refused submits are counted");
}

#[tokio::test]
async fn submit_drops_the_sub_path_from_its_urls() {
    let (fal, http) = start().await;
    let a = submit(&http, &fal, KLING, json!({"prompt": "waves", "duration": "5"})).await;
    assert_eq!(a.status, 200);
    let id = a.body["request_id"].as_str().unwrap();
    assert_eq!(id.len(), 36);
    let parts: Vec<&str> = id.split('-').collect();
    assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), [8, 4, 4, 4, 12]);
    assert!(parts[2].starts_with('4') && parts[3].starts_with('8'), "{id}");
    let base = format!("{}/fal-ai/kling-video/requests/{id}", fal.url());
    assert_eq!(
        a.body,
        json!({"request_id": id, "response_url": base, "status_url": format!("{base}/status"),
               "cancel_url": format!("{base}/cancel"), "queue_position": 0})
    );
    assert_eq!(fal.job_ids(), [id]);
    assert_eq!(fal.job_status(id).as_deref(), Some("IN_QUEUE"));

    // The sub-path kept in a request URL: fal knows no such request.
    for path in [format!("/{KLING}/requests/{id}/status"), format!("/{KLING}/requests/{id}")] {
        let a = send(&http, &fal, Method::GET, &path).await;
        assert_eq!((a.status, a.body), (404, json!({"detail": "Request not found"})), "{path}");
    }
    let a = send(&http, &fal, Method::PUT, &format!("/{KLING}/requests/{id}/cancel")).await;
    assert_eq!(a.status, 404);
    // Nor under another app id.
    let a = send(&http, &fal, Method::GET, &status_path("fal-ai/flux", id)).await;
    assert_eq!((a.status, a.body), (404, json!({"detail": "Request not found"})));
    assert_eq!(fal.job_status(id).as_deref(), Some("IN_QUEUE"), "404s do not advance it");
    // The URLs it answered do work.
    let a = send(&http, &fal, Method::GET, &format!("{base}/status")).await;
    assert_eq!((a.status, &a.body["status"]), (202, &json!("IN_QUEUE")));
    // An id never issued.
    let unknown = "00000000-0000-4000-8000-000000000000";
    let a = send(&http, &fal, Method::GET, &status_path("fal-ai/kling-video", unknown)).await;
    assert_eq!(a.status, 404);
    assert_eq!(fal.status_polls(), 4);
    assert_eq!(fal.result_fetches(), 1);
    assert_eq!(fal.cancels(), 1);
}

#[tokio::test]
async fn status_moves_on_polls_and_the_result_waits_for_completion() {
    let (fal, http) = start().await;
    fal.set_progress(2, 2);
    let a = submit(&http, &fal, FLUX, json!({"prompt": "a fox", "num_images": 2})).await;
    assert_eq!(a.body["queue_position"], 1);
    let id = a.body["request_id"].as_str().unwrap().to_owned();
    let status = status_path("fal-ai/flux", &id);
    let result = format!("/fal-ai/flux/requests/{id}");
    let response_url = format!("{}{result}", fal.url());

    let a = send(&http, &fal, Method::GET, &status).await;
    assert_eq!(
        (a.status, a.body),
        (202, json!({"status": "IN_QUEUE", "queue_position": 1, "response_url": response_url}))
    );
    let a = send(&http, &fal, Method::GET, &result).await;
    assert_eq!((a.status, a.body), (400, json!({"detail": "Request is still in progress"})));
    let a = send(&http, &fal, Method::GET, &status).await;
    assert_eq!((a.status, &a.body["queue_position"]), (202, &json!(0)));
    let a = send(&http, &fal, Method::GET, &status).await;
    assert_eq!(
        (a.status, a.body),
        (202, json!({"status": "IN_PROGRESS", "logs": null, "response_url": response_url}))
    );
    assert_eq!(fal.job_status(&id).as_deref(), Some("IN_PROGRESS"));
    let a = send(&http, &fal, Method::GET, &result).await;
    assert_eq!(a.status, 400);
    let a = send(&http, &fal, Method::GET, &format!("{status}?logs=1")).await;
    assert_eq!(a.status, 202);
    let logs = a.body["logs"].as_array().unwrap();
    assert_eq!(logs.len(), 2);
    assert_eq!((&logs[0]["level"], &logs[0]["source"]), (&json!("INFO"), &json!("user")));
    assert!(logs[0]["message"].is_string() && logs[0]["timestamp"].as_str().unwrap().contains('T'));

    let a = send(&http, &fal, Method::GET, &status).await;
    assert_eq!(a.status, 200);
    assert_eq!((&a.body["status"], &a.body["logs"]), (&json!("COMPLETED"), &Value::Null));
    assert!(a.body["metrics"]["inference_time"].as_f64().unwrap() > 0.0);
    assert_eq!(fal.job_status(&id).as_deref(), Some("COMPLETED"));
    // Completed stays completed.
    assert_eq!(send(&http, &fal, Method::GET, &status).await.status, 200);

    let a = send(&http, &fal, Method::GET, &result).await;
    assert_eq!(a.status, 200);
    let images = a.body["images"].as_array().unwrap();
    assert_eq!(images.len(), 2);
    assert_eq!(images[1]["url"], format!("{}/files/{id}-1.jpg", fal.url()));
    assert_eq!((&images[0]["width"], &images[0]["height"]), (&json!(1024), &json!(768)));
    assert_eq!(images[0]["content_type"], "image/jpeg");
    assert_eq!(a.body["has_nsfw_concepts"], json!([false, false]));
    assert_eq!(a.body["prompt"], "a fox");
    assert!(a.body["seed"].is_u64() && a.body["timings"]["inference"].is_f64());
    // The link can be followed, without a key.
    let file =
        send_as(&http, &fal, None, Method::GET, images[0]["url"].as_str().unwrap(), None).await;
    assert_eq!((file.status, &file.headers["content-type"]), (200, &"image/jpeg".parse().unwrap()));
    assert!(file.raw.starts_with(b"\xff\xd8\xff"));
    assert_eq!(fal.status_polls(), 6);
    assert_eq!(fal.result_fetches(), 3);
}

#[tokio::test]
async fn outputs_are_deterministic_and_shaped_per_media() {
    let (fal, http) = start().await;
    fal.set_progress(0, 0);
    let input = json!({"prompt": "waves", "duration": 10, "ignored_field": true});
    let (a, b) =
        (job(&http, &fal, KLING, input.clone()).await, job(&http, &fal, KLING, input).await);
    assert_eq!(fal.job_status(&a).as_deref(), Some("COMPLETED"), "0 and 0: done at once");
    let out_a =
        send(&http, &fal, Method::GET, &format!("/fal-ai/kling-video/requests/{a}")).await.body;
    let out_b =
        send(&http, &fal, Method::GET, &format!("/fal-ai/kling-video/requests/{b}")).await.body;
    assert_eq!(out_a["seed"], out_b["seed"]);
    assert_eq!(out_a["video"]["file_size"], out_b["video"]["file_size"]);
    let video = &out_a["video"];
    assert_eq!(video["url"], format!("{}/files/{a}.mp4", fal.url()));
    assert_eq!(
        (&video["content_type"], &video["file_name"]),
        (&json!("video/mp4"), &json!(format!("{a}.mp4")))
    );
    assert!(out_a.get("duration").is_none(), "Kling answers no duration");
    let file = send_as(&http, &fal, None, Method::GET, video["url"].as_str().unwrap(), None).await;
    assert_eq!(file.status, 200);
    assert_eq!(file.raw.len() as u64, video["file_size"].as_u64().unwrap());
    assert_eq!(&file.raw[4..8], b"ftyp");
    let a = send_as(&http, &fal, None, Method::GET, "/files/nope.mp4", None).await;
    assert_eq!(a.status, 404);

    let audio =
        job(&http, &fal, "fal-ai/stable-audio", json!({"prompt": "rain", "seconds_total": 7}))
            .await;
    let out = send(&http, &fal, Method::GET, &format!("/fal-ai/stable-audio/requests/{audio}"))
        .await
        .body;
    assert_eq!(out["audio_file"]["url"], format!("{}/files/{audio}.wav", fal.url()));
    assert_eq!(
        (&out["audio_file"]["content_type"], &out["duration"]),
        (&json!("audio/wav"), &json!(7.0))
    );
    let audio = job(&http, &fal, "fal-ai/stable-audio", json!({"prompt": "rain"})).await;
    let out = send(&http, &fal, Method::GET, &format!("/fal-ai/stable-audio/requests/{audio}"))
        .await
        .body;
    assert_eq!(out["duration"], 10.0);

    let body = json!({"prompt": "p", "seed": 42, "output_format": "png"});
    let image = job(&http, &fal, FLUX, body).await;
    let out = send(&http, &fal, Method::GET, &format!("/fal-ai/flux/requests/{image}")).await.body;
    assert_eq!(out["seed"], 42, "a given seed is echoed");
    let img = &out["images"][0];
    assert_eq!((&img["width"], &img["content_type"]), (&json!(1024), &json!("image/png")));
    assert_eq!(img["url"], format!("{}/files/{image}-0.png", fal.url()));
}

#[tokio::test]
async fn cancel_while_queued_and_after_completion() {
    let (fal, http) = start().await;
    let id = job(&http, &fal, FLUX, prompt()).await;
    let cancel = format!("/fal-ai/flux/requests/{id}/cancel");
    let a = send(&http, &fal, Method::PUT, &cancel).await;
    assert_eq!((a.status, a.body), (202, json!({"status": "CANCELLATION_REQUESTED"})));
    assert_eq!(fal.job_status(&id).as_deref(), Some("CANCELLED"));
    let a = send(&http, &fal, Method::GET, &status_path("fal-ai/flux", &id)).await;
    assert_eq!((a.status, &a.body["status"]), (200, &json!("COMPLETED")));
    assert_eq!(a.body["error_type"], "request_cancelled");
    let a = send(&http, &fal, Method::GET, &format!("/fal-ai/flux/requests/{id}")).await;
    assert_eq!((a.status, a.body), (400, json!({"detail": "Request was cancelled"})));
    let a = send(&http, &fal, Method::PUT, &cancel).await;
    assert_eq!((a.status, a.body), (400, json!({"status": "ALREADY_COMPLETED"})));

    fal.set_progress(0, 0);
    let done = job(&http, &fal, FLUX, prompt()).await;
    let a = send(&http, &fal, Method::PUT, &format!("/fal-ai/flux/requests/{done}/cancel")).await;
    assert_eq!((a.status, a.body), (400, json!({"status": "ALREADY_COMPLETED"})));
    assert_eq!(fal.job_status(&done).as_deref(), Some("COMPLETED"));
    let unknown = "/fal-ai/flux/requests/00000000-0000-4000-8000-000000000000/cancel";
    let a = send(&http, &fal, Method::PUT, unknown).await;
    assert_eq!((a.status, a.body), (404, json!({"detail": "Request not found"})));
    // Cancel is a PUT.
    assert_eq!(send(&http, &fal, Method::POST, &cancel).await.status, 405);
    assert_eq!(fal.cancels(), 5);
}

#[tokio::test]
async fn failed_submits_create_no_job() {
    let (fal, http) = start().await;
    fal.fail_next_submits(2, 503);
    for _ in 0..2 {
        let a = submit(&http, &fal, FLUX, prompt()).await;
        assert_eq!((a.status, a.body), (503, json!({"detail": "Service temporarily unavailable"})));
    }
    fal.fail_next_submits(1, 429);
    let a = submit(&http, &fal, FLUX, prompt()).await;
    assert_eq!((a.status, a.body), (429, json!({"detail": "Rate limit exceeded"})));
    assert_eq!(a.headers["retry-after"], "0");
    assert!(fal.job_ids().is_empty());
    job(&http, &fal, FLUX, prompt()).await;
    assert_eq!((fal.job_ids().len(), fal.submits()), (1, 4));
}

#[tokio::test]
async fn failed_jobs_complete_with_a_failed_result() {
    let (fal, http) = start().await;
    fal.set_progress(0, 1);
    fal.fail_next_jobs(1, "Prompt was flagged");
    let bad = job(&http, &fal, FLUX, prompt()).await;
    let good = job(&http, &fal, FLUX, prompt()).await;
    for id in [&bad, &good] {
        assert_eq!(
            send(&http, &fal, Method::GET, &status_path("fal-ai/flux", id)).await.status,
            202
        );
        let a = send(&http, &fal, Method::GET, &status_path("fal-ai/flux", id)).await;
        assert_eq!((a.status, &a.body["status"]), (200, &json!("COMPLETED")));
    }
    assert_eq!(fal.job_status(&bad).as_deref(), Some("FAILED"));
    let a = send(&http, &fal, Method::GET, &format!("/fal-ai/flux/requests/{bad}")).await;
    assert_eq!((a.status, a.body), (422, json!({"detail": "Prompt was flagged"})));
    // Its files were never made.
    let a = send_as(&http, &fal, None, Method::GET, &format!("/files/{bad}-0.jpg"), None).await;
    assert_eq!(a.status, 404);
    let a = send(&http, &fal, Method::GET, &format!("/fal-ai/flux/requests/{good}")).await;
    assert_eq!(a.status, 200);

    fal.fail_next_jobs_with(1, 500, "Internal error");
    let id = job(&http, &fal, FLUX, prompt()).await;
    send(&http, &fal, Method::GET, &status_path("fal-ai/flux", &id)).await;
    send(&http, &fal, Method::GET, &status_path("fal-ai/flux", &id)).await;
    let a = send(&http, &fal, Method::GET, &format!("/fal-ai/flux/requests/{id}")).await;
    assert_eq!((a.status, a.body), (500, json!({"detail": "Internal error"})));
}

#[tokio::test]
async fn a_held_job_stays_in_progress_until_released() {
    let (fal, http) = start().await;
    fal.hold(true);
    let id = job(&http, &fal, FLUX, prompt()).await;
    let status = status_path("fal-ai/flux", &id);
    assert_eq!(send(&http, &fal, Method::GET, &status).await.body["status"], "IN_QUEUE");
    for _ in 0..5 {
        let a = send(&http, &fal, Method::GET, &status).await;
        assert_eq!((a.status, &a.body["status"]), (202, &json!("IN_PROGRESS")));
    }
    assert_eq!(
        send(&http, &fal, Method::GET, &format!("/fal-ai/flux/requests/{id}")).await.status,
        400
    );
    fal.hold(false);
    let a = send(&http, &fal, Method::GET, &status).await;
    assert_eq!((a.status, &a.body["status"]), (200, &json!("COMPLETED")));
}

#[tokio::test]
async fn a_vanished_provider_answers_404_to_everything() {
    let (fal, http) = start().await;
    fal.set_progress(0, 0);
    let id = job(&http, &fal, FLUX, prompt()).await;
    fal.vanish(true);
    let not_found = json!({"detail": "Not Found"});
    let base = format!("/fal-ai/flux/requests/{id}");
    for (method, path) in [
        (Method::GET, format!("{base}/status")),
        (Method::GET, base.clone()),
        (Method::PUT, format!("{base}/cancel")),
        (Method::GET, format!("/files/{id}-0.jpg")),
    ] {
        let a = send(&http, &fal, method, &path).await;
        assert_eq!((a.status, &a.body), (404, &not_found), "{path}");
    }
    let a = submit(&http, &fal, FLUX, prompt()).await;
    assert_eq!((a.status, a.body), (404, not_found));
    assert_eq!(fal.job_ids().len(), 1);
    fal.vanish(false);
    assert_eq!(send(&http, &fal, Method::GET, &base).await.status, 200);
}

#[tokio::test]
async fn refuses_bodies_as_fal_does() {
    let (fal, http) = start().await;
    let auth = Some("Key fal-test-key");
    let dict = json!({"detail": [{"loc": ["body"], "msg": "Input should be a valid dictionary", "type": "dict_type"}]});
    for raw in ["[1]", "\"a prompt\"", "{not json", ""] {
        let a =
            send_as(&http, &fal, auth, Method::POST, "/fal-ai/flux/dev", Some(raw.into())).await;
        assert_eq!((a.status, &a.body), (422, &dict), "{raw}");
    }
    let missing = json!({"detail": [{"loc": ["body", "prompt"], "msg": "Field required", "type": "missing"}]});
    for body in [json!({}), json!({"prompt": ""}), json!({"text": "hi"})] {
        let a = submit(&http, &fal, FLUX, body.clone()).await;
        assert_eq!((a.status, &a.body), (422, &missing), "{body}");
    }
    let a = submit(&http, &fal, FLUX, json!({"prompt": 3})).await;
    assert_eq!((a.status, &a.body["detail"][0]["type"]), (422, &json!("string_type")));

    for duration in
        [json!("0"), json!("61"), json!("five"), json!(5.5), json!(true), json!(-5), json!(null)]
    {
        let a = submit(&http, &fal, KLING, json!({"prompt": "p", "duration": duration})).await;
        assert_eq!(a.status, 422, "{duration}");
        assert_eq!(a.body["detail"][0]["loc"], json!(["body", "duration"]));
    }
    for duration in [json!("5"), json!("10"), json!(10), json!(60.0)] {
        assert_eq!(
            submit(&http, &fal, KLING, json!({"prompt": "p", "duration": duration})).await.status,
            200
        );
    }
    // Only video models read `duration`.
    assert_eq!(
        submit(&http, &fal, FLUX, json!({"prompt": "p", "duration": "x"})).await.status,
        200
    );

    for (n, kind) in
        [(json!(5), "less_than_equal"), (json!(0), "greater_than_equal"), (json!("2"), "int_type")]
    {
        let a = submit(&http, &fal, FLUX, json!({"prompt": "p", "num_images": n})).await;
        assert_eq!(a.status, 422, "{n}");
        assert_eq!(a.body["detail"][0]["loc"], json!(["body", "num_images"]));
        assert_eq!(a.body["detail"][0]["type"], kind);
    }
    let id = job(&http, &fal, FLUX, json!({"prompt": "p", "num_images": 4})).await;
    assert_eq!(fal.job_ids().len(), 6, "only the accepted bodies made jobs");
    fal.set_progress(0, 0);
    assert_eq!(
        fal.job_status(&id).as_deref(),
        Some("IN_QUEUE"),
        "progress is set per job at submit"
    );
    // GET on a submit path is not a submit.
    assert_eq!(send(&http, &fal, Method::GET, "/fal-ai/flux/dev").await.status, 405);
}

#[tokio::test]
async fn waits_for_status_polls_and_records_requests() {
    let (fal, http) = start().await;
    let id = job(&http, &fal, FLUX, prompt()).await;
    let waiter = tokio::spawn({
        let fal = fal.clone();
        async move { fal.wait_for_status_polls(3).await }
    });
    for _ in 0..3 {
        send(&http, &fal, Method::GET, &format!("{}?logs=1", status_path("fal-ai/flux", &id)))
            .await;
    }
    let polls = tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap();
    assert_eq!(polls, 3);
    assert_eq!(fal.job_status(&id).as_deref(), Some("COMPLETED"));
    let received = fal.received();
    assert_eq!(received.len(), 4);
    assert_eq!(received[0], ("POST".into(), "/fal-ai/flux/dev".into(), prompt()));
    assert_eq!(received[1], ("GET".into(), status_path("fal-ai/flux", &id), Value::Null));
    // Already reached: resolves at once.
    let done = tokio::time::timeout(Duration::from_secs(5), fal.wait_for_status_polls(2)).await;
    assert_eq!(done.unwrap(), 3);
}
