//! Which of a fake's routes a request is on: each vendor's generation and
//! counting paths, Vertex's and Azure's under their own prefixes.

use std::sync::Mutex;

use axum::http::Method;
use axum::response::Response;
use serde_json::Value;

use super::{Received, Shared, lock, plain};
use crate::canned::DEFAULT_MODEL;
use crate::embeddings::{self, Api};
use crate::images::{self, Api as ImageApi};
use crate::{Vendor, azure, bedrock, vertex};

/// A request on one of the vendor's generation routes.
pub(super) struct Call {
    pub(super) model: String,
    pub(super) stream: bool,
    /// Gemini streams without `?alt=sse` as one JSON array instead of SSE.
    pub(super) json_array: bool,
    /// A token count (Anthropic `count_tokens`, Gemini `:countTokens`), not a
    /// generation.
    pub(super) count: bool,
    /// OpenAI's Responses API ([`crate::responses`]), not Chat Completions.
    pub(super) responses: bool,
    /// The Responses API's compact endpoint (`/responses/compact`).
    pub(super) compact: bool,
    /// Bedrock's InvokeModel ([`crate::bedrock::invoke`]): Claude's own body.
    pub(super) invoke: bool,
    /// An embeddings call ([`crate::embeddings`]), on this API.
    pub(super) embed: Option<Api>,
    /// An image generation call ([`crate::images`]), on this API.
    pub(super) image: Option<ImageApi>,
}

pub(super) enum Route {
    Call(Call),
    NotFound,
    MethodNotAllowed,
}

pub(super) fn route(vendor: Vendor, vertex: bool, method: &Method, rx: &Received) -> Route {
    let body_model =
        || rx.body.get("model").and_then(Value::as_str).unwrap_or(DEFAULT_MODEL).to_owned();
    let body_stream = || rx.body.get("stream").and_then(Value::as_bool) == Some(true);
    let call = match vendor {
        _ if vertex => {
            vertex::route(vendor, &rx.path, rx.query.as_deref())
                .map(|r| {
                    // Model-as-a-Service names the model (and streams) in the body,
                    // and so does Claude's count.
                    let named = r.model.is_empty();
                    Call {
                        model: if named { body_model() } else { r.model },
                        stream: if named && !r.count { body_stream() } else { r.stream },
                        json_array: false,
                        count: r.count,
                        responses: false,
                        compact: false,
                        invoke: false,
                        embed: None,
                        image: None,
                    }
                })
                .or_else(|| {
                    // Google's `:predict`: Imagen's images, the other models' embeddings.
                    let model =
                        (vendor == Vendor::Gemini).then(|| embeddings::vertex_route(&rx.path));
                    model.flatten().map(|model| {
                        if images::is_imagen(&model) {
                            image_call(model, ImageApi::VertexImagen)
                        } else {
                            embed_call(model, Api::VertexPredict)
                        }
                    })
                })
        }
        Vendor::OpenAi => match rx.path.as_str() {
            "/v1/embeddings" | "/embeddings" => {
                Some(embed_call(body_model(), Api::OpenAi { deployment: false }))
            }
            path if images::is_openai_route(path) => {
                let model = rx.body.get("model").and_then(Value::as_str);
                let model = model.unwrap_or(images::OPENAI_DEFAULT_MODEL).to_owned();
                Some(image_call(model, ImageApi::OpenAi { deployment: false }))
            }
            // An edit's model is in its multipart form, read when it is served.
            path if images::is_openai_edit_route(path) => Some(image_call(
                images::OPENAI_DEFAULT_MODEL.to_owned(),
                ImageApi::OpenAi { deployment: false },
            )),
            "/v1/chat/completions" | "/chat/completions" => Some(Call {
                model: body_model(),
                stream: body_stream(),
                json_array: false,
                count: false,
                responses: false,
                compact: false,
                invoke: false,
                embed: None,
                image: None,
            }),
            "/v1/responses" | "/responses" => Some(Call {
                model: body_model(),
                stream: body_stream(),
                json_array: false,
                count: false,
                responses: true,
                compact: false,
                invoke: false,
                embed: None,
                image: None,
            }),
            "/v1/responses/compact" | "/responses/compact" => Some(Call {
                model: body_model(),
                stream: false,
                json_array: false,
                count: false,
                responses: true,
                compact: true,
                invoke: false,
                embed: None,
                image: None,
            }),
            "/v1/responses/input_tokens" | "/responses/input_tokens" => Some(Call {
                model: body_model(),
                stream: false,
                json_array: false,
                count: true,
                responses: true,
                compact: false,
                invoke: false,
                embed: None,
                image: None,
            }),
            _ => None,
        },
        Vendor::Anthropic => match rx.path.as_str() {
            "/v1/messages" => Some(Call {
                model: body_model(),
                stream: body_stream(),
                json_array: false,
                count: false,
                responses: false,
                compact: false,
                invoke: false,
                embed: None,
                image: None,
            }),
            "/v1/messages/count_tokens" => Some(Call {
                model: body_model(),
                stream: false,
                json_array: false,
                count: true,
                responses: false,
                compact: false,
                invoke: false,
                embed: None,
                image: None,
            }),
            _ => None,
        },
        Vendor::Gemini => gemini_call(&rx.path, rx.query.as_deref()),
        // InvokeModel on an embedding model first: the Claude route takes any ID.
        Vendor::Bedrock => embeddings::bedrock_route(&rx.path)
            .map(|(model, api)| embed_call(model, api))
            .or_else(|| bedrock_call(&rx.path)),
    };
    match call {
        None => Route::NotFound,
        Some(_) if method != Method::POST => Route::MethodNotAllowed,
        Some(call) => Route::Call(call),
    }
}

