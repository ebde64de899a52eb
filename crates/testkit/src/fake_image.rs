//! An image call on a fake ([`crate::images`]): its body checked as the real
//! API checks it (a refusal answers 400 in the vendor's shape, is recorded
//! and takes nothing from the script), then answered from the script as a
//! generation is: scripted statuses, delays and hangs alike, and
//! [`ReplyBody::Auto`](crate::ReplyBody::Auto) the API's image answer (an
//! Azure fake's dressed with its content filter's results). An edit's body is
//! a multipart form, read here from the recorded bytes.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

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
    let checked = match api {
        // An edit's answer is made with its check: the generic reply code
        // reads JSON bodies only.
        Api::OpenAi { deployment } if images::is_edit_path(&received.path) => {
            edit(shared.azure.is_some(), deployment, call, received).await.map(Some)
        }
        _ => images::check(api, &call.model, &received.body).map(|()| None),
    };
    let dress = shared.azure.is_some().then_some(images::azure_dress as fn(Value) -> Value);
    serve_checked(shared, checked, call, received, guard, dress).await
}

/// An edit's form read, checked and answered (`Err`: the API's refusal).
async fn edit(
    azure: bool,
    deployment: bool,
    call: &Call,
    received: &Received,
) -> Result<Value, String> {
    let form = images::read_form(received.header("content-type"), received.raw.clone()).await?;
    // Azure's v1 API names the deployment in the body: it has no default.
    if azure && !deployment && !form.iter().any(|part| part.name == "model") {
        return Err("model: a deployment name is required".to_owned());
    }
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    images::edit_reply(deployment, &call.model, &form, now)
}
