//! An image generation call on a fake ([`crate::images`]): its body checked as
//! the real API checks it (a refusal answers 400 in the vendor's shape, is
//! recorded and takes nothing from the script), then answered from the script
//! as a generation is: scripted statuses, delays and hangs alike, and
//! [`ReplyBody::Auto`](crate::ReplyBody::Auto) the API's image answer (an
//! Azure fake's dressed with its content filter's results).

use std::sync::Arc;

use axum::response::Response;
use serde_json::Value;

use super::embed::serve_checked;
use super::route::Call;
use super::{InFlight, Received, Shared};
use crate::images::{self, Api};

pub(super) async fn serve(
    shared: &Arc<Shared>,
    api: Api,
    call: &Call,
    received: &Received,
    guard: InFlight,
) -> Response {
    let checked = images::check(api, &call.model, &received.body);
    let dress = shared.azure.is_some().then_some(images::azure_dress as fn(Value) -> Value);
    serve_checked(shared, checked, call, received, guard, dress).await
}
