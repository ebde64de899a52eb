//! What a fake upstream answers: [`Reply`] (status, headers, pacing, faults) and
//! [`ReplyBody`] (the bytes, or a recipe for them).

use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;

/// The body of a scripted [`Reply`].
#[derive(Debug, Clone, PartialEq)]
pub enum ReplyBody {
    /// The canned answer for the request, streamed or not as the request asked:
    /// the text `"echo: <last user text>"` under the requested model (see
    /// [`canned::echo_text`](crate::canned::echo_text)); or, when the latest prompt
    /// holds [`tool_loop::TRIGGER`](crate::tool_loop::TRIGGER) and the request
    /// declares tools, the next step of the scripted [`tool_loop`](crate::tool_loop):
    /// a call of one of them, then text quoting its result.
    Auto,
    /// A JSON body, sent as one piece with `content-type: application/json`.
    Json(Value),
    /// Any bytes, with the given content type.
    Raw(Bytes, &'static str),
    /// Server-sent-event frames, each written as-is (include the `data: …\n\n`
    /// yourself); `content-type: text/event-stream`. Each frame is one pacing
    /// unit for [`Reply::chunk_delay`] and [`Reply::break_after`].
    Sse(Vec<String>),
    /// Binary frames with this content type, each written as-is and each one
    /// pacing unit, like [`ReplyBody::Sse`]'s: e.g. Bedrock's event-stream
    /// messages ([`bedrock::eventstream`](crate::bedrock::eventstream)).
    Frames(Vec<Bytes>, &'static str),
    /// Never answer. The handler ends when the client goes away (or the fake is
    /// dropped).
    Hang,
    /// An error body with this message, in the serving vendor's own error
    /// shape (rendered when served, since only then is the vendor known; see
    /// [`canned::error_body`](crate::canned::error_body)).
    VendorError(String),
}

/// One scripted answer. Build with the constructors and chain the modifiers:
///
/// ```
/// use std::time::Duration;
/// use switchyard_testkit::Reply;
///
/// let r = Reply::status(429).retry_after(2);
/// assert_eq!(r.status, 429);
/// let r = Reply::auto().chunk_delay(Duration::from_millis(5)).break_after(3);
/// assert_eq!(r.break_after, Some(3));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// HTTP status (an invalid code is served as 500).
    pub status: u16,
    /// Extra response headers, e.g. `("retry-after", "2")`. A `content-type`
    /// here replaces the body's default one.
    pub headers: Vec<(String, String)>,
    /// What to send.
    pub body: ReplyBody,
    /// Wait this long before sending the status line and headers.
    pub first_byte_delay: Duration,
    /// Wait this long between body frames (SSE frames; not before the first).
    pub chunk_delay: Duration,
    /// Send this many body frames, then abort the connection (the body stream
    /// fails, so the client sees a broken, truncated body). Always aborts, even
    /// if the body has fewer frames. A non-streamed body (JSON, raw, error)
    /// counts as two frames here, its two halves, so `break_after(1)` sends
    /// half a JSON document and `break_after(0)` sends only the headers.
    pub break_after: Option<usize>,
}

impl Default for Reply {
    fn default() -> Self {
        Reply::auto()
    }
}

impl From<ReplyBody> for Reply {
    /// A 200 reply with this body.
    fn from(body: ReplyBody) -> Self {
        Reply {
            status: 200,
            headers: Vec::new(),
            body,
            first_byte_delay: Duration::ZERO,
            chunk_delay: Duration::ZERO,
            break_after: None,
        }
    }
}

impl Reply {
    /// 200 with the canned answer for the request ([`ReplyBody::Auto`]).
    pub fn auto() -> Reply {
        ReplyBody::Auto.into()
    }

    /// An error status with a body in the vendor's own error shape and a
    /// generic message.
    pub fn status(code: u16) -> Reply {
        Reply::error(code, format!("fake upstream error {code}"))
    }

    /// An error status with a body in the vendor's own error shape carrying
    /// `message`.
    pub fn error(code: u16, message: impl Into<String>) -> Reply {
        Reply { status: code, ..ReplyBody::VendorError(message.into()).into() }
    }

    /// 200 with this JSON body.
    pub fn json(v: Value) -> Reply {
        ReplyBody::Json(v).into()
    }

    /// 200 with these bytes and content type.
    pub fn raw(bytes: impl Into<Bytes>, content_type: &'static str) -> Reply {
        ReplyBody::Raw(bytes.into(), content_type).into()
    }

    /// 200 with these SSE frames, each written as-is.
    pub fn sse(frames: Vec<String>) -> Reply {
        ReplyBody::Sse(frames).into()
    }

    /// 200 with these binary frames ([`ReplyBody::Frames`]).
    pub fn frames(frames: Vec<Bytes>, content_type: &'static str) -> Reply {
        ReplyBody::Frames(frames, content_type).into()
    }

    /// 200 with a ConverseStream's event-stream messages, e.g. a few
    /// [`event`](crate::bedrock::eventstream::event)s then an
    /// [`exception`](crate::bedrock::eventstream::exception).
    pub fn event_stream(frames: Vec<Bytes>) -> Reply {
        Reply::frames(frames, crate::canned::EVENT_STREAM)
    }

    /// Never answer ([`ReplyBody::Hang`]).
    pub fn hang() -> Reply {
        ReplyBody::Hang.into()
    }

    /// Replace the status code (e.g. `Reply::json(v).with_status(400)`).
    pub fn with_status(mut self, code: u16) -> Reply {
        self.status = code;
        self
    }

    /// Add a response header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Add `retry-after: <secs>`.
    pub fn retry_after(self, secs: u64) -> Reply {
        self.with_header("retry-after", secs.to_string())
    }

    /// Wait `d` before sending the headers.
    pub fn first_byte_delay(mut self, d: Duration) -> Reply {
        self.first_byte_delay = d;
        self
    }

    /// Wait `d` between body frames.
    pub fn chunk_delay(mut self, d: Duration) -> Reply {
        self.chunk_delay = d;
        self
    }

    /// Abort the connection after `n` body frames (see [`Reply::break_after`](Reply#structfield.break_after)).
    pub fn break_after(mut self, n: usize) -> Reply {
        self.break_after = Some(n);
        self
    }
}
