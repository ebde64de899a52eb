//! What calling an upstream of a wire takes beyond its bodies: where generation
//! lives relative to the provider's endpoint, where the model goes, how a stream
//! is asked for and framed, how the request authenticates, the headers it must
//! carry, and the endpoint a provider gets when its config names none.
//!
//! Each wire states these once, in the `SPEC` of its folder ([`crate::Wire::spec`]);
//! the HTTP layer (`switchyard-core`'s `upstream`) builds its requests from them.
//! Data and string building only: no IO.

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
    /// The endpoint of a provider whose config names none.
    pub default_endpoint: &'static str,
    /// Where and how the wire counts a request's input tokens without generating;
    /// `None` when it has no such endpoint (the gateway then estimates).
    pub count: Option<CountSpec>,
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
}

/// How a counting body is made from the generation body of the same request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountBody {
    /// The generation body with only these top-level fields: the endpoint refuses
    /// the rest (Anthropic answers `max_tokens: Extra inputs are not permitted`).
    /// A list of what it takes, not of what it refuses, so a field a client adds
    /// that the endpoint does not know is left out instead of failing the count.
    Only(&'static [&'static str]),
    /// The whole generation body under `key`, naming the model in its `model`
    /// field as `models/<model>` (Gemini's `generateContentRequest`, which is how
    /// its count takes the system instruction and tools, not only `contents`).
    Wrapped {
        /// The field the generation body goes under (`generateContentRequest`).
        key: &'static str,
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
    /// AWS event-stream binary frames: for Amazon Bedrock's streaming APIs
    /// (`ConverseStream`, `InvokeModelWithResponseStream`), not yet a wire.
    AwsEventStream,
    /// One JSON object per line: for Ollama's native API (`/api/chat`), not yet a
    /// wire.
    JsonLines,
}

