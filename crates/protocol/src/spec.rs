//! What calling an upstream of a wire takes beyond its bodies: where generation
//! lives relative to the provider's endpoint, where the model goes, how a stream
//! is asked for and framed, how the request authenticates, the headers it must
//! carry, and the endpoint a provider gets when its config names none.
//!
//! Each wire states these once, in the `SPEC` of its folder ([`crate::Wire::spec`]);
//! the HTTP layer (`switchyard-core`'s `upstream`) builds its requests from them.
//! Data and string building only: no IO.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::ProtocolError;

/// The facts of one wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireSpec {
    /// The path of a generation, relative to the provider's endpoint. With the
    /// model in the path ([`ModelPlacement::Path`]), `{model}` stands for it.
    pub path: &'static str,
    /// How a stream is asked for.
    pub streaming: Streaming,
    /// Where the upstream model goes.
    pub model: ModelPlacement,
    /// How a streamed answer is framed.
    pub framing: Framing,
    /// How a request carries the provider's key.
    pub auth: Auth,
    /// Headers every request carries.
    pub headers: &'static [RequiredHeader],
    /// Client headers passed on to the upstream when the client speaks this wire's
    /// own format (vendor options a translation could not honour, such as
    /// `anthropic-beta`).
    pub passthrough_headers: &'static [&'static str],
    /// Passed-through headers this wire takes in its body instead, as a list of
    /// the header's comma-separated values: `(header, field)`. Bedrock's
    /// InvokeModel takes Claude's `anthropic-beta` flags as `anthropic_beta`.
    pub headers_in_body: &'static [(&'static str, &'static str)],
    /// The endpoint of a provider whose config names none.
    pub default_endpoint: &'static str,
    /// Where and how the wire counts a request's input tokens without generating;
    /// `None` when it has no such endpoint (the gateway then estimates).
    pub count: Option<CountSpec>,
    /// The path of its own compaction endpoint, relative to the endpoint like
    /// [`WireSpec::path`] (the Responses API's `/responses/compact`): a
    /// client's compact request whose every deployment has one goes there as
    /// the client sent it. `None`: the gateway compacts.
    pub compact: Option<&'static str>,
    /// Where and in which body the wire's provider embeds text; `None`: it
    /// serves no embeddings (Anthropic).
    pub embeddings: Option<crate::embeddings::EmbedSpec>,
    /// Where and in which body the wire's provider generates images; `None`:
    /// it generates none.
    pub images: Option<crate::images::ImageSpec>,
    /// How the wire's provider runs media jobs on a queue; `None`: it runs
    /// none.
    pub jobs: Option<crate::jobs::JobSpec>,
    /// The provider's own batch API, where the wire has one; used for a
    /// provider whose config turns it on (`batch_api: true`), since a server
    /// compatible with the wire need not serve it.
    pub batches: Option<crate::batches::native::BatchApi>,
    /// The wire serves generations (chat): false for a provider that only
    /// runs media jobs (fal), whose chat models the catalog refuses.
    pub chat: bool,
}

/// A wire's token-counting endpoint: its path, the body it takes (made from the
/// generation body, so counting sees exactly what a generation would send) and
/// the answer's field with the count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountSpec {
    /// Relative to the provider's endpoint, like [`WireSpec::path`]; `{model}`
    /// stands for the upstream model where the wire puts it in the path.
    pub path: &'static str,
    /// How the counting body is made from the generation body.
    pub body: CountBody,
    /// The top-level field of the answer that holds the count.
    pub answer: &'static str,
    /// Whether the client's passed-through headers (`anthropic-beta`) go with
    /// a count as with a generation: Claude's count on Vertex AI refuses
    /// every flag.
    pub passthrough: bool,
    /// Which model the count names.
    pub model: CountModel,
}

/// Which model a count names ([`CountSpec::model`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountModel {
    /// The deployment's, as a generation names it.
    Same,
    /// The foundation model under a cross-region inference profile: the
    /// profile's id less its geography (`us.anthropic.claude-…` counts as
    /// `anthropic.claude-…`). Bedrock's `CountTokens` refuses profile ids
    /// ("The provided model doesn't support counting tokens"), and an
    /// application inference profile (an ARN) cannot be counted at all.
    Foundation,
}

/// The geographies of Bedrock's cross-region inference profiles.
const PROFILE_GEOGRAPHIES: &[&str] = &["us", "us-gov", "eu", "apac", "jp", "au", "ca", "global"];

