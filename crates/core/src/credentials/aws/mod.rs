//! AWS credentials (Bedrock) and SigV4 signing ([`sign`]).

mod sign;

use std::fmt;

pub use sign::sign;

use crate::clock::UnixMs;
use crate::util::Secret;

/// AWS credentials: an access key, and a session token and expiry when they are
/// temporary. `Debug` shows the access key ID (not a secret: it is sent in
/// every request's `Authorization`), never the secret or the token.
#[derive(Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    /// `AKIA…` or (temporary) `ASIA…`.
    pub access_key_id: String,
    /// The secret key that signs.
    pub secret_access_key: Secret,
    /// Sent as `x-amz-security-token` with temporary credentials.
    pub session_token: Option<Secret>,
    /// When temporary credentials expire.
    pub expires_at: Option<UnixMs>,
}

impl AwsCredentials {
    /// Long-lived keys, or temporary ones with their session token.
    pub fn new(
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<Secret>,
        session_token: Option<Secret>,
    ) -> Self {
        Self {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            session_token,
            expires_at: None,
        }
    }
}

impl fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &self.secret_access_key)
            .field("session_token", &self.session_token)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

