//! Errors: what translation can fail with, and the gateway error body rendered in
//! each client's own format.

use serde_json::{Value, json};

use crate::ErrorCode;

/// Translation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProtocolError {
    /// The body is not valid JSON or not the expected shape. The message names the
    /// field where possible.
    #[error("invalid request body: {0}")]
    InvalidBody(String),
    /// The request uses something the target cannot express (e.g. images to a wire
    /// without image input). Never silently dropped.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The upstream sent something we could not understand.
    #[error("malformed upstream response: {0}")]
    MalformedUpstream(String),
    /// The upstream reported an error inside a stream (or a 200 body).
    #[error("upstream error ({kind}): {message}")]
    UpstreamError {
        /// The upstream's error type or code, as it named it (`overloaded_error`).
        kind: String,
        /// The upstream's message.
        message: String,
    },
}

impl ProtocolError {
    /// [`ProtocolError::InvalidBody`] with `msg`.
    pub fn body(msg: impl std::fmt::Display) -> Self {
        ProtocolError::InvalidBody(msg.to_string())
    }
    /// [`ProtocolError::MalformedUpstream`] with `msg`.
    pub fn upstream(msg: impl std::fmt::Display) -> Self {
        ProtocolError::MalformedUpstream(msg.to_string())
    }
}

/// The class of an error, which decides the type string each format uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The request is wrong (400, 409, 422).
    InvalidRequest,
    /// No or a bad credential (401).
    Authentication,
    /// The caller may not do this (403).
    Permission,
    /// No such model, route or resource (404).
    NotFound,
    /// The body is over the size limit (413).
    RequestTooLarge,
    /// A rate limit or budget refused the request (429).
    RateLimit,
    /// The upstream failed (5xx, transport, malformed answer).
    Upstream,
    /// The upstream (or the gateway) is overloaded (503, 529).
    Overloaded,
    /// No answer in time (408, 504).
    Timeout,
    /// The gateway itself failed.
    Internal,
}

impl ErrorKind {
    /// The `error.type` OpenAI-format clients read (`invalid_request_error`, …).
    pub fn openai_type(self) -> &'static str {
        match self {
            ErrorKind::InvalidRequest | ErrorKind::NotFound | ErrorKind::RequestTooLarge => {
                "invalid_request_error"
            }
            ErrorKind::Authentication => "authentication_error",
            ErrorKind::Permission => "permission_error",
            ErrorKind::RateLimit => "rate_limit_error",
            ErrorKind::Upstream | ErrorKind::Overloaded | ErrorKind::Timeout => "api_error",
            ErrorKind::Internal => "server_error",
        }
    }

    /// The `error.type` Anthropic-format clients read (`not_found_error`, …).
    pub fn anthropic_type(self) -> &'static str {
        match self {
            ErrorKind::InvalidRequest => "invalid_request_error",
            ErrorKind::Authentication => "authentication_error",
            ErrorKind::Permission => "permission_error",
            ErrorKind::NotFound => "not_found_error",
            ErrorKind::RequestTooLarge => "request_too_large",
            ErrorKind::RateLimit => "rate_limit_error",
            ErrorKind::Overloaded => "overloaded_error",
            ErrorKind::Timeout => "timeout_error",
            ErrorKind::Upstream | ErrorKind::Internal => "api_error",
        }
    }

    /// The status name Google's APIs give an error of this class (`google.rpc.Code`).
    pub fn google_status(self) -> &'static str {
        match self {
            ErrorKind::InvalidRequest | ErrorKind::RequestTooLarge => "INVALID_ARGUMENT",
            ErrorKind::Authentication => "UNAUTHENTICATED",
            ErrorKind::Permission => "PERMISSION_DENIED",
            ErrorKind::NotFound => "NOT_FOUND",
            ErrorKind::RateLimit => "RESOURCE_EXHAUSTED",
            ErrorKind::Overloaded => "UNAVAILABLE",
            ErrorKind::Timeout => "DEADLINE_EXCEEDED",
            ErrorKind::Upstream | ErrorKind::Internal => "INTERNAL",
        }
    }

    /// The kind an HTTP status suggests (for passing an upstream's answer on).
    pub fn from_status(status: u16) -> Self {
        match status {
            400 | 409 | 422 => ErrorKind::InvalidRequest,
            401 => ErrorKind::Authentication,
            403 => ErrorKind::Permission,
            404 => ErrorKind::NotFound,
            413 => ErrorKind::RequestTooLarge,
            429 => ErrorKind::RateLimit,
            408 | 504 => ErrorKind::Timeout,
            503 | 529 => ErrorKind::Overloaded,
            500..=599 => ErrorKind::Upstream,
            _ => ErrorKind::InvalidRequest,
        }
    }
}

/// An error as the client will see it: a status, a stable machine code and a message
/// that is safe to show (no secrets, no internals).
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorBody {
    /// The HTTP status the client gets.
    pub status: u16,
    /// The class of error, which names its type in each client format.
    pub kind: ErrorKind,
    /// Stable machine code, e.g. `model_not_found`. Always the gateway's own: an
    /// upstream's code, where it matters, is quoted in the message.
    pub code: ErrorCode,
    /// What went wrong, for people; safe to show the client.
    pub message: String,
    /// The offending request field, when known (OpenAI `param`).
    pub param: Option<String>,
}

impl ErrorBody {
    /// An error with the code's usual status and kind; the fields are public for
    /// the call sites where those vary.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            status: code.default_status(),
            kind: code.kind(),
            code,
            message: message.into(),
            param: None,
        }
    }

    /// OpenAI error object: `{"error":{"message","type","param","code"}}`.
    pub fn to_openai(&self) -> Value {
        json!({"error": {
            "message": self.message,
            "type": self.kind.openai_type(),
            "param": self.param,
            "code": self.code,
        }})
    }

    /// Anthropic error object: `{"type":"error","error":{"type","message"}}`, with the
    /// stable code added as `error.code` (SDKs ignore unknown fields).
    pub fn to_anthropic(&self) -> Value {
        json!({"type": "error", "error": {
            "type": self.kind.anthropic_type(),
            "message": self.message,
            "code": self.code,
        }})
    }

    /// Google's error object: `{"error":{"code","message","status","details"}}`,
    /// with the stable code as the `reason` of a `google.rpc.ErrorInfo` in
    /// `details`, where Google's own APIs put theirs.
    pub fn to_google(&self) -> Value {
        json!({"error": {
            "code": self.status,
            "message": self.message,
            "status": self.kind.google_status(),
            "details": [{
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": self.code,
                "domain": "switchyard",
            }],
        }})
    }
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
