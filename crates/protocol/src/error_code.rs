//! The stable machine codes of the gateway's own errors: one table, so a code's
//! wire string, usual status and kind are stated once and cannot drift apart
//! between call sites.

use serde::{Serialize, Serializer};

use crate::ErrorKind;

/// Declares [`ErrorCode`] from one table: each row is a variant, its wire string,
/// its usual HTTP status and its [`ErrorKind`]. Generating the enum, [`ErrorCode::ALL`]
/// and the lookups from the same rows means a variant cannot exist without a
/// string, or be left out of `ALL`.
macro_rules! error_codes {
    ($( $(#[$doc:meta])* $variant:ident = $wire:literal, $status:literal, $kind:ident; )*) => {
        /// A stable machine code the gateway answers (or records) an error with.
        /// Clients match on the wire string ([`ErrorCode::as_str`]), so a string,
        /// once published, never changes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $( $(#[$doc])* $variant, )*
        }

        impl ErrorCode {
            /// Every code, in table order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),*];

            /// The code as clients see it (`model_not_found`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $( ErrorCode::$variant => $wire, )*
                }
            }

            /// The HTTP status this code is usually answered with; a call site
            /// where it varies (an upstream's own 4xx passed on) sets its own.
            pub fn default_status(self) -> u16 {
                match self {
                    $( ErrorCode::$variant => $status, )*
                }
            }

            /// The class of the error, which decides each format's type string.
            pub fn kind(self) -> ErrorKind {
                match self {
                    $( ErrorCode::$variant => ErrorKind::$kind, )*
                }
            }
        }
    };
}