impl CountModel {
    /// `model` as a count names it; `None` when it cannot be counted.
    pub fn of<'a>(&self, model: &'a str) -> Option<&'a str> {
        match self {
            CountModel::Same => Some(model),
            CountModel::Foundation if model.starts_with("arn:") => None,
            CountModel::Foundation => match model.split_once('.') {
                Some((geo, rest)) if PROFILE_GEOGRAPHIES.contains(&geo) && rest.contains('.') => {
                    Some(rest)
                }
                _ => Some(model),
            },
        }
    }
}

/// How a counting body is made from the generation body of the same request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountBody {
    /// The generation body with only these top-level fields: the endpoint refuses
    /// the rest (Anthropic answers `max_tokens: Extra inputs are not permitted`).
    /// A list of what it takes, not of what it refuses, so a field a client adds
    /// that the endpoint does not know is left out instead of failing the count.
    Only(&'static [&'static str]),
    /// The generation body with only these top-level fields, the upstream
    /// model named in its `model` field: a counting endpoint that names no
    /// model in its URL, for a wire whose generation body names none (Claude on
    /// Vertex AI's `count-tokens:rawPredict`).
    Named(&'static [&'static str]),
    /// The whole generation body under `key`, naming the model in its `model`
    /// field as `models/<model>` (Gemini's `generateContentRequest`, which is how
    /// its count takes the system instruction and tools, not only `contents`).
    Wrapped {
        /// The field the generation body goes under (`generateContentRequest`).
        key: &'static str,
    },
    /// The generation body with only `fields`, nested under the objects
    /// `under` names, outermost first (Bedrock's `CountTokens`:
    /// `{"input": {"converse": {...}}}`).
    Nested {
        /// The keys of the objects around it.
        under: &'static [&'static str],
        /// The top-level fields of the generation body it keeps.
        fields: &'static [&'static str],
    },
    /// The whole generation body as bytes (base64, as AWS's JSON protocols
    /// send a blob) in `field`, nested under the objects `under` names
    /// (Bedrock's `CountTokens` of an InvokeModel body:
    /// `{"input": {"invokeModel": {"body": "…"}}}`).
    Blob {
        /// The keys of the objects around it.
        under: &'static [&'static str],
        /// The field that holds the body.
        field: &'static str,
    },
}

/// Where the upstream model goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelPlacement {
    /// The body's `model` field (OpenAI-compatible, Anthropic).
    Body,
    /// The URL path, at `{model}`; the body names no model (Gemini).
    Path,
}

/// How a streamed generation is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streaming {
    /// `"stream": true` in the body, on the same path. The translators write it
    /// from [`crate::Request::stream`]; a client's own body carries its own.
    BodyField,
    /// A path of its own, relative to the endpoint like [`WireSpec::path`], the
    /// body the same as for a whole answer (Gemini's `:streamGenerateContent`).
    Path(&'static str),
}

/// How a streamed answer is framed on the wire. Each framing has its framer
/// ([`Framing::framer`]), which cuts the bytes into the frames a wire's decoder
/// reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Server-sent events ([`crate::sse`]): every wire so far.
    Sse,
    /// AWS event-stream binary frames: for Amazon Bedrock's `ConverseStream`
    /// ([`crate::bedrock`]).
    AwsEventStream,
    /// AWS event-stream messages each wrapping one event of the model's own
    /// stream in base64: Bedrock's `InvokeModelWithResponseStream`
    /// ([`crate::frame::aws_chunks`]).
    AwsChunks,
    /// One JSON object per line: for Ollama's native API (`/api/chat`), not yet a
    /// wire.
    JsonLines,
}

impl Framing {
    /// The media type of a stream so framed (what a streamed request accepts).
    pub fn media_type(self) -> &'static str {
        match self {
            Framing::Sse => "text/event-stream",
            Framing::AwsEventStream | Framing::AwsChunks => "application/vnd.amazon.eventstream",
            Framing::JsonLines => "application/x-ndjson",
        }
    }
}

