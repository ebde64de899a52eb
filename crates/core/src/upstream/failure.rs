//! How an attempt failed ([`Failure`]), as the attempt loop classifies it
//! for retries, failover, breakers, records and metrics.

use std::time::Duration;

use switchyard_protocol::ProtocolError;

use crate::util::Redactor;

/// How an attempt got no answer. Low cardinality on purpose: it names the
/// attempt's outcome in records and metrics (`transport_timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum TransportClass {
    /// Connecting failed (refused, unreachable, DNS, TLS handshake).
    Connect,
    /// No answer in time: first byte, body or the request's deadline.
    Timeout,
    /// The body could not be read or decoded.
    Body,
    /// The connection broke otherwise.
    Reset,
}

impl TransportClass {
    /// The class as messages name it (`timeout`).
    pub fn as_str(self) -> &'static str {
        match self {
            TransportClass::Connect => "connect",
            TransportClass::Timeout => "timeout",
            TransportClass::Body => "body",
            TransportClass::Reset => "reset",
        }
    }

    /// The attempt outcome records and metrics give it (`transport_timeout`).
    pub fn outcome(self) -> &'static str {
        match self {
            TransportClass::Connect => "transport_connect",
            TransportClass::Timeout => "transport_timeout",
            TransportClass::Body => "transport_body",
            TransportClass::Reset => "transport_reset",
        }
    }
}

impl std::fmt::Display for TransportClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an attempt failed, as the attempt loop classifies it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Failure {
    /// The upstream answered with a non-success status.
    Status {
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    /// No answer.
    Transport {
        class: TransportClass,
        message: String,
    },
    /// The upstream answered with a redirect, which is never followed: the
    /// deployment is misconfigured or compromised, and the next one is tried.
    Redirect {
        status: u16,
        message: String,
    },
    /// The stream broke or ended early, before anything reached the client.
    BrokenStream(String),
    /// The upstream sent something we could not understand.
    Malformed(String),
    /// The upstream reported an error inside a 200 stream.
    UpstreamError {
        kind: String,
        message: String,
    },
    /// The candidate cannot be used (no credentials, cannot express the request).
    Unavailable(String),
    /// The provider's cloud credential could not be had: its token endpoint or
    /// metadata service failed. Nothing was sent; it counts against the
    /// provider's breaker (every request would wait on the same dead service)
    /// and the next candidate is tried.
    Credential(String),
    Unsupported(String),
    /// Every credential of the provider is blocked by its breaker (open, throttled,
    /// quarantined, or a half-open probe already in flight).
    CircuitOpen(String),
    /// The deployment is at its configured capacity (`limits:`): not sent, not
    /// unhealthy; `retry_after_ms`: when a slot frees, where known. `code`:
    /// `rate_limited`, or `limits_unavailable` when its counters cannot be
    /// reached and the limits fail closed.
    Capacity {
        code: switchyard_protocol::ErrorCode,
        message: String,
        retry_after_ms: Option<u64>,
    },
    /// Prompted structured output: the answer is not JSON matching the
    /// request's schema (why, with the path of the first violation). The
    /// deployment worked, so its breaker hears a success; the next candidate
    /// may comply.
    InvalidOutput(String),
}

impl Failure {
    /// The attempt outcome as records and metrics name it.
    pub fn outcome(&self) -> String {
        match self {
            Failure::Status { status, .. } => format!("status_{status}"),
            Failure::Transport { class, .. } => class.outcome().into(),
            Failure::Redirect { status, .. } => format!("redirect_{status}"),
            Failure::BrokenStream(_) => "broken_stream".into(),
            Failure::Malformed(_) => "malformed".into(),
            Failure::UpstreamError { .. } => "upstream_error".into(),
            Failure::Unavailable(_) => "unavailable".into(),
            Failure::Credential(_) => "credential".into(),
            Failure::Unsupported(_) => "unsupported".into(),
            Failure::CircuitOpen(_) => "circuit_open".into(),
            Failure::Capacity { .. } => "capacity".into(),
            Failure::InvalidOutput(_) => "invalid_output".into(),
        }
    }

    /// The same failure with the attempt's credentials scrubbed from its text:
    /// an upstream may quote the key it was sent, and this text reaches the
    /// client, logs and records.
    #[must_use]
    pub fn redacted(mut self, redactor: &Redactor<'_>) -> Self {
        let message = self.message_mut();
        *message = redactor.text(message);
        self
    }

    /// Its text, without the status (or class) it came with.
    pub fn into_message(mut self) -> String {
        std::mem::take(self.message_mut())
    }

    fn message_mut(&mut self) -> &mut String {
        match self {
            Failure::Status { message, .. }
            | Failure::Transport { message, .. }
            | Failure::Redirect { message, .. }
            | Failure::BrokenStream(message)
            | Failure::Malformed(message)
            | Failure::UpstreamError { message, .. }
            | Failure::Unavailable(message)
            | Failure::Credential(message)
            | Failure::Unsupported(message)
            | Failure::CircuitOpen(message)
            | Failure::Capacity { message, .. }
            | Failure::InvalidOutput(message) => message,
        }
    }

    pub fn from_protocol(e: ProtocolError) -> Self {
        match e {
            ProtocolError::UpstreamError { kind, message } => {
                Failure::UpstreamError { kind, message }
            }
            ProtocolError::MalformedUpstream(m) => Failure::Malformed(m),
            ProtocolError::InvalidBody(m) | ProtocolError::Unsupported(m) => {
                Failure::Unsupported(m)
            }
        }
    }

    /// A request that got no answer: a connection that could not be opened
    /// (a timeout among them), or one lost before the answer's head.
    pub fn from_client(e: &crate::client::ClientError) -> Self {
        let mut class =
            if e.is_connect() { TransportClass::Connect } else { TransportClass::Reset };
        let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
        while let Some(s) = source {
            if let Some(c) = s.downcast_ref::<crate::client::ConnectError>() {
                class = if c.timed_out { TransportClass::Timeout } else { TransportClass::Connect };
            } else if s.downcast_ref::<hyper::Error>().is_some_and(hyper::Error::is_timeout) {
                class = TransportClass::Timeout;
            }
            source = s.source();
        }
        // The chain names the host, never a key (keys go in headers); the
        // client's own wrapper ("client error (Connect)") says nothing the
        // class does not.
        let shown = match std::error::Error::source(e) {
            Some(cause) => crate::client::chain(cause),
            None => e.to_string(),
        };
        Failure::Transport { class, message: format!("upstream {class} error: {shown}") }
    }

    /// An answer's body that broke off while it was read.
    pub fn from_body(e: &hyper::Error) -> Self {
        let class = if e.is_timeout() { TransportClass::Timeout } else { TransportClass::Body };
        let shown = crate::client::chain(e);
        Failure::Transport { class, message: format!("upstream {class} error: {shown}") }
    }
}

/// Parse a Retry-After header: delta-seconds (HTTP dates are treated as absent).
pub(crate) fn retry_after(headers: &http::HeaderMap) -> Option<Duration> {
    let v = headers.get(http::header::RETRY_AFTER)?.to_str().ok()?;
    v.trim().parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0).map(Duration::from_secs_f64)
}
