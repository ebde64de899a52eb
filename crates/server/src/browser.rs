//! What a web page in the operator's browser may do with the gateway.
//!
//! A page cannot present a gateway key it does not know, but in open mode (no
//! key configured anywhere) it needs none: a `text/plain` POST from any origin
//! reaches the endpoints without a CORS preflight, a WebSocket upgrade is never
//! preflighted at all, and DNS rebinding makes a page's own origin resolve to the
//! loopback address. Each would spend the provider keys in the environment.
//!
//! The guard, in front of every route:
//!
//! * **Host**, in open mode: it must name an IP address (no DNS, so nothing to
//!   rebind), `localhost`, or an entry of `gateway.allowed_hosts`; port ignored.
//! * **Origin**, in open mode: a request carrying one (browsers send it on every
//!   cross-origin POST and every WebSocket upgrade) must come from
//!   `gateway.allowed_origins`. Requests without one (SDKs, curl, agents) pass.
//! * **Origin on a WebSocket upgrade**, in any mode: from `allowed_origins` only.
//!
//! `/healthz` and `/readyz` are exempt. Refusals are 403 `host_not_allowed` /
//! `origin_not_allowed` in the caller's format as guessed from its path and
//! headers. A request without an `Origin` addressed to an IP address or
//! `localhost` (the usual local client) costs two header lookups and a parse;
//! one addressed to a name costs a check of whether keys are required, answered
//! without a lock unless there is a database.

use std::convert::Infallible;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::Method;
use axum::http::header::{HOST, ORIGIN, UPGRADE};
use axum::response::Response;
use futures_util::future::{BoxFuture, Either};
use switchyard_core::GatewayError;
use switchyard_core::util::excerpt;
use switchyard_protocol::ErrorCode;

use crate::http::{error_response, format_of};
use crate::{AppState, ids};

/// Why a request is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The `Host` could be a rebound DNS name (open mode).
    Host,
    /// A browser page from another origin (open mode).
    Origin,
    /// A WebSocket upgrade from a browser page of another origin (any mode).
    UpgradeOrigin,
}

/// The guard's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Pass,
    Refuse(Refusal),
    /// Refused if the gateway needs no key, else passed.
    RefuseIfOpen(Refusal),
}

/// The decision for a request: its `Host` (or HTTP/2 authority), its `Origin`,
/// whether it asks to upgrade, and the configured lists (lowercase, as the
/// catalog compiles them).
pub(crate) fn judge(
    host: Option<&[u8]>,
    origin: Option<&[u8]>,
    upgrade: bool,
    allowed_hosts: &[String],
    allowed_origins: &[String],
) -> Verdict {
    let origin_ok = origin.is_none_or(|o| allowed_origins.iter().any(|a| eq(a, o)));
    if !origin_ok && upgrade {
        return Verdict::Refuse(Refusal::UpgradeOrigin);
    }
    // Without a `Host` (HTTP/1.0) the request is no browser's: browsers always send one.
    let host_ok = host.is_none_or(|h| {
        let h = host_part(h);
        is_literal_or_localhost(h) || allowed_hosts.iter().any(|a| eq(a, h))
    });
    if !host_ok {
        return Verdict::RefuseIfOpen(Refusal::Host);
    }
    if !origin_ok {
        return Verdict::RefuseIfOpen(Refusal::Origin);
    }
    Verdict::Pass
}

/// What the guard needs to know before anything else: whether the request has an
/// `Origin` or names a host that is neither an IP address nor `localhost`.
fn obviously_local(host: Option<&[u8]>, origin: bool) -> bool {
    !origin && host.is_none_or(|h| is_literal_or_localhost(host_part(h)))
}

fn eq(allowed: &str, presented: &[u8]) -> bool {
    allowed.as_bytes().eq_ignore_ascii_case(presented)
}

/// The host of a `Host` value: without the port, the brackets of an IPv6
/// address, or a trailing dot (`localhost.` is `localhost`).
pub(crate) fn host_part(value: &[u8]) -> &[u8] {
    let host = match value.strip_prefix(b"[") {
        Some(rest) => match rest.iter().position(|&b| b == b']') {
            Some(end) => rest.get(..end).unwrap_or(rest),
            None => rest,
        },
        None => match value.iter().rposition(|&b| b == b':') {
            Some(colon) => value.get(..colon).unwrap_or(value),
            None => value,
        },
    };
    host.strip_suffix(b".").unwrap_or(host)
}

/// An IP address (nothing to resolve, so nothing to rebind) or `localhost`
/// (which browsers resolve to loopback themselves).
pub(crate) fn is_literal_or_localhost(host: &[u8]) -> bool {
    if host.eq_ignore_ascii_case(b"localhost") {
        return true;
    }
    let Ok(text) = std::str::from_utf8(host) else { return false };
    text.parse::<Ipv4Addr>().is_ok() || text.parse::<Ipv6Addr>().is_ok()
}