/// An Azure fake's request: its token endpoint answered, the key or token
/// checked, the route read ([`azure::check`]); `Err`: answered already.
pub(super) fn azure_call(
    tokens: &Mutex<azure::Tokens>,
    shared: &Shared,
    method: &Method,
    rx: &Received,
) -> Result<Route, Box<Response>> {
    let token = rx.path == azure::token_path() && method == Method::POST;
    match azure::check(&mut lock(tokens), token, rx) {
        Ok(_) if method != Method::POST => Ok(Route::MethodNotAllowed),
        Ok((model, stream, responses)) => Ok(Route::Call(Call {
            model,
            stream,
            json_array: false,
            count: false,
            responses,
            compact: rx.path == azure::COMPACT_PATH,
            invoke: false,
            // A deployment's model is its name; the v1 API's, the body's.
            embed: rx
                .path
                .ends_with("/embeddings")
                .then_some(Api::OpenAi { deployment: rx.path != azure::EMBEDDINGS_PATH }),
            image: (rx.path.ends_with("/images/generations") || images::is_edit_path(&rx.path))
                .then_some(ImageApi::OpenAi {
                    deployment: rx.path != azure::IMAGES_PATH && rx.path != azure::IMAGE_EDITS_PATH,
                }),
        })),
        Err((status, body)) => {
            shared.record(rx, false);
            Err(Box::new(plain(status, "application/json", body.to_string())))
        }
    }
}

/// Bedrock's Converse, Claude's InvokeModel and CountTokens routes.
fn bedrock_call(path: &str) -> Option<Call> {
    bedrock::route(path)
        .map(|(model, stream)| (model, stream, false))
        .or_else(|| bedrock::invoke::route(path).map(|(model, stream)| (model, stream, true)))
        .map(|(model, stream, invoke)| Call {
            model,
            stream,
            json_array: false,
            count: false,
            responses: false,
            compact: false,
            invoke,
            embed: None,
            image: None,
        })
        .or_else(|| {
            bedrock::count_route(path).map(|model| Call {
                model,
                stream: false,
                json_array: false,
                count: true,
                responses: false,
                compact: false,
                invoke: false,
                embed: None,
                image: None,
            })
        })
}

/// An image generation call on `api` for `model`.
fn image_call(model: String, api: ImageApi) -> Call {
    Call {
        model,
        stream: false,
        json_array: false,
        count: false,
        responses: false,
        compact: false,
        invoke: false,
        embed: None,
        image: Some(api),
    }
}

/// An embeddings call on `api` for `model`.
fn embed_call(model: String, api: Api) -> Call {
    Call {
        model,
        stream: false,
        json_array: false,
        count: false,
        responses: false,
        compact: false,
        invoke: false,
        embed: Some(api),
        image: None,
    }
}

fn gemini_call(path: &str, query: Option<&str>) -> Option<Call> {
    let path = path.replace("%3A", ":").replace("%3a", ":");
    let rest = path.strip_prefix("/v1beta/models/").or_else(|| path.strip_prefix("/v1/models/"))?;
    let (model, action) = rest.rsplit_once(':')?;
    if model.is_empty() || model.contains('/') {
        return None;
    }
    let embed = match action {
        "embedContent" => Some(Api::GeminiEmbed),
        "batchEmbedContents" => Some(Api::GeminiBatch),
        _ => None,
    };
    if let Some(api) = embed {
        return Some(embed_call(model.to_owned(), api));
    }
    if action == "predict" {
        // Imagen's; no other model predicts on Gemini's API.
        return images::is_imagen(model).then(|| image_call(model.to_owned(), ImageApi::Imagen));
    }
    let (stream, count) = match action {
        "generateContent" => (false, false),
        "streamGenerateContent" => (true, false),
        "countTokens" => (false, true),
        _ => return None,
    };
    let sse = query.is_some_and(|q| q.split('&').any(|kv| kv == "alt=sse"));
    Some(Call {
        model: model.to_owned(),
        stream,
        json_array: stream && !sse,
        count,
        responses: false,
        compact: false,
        invoke: false,
        embed: None,
        image: None,
    })
}
