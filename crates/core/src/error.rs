//! The gateway's own errors, each with a status, a kind and a stable machine code.
//! The server renders them in the caller's format.

use switchyard_protocol::{ErrorBody, ErrorCode, ErrorKind};

/// A request the gateway refused or could not serve: the body the client is
/// answered with (status, kind, stable code, a message safe to show).
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayError {
    body: ErrorBody,
    retry_after: Option<std::time::Duration>,
}

impl GatewayError {
    /// An error answered with the code's usual status and kind.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        GatewayError { body: ErrorBody::new(code, message), retry_after: None }
    }

    /// The same error, telling the client when to try again (`Retry-After`).
    #[must_use]
    pub fn with_retry_after(mut self, after: std::time::Duration) -> Self {
        self.retry_after = Some(after);
        self
    }

    /// The same error naming the request field at fault (OpenAI's `param`).
    #[must_use]
    pub fn with_param(mut self, param: Option<String>) -> Self {
        self.body.param = param;
        self
    }

    /// When the client may try again, where the gateway knows (a rate limit).
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        self.retry_after
    }

    /// The same error answered with another status, where the status varies for
    /// one code (an upstream's own 4xx passed on); the kind stays.
    #[must_use]
    pub fn with_status(mut self, status: u16) -> Self {
        self.body.status = status;
        self
    }

    /// The same error with another kind (the type string each format writes).
    #[must_use]
    pub fn with_kind(mut self, kind: ErrorKind) -> Self {
        self.body.kind = kind;
        self
    }

    /// The HTTP status the client gets.
    pub fn status(&self) -> u16 {
        self.body.status
    }

    /// The stable machine code (`model_not_found`, …).
    pub fn code(&self) -> ErrorCode {
        self.body.code
    }

    /// The whole body, for rendering in a client's format
    /// ([`ClientFormat::error_json`](switchyard_protocol::ClientFormat::error_json)).
    pub fn body(&self) -> &ErrorBody {
        &self.body
    }
}

impl std::fmt::Display for GatewayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.body.status, self.body.code, self.body.message)
    }
}

impl std::error::Error for GatewayError {}

impl From<crate::catalog::ResolveError> for GatewayError {
    fn from(e: crate::catalog::ResolveError) -> Self {
        use crate::catalog::ResolveError as R;
        let code = match &e {
            R::NoModel => ErrorCode::ModelRequired,
            R::NotFound(_) => ErrorCode::ModelNotFound,
            R::InvalidName(_) => ErrorCode::InvalidModel,
            R::Retired { .. } => ErrorCode::ModelRetired,
            R::NoRoute(_) => ErrorCode::NoRoute,
            R::ScopeRefused { .. } => ErrorCode::ScopeNotRouted,
        };
        Self::new(code, e.to_string())
    }
}
