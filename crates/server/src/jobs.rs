//! Media jobs: `POST /v1/jobs` submits one to a media model's queue and
//! answers at once with the job; `GET /v1/jobs/{id}` reads it (its result
//! once completed); `DELETE /v1/jobs/{id}` cancels it. A job is its
//! submitter's: another key's id is 404, as an unknown one is.
//!
//! Jobs are followed by the poller ([`poller`]) every instance runs: it asks
//! each due job's queue where it is, whichever instance took it, so a job
//! survives the restart of the instance that submitted it. Reading a job never
//! calls its provider; it answers what the last poll learned.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use switchyard_core::GatewayError;
use switchyard_core::exec::planned_job_request;
use switchyard_core::jobs::Job;
use switchyard_protocol::jobs::{self, JobRequest};
use switchyard_protocol::{ClientFormat, ErrorCode};

use crate::http::{error_response, served_headers, whole_request};
use crate::{AppState, ids};

const FORMAT: ClientFormat = ClientFormat::OpenAiChat;

/// Jobs one poller tick polls at most: the rest wait for the next.
const POLL_BATCH: usize = 64;

/// `POST /v1/jobs`.
pub async fn create(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let id = ids::request_id();
    let submitted = async {
        let (inbound, req) = whole_request(
            &state,
            &headers,
            crate::http::Payload::Http(body),
            FORMAT,
            &id,
            jobs::parse_request,
            |r: &mut JobRequest| &mut r.model,
            planned_job_request,
        )
        .await?;
        let owner = crate::stateful::owner(&headers, &inbound.principal);
        state.gateway.submit_job(inbound, req, owner).await
    };
    match submitted.await {
        Ok(done) => {
            // Accepted: the job runs on. A job done at once (the mock) is 200.
            let status =
                if done.job.status.is_final() { StatusCode::OK } else { StatusCode::ACCEPTED };
            let mut resp = (status, axum::Json(object(&done.job))).into_response();
            let descriptor = done.job.record.as_ref().map_or("", |r| r.descriptor.as_str());
            served_headers(resp.headers_mut(), &done.served, &id, descriptor, done.rate.as_ref());
            resp
        }
        Err(e) => {
            tracing::debug!(request_id = %id, code = e.code().as_str(), "job refused or failed");
            error_response(FORMAT, &e, &id)
        }
    }
}

/// `GET /v1/jobs/{id}`.
pub async fn retrieve(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let found = async {
        let owner = owner(&state, &headers).await?;
        state.gateway.job(&owner, &id).await.map_err(unavailable)
    };
    answer(found.await, &id)
}

/// `DELETE /v1/jobs/{id}`: cancels it.
pub async fn cancel(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let cancelled = async {
        let owner = owner(&state, &headers).await?;
        state.gateway.cancel_job(&owner, &id).await.map_err(unavailable)
    };
    answer(cancelled.await, &id)
}

fn answer(found: Result<Option<Job>, GatewayError>, id: &str) -> Response {
    match found {
        Ok(Some(job)) => axum::Json(object(&job)).into_response(),
        Ok(None) => {
            let e = GatewayError::new(
                ErrorCode::NotFound,
                format!("no job with id {:?}", switchyard_core::util::excerpt(id)),
            );
            error_response(FORMAT, &e, &ids::request_id())
        }
        Err(e) => error_response(FORMAT, &e, &ids::request_id()),
    }
}

async fn owner(state: &AppState, headers: &HeaderMap) -> Result<String, GatewayError> {
    let caller = state.identity.authenticate(headers).await?;
    Ok(crate::stateful::owner(headers, &caller.principal))
}

fn unavailable(e: switchyard_core::jobs::StoreFailure) -> GatewayError {
    tracing::warn!("media jobs: {e}");
    GatewayError::new(ErrorCode::StorageUnavailable, "media jobs are unavailable")
}

/// The job as its owner reads it.
pub fn object(job: &Job) -> Value {
    json!({
        "id": job.id,
        "object": "job",
        "model": job.model,
        "status": job.status.as_str(),
        "created_at": job.created_ms / 1000,
        "completed_at": job.completed_ms.map(|ms| ms / 1000),
        "queue_position": job.queue_position,
        "result": job.result,
        "error": job.error.as_ref().map(|e| json!({"code": e.code, "message": e.message})),
        "usage": job.seconds.as_ref().map(|(s, from)| json!({"seconds": s, "seconds_from": from})),
        "cost_usd": job.cost_usd,
    })
}

/// Poll due media jobs every `gateway.jobs.poll_interval_ms` (read each tick:
/// a reload changes it), until dropped.
pub async fn poller(state: Arc<AppState>) {
    loop {
        let every = state.gateway.snapshot().catalog.settings.jobs.poll_interval_ms.max(10);
        tokio::time::sleep(Duration::from_millis(every)).await;
        // A full batch: more may be due, so go again at once.
        while state.gateway.poll_jobs(POLL_BATCH).await == POLL_BATCH {}
    }
}
