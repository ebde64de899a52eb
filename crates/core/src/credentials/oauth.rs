//! [`OAuthTokens`]: OAuth access tokens from one credential ([`TokenSource`]:
//! a Google service account, authorized user or metadata server; a Microsoft
//! Entra app or managed identity), cached in a [`Refreshing`].

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::google::AccessToken;
use super::{Clock, CredentialError, Http, Refreshing};

/// A credential that is exchanged for OAuth access tokens.
pub trait TokenSource: fmt::Debug + Send + Sync + 'static {
    /// A new token and its expiry, asked with `http`, its expiry read by `clock`.
    fn fetch(
        &self,
        http: &Http,
        clock: &Clock,
    ) -> impl Future<Output = Result<AccessToken, CredentialError>> + Send;
}

/// Access tokens from one [`TokenSource`], cached in a [`Refreshing`]
/// (refreshed ahead of expiry, one refresh in flight). Cheap to clone: clones
/// share the cache.
pub struct OAuthTokens<C> {
    credentials: Arc<C>,
    tokens: Refreshing<AccessToken>,
}

impl<C> Clone for OAuthTokens<C> {
    fn clone(&self) -> Self {
        Self { credentials: Arc::clone(&self.credentials), tokens: self.tokens.clone() }
    }
}

impl<C: fmt::Debug> fmt::Debug for OAuthTokens<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthTokens")
            .field("credentials", &self.credentials)
            .field("tokens", &self.tokens)
            .finish()
    }
}

impl<C: TokenSource> OAuthTokens<C> {
    /// Tokens from `credentials`, fetched with `http`, expiring by `clock`.
    pub fn new(credentials: C, http: Http, clock: Clock) -> Self {
        let credentials = Arc::new(credentials);
        let source = Arc::clone(&credentials);
        let fetch_clock = clock.clone();
        let tokens = Refreshing::new(clock, move || {
            let (source, http, clock) = (Arc::clone(&source), http.clone(), fetch_clock.clone());
            async move {
                let token = source.fetch(&http, &clock).await?;
                let expires_at = token.expires_at;
                Ok((token, expires_at))
            }
        });
        Self { credentials, tokens }
    }

    /// Refresh a token this long before it expires (5 min unless set; half
    /// its lifetime when that is shorter).
    #[must_use]
    pub fn refresh_ahead(mut self, ahead: Duration) -> Self {
        self.tokens = self.tokens.refresh_ahead(ahead);
        self
    }

    /// A current access token: cached, or fetched once for every caller.
    pub async fn token(&self) -> Result<AccessToken, CredentialError> {
        self.tokens.get().await
    }

    /// Where the tokens come from.
    pub fn credentials(&self) -> &C {
        &self.credentials
    }
}
