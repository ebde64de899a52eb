//! The Bedrock Converse wire: routes, authentication as AWS checks it, the
//! error shape, and (in [`answer`]) Converse answers and their event-stream
//! frames; [`validate`] refuses what Converse refuses. [`invoke`]: Claude's own
//! body through InvokeModel, on the same fake.
//!
//! Bedrock's routes carry the model in the path, percent-encoded
//! (`/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse`); the
//! fake records the path as sent (SigV4 signs it so) and
//! [`Received::bedrock_model`](crate::Received::bedrock_model) decodes it.
//!
//! # Example
//!
//! ```
//! use std::time::SystemTime;
//! use switchyard_core::credentials::aws::{AwsCredentials, sign};
//! use switchyard_testkit::{BedrockAuth, FakeUpstream};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let fake = FakeUpstream::start_bedrock(BedrockAuth::sigv4("AKIDTEST", "s3cret", "eu-west-1"))
//!     .await?;
//! let url = format!("{}/model/amazon.nova-pro-v1%3A0/converse", fake.base_url());
//! let body = br#"{"messages":[{"role":"user","content":[{"text":"hi"}]}]}"#;
//! let creds = AwsCredentials::new("AKIDTEST", "s3cret", None);
//! let signed = sign("POST", &url, &[], body, &creds, "eu-west-1", "bedrock", SystemTime::now())?;
//!
//! # let _ = rustls::crypto::ring::default_provider().install_default();
//! let mut request = reqwest::Client::new().post(&url).body(&body[..]);
//! for (name, value) in &signed {
//!     request = request.header(name, value);
//! }
//! let answer: serde_json::Value = serde_json::from_slice(&request.send().await?.bytes().await?)?;
//! assert_eq!(answer["output"]["message"]["content"][0]["text"], "echo: hi");
//! assert_eq!(fake.received()[0].bedrock_model().as_deref(), Some("amazon.nova-pro-v1:0"));
//! # Ok(())
//! # }
//! ```

pub mod answer;
pub mod eventstream;
pub mod invoke;
pub mod validate;

use std::time::SystemTime;

use serde_json::{Value, json};

use crate::sigv4;

/// The access key ID a Bedrock fake accepts by default.
pub const ACCESS_KEY_ID: &str = "AKIDFAKEBEDROCK";
/// The secret access key a Bedrock fake accepts by default.
pub const SECRET_ACCESS_KEY: &str = "fake/bedrock/secret+KEY0001";
/// The region a Bedrock fake serves by default.
pub const REGION: &str = "us-east-1";
/// The Bedrock API key (`Authorization: Bearer …`) a fake accepts by default.
pub const API_KEY: &str = "ABSKfakebedrockapikey0001";

/// What a Bedrock fake accepts: SigV4 with this key pair, scoped to `region`
/// and service `bedrock`, and optionally a Bedrock API key as a bearer token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BedrockAuth {
    /// The access key ID of the one key pair accepted.
    pub access_key_id: String,
    /// Its secret.
    pub secret_access_key: String,
    /// The region requests must be signed for.
    pub region: String,
    /// A Bedrock API key accepted as `Authorization: Bearer <key>`; `None`:
    /// bearer tokens are refused.
    pub api_key: Option<String>,
}

impl Default for BedrockAuth {
    /// [`ACCESS_KEY_ID`], [`SECRET_ACCESS_KEY`], [`REGION`] and [`API_KEY`].
    fn default() -> Self {
        BedrockAuth::sigv4(ACCESS_KEY_ID, SECRET_ACCESS_KEY, REGION).with_api_key(API_KEY)
    }
}

impl BedrockAuth {
    /// SigV4 with this key pair in `region`; no API key.
    pub fn sigv4(
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<String>,
        region: impl Into<String>,
    ) -> BedrockAuth {
        BedrockAuth {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            region: region.into(),
            api_key: None,
        }
    }

    /// Also accept `Authorization: Bearer <key>`.
    pub fn with_api_key(mut self, key: impl Into<String>) -> BedrockAuth {
        self.api_key = Some(key.into());
        self
    }
}

/// A request the fake refuses, as AWS answers it: the status, the
/// `x-amzn-ErrorType` and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// HTTP status.
    pub status: u16,
    /// `x-amzn-ErrorType`, e.g. `InvalidSignatureException`.
    pub error_type: &'static str,
    /// The `message` of the body.
    pub message: String,
}

impl Refusal {
    fn new(status: u16, error_type: &'static str, message: impl Into<String>) -> Refusal {
        Refusal { status, error_type, message: message.into() }
    }

    /// A 400 `ValidationException`.
    pub fn validation(message: impl Into<String>) -> Refusal {
        Refusal::new(400, "ValidationException", message)
    }
}

