//! An embeddings call on a fake ([`crate::embeddings`]): its body checked as
//! the real API checks it (a refusal answers 400 in the vendor's shape, is
//! recorded and takes nothing from the script), then answered from the script
//! as a generation is: scripted statuses, delays and hangs alike, and
//! [`ReplyBody::Auto`](crate::ReplyBody::Auto) the API's embeddings answer.

use std::sync::Arc;

use axum::response::Response;

use super::reply::{prepare, respond};
use super::route::Call;
use super::{InFlight, Received, Shared, plain, vendor_error};
use crate::embeddings::{self, Api};

pub(super) async fn serve(
    shared: &Arc<Shared>,
    api: Api,
    call: &Call,
    received: &Received,
    guard: InFlight,
) -> Response {
    let vendor = shared.vendor;
    if let Err(message) = embeddings::check(api, &call.model, &received.body) {
        shared.record(received, false);
        return vendor_error(vendor, 400, None, &message);
    }
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
    match prepare(vendor, &reply, call, &received.body) {
        Some(prepared) => respond(&reply, prepared, guard),
        None => {
            // Hang: until the fake is dropped, or the client goes away.
            shared.until_shutdown().await;
            stopped()
        }
    }
}
