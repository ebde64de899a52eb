//! Azure OpenAI, as a fake upstream checks it: a resource's routes
//! (`/openai/deployments/{deployment}/chat/completions?api-version=…`, and the
//! v1 API's `/openai/v1/chat/completions` and Responses API,
//! `/openai/v1/responses` and its `/compact`, checked as OpenAI's; embeddings
//! on `/openai/deployments/{deployment}/embeddings` and `/openai/v1/embeddings`,
//! [`crate::embeddings`]; image generation on
//! `/openai/deployments/{deployment}/images/generations` and
//! `/openai/v1/images/generations`, and image edits on
//! `/openai/deployments/{deployment}/images/edits` and
//! `/openai/v1/images/edits`, [`crate::images`]), which take the resource's key in
//! `api-key` ([`API_KEY`]) or a Microsoft Entra token the fake granted, and a
//! Microsoft Entra token endpoint (`/{TENANT}/oauth2/v2.0/token`) that grants
//! tokens for the client-credentials grant of [`CLIENT_ID`] with
//! [`CLIENT_SECRET`] and Azure OpenAI's scope.
//!
//! Strict like the real API: a deployment route without an `api-version` is a
//! 400, the v1 API refuses a dated one, a request without a key or a granted
//! token a 401. Its answers are in Azure's shape: `prompt_filter_results` and
//! each choice's `content_filter_results` in a whole answer; a stream whose
//! first chunk has empty `choices` (the prompt's filter results, with an empty
//! `id` and `model`) and whose choices carry `content_filter_results`.
//!
//! A fake started with [`crate::FakeUpstream::start_azure`] serves all of it;
//! the gateway's `credentials.azure.authority_host` is the fake's base URL.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{Value, json};

use crate::script::ReplyBody;

/// The resource's key, taken in `api-key`.
pub const API_KEY: &str = "azure-test-key-0123456789abcdef";
/// The tenant the fake's Entra endpoint serves.
pub const TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
/// The app registration it grants tokens to.
pub const CLIENT_ID: &str = "00000000-0000-0000-0000-00000000c11e";
/// That app's client secret.
pub const CLIENT_SECRET: &str = "entra~fake~client~secret";
/// The scope a grant must ask for.
pub const SCOPE: &str = "https://cognitiveservices.azure.com/.default";
/// How long a granted token lives.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(3600);

/// The token endpoint's path.
pub fn token_path() -> String {
    format!("/{TENANT}/oauth2/v2.0/token")
}

/// The tokens a fake granted, and when each expires.
#[derive(Debug, Default)]
pub(crate) struct Tokens {
    granted: HashMap<String, Instant>,
    count: usize,
}

impl Tokens {
    /// Answer a client-credentials grant (a form).
    pub(crate) fn grant(&mut self, form: &[u8]) -> (u16, Value) {
        let form = String::from_utf8_lossy(form);
        let field = |name: &str| {
            form.split('&').find_map(|kv| {
                let (k, v) = kv.split_once('=')?;
                (k == name).then(|| crate::sigv4::percent_decode(&v.replace('+', " ")))
            })
        };
        let refuse = |code: &str, why: &str| {
            (400, json!({"error": code, "error_description": why, "error_codes": [7_000_215]}))
        };
        if field("grant_type").as_deref() != Some("client_credentials") {
            return refuse("unsupported_grant_type", "AADSTS70003: grant_type");
        }
        if field("client_id").as_deref() != Some(CLIENT_ID) {
            return refuse("unauthorized_client", "AADSTS700016: Application not found.");
        }
        if field("client_secret").as_deref() != Some(CLIENT_SECRET) {
            return (
                401,
                json!({"error": "invalid_client",
                    "error_description": "AADSTS7000215: Invalid client secret provided."}),
            );
        }
        if field("scope").as_deref() != Some(SCOPE) {
            return refuse(
                "invalid_scope",
                "AADSTS70011: The provided value for scope is not valid.",
            );
        }
        self.count += 1;
        let token = format!("eyJ0eXAiOiJKV1Qi.fake-entra-{}", self.count);
        self.granted.insert(token.clone(), Instant::now() + TOKEN_LIFETIME);
        let secs = TOKEN_LIFETIME.as_secs() - 1;
        (
            200,
            json!({"token_type": "Bearer", "expires_in": secs, "ext_expires_in": secs,
                "access_token": token}),
        )
    }

    /// Whether a request's `api-key` is the resource's key, or its
    /// `authorization` a token granted here and unexpired.
    pub(crate) fn authorized(&self, api_key: Option<&str>, authorization: Option<&str>) -> bool {
        if let Some(key) = api_key {
            return key == API_KEY;
        }
        let token = authorization.and_then(|a| a.strip_prefix("Bearer "));
        token.and_then(|t| self.granted.get(t)).is_some_and(|until| Instant::now() < *until)
    }

    /// How many tokens were granted.
    pub(crate) fn count(&self) -> usize {
        self.count
    }
}