/// The model ID and whether it streams, for `/model/{modelId}/converse` and
/// `/model/{modelId}/converse-stream` (`path` as sent); `None` for any other path.
pub fn route(path: &str) -> Option<(String, bool)> {
    let (model, action) = model_action(path)?;
    let stream = match action {
        "converse" => false,
        "converse-stream" => true,
        _ => return None,
    };
    Some((model, stream))
}

/// `CountTokens`' route, `/model/{modelId}/count-tokens`: the model.
pub fn count_route(path: &str) -> Option<String> {
    model_action(path).filter(|(_, action)| *action == "count-tokens").map(|(model, _)| model)
}

pub(crate) fn model_action(path: &str) -> Option<(String, &str)> {
    let rest = path.strip_prefix("/model/")?;
    let (model, action) = rest.split_once('/')?;
    let model = sigv4::percent_decode(model);
    (!model.is_empty()).then_some((model, action))
}

/// Checks a request's credentials as AWS does: a bearer API key when one is
/// configured, else SigV4 (key ID, scope, a date within [`sigv4::MAX_SKEW`] of
/// `now`, signed `host`/`x-amz-date`/`x-amz-security-token`, the signature
/// over the double-encoded path and the body's hash).
pub fn authenticate(
    auth: &BedrockAuth,
    method: &str,
    target: &str,
    headers: &[(String, String)],
    body: &[u8],
    now: SystemTime,
) -> Result<(), Refusal> {
    let forbidden = |kind, message: String| Err(Refusal::new(403, kind, message));
    let Some(authorization) =
        headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("authorization")).map(|(_, v)| v)
    else {
        return forbidden(
            "MissingAuthenticationTokenException",
            "Missing Authentication Token".into(),
        );
    };
    if let Some(token) = authorization.strip_prefix("Bearer ") {
        return match &auth.api_key {
            Some(key) if key == token.trim() => Ok(()),
            _ => forbidden(
                "UnrecognizedClientException",
                "The security token included in the request is invalid.".into(),
            ),
        };
    }
    let parsed = match sigv4::authorization(headers) {
        Ok(p) => p,
        Err(why) => {
            return forbidden(
                "IncompleteSignatureException",
                format!("Authorization header: {why}"),
            );
        }
    };
    if parsed.access_key_id != auth.access_key_id {
        return forbidden(
            "UnrecognizedClientException",
            "The security token included in the request is invalid.".into(),
        );
    }
    if parsed.region != auth.region || parsed.service != "bedrock" {
        return forbidden(
            "InvalidSignatureException",
            format!(
                "Credential should be scoped to a valid region and service: signed for {}/{}, \
                 expected {}/bedrock.",
                parsed.region, parsed.service, auth.region
            ),
        );
    }
    let amz_date = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("x-amz-date"))
        .map_or("", |(_, v)| v.as_str());
    match sigv4::skew(amz_date, now) {
        None => {
            return forbidden(
                "IncompleteSignatureException",
                format!("Bad x-amz-date {amz_date:?}"),
            );
        }
        Some(skew) if skew > sigv4::MAX_SKEW => {
            return forbidden(
                "InvalidSignatureException",
                format!(
                    "Signature expired: {amz_date} is now earlier or later than {} (5 minutes \
                     either way).",
                    sigv4::format_amz_date(now)
                ),
            );
        }
        Some(_) => {}
    }
    sigv4::verify(method, target, headers, body, &auth.secret_access_key, &auth.region, "bedrock")
        .map(drop)
        .or_else(|why| {
            forbidden(
                "InvalidSignatureException",
                format!(
                    "The request signature we calculated does not match the signature you \
                     provided. Check your AWS Secret Access Key and signing method. ({why})"
                ),
            )
        })
}

/// Bedrock's error type for an HTTP status (what a scripted error answers).
pub fn error_type(status: u16) -> &'static str {
    match status {
        400 => "ValidationException",
        403 => "AccessDeniedException",
        404 => "ResourceNotFoundException",
        408 => "ModelTimeoutException",
        424 => "ModelErrorException",
        429 => "ThrottlingException",
        503 => "ServiceUnavailableException",
        500..=599 => "InternalServerException",
        _ => "ValidationException",
    }
}

/// Bedrock's error body: `{"message": …}` (the type travels in the
/// `x-amzn-ErrorType` header).
pub fn error_body(message: &str) -> Value {
    json!({ "message": message })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_decode_the_model_and_refuse_other_paths() {
        let m = "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream";
        assert_eq!(route(m), Some(("us.anthropic.claude-sonnet-4-5-20250929-v1:0".into(), true)));
        assert_eq!(route("/model/m/converse"), Some(("m".into(), false)));
        for other in ["/model/m/invoke", "/model//converse", "/models/m/converse", "/"] {
            assert_eq!(route(other), None, "{other}");
        }
    }
}