/// How a request carries the provider's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// The key as the value of this header.
    Header(&'static str),
    /// An OAuth 2 access token, sent as a bearer token: minted from the
    /// provider's Google credentials (Vertex AI), or a key given as it is.
    OAuthToken,
    /// AWS Signature Version 4 over the whole request, with the provider's AWS
    /// credentials, in its region: Amazon Bedrock ([`crate::bedrock`]). A key
    /// given instead (a Bedrock API key) goes as a bearer token. A model in the
    /// path of such a wire is encoded as the AWS SDKs encode a path label
    /// ([`aws_path_label`]), since the signature covers the path exactly as sent.
    SigV4 {
        /// The signing name of the service (`bedrock`).
        service: &'static str,
    },
    /// The key as the value of `key_header`, or a Microsoft Entra ID access
    /// token minted from the provider's Azure credentials, as a bearer token
    /// (Azure OpenAI, [`crate::azure`]).
    Entra {
        /// The header a key goes in (`api-key`).
        key_header: &'static str,
    },
    /// The key after `prefix` in `header`: fal's `Authorization: Key <key>`.
    Prefixed {
        /// The header (`authorization`).
        header: &'static str,
        /// What goes before the key (`Key `).
        prefix: &'static str,
    },
}

/// A header every request of a wire carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequiredHeader {
    /// The header's name (`anthropic-version`).
    pub name: &'static str,
    /// The value sent unless the client's own request gave one (where the server
    /// forwards the client's header).
    pub default: &'static str,
}

impl WireSpec {
    /// The path of a whole or a streamed generation, `{model}` not filled in.
    pub fn path(&self, stream: bool) -> &'static str {
        match self.streaming {
            Streaming::Path(path) if stream => path,
            _ => self.path,
        }
    }

    /// The URL of a generation at `endpoint` (written without a trailing `/`) for
    /// the upstream `model`, which is percent-encoded where it goes in the path
    /// ([`WireSpec::model_segment`]): a model cannot leave its segment.
    pub fn url(&self, endpoint: &str, model: &str, stream: bool) -> String {
        let path = self.path(stream);
        match self.model {
            ModelPlacement::Body => format!("{endpoint}{path}"),
            ModelPlacement::Path => {
                format!("{endpoint}{}", path.replace("{model}", &self.model_segment(model)))
            }
        }
    }

    /// The URL of the counting endpoint at `endpoint` for the upstream `model`
    /// (percent-encoded as in [`WireSpec::url`]); `None` when the wire has none.
    pub fn count_url(&self, endpoint: &str, model: &str) -> Option<String> {
        let count = self.count.as_ref()?;
        Some(match self.model {
            ModelPlacement::Body => format!("{endpoint}{}", count.path),
            ModelPlacement::Path => {
                let model = self.model_segment(count.model.of(model)?);
                format!("{endpoint}{}", count.path.replace("{model}", &model))
            }
        })
    }

    /// `model` as it stands in this wire's path: [`aws_path_label`] for a SigV4
    /// wire (the signature covers the path, and Bedrock's routes are what the AWS
    /// SDKs send), [`path_segment`] for the others.
    pub fn model_segment<'a>(&self, model: &'a str) -> Cow<'a, str> {
        match self.auth {
            Auth::SigV4 { .. } => aws_path_label(model),
            _ => path_segment(model),
        }
    }

    /// Whether every request goes to the same URL (no model in the path, no path
    /// of its own for streams), so a provider's URL can be built once.
    pub fn fixed_url(&self) -> bool {
        self.model == ModelPlacement::Body && self.streaming == Streaming::BodyField
    }
}

/// `value` as it may stand inside one URL path segment: every byte percent-encoded
/// but RFC 3986's unreserved ones (ASCII letters, digits, `-._~`) and `:` and `@`
/// (which a segment takes as they are, and which model ids use: Vertex AI's
/// `claude-x@20250101`; a SigV4 wire encodes them too, see [`aws_path_label`]).
/// So `/`, `?`, `#` and `%` are encoded, and a value can neither end its segment,
/// start a query or a fragment, nor carry an encoding of its own for the upstream
/// to decode.
///
/// A value of only dots would still read as a dot segment where it stood alone
/// in one (URL parsers take `%2E` as `.` too); the gateway refuses such model
/// names where they enter it, and no wire's path puts the model alone in a
/// segment.
///
/// ```
/// use switchyard_protocol::spec::path_segment;
///
/// assert_eq!(path_segment("gemini-2.5-pro"), "gemini-2.5-pro");
/// assert_eq!(path_segment("claude-x@2025:1"), "claude-x@2025:1");
/// assert_eq!(path_segment("x/../files#"), "x%2F..%2Ffiles%23");
/// assert_eq!(path_segment("x?key=1&y=%2F"), "x%3Fkey%3D1%26y%3D%252F");
/// ```
pub fn path_segment(value: &str) -> Cow<'_, str> {
    encode_except(value, |b| unreserved(b) || matches!(b, b':' | b'@'))
}

