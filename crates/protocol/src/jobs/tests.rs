use serde_json::{Value, json};

use super::*;

fn input(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(o) => o,
        _ => unreachable!("an object"),
    }
}

#[test]
fn a_job_request_keeps_the_model_s_input_as_it_came() {
    let req = parse_request(
        br#"{"model":"kling","input":{"prompt":"a fox","duration":"5","odd":[1]},"user":"u1"}"#,
    )
    .unwrap();
    assert_eq!(req.model, "kling");
    assert_eq!(req.input["duration"], "5");
    assert_eq!(req.input["odd"], json!([1]));
    assert_eq!(req.prompt(), "a fox");
    assert_eq!(req.user.as_deref(), Some("u1"));
}

#[test]
fn a_job_request_names_what_is_wrong() {
    for (body, field) in [
        (&br#"[]"#[..], "object"),
        (br#"{"input":{}}"#, "model"),
        (br#"{"model":"m"}"#, "input"),
        (br#"{"model":"m","input":"x"}"#, "input"),
        (br#"{"model":"m","input":{},"prompt":"p"}"#, "prompt: unknown field"),
    ] {
        let err = parse_request(body).unwrap_err().to_string();
        assert!(err.contains(field), "{err}");
    }
}

#[test]
fn fal_asks_about_a_job_under_its_app_not_its_sub_path() {
    let e = "https://queue.fal.run";
    assert_eq!(fal::app_id("fal-ai/flux/dev"), "fal-ai/flux");
    assert_eq!(fal::app_id("fal-ai/kling-video/v2.1/standard/text-to-video"), "fal-ai/kling-video");
    assert_eq!(fal::app_id("fal-ai/fast-sdxl"), "fal-ai/fast-sdxl");
    assert_eq!(fal::submit_url(e, "fal-ai/flux/dev"), "https://queue.fal.run/fal-ai/flux/dev");
    let spec = JobSpec { queue: Queue::Fal };
    assert_eq!(
        spec.status(e, "fal-ai/flux/dev", "abc-1"),
        Call {
            method: "GET",
            url: "https://queue.fal.run/fal-ai/flux/requests/abc-1/status".into()
        }
    );
    assert_eq!(
        spec.result(e, "fal-ai/flux/dev", "abc-1").url,
        "https://queue.fal.run/fal-ai/flux/requests/abc-1"
    );
    assert_eq!(
        spec.cancel(e, "fal-ai/flux/dev", "abc-1"),
        Call {
            method: "PUT",
            url: "https://queue.fal.run/fal-ai/flux/requests/abc-1/cancel".into()
        }
    );
}

#[test]
fn a_submission_s_id_must_be_plain_before_it_goes_into_a_url() {
    let ok = fal::parse_submitted(
        br#"{"request_id":"80e732af-660e-45cd-bd63-580e4f2a94cc","queue_position":3,"status_url":"https://elsewhere.example/x"}"#,
    )
    .unwrap();
    assert_eq!(ok.upstream_id, "80e732af-660e-45cd-bd63-580e4f2a94cc");
    assert_eq!(ok.queue_position, Some(3));
    for bad in [
        &br#"{"request_id":"../../x"}"#[..],
        br#"{"request_id":""}"#,
        br#"{"status":"IN_QUEUE"}"#,
        b"nope",
    ] {
        assert!(fal::parse_submitted(bad).is_err(), "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn fal_s_states_are_read() {
    assert_eq!(
        fal::parse_status(br#"{"status":"IN_QUEUE","queue_position":2}"#).unwrap(),
        JobState::Queued { position: Some(2) }
    );
    assert_eq!(
        fal::parse_status(br#"{"status":"IN_PROGRESS","logs":null}"#).unwrap(),
        JobState::Running
    );
    assert_eq!(
        fal::parse_status(br#"{"status":"COMPLETED","metrics":{"inference_time":4.5}}"#).unwrap(),
        JobState::Completed { inference_seconds: Some(4.5), error: None }
    );
    assert_eq!(
        fal::parse_status(br#"{"status":"COMPLETED","error":"Request was cancelled","error_type":"request_cancelled"}"#).unwrap(),
        JobState::Completed { inference_seconds: None, error: Some("Request was cancelled".into()) }
    );
    assert!(fal::parse_status(br#"{"status":"WEIRD"}"#).is_err());
}

#[test]
fn fal_s_errors_are_read_whichever_shape() {
    assert_eq!(
        fal::parse_error(br#"{"detail":"Request not found"}"#).as_deref(),
        Some("Request not found")
    );
    assert_eq!(
        fal::parse_error(
            br#"{"detail":[{"loc":["body","prompt"],"msg":"Field required","type":"missing"}]}"#
        )
        .as_deref(),
        Some("body.prompt: Field required")
    );
    assert_eq!(fal::parse_error(b"<html>"), None);
}

#[test]
fn seconds_come_from_the_output_then_the_request() {
    let asked = input(json!({"prompt": "p", "duration": "5s"}));
    assert_eq!(
        output_seconds(&json!({"video": {"url": "u"}}), &asked),
        Some((5.0, SecondsFrom::Request))
    );
    assert_eq!(
        output_seconds(&json!({"audio_file": {"url": "u", "duration": 12.5}}), &asked),
        Some((12.5, SecondsFrom::Output))
    );
    assert_eq!(output_seconds(&json!({"duration": 8}), &asked), Some((8.0, SecondsFrom::Output)));
    assert_eq!(output_seconds(&json!({"images": []}), &input(json!({"prompt": "p"}))), None);
    assert_eq!(output_seconds(&json!({}), &input(json!({"duration": "-3"}))), None);
    assert_eq!(
        output_seconds(&json!({}), &input(json!({"duration": 10}))),
        Some((10.0, SecondsFrom::Request))
    );
}