fn host_of(req: &Request) -> Option<&[u8]> {
    match req.headers().get(HOST) {
        Some(h) => Some(h.as_bytes()),
        // HTTP/2 carries it as the `:authority`.
        None => req.uri().authority().map(|a| a.as_str().as_bytes()),
    }
}

/// Any upgrade (only the Responses WebSocket endpoint accepts one), or an HTTP/2
/// extended CONNECT (WebSocket over HTTP/2).
fn is_upgrade(req: &Request) -> bool {
    req.headers().contains_key(UPGRADE) || req.method() == Method::CONNECT
}

/// Who the guard stands in front of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Door {
    /// The gateway's own address: open mode is whatever [`crate::identity`] says.
    Gateway,
    /// An address that needs no key (the metrics listener): always open mode.
    Keyless,
}

/// The guard as a service around the whole router (not a per-route layer, which
/// would box every request's future).
#[derive(Clone)]
pub struct Guard<S> {
    inner: S,
    state: Arc<AppState>,
    door: Door,
}

impl<S> Guard<S> {
    pub(crate) fn new(inner: S, state: Arc<AppState>, door: Door) -> Self {
        Self { inner, state, door }
    }

    /// Whether keys are required, when known without the database.
    fn requires_key_now(&self) -> Option<bool> {
        match self.door {
            Door::Gateway => self.state.identity.requires_key_now(),
            Door::Keyless => Some(false),
        }
    }
}

impl<S> tower_service::Service<Request> for Guard<S>
where
    S: tower_service::Service<Request, Response = Response, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<S::Future, BoxFuture<'static, Result<Response, Infallible>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let origin = req.headers().get(ORIGIN);
        let host = host_of(&req);
        if obviously_local(host, origin.is_some()) {
            return Either::Left(self.inner.call(req));
        }
        // Only open mode looks at the host: a keyed gateway behind a DNS name
        // decides here, without reading the settings. Health probes tell a page
        // nothing, and load balancers send them under any name.
        if (origin.is_none() && self.requires_key_now() == Some(true))
            || matches!(req.uri().path(), "/healthz" | "/readyz")
        {
            return Either::Left(self.inner.call(req));
        }
        let verdict = {
            let snapshot = self.state.gateway.snapshot();
            let settings = &snapshot.catalog.settings;
            judge(
                host,
                origin.map(|o| o.as_bytes()),
                is_upgrade(&req),
                &settings.allowed_hosts,
                &settings.allowed_origins,
            )
        };
        let refusal = match verdict {
            Verdict::Pass => return Either::Left(self.inner.call(req)),
            Verdict::Refuse(why) => why,
            Verdict::RefuseIfOpen(why) => match self.requires_key_now() {
                Some(true) => return Either::Left(self.inner.call(req)),
                Some(false) => why,
                None => {
                    // The key store decides: off the common path, so boxed.
                    let state = self.state.clone();
                    // The clone is not known to be ready; the polled one is.
                    let clone = self.inner.clone();
                    let mut inner = std::mem::replace(&mut self.inner, clone);
                    return Either::Right(Box::pin(async move {
                        if state.identity.requires_key().await {
                            inner.call(req).await
                        } else {
                            Ok(refuse(why, &req))
                        }
                    }));
                }
            },
        };
        let resp = refuse(refusal, &req);
        Either::Right(Box::pin(std::future::ready(Ok(resp))))
    }
}

/// The 403, saying what to configure.
fn refuse(why: Refusal, req: &Request) -> Response {
    let headers = req.headers();
    let shown =
        |v: Option<&[u8]>| excerpt(&String::from_utf8_lossy(v.unwrap_or_default())).into_owned();
    let err = match why {
        Refusal::Host => {
            let host = host_of(req).map(host_part);
            GatewayError::new(
                ErrorCode::HostNotAllowed,
                format!(
                    "Host {:?} is not allowed: this gateway needs no API key, so it answers only \
                     requests addressed to an IP address, localhost or a name in \
                     gateway.allowed_hosts (a web page could reach it by DNS rebinding)",
                    shown(host)
                ),
            )
        }
        Refusal::Origin => GatewayError::new(
            ErrorCode::OriginNotAllowed,
            format!(
                "Origin {:?} is not in gateway.allowed_origins: this gateway needs no API key, so \
                 web pages may call it only from allowed origins",
                shown(headers.get(ORIGIN).map(|o| o.as_bytes()))
            ),
        ),
        Refusal::UpgradeOrigin => GatewayError::new(
            ErrorCode::OriginNotAllowed,
            format!(
                "Origin {:?} is not in gateway.allowed_origins: web pages may open WebSocket \
                 sessions only from allowed origins",
                shown(headers.get(ORIGIN).map(|o| o.as_bytes()))
            ),
        ),
    };
    tracing::debug!(code = err.code().as_str(), "browser request refused");
    error_response(format_of(headers, req.uri().path()), &err, &ids::request_id())
}

#[cfg(test)]
#[path = "browser_tests.rs"]
mod tests;