/// `value` as the AWS SDKs write a URI path label (Bedrock's `{modelId}`): every
/// byte but RFC 3986's unreserved ones percent-encoded, `:` and `@` too. An
/// inference profile's id (`us.anthropic.claude-sonnet-4-5-20250929-v1:0`) or an
/// ARN (`arn:aws:bedrock:…:inference-profile/…`) then stays one segment, written
/// as the SDKs write it, which is what a SigV4 signer must sign.
///
/// ```
/// use switchyard_protocol::spec::aws_path_label;
///
/// assert_eq!(aws_path_label("amazon.nova-pro-v1"), "amazon.nova-pro-v1");
/// assert_eq!(
///     aws_path_label("arn:aws:bedrock:us-east-1:1:inference-profile/us.x-v1:0"),
///     "arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.x-v1%3A0"
/// );
/// ```
pub fn aws_path_label(value: &str) -> Cow<'_, str> {
    encode_except(value, unreserved)
}

/// RFC 3986's unreserved bytes: ASCII letters, digits, `-._~`.
fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// `value` with every byte but those `keep` takes percent-encoded; borrowed when
/// nothing needs encoding.
fn encode_except(value: &str, keep: impl Fn(u8) -> bool) -> Cow<'_, str> {
    if value.bytes().all(&keep) {
        return Cow::Borrowed(value);
    }
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(value.len() * 3);
    for b in value.bytes() {
        if keep(b) {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xF)]));
        }
    }
    Cow::Owned(out)
}

/// `inner` under the objects `under` names, outermost first.
fn nest(under: &[&str], inner: Map<String, Value>) -> Map<String, Value> {
    under.iter().rev().fold(inner, |inner, key| {
        let mut outer = Map::new();
        outer.insert((*key).into(), Value::Object(inner));
        outer
    })
}

impl CountSpec {
    /// The counting body for a request whose generation body (as the wire would be
    /// sent it for `model`, the upstream model) is `generation`.
    pub fn body(&self, generation: &[u8], model: &str) -> Result<Vec<u8>, ProtocolError> {
        if let CountBody::Blob { under, field } = self.body {
            use base64::Engine as _;
            let blob = base64::engine::general_purpose::STANDARD.encode(generation);
            let mut inner = Map::new();
            inner.insert(field.into(), Value::String(blob));
            let body = nest(under, inner);
            return serde_json::to_vec(&body).map_err(|e| ProtocolError::body(e.to_string()));
        }
        let Value::Object(mut map) = serde_json::from_slice::<Value>(generation)
            .map_err(|e| ProtocolError::body(e.to_string()))?
        else {
            return Err(ProtocolError::body("the generation body is not an object"));
        };
        let body = match self.body {
            CountBody::Only(fields) => {
                map.retain(|k, _| fields.contains(&k.as_str()));
                map
            }
            CountBody::Named(fields) => {
                map.retain(|k, _| fields.contains(&k.as_str()));
                map.insert("model".into(), Value::String(model.to_owned()));
                map
            }
            CountBody::Wrapped { key } => {
                map.insert("model".into(), Value::String(format!("models/{model}")));
                let mut outer = Map::new();
                outer.insert(key.into(), Value::Object(map));
                outer
            }
            CountBody::Nested { under, fields } => {
                map.retain(|k, _| fields.contains(&k.as_str()));
                nest(under, map)
            }
            // Answered above, on the bytes as they are.
            CountBody::Blob { .. } => map,
        };
        serde_json::to_vec(&body).map_err(|e| ProtocolError::body(e.to_string()))
    }

    /// The count in an answer of the endpoint.
    pub fn parse_answer(&self, answer: &[u8]) -> Result<u64, ProtocolError> {
        let v: Value = serde_json::from_slice(answer)
            .map_err(|e| ProtocolError::MalformedUpstream(format!("token count: {e}")))?;
        v.get(self.answer).and_then(Value::as_u64).ok_or_else(|| {
            ProtocolError::MalformedUpstream(format!(
                "token count: the answer has no whole number in `{}`",
                self.answer
            ))
        })
    }
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