error_codes! {
    /// The body is not valid for the endpoint's format (the message names the field).
    InvalidRequest = "invalid_request", 400, InvalidRequest;
    /// The request JSON is nested deeper than `max_json_depth`.
    JsonTooDeep = "json_too_deep", 400, InvalidRequest;
    /// The model id is too long or has control characters.
    InvalidModel = "invalid_model", 400, InvalidRequest;
    /// No model in the request and no `default_model`.
    ModelRequired = "model_required", 400, InvalidRequest;
    /// No candidate supports the images / tools / JSON schema the request needs.
    CapabilityMissing = "capability_missing", 400, InvalidRequest;
    /// The estimated input fits no candidate's context window.
    ContextWindowExceeded = "context_window_exceeded", 400, InvalidRequest;
    /// The request's routing hints excluded every deployment.
    NoCandidate = "no_candidate", 400, InvalidRequest;
    /// No deployment runs a hosted/server tool the request declares.
    UnsupportedTool = "unsupported_tool", 400, InvalidRequest;
    /// A malformed project name.
    InvalidProject = "invalid_project", 400, InvalidRequest;
    /// Gemini's `streamGenerateContent` without `alt=sse`.
    StreamFormUnsupported = "stream_form_unsupported", 400, InvalidRequest;
    /// No candidate can express the request.
    UnsupportedRequest = "unsupported_request", 400, InvalidRequest;
    /// The model is of another kind than the endpoint serves (an embedding
    /// model asked to chat, a chat model asked for embeddings).
    WrongModelKind = "wrong_model_kind", 400, InvalidRequest;
    /// Compaction asked for in a format other than OpenAI Responses.
    UnsupportedCompaction = "unsupported_compaction", 400, InvalidRequest;
    /// A WebSocket event type the gateway does not serve.
    UnsupportedEvent = "unsupported_event", 400, InvalidRequest;
    /// A WebSocket turn continues a response that is not the connection's last.
    PreviousResponseNotFound = "previous_response_not_found", 400, InvalidRequest;
    /// The upstream refused the request itself; answered with the upstream's
    /// status (400, 413 or 422) and the kind that status suggests.
    UpstreamInvalidRequest = "upstream_invalid_request", 400, InvalidRequest;
    /// No gateway key was sent.
    MissingApiKey = "missing_api_key", 401, Authentication;
    /// The gateway key is invalid, revoked or expired.
    InvalidApiKey = "invalid_api_key", 401, Authentication;
    /// The route has per-project chains and none for this project.
    ScopeNotRouted = "scope_not_routed", 403, Permission;
    /// The caller is not a member of the project it named.
    ProjectForbidden = "project_forbidden", 403, Permission;
    /// An access rule refused the request.
    AuthzDenied = "authz_denied", 403, Permission;
    /// No deployment meets the route's data requirements.
    GovernanceDenied = "governance_denied", 403, Permission;
    /// The admin API was called with a key of a user without the admin role.
    AdminRequired = "admin_required", 403, Permission;
    /// `/metrics` was called with a key that may not read it (a member's).
    MetricsForbidden = "metrics_forbidden", 403, Permission;
    /// The `Host` names neither an IP address, `localhost` nor an allowed host,
    /// while the gateway needs no key (DNS rebinding).
    HostNotAllowed = "host_not_allowed", 403, Permission;
    /// A browser's `Origin` is not an allowed origin (a WebSocket upgrade, or any
    /// request while the gateway needs no key).
    OriginNotAllowed = "origin_not_allowed", 403, Permission;
    /// The model is not in the catalog (or no provider of it has a key).
    ModelNotFound = "model_not_found", 404, NotFound;
    /// The model is retired.
    ModelRetired = "model_retired", 404, NotFound;
    /// No route serves the model.
    NoRoute = "no_route", 404, NotFound;
    /// Unknown endpoint, or an admin API object that does not exist.
    NotFound = "not_found", 404, NotFound;
    /// An admin API write clashes with an existing object.
    Conflict = "conflict", 409, InvalidRequest;
    /// The body is larger than `max_body_bytes`.
    RequestTooLarge = "request_too_large", 413, RequestTooLarge;
    /// A plain `GET` on an endpoint served over WebSocket only.
    WebsocketRequired = "websocket_required", 426, InvalidRequest;
    /// An admission hook refused the request: a rate limit.
    RateLimited = "rate_limited", 429, RateLimit;
    /// A budget is spent (402: paying more, not waiting, lets it through; no
    /// retry, no fallback).
    BudgetExceeded = "budget_exceeded", 402, RateLimit;
    /// Every candidate was rate limited by its upstream.
    UpstreamRateLimited = "upstream_rate_limited", 429, RateLimit;
    /// The client went away before the answer ended. Recorded only (nobody is
    /// left to render it to); 499 is nginx's status for it.
    ClientClosedRequest = "client_closed_request", 499, InvalidRequest;
    /// The gateway itself failed.
    InternalError = "internal_error", 500, Internal;
    /// A compaction summary could not be sealed.
    SealFailed = "seal_failed", 500, Upstream;
    /// Compaction items need a seal and the runtime has none.
    CompactionUnavailable = "compaction_unavailable", 501, InvalidRequest;
    /// The upstream failed (a 5xx, or an error inside a stream).
    UpstreamError = "upstream_error", 502, Upstream;
    /// No answer from the upstream (connect, reset, body).
    UpstreamUnreachable = "upstream_unreachable", 502, Upstream;
    /// The upstream's answer could not be understood, or its stream broke.
    UpstreamMalformed = "upstream_malformed", 502, Upstream;
    /// The upstream refused the gateway's credential (the gateway's problem,
    /// hence a 502 rather than the upstream's 401/403).
    UpstreamAuthFailed = "upstream_auth_failed", 502, Upstream;
    /// The model answered a compaction request without a summary.
    CompactionFailed = "compaction_failed", 502, Upstream;
    /// Prompted structured output: the answer was not JSON matching the
    /// request's schema (from every candidate, or from a stream after its
    /// first content).
    InvalidStructuredOutput = "invalid_structured_output", 502, Upstream;
    /// The upstream is overloaded.
    UpstreamOverloaded = "upstream_overloaded", 503, Overloaded;
    /// No usable deployment (no credentials, or none can do what was asked).
    ProviderUnavailable = "provider_unavailable", 503, Overloaded;
    /// Every credential of the provider is blocked by its breaker.
    CircuitOpen = "circuit_open", 503, Overloaded;
    /// The key store cannot be reached to check the gateway key.
    AuthUnavailable = "auth_unavailable", 503, Overloaded;
    /// The database failed under the admin API.
    StorageUnavailable = "storage_unavailable", 503, Overloaded;
    /// The shared rate-limit store cannot be reached and the limits fail closed.
    LimitsUnavailable = "limits_unavailable", 503, Overloaded;
    /// The admin API needs a database and none is configured.
    StorageDisabled = "storage_disabled", 503, Overloaded;
    /// Provider keys cannot be stored: no gateway secret is configured.
    ByokDisabled = "byok_disabled", 503, Overloaded;
    /// The upstream timed out.
    UpstreamTimeout = "upstream_timeout", 504, Timeout;
    /// The request deadline or attempt budget ran out.
    DeadlineExceeded = "deadline_exceeded", 504, Timeout;
    /// The upstream stream went silent for longer than allowed.
    StreamIdleTimeout = "stream_idle_timeout", 504, Timeout;
}

impl ErrorCode {
    /// The code a wire string names, if it is one of the gateway's.
    pub fn from_wire(s: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|c| c.as_str() == s)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Serialized as its wire string, so error bodies carry the code as before.
impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(test)]
#[path = "error_code_tests.rs"]
mod tests;
