//! Embeddings endpoints: OpenAI's `POST /v1/embeddings`, and Gemini's
//! `:embedContent` and `:batchEmbedContents` (routed from [`crate::gemini`]).
//! Each parses its body into the canonical [`EmbedRequest`], the core embeds
//! it ([`switchyard_core::Engine::embed`]: plan, admit, attempts, meter,
//! record), and the answer is written in the endpoint's own shape, with the
//! gateway's headers as a generation has them.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use switchyard_core::GatewayError;
use switchyard_core::exec::{Embedded, planned_request};
use switchyard_protocol::embeddings::{self, EmbedRequest, Encoding};
use switchyard_protocol::{ClientFormat, ProtocolError};

use crate::http::{Payload, error_response, served_headers, whole_request};
use crate::{AppState, ids};

/// `POST /v1/embeddings`: OpenAI's body and answer (base64 where asked).
pub async fn openai(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let format = ClientFormat::OpenAiChat;
    let parse = |bytes: &[u8], _: Option<&str>| embeddings::openai::parse_request(bytes);
    let write = |done: &Embedded, encoding| {
        embeddings::openai::write_response(&done.response, &done.response.model, encoding)
    };
    serve(&state, &headers, Payload::Http(body), format, None, parse, write).await
}

/// A batch's `/v1/embeddings` line, as [`openai`] answers it.
pub(crate) async fn openai_line(state: &AppState, headers: &HeaderMap, line: Payload) -> Response {
    let parse = |bytes: &[u8], _: Option<&str>| embeddings::openai::parse_request(bytes);
    let write = |done: &Embedded, encoding| {
        embeddings::openai::write_response(&done.response, &done.response.model, encoding)
    };
    serve(state, headers, line, ClientFormat::OpenAiChat, None, parse, write).await
}

/// Which Gemini method: `:embedContent` (one input) or `:batchEmbedContents`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum GeminiMethod {
    One,
    Batch,
}

/// `POST /v1beta/models/{model}:embedContent` and `:batchEmbedContents`:
/// Google's bodies and answers, the model from the path.
pub(crate) async fn gemini(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
    model: &str,
    method: GeminiMethod,
) -> Response {
    let parse = move |bytes: &[u8], model: Option<&str>| {
        let model = model.unwrap_or_default();
        match method {
            GeminiMethod::One => embeddings::gemini::parse_embed_content(bytes, model),
            GeminiMethod::Batch => embeddings::gemini::parse_batch(bytes, model),
        }
    };
    let write = move |done: &Embedded, _| match method {
        GeminiMethod::One => embeddings::gemini::write_embed_content(&done.response),
        GeminiMethod::Batch => embeddings::gemini::write_batch(&done.response),
    };
    serve(state, headers, Payload::Http(body), ClientFormat::Gemini, Some(model), parse, write)
        .await
}

/// Authenticate, read and parse the body (`model`: the path's, where the
/// format puts it there), embed, answer `write`'s body or the error in
/// `format`.
async fn serve(
    state: &AppState,
    headers: &HeaderMap,
    payload: Payload,
    format: ClientFormat,
    model: Option<&str>,
    parse: impl Fn(&[u8], Option<&str>) -> Result<EmbedRequest, ProtocolError>,
    write: impl Fn(&Embedded, Encoding) -> Vec<u8>,
) -> Response {
    let id = ids::request_id();
    let embedded = async {
        let parse = |bytes: &[u8]| parse(bytes, model);
        let (inbound, req) = whole_request(
            state,
            headers,
            payload,
            format,
            &id,
            parse,
            |r: &mut EmbedRequest| &mut r.model,
            planned_request,
        )
        .await?;
        let encoding = req.encoding;
        let done = state.gateway.embed(inbound, req).await?;
        Ok::<_, GatewayError>((done, encoding))
    };
    match embedded.await {
        Ok((done, encoding)) => answer(&done, write(&done, encoding), &id),
        Err(e) => {
            tracing::debug!(request_id = %id, code = e.code().as_str(), "embeddings refused or failed");
            error_response(format, &e, &id)
        }
    }
}

fn answer(done: &Embedded, body: Vec<u8>, id: &str) -> Response {
    let mut resp = ([("content-type", "application/json")], body).into_response();
    served_headers(resp.headers_mut(), &done.served, id, &done.descriptor, done.rate.as_ref());
    resp
}
