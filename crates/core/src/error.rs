//! The gateway's own errors, each with a status, a kind and a stable machine code.
//! The server renders them in the caller's format.

use switchyard_protocol::{ErrorBody, ErrorKind};

#[derive(Debug, Clone, PartialEq)]
pub struct GatewayError(pub ErrorBody);

impl GatewayError {
    pub fn new(status: u16, kind: ErrorKind, code: &str, message: impl Into<String>) -> Self {
        GatewayError(ErrorBody::new(status, kind, code, message))
    }

    pub fn invalid(code: &str, message: impl Into<String>) -> Self {
        Self::new(400, ErrorKind::InvalidRequest, code, message)
    }

    pub fn status(&self) -> u16 {
        self.0.status
    }

    pub fn code(&self) -> &str {
        &self.0.code
    }

    pub fn body(&self) -> &ErrorBody {
        &self.0
    }
}

impl std::fmt::Display for GatewayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.0.status, self.0.code, self.0.message)
    }
}

impl std::error::Error for GatewayError {}

impl From<crate::catalog::ResolveError> for GatewayError {
    fn from(e: crate::catalog::ResolveError) -> Self {
        use crate::catalog::ResolveError as R;
        match &e {
            R::NoModel => Self::invalid("model_required", e.to_string()),
            R::NotFound(_) => Self::new(404, ErrorKind::NotFound, "model_not_found", e.to_string()),
            R::Retired { .. } => {
                Self::new(404, ErrorKind::NotFound, "model_retired", e.to_string())
            }
            R::NoRoute(_) => Self::new(404, ErrorKind::NotFound, "no_route", e.to_string()),
            R::ScopeRefused { .. } => {
                Self::new(403, ErrorKind::Permission, "scope_not_routed", e.to_string())
            }
        }
    }
}