impl Framing {
    /// The media type of a stream so framed (what a streamed request accepts).
    pub fn media_type(self) -> &'static str {
        match self {
            Framing::Sse => "text/event-stream",
            Framing::AwsEventStream => "application/vnd.amazon.eventstream",
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
    /// An OAuth 2 access token minted from service-account credentials, sent as a
    /// bearer token: for Google Vertex AI, not yet a wire.
    OAuthToken,
    /// AWS Signature Version 4 over the whole request: for Amazon Bedrock, not yet
    /// a wire.
    SigV4,
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
    /// the upstream `model`.
    pub fn url(&self, endpoint: &str, model: &str, stream: bool) -> String {
        let path = self.path(stream);
        match self.model {
            ModelPlacement::Body => format!("{endpoint}{path}"),
            ModelPlacement::Path => format!("{endpoint}{}", path.replace("{model}", model)),
        }
    }

    /// The URL of the counting endpoint at `endpoint` for the upstream `model`;
    /// `None` when the wire has none.
    pub fn count_url(&self, endpoint: &str, model: &str) -> Option<String> {
        let count = self.count.as_ref()?;
        Some(match self.model {
            ModelPlacement::Body => format!("{endpoint}{}", count.path),
            ModelPlacement::Path => format!("{endpoint}{}", count.path.replace("{model}", model)),
        })
    }

    /// Whether every request goes to the same URL (no model in the path, no path
    /// of its own for streams), so a provider's URL can be built once.
    pub fn fixed_url(&self) -> bool {
        self.model == ModelPlacement::Body && self.streaming == Streaming::BodyField
    }
}

impl CountSpec {
    /// The counting body for a request whose generation body (as the wire would be
    /// sent it for `model`, the upstream model) is `generation`.
    pub fn body(&self, generation: &[u8], model: &str) -> Result<Vec<u8>, ProtocolError> {
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
            CountBody::Wrapped { key } => {
                map.insert("model".into(), Value::String(format!("models/{model}")));
                let mut outer = Map::new();
                outer.insert(key.into(), Value::Object(map));
                outer
            }
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
mod tests {
    use crate::Wire;

    #[test]
    fn urls_are_the_ones_the_gateway_has_always_called() {
        let openai = Wire::OpenAiChat.spec();
        let anthropic = Wire::Anthropic.spec();
        let gemini = Wire::Gemini.spec();
        for stream in [false, true] {
            assert_eq!(
                openai.url("https://api.openai.com/v1", "gpt-5", stream),
                "https://api.openai.com/v1/chat/completions"
            );
            assert_eq!(
                anthropic.url("https://api.anthropic.com", "claude-x", stream),
                "https://api.anthropic.com/v1/messages"
            );
        }
        let base = "https://generativelanguage.googleapis.com";
        assert_eq!(
            gemini.url(base, "gemini-2.5-pro", false),
            format!("{base}/v1beta/models/gemini-2.5-pro:generateContent")
        );
        assert_eq!(
            gemini.url(base, "gemini-2.5-pro", true),
            format!("{base}/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse")
        );
        assert!(openai.fixed_url() && anthropic.fixed_url() && !gemini.fixed_url());
    }

    #[test]
    fn count_urls_and_bodies_are_each_wires_own() {
        let base = "https://generativelanguage.googleapis.com";
        assert_eq!(
            Wire::Gemini.spec().count_url(base, "gemini-2.5-pro").as_deref(),
            Some(
                "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:countTokens"
            )
        );
        assert_eq!(
            Wire::Anthropic.spec().count_url("https://api.anthropic.com", "claude-x").as_deref(),
            Some("https://api.anthropic.com/v1/messages/count_tokens")
        );
        assert_eq!(Wire::OpenAiChat.spec().count_url("https://api.openai.com/v1", "gpt-5"), None);

        // Anthropic: the generation body without what the counting endpoint refuses.
        let generation = br#"{"model":"claude-x","max_tokens":64,"stream":true,"temperature":0.2,
            "system":"s","messages":[{"role":"user","content":"hi"}],"tools":[],"thinking":{"type":"disabled"}}"#;
        let count = Wire::Anthropic.spec().count.unwrap();
        let body: serde_json::Value =
            serde_json::from_slice(&count.body(generation, "claude-x").unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"model": "claude-x", "system": "s", "tools": [],
                "messages": [{"role": "user", "content": "hi"}], "thinking": {"type": "disabled"}})
        );
        assert_eq!(count.parse_answer(br#"{"input_tokens": 12}"#).unwrap(), 12);
        assert!(count.parse_answer(br#"{"totalTokens": 12}"#).is_err());

        // Gemini: the whole generation body, with the model it needs inside.
        let generation = br#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}],
            "systemInstruction":{"parts":[{"text":"s"}]},"generationConfig":{"maxOutputTokens":8}}"#;
        let count = Wire::Gemini.spec().count.unwrap();
        let body: serde_json::Value =
            serde_json::from_slice(&count.body(generation, "gemini-x").unwrap()).unwrap();
        assert_eq!(body["generateContentRequest"]["model"], "models/gemini-x");
        assert_eq!(body["generateContentRequest"]["systemInstruction"]["parts"][0]["text"], "s");
        assert_eq!(body["generateContentRequest"]["contents"][0]["parts"][0]["text"], "hi");
        assert_eq!(body.as_object().unwrap().len(), 1);
        assert_eq!(count.parse_answer(br#"{"totalTokens": 7}"#).unwrap(), 7);
        assert!(count.parse_answer(b"not json").is_err());
        assert!(count.body(b"[1]", "gemini-x").is_err());
    }

    #[test]
    fn every_wire_states_its_facts() {
        for wire in [Wire::OpenAiChat, Wire::Anthropic, Wire::Gemini] {
            let spec = wire.spec();
            assert!(spec.path.starts_with('/'), "{}", wire.as_str());
            assert!(spec.default_endpoint.starts_with("https://"), "{}", wire.as_str());
            assert!(!spec.default_endpoint.ends_with('/'), "{}", wire.as_str());
            // The model goes in the path exactly where the path says so.
            let in_path =
                spec.path(false).contains("{model}") && spec.path(true).contains("{model}");
            assert_eq!(in_path, spec.model == crate::ModelPlacement::Path, "{}", wire.as_str());
            if let Some(count) = spec.count {
                assert!(count.path.starts_with('/'), "{}", wire.as_str());
                let model_in_path = count.path.contains("{model}");
                assert_eq!(model_in_path, spec.model == crate::ModelPlacement::Path);
            }
        }
    }
}
