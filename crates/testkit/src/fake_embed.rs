//! An embeddings call on a fake ([`crate::embeddings`]): its body checked as
//! the real API checks it (a refusal answers 400 in the vendor's shape, is
//! recorded and takes nothing from the script), then answered from the script
//! as a generation is: scripted statuses, delays and hangs alike, and
//! [`ReplyBody::Auto`](crate::ReplyBody::Auto) the API's embeddings answer.
//! Image calls ([`crate::images`], `fake_image.rs`) are served the same way
//! ([`serve_checked`]).

use std::sync::Arc;

use axum::response::Response;
use bytes::Bytes;
use serde_json::Value;

use super::reply::{Prepared, prepare, respond};
use super::route::Call;
use super::{InFlight, Received, Shared, plain, vendor_error};
use crate::ReplyBody;
use crate::embeddings::{self, Api};

pub(super) async fn serve(
    shared: &Arc<Shared>,
    api: Api,
    call: &Call,
    received: &Received,
    guard: InFlight,
) -> Response {
    let checked = embeddings::check(api, &call.model, &received.body).map(|()| None);
    serve_checked(shared, checked, call, received, guard, None).await
}

/// Serves a call whose body was `checked` by its API's own rules: `Err`, a
/// 400 in the vendor's shape, recorded; else the next scripted reply, its
/// automatic answer passed through `dress` when given. `Ok(Some(answer))`:
/// the automatic answer, made with the check (an image edit's: its body is a
/// form, which the generic [`prepare`] cannot read); `Ok(None)`: [`prepare`]'s.
pub(super) async fn serve_checked(
    shared: &Arc<Shared>,
    checked: Result<Option<Value>, String>,
    call: &Call,
    received: &Received,
    guard: InFlight,
    dress: Option<fn(Value) -> Value>,
) -> Response {
    let vendor = shared.vendor;
    let answer = match checked {
        Ok(answer) => answer,
        Err(message) => {
            shared.record(received, false);
            return vendor_error(vendor, 400, None, &message);
        }
    };
    let Some(reply) = shared.record(received, true) else {
        return plain(500, "text/plain", "fake upstream: no reply".to_owned());
    };
    let stopped = || plain(503, "text/plain", "fake upstream stopped".to_owned());
    if !reply.first_byte_delay.is_zero() {
        tokio::select! {
            () = tokio::time::sleep(reply.first_byte_delay) => {}
            () = shared.until_shutdown() => return stopped(),
        }
    }
    let prepared = match (&reply.body, answer) {
        (ReplyBody::Auto, Some(answer)) => Some(Prepared {
            content_type: "application/json",
            error_type: None,
            frames: vec![Bytes::from(answer.to_string())],
            streamed: false,
        }),
        _ => prepare(vendor, &reply, call, &received.body),
    };
    match prepared {
        Some(prepared) => {
            let prepared = match dress {
                Some(dress) if matches!(reply.body, ReplyBody::Auto) => dressed(prepared, dress),
                _ => prepared,
            };
            respond(&reply, prepared, guard)
        }
        None => {
            // Hang: until the fake is dropped, or the client goes away.
            shared.until_shutdown().await;
            stopped()
        }
    }
}

/// A JSON answer's frames through `dress`; other frames as they are.
fn dressed(prepared: Prepared, dress: fn(Value) -> Value) -> Prepared {
    let frames = prepared
        .frames
        .iter()
        .map(|frame| match serde_json::from_slice::<Value>(frame) {
            Ok(v) => Bytes::from(dress(v).to_string()),
            Err(_) => frame.clone(),
        })
        .collect();
    Prepared { frames, ..prepared }
}