/// A request to an Azure fake: `token`, one to its token endpoint (answered
/// as `Err`, whatever the grant's outcome); else the key or token checked and
/// the route read: the deployment (the v1 API's: the body's `model`) and
/// whether it streams. `Err`: the status and body Azure answers.
pub(crate) fn check(
    tokens: &mut Tokens,
    token: bool,
    rx: &crate::Received,
) -> Result<(String, bool, bool), (u16, Value)> {
    if token {
        return Err(tokens.grant(&rx.raw));
    }
    if !tokens.authorized(rx.header("api-key"), rx.header("authorization")) {
        let message = if rx.header("api-key").is_some() {
            "Access denied due to invalid subscription key or wrong API endpoint. Make sure to \
             provide a valid key for an active subscription and use a correct regional API \
             endpoint for your resource."
        } else {
            "Unauthorized. Access token is missing, invalid, audience is incorrect \
             (https://cognitiveservices.azure.com), or have expired."
        };
        return Err((401, error_body(401, message)));
    }
    let deployment =
        route(&rx.path, rx.query.as_deref()).map_err(|(s, m)| (s, error_body(s, &m)))?;
    let body_model = rx.body.get("model").and_then(Value::as_str).map(str::to_owned);
    // An edit's body is a multipart form: the image fake reads its model
    // (and refuses a form without one).
    let edit = (rx.path == IMAGE_EDITS_PATH).then(String::new);
    let model = deployment
        .or(body_model)
        .or(edit)
        .ok_or_else(|| (400, error_body(400, "model: a deployment name is required")))?;
    let responses = rx.path == RESPONSES_PATH || rx.path == COMPACT_PATH;
    Ok((model, rx.body.get("stream").and_then(Value::as_bool) == Some(true), responses))
}

/// The v1 API's Responses route (served as the OpenAI fake serves
/// `/v1/responses`, [`crate::responses`]).
pub const RESPONSES_PATH: &str = "/openai/v1/responses";

/// The v1 API's compact endpoint.
pub const COMPACT_PATH: &str = "/openai/v1/responses/compact";

/// The v1 API's embeddings route (checked and answered as OpenAI's
/// `/v1/embeddings`, [`crate::embeddings`]); a deployment's is
/// `/openai/deployments/{deployment}/embeddings`.
pub const EMBEDDINGS_PATH: &str = "/openai/v1/embeddings";

/// The v1 API's image generation route (checked and answered as OpenAI's
/// `/v1/images/generations`, [`crate::images`]); a deployment's is
/// `/openai/deployments/{deployment}/images/generations`.
pub const IMAGES_PATH: &str = "/openai/v1/images/generations";

/// The v1 API's image edits route (checked and answered as OpenAI's
/// `/v1/images/edits`, [`crate::images`], the model the form's); a
/// deployment's is `/openai/deployments/{deployment}/images/edits`.
pub const IMAGE_EDITS_PATH: &str = "/openai/v1/images/edits";

/// What a generation, embeddings or image route names: the deployment (`None` on the
/// v1 API, where it is the body's `model`); `Err`: the status and message
/// Azure answers.
pub(crate) fn route(path: &str, query: Option<&str>) -> Result<Option<String>, (u16, String)> {
    let version = query.and_then(|q| {
        q.split('&').find_map(|kv| kv.strip_prefix("api-version=").map(str::to_owned))
    });
    let v1 = [RESPONSES_PATH, COMPACT_PATH, EMBEDDINGS_PATH, IMAGES_PATH, IMAGE_EDITS_PATH];
    if path == "/openai/v1/chat/completions" || v1.contains(&path) {
        return match version.as_deref() {
            None | Some("v1" | "preview" | "latest") => Ok(None),
            Some(other) => Err((400, format!("API version not supported: {other}"))),
        };
    }
    let deployment = path
        .strip_prefix("/openai/deployments/")
        .and_then(|rest| {
            rest.strip_suffix("/chat/completions")
                .or_else(|| rest.strip_suffix("/embeddings"))
                .or_else(|| rest.strip_suffix("/images/generations"))
                .or_else(|| rest.strip_suffix("/images/edits"))
        })
        .filter(|d| !d.is_empty() && !d.contains('/'))
        .ok_or_else(|| (404, "Resource not found".to_owned()))?;
    match version.as_deref() {
        None => Err((
            400,
            "Missing API version parameter. The api-version query parameter (?api-version=) is \
             required for all requests."
                .to_owned(),
        )),
        Some(v) if dated(v) => Ok(Some(deployment.to_owned())),
        Some(other) => Err((400, format!("API version not supported: {other}"))),
    }
}

/// `2024-10-21`, `2025-04-01-preview`.
fn dated(v: &str) -> bool {
    let date = v.strip_suffix("-preview").unwrap_or(v);
    date.len() == 10
        && date
            .bytes()
            .enumerate()
            .all(|(i, b)| if i == 4 || i == 7 { b == b'-' } else { b.is_ascii_digit() })
}

/// Azure's error body: OpenAI's shape, the status as a string `code`.
pub fn error_body(status: u16, message: &str) -> Value {
    json!({"error": {"code": status.to_string(), "message": message}})
}

/// The filter results of a text nothing was filtered in.
pub fn filter_results() -> Value {
    let safe = json!({"filtered": false, "severity": "safe"});
    json!({"hate": safe, "self_harm": safe, "sexual": safe, "violence": safe})
}

