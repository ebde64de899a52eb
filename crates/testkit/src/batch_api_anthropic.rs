//! Anthropic's Message Batches on the fake ([`super`]): the creation, whose
//! envelope is checked at once (each request's params only when it runs), the
//! batch object and the results file.

use std::collections::HashSet;

use axum::body::Body;
use axum::http::header::{CONTENT_TYPE, HeaderValue};
use axum::response::Response;
use serde_json::{Value, json};

use super::{
    Batch, Batches, DAY_SECS, End, Line, Phase, insert, new_id, no_batch, refusal, rfc3339,
};
use crate::Vendor;
use crate::fake::Received;

/// The most requests one batch holds.
const MAX_REQUESTS: usize = 100_000;

/// `POST /v1/messages/batches`: the envelope checked now, each request's
/// params when it runs.
pub(super) fn create(st: &mut Batches, rx: &Received) -> Response {
    let bad = |message: String| refusal(Vendor::Anthropic, 400, &message);
    let Some(body) = rx.body.as_object() else {
        return bad("The request body is not valid JSON.".into());
    };
    if let Some(k) = body.keys().find(|k| *k != "requests") {
        return bad(format!("{k}: Extra inputs are not permitted"));
    }
    let Some(requests) = body.get("requests").and_then(Value::as_array) else {
        return bad("requests: Field required".into());
    };
    if requests.is_empty() || requests.len() > MAX_REQUESTS {
        return bad(format!("requests: must hold 1 to {MAX_REQUESTS} requests"));
    }
    let mut lines = Vec::with_capacity(requests.len());
    let mut seen = HashSet::new();
    for (i, request) in requests.iter().enumerate() {
        let Some(item) = request.as_object() else {
            return bad(format!("requests.{i}: Input should be a valid dictionary"));
        };
        if let Some(k) = item.keys().find(|k| !["custom_id", "params"].contains(&k.as_str())) {
            return bad(format!("requests.{i}.{k}: Extra inputs are not permitted"));
        }
        let Some(custom_id) = item.get("custom_id").and_then(Value::as_str) else {
            return bad(format!("requests.{i}.custom_id: Field required"));
        };
        let well_formed = (1..=64).contains(&custom_id.len())
            && custom_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !well_formed {
            return bad(format!(
                "requests.{i}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
            ));
        }
        if !seen.insert(custom_id) {
            return bad(format!(
                "requests.{i}.custom_id: Duplicate custom_id '{custom_id}': each must be unique."
            ));
        }
        let Some(params) = item.get("params").filter(|p| p.is_object()) else {
            return bad(format!("requests.{i}.params: Input should be a valid dictionary"));
        };
        if params.get("stream").and_then(Value::as_bool) == Some(true) {
            return bad(format!(
                "requests.{i}.params.stream: streaming is not supported in message batches"
            ));
        }
        let line = Line {
            custom_id: custom_id.to_owned(),
            url: "/v1/messages".into(),
            body: params.clone(),
        };
        lines.push(line);
    }
    let id = new_id(&mut st.next_id, "msgbatch_");
    insert(st, &id, Phase::InProgress, None, lines, rx);
    super::view(st, &id)
}

/// The batch object: counts as they stand (requests not run yet are
/// `processing`, then `canceled` or `expired` once it has ended), and its
/// `results_url` once it has.
pub(super) fn view(base: &str, id: &str, batch: &Batch) -> Value {
    let ended = matches!(batch.phase, Phase::Ended(_));
    let succeeded = batch.answers.iter().filter(|(s, _)| (200..300).contains(s)).count();
    let unrun = batch.requests.len() - batch.answers.len();
    let unrun_as = |how: End| if batch.phase == Phase::Ended(how) { unrun } else { 0 };
    let status = match batch.phase {
        Phase::Ended(_) => "ended",
        Phase::Cancelling => "canceling",
        _ if batch.cancel_at.is_some() => "canceling",
        _ => "in_progress",
    };
    json!({
        "id": id,
        "type": "message_batch",
        "processing_status": status,
        "request_counts": {
            "processing": if ended { 0 } else { unrun },
            "succeeded": succeeded,
            "errored": batch.answers.len() - succeeded,
            "canceled": unrun_as(End::Cancelled),
            "expired": unrun_as(End::Expired),
        },
        "ended_at": batch.ended_at.map(rfc3339),
        "created_at": rfc3339(batch.created_at),
        "expires_at": rfc3339(batch.created_at + DAY_SECS),
        "archived_at": null,
        "cancel_initiated_at": batch.cancel_at.map(rfc3339),
        "results_url": ended.then(|| format!("{base}/v1/messages/batches/{id}/results")),
    })
}

/// `GET …/results`: one line per request, last request first; refused until
/// the batch has ended.
pub(super) fn results(st: &Batches, id: &str) -> Response {
    let Some(batch) = st.batches.get(id) else { return no_batch(Vendor::Anthropic, id) };
    let Phase::Ended(how) = batch.phase else {
        let message = format!("Batch {id} is still processing: its results are not ready.");
        return refusal(Vendor::Anthropic, 400, &message);
    };
    let mut out = Vec::new();
    for (n, line) in batch.requests.iter().enumerate().rev() {
        let result = match batch.answers.get(n) {
            Some((status, body)) if (200..300).contains(status) => {
                json!({"type": "succeeded", "message": body})
            }
            Some((_, body)) => json!({"type": "errored", "error": body}),
            None if how == End::Expired => json!({"type": "expired"}),
            None => json!({"type": "canceled"}),
        };
        out.extend(json!({"custom_id": line.custom_id, "result": result}).to_string().as_bytes());
        out.push(b'\n');
    }
    let mut response = Response::new(Body::from(out));
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/binary"));
    response
}