/// A whole OpenAI answer dressed as Azure's: the prompt's filter results, and
/// each choice's.
pub(crate) fn dress_whole(body: &[u8]) -> Bytes {
    let Ok(mut v) = serde_json::from_slice::<Value>(body) else {
        return Bytes::copy_from_slice(body);
    };
    if let Some(choices) = v.get_mut("choices").and_then(Value::as_array_mut) {
        for choice in choices {
            choice["content_filter_results"] = filter_results();
        }
    }
    v["prompt_filter_results"] =
        json!([{"prompt_index": 0, "content_filter_results": filter_results()}]);
    Bytes::from(v.to_string())
}

/// OpenAI's stream frames dressed as Azure's: the prompt's filter results
/// first, in a chunk with empty `choices`, `id` and `model`; each choice with
/// its filter results.
pub(crate) fn dress_stream(frames: &[Bytes]) -> Vec<Bytes> {
    let prelude = json!({"choices": [], "created": 0, "id": "", "model": "", "object": "",
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": filter_results()}]});
    let mut out = vec![Bytes::from(format!("data: {prelude}\n\n"))];
    for frame in frames {
        let text = String::from_utf8_lossy(frame);
        let data = text.trim().strip_prefix("data: ").unwrap_or_default();
        match serde_json::from_str::<Value>(data) {
            Ok(mut v) => {
                if let Some(choices) = v.get_mut("choices").and_then(Value::as_array_mut) {
                    for choice in choices {
                        choice["content_filter_results"] = filter_results();
                    }
                }
                out.push(Bytes::from(format!("data: {v}\n\n")));
            }
            Err(_) => out.push(frame.clone()),
        }
    }
    out
}

/// A canned OpenAI answer ([`crate::canned`]) dressed as Azure's, as the fake
/// dresses the echo it answers by itself: for a test that scripts an Azure
/// fake's answer (a tool call, reasoning). Any other body is left as it is.
pub fn dress(body: ReplyBody) -> ReplyBody {
    match body {
        ReplyBody::Json(v) => {
            let dressed = dress_whole(v.to_string().as_bytes());
            ReplyBody::Json(serde_json::from_slice(&dressed).unwrap_or(v))
        }
        ReplyBody::Sse(frames) => {
            let frames: Vec<Bytes> = frames.into_iter().map(Bytes::from).collect();
            ReplyBody::Sse(
                dress_stream(&frames)
                    .iter()
                    .map(|f| String::from_utf8_lossy(f).into_owned())
                    .collect(),
            )
        }
        other => other,
    }
}

/// A streamed answer the content filter stopped, as Azure writes it: the
/// prompt's filter results, `text`, `finish_reason: "content_filter"`, a
/// trailing chunk of the completion's filter results (one category filtered),
/// the usage, `[DONE]`. For [`crate::Reply::sse`].
pub fn filtered_stream(model: &str, text: &str) -> Vec<String> {
    let chunk = |choices: Value, usage: Value| {
        json!({"choices": choices, "created": 1_735_689_600, "id": "chatcmpl-AZfiltered",
            "model": model, "object": "chat.completion.chunk", "usage": usage})
    };
    let mut filtered = filter_results();
    filtered["violence"] = json!({"filtered": true, "severity": "high"});
    let frames = [
        json!({"choices": [], "created": 0, "id": "", "model": "", "object": "",
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": filter_results()}]}),
        chunk(
            json!([{"content_filter_results": {}, "delta": {"content": "", "role": "assistant"},
                "finish_reason": null, "index": 0}]),
            Value::Null,
        ),
        chunk(
            json!([{"content_filter_results": filter_results(), "delta": {"content": text},
                "finish_reason": null, "index": 0}]),
            Value::Null,
        ),
        chunk(
            json!([{"content_filter_results": filtered, "delta": {},
                "finish_reason": "content_filter", "index": 0}]),
            Value::Null,
        ),
        json!({"choices": [{"content_filter_offsets": {"check_offset": 0, "start_offset": 0,
            "end_offset": 40}, "content_filter_results": filtered, "finish_reason": null,
            "index": 0}], "created": 0, "id": "", "model": "", "object": ""}),
        chunk(json!([]), json!({"completion_tokens": 5, "prompt_tokens": 9, "total_tokens": 14})),
    ];
    let mut out: Vec<String> = frames.iter().map(|f| format!("data: {f}\n\n")).collect();
    out.push("data: [DONE]\n\n".to_owned());
    out
}

/// The 400 Azure answers for a prompt its content filter refuses.
pub fn prompt_filtered_body() -> Value {
    json!({"error": {
        "message": "The response was filtered due to the prompt triggering Azure OpenAI's \
            content management policy. Please modify your prompt and retry.",
        "type": null, "param": "prompt", "code": "content_filter", "status": 400,
        "innererror": {"code": "ResponsibleAIPolicyViolation", "content_filter_result": {
            "hate": {"filtered": false, "severity": "safe"},
            "violence": {"filtered": true, "severity": "high"}}}}})
}
