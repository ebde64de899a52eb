//! A scripted reply made concrete: its body for the vendor and call
//! ([`prepare`]: canned answers, the tool loop, Bedrock's framings, Azure's
//! filter fields) and sent, paced and cut as the script says ([`respond`]).

use std::collections::VecDeque;
use std::io;
use std::time::Duration;

use axum::body::Body;
use axum::http::StatusCode;
use axum::http::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use axum::response::Response;
use bytes::Bytes;
use futures_util::stream;
use serde_json::Value;

use super::route::Call;
use super::{ERROR_TYPE, InFlight};
use crate::canned::{self, Answer};
use crate::script::{Reply, ReplyBody};
use crate::{Vendor, bedrock, tool_loop};

/// A reply's body made concrete: its frames and default content type.
pub(super) struct Prepared {
    pub(super) content_type: &'static str,
    /// Bedrock's `x-amzn-ErrorType` for an error body.
    pub(super) error_type: Option<&'static str>,
    pub(super) frames: Vec<Bytes>,
    /// Sent as a stream (chunked) even without faults.
    pub(super) streamed: bool,
}

/// `None` for [`ReplyBody::Hang`].
pub(super) fn prepare(
    vendor: Vendor,
    reply: &Reply,
    call: &Call,
    request: &Value,
) -> Option<Prepared> {
    let json = |v: &Value| Prepared {
        content_type: "application/json",
        error_type: None,
        frames: vec![Bytes::from(v.to_string())],
        streamed: false,
    };
    let sse = |frames: &[String]| Prepared {
        content_type: "text/event-stream",
        error_type: None,
        frames: frames.iter().map(|f| Bytes::from(f.clone())).collect(),
        streamed: true,
    };
    let binary = |frames: Vec<Bytes>, content_type| Prepared {
        content_type,
        error_type: None,
        frames,
        streamed: true,
    };
    // An embeddings call's own answer ([`crate::embeddings`]).
    if let (ReplyBody::Auto, Some(api)) = (&reply.body, call.embed) {
        return Some(json(&crate::embeddings::answer(api, &call.model, request)));
    }
    // An image generation call's own answer ([`crate::images`]).
    if let (ReplyBody::Auto, Some(api)) = (&reply.body, call.image) {
        return Some(json(&crate::images::answer(api, &call.model, request)));
    }
    // A Gemini image model's image (`images_gemini.rs`), whole or in chunks.
    if let (ReplyBody::Auto, Vendor::Gemini, false) = (&reply.body, vendor, call.count)
        && let Some(chunks) = crate::images::gemini_image_chunks(&call.model, request, call.stream)
    {
        let datas = chunks.iter().map(Value::to_string);
        if call.stream && !call.json_array {
            return Some(sse(&datas
                .map(|d| canned::sse_frame(vendor, "", &d))
                .collect::<Vec<_>>()));
        }
        // The whole answer, or Gemini's stream as one JSON array.
        let frames = if call.stream { canned::json_array(datas) } else { datas.collect() };
        return Some(Prepared {
            content_type: "application/json",
            error_type: None,
            frames: frames.into_iter().map(Bytes::from).collect(),
            streamed: call.stream,
        });
    }
    Some(match &reply.body {
        ReplyBody::Hang => return None,
        ReplyBody::Json(v) => json(v),
        ReplyBody::Raw(b, ct) => Prepared {
            content_type: ct,
            error_type: None,
            frames: vec![b.clone()],
            streamed: false,
        },
        ReplyBody::Sse(frames) if call.invoke => {
            binary(bedrock::invoke::chunks(frames), canned::EVENT_STREAM)
        }
        ReplyBody::Sse(frames) => sse(frames),
        ReplyBody::Frames(frames, ct) => binary(frames.clone(), ct),
        ReplyBody::VendorError(message) => Prepared {
            error_type: (vendor == Vendor::Bedrock).then(|| bedrock::error_type(reply.status)),
            ..json(&canned::error_body(vendor, reply.status, message))
        },
        ReplyBody::Auto if call.count => json(&canned::count_answer(vendor, request)),
        ReplyBody::Auto if call.compact => json(&crate::responses::compacted(request)),
        ReplyBody::Auto if call.responses => {
            let turn = crate::responses::auto(request, &call.model);
            match crate::responses::reply(&turn, call.stream) {
                ReplyBody::Sse(frames) => sse(&frames),
                ReplyBody::Json(v) => json(&v),
                _ => return None,
            }
        }
        ReplyBody::Auto => {
            // InvokeModel answers in Claude's own shape.
            let vendor = if call.invoke { Vendor::Anthropic } else { vendor };
            // The scripted tool loop when the prompt asks for it, else the echo.
            let step = tool_loop::step(vendor, request);
            let echo;
            let answer = match &step {
                Some(step) => Answer {
                    model: &call.model,
                    thinking: step.thinking,
                    text: step.text.as_deref(),
                    tool: step.tool.as_ref().map(|(name, args)| (name.as_str(), args.as_str())),
                    signature: step.signature,
                },
                None => {
                    echo = canned::echo_text(vendor, request);
                    Answer { model: &call.model, text: Some(&echo), ..Answer::default() }
                }
            };
            if !call.stream {
                json(&canned::complete(vendor, &answer))
            } else if call.invoke {
                let frames = canned::sse_frames(vendor, &answer);
                binary(bedrock::invoke::chunks(&frames), canned::EVENT_STREAM)
            } else if vendor == Vendor::Bedrock {
                binary(bedrock::answer::frames(&answer), canned::EVENT_STREAM)
            } else if call.json_array {
                Prepared {
                    content_type: "application/json",
                    error_type: None,
                    frames: canned::gemini_json_array_frames(&answer)
                        .into_iter()
                        .map(Bytes::from)
                        .collect(),
                    streamed: true,
                }
            } else {
                sse(&canned::sse_frames(vendor, &answer))
            }
        }
    })
}

pub(super) fn respond(reply: &Reply, prepared: Prepared, guard: InFlight) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    if !reply.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-type")) {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(prepared.content_type));
    }
    if let Some(kind) = prepared.error_type
        && !reply.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(ERROR_TYPE))
    {
        headers.insert(HeaderName::from_static(ERROR_TYPE), HeaderValue::from_static(kind));
    }
    for (k, v) in &reply.headers {
        if let (Ok(k), Ok(v)) = (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(v)) {
            headers.append(k, v);
        }
    }
    let Prepared { mut frames, streamed, .. } = prepared;
    if !streamed && reply.break_after.is_none() {
        *response.body_mut() = Body::from(frames.concat());
        return response;
    }
    if !streamed {
        // A non-streamed body breaks in halves (see `Reply::break_after`).
        let whole = Bytes::from(frames.concat());
        let mid = whole.len() / 2;
        frames = vec![whole.slice(..mid), whole.slice(mid..)];
    }
    *response.body_mut() =
        Body::from_stream(frame_stream(frames, reply.chunk_delay, reply.break_after, guard));
    response
}

struct Pacing {
    frames: VecDeque<Bytes>,
    sent: usize,
    delay: Duration,
    break_after: Option<usize>,
    done: bool,
    /// Counts the body in flight; its fake's hold and shutdown, too.
    guard: InFlight,
}

fn frame_stream(
    frames: Vec<Bytes>,
    delay: Duration,
    break_after: Option<usize>,
    guard: InFlight,
) -> impl futures_util::Stream<Item = io::Result<Bytes>> + Send + 'static {
    let pacing = Pacing { frames: frames.into(), sent: 0, delay, break_after, done: false, guard };
    stream::unfold(pacing, |mut p| async move {
        if p.done {
            return None;
        }
        let broken = p.break_after.is_some_and(|n| p.sent >= n);
        let Some(frame) = p.frames.pop_front().filter(|_| !broken) else {
            if p.break_after.is_some() {
                p.done = true;
                // Return Pending once, so hyper flushes what was written
                // before the error drops the connection.
                tokio::task::yield_now().await;
                let err = io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "fake upstream: connection broken by script (break_after)",
                );
                return Some((Err(err), p));
            }
            return None;
        };
        if p.sent > 0 && !p.delay.is_zero() {
            tokio::time::sleep(p.delay).await;
        }
        // Held here (`FakeUpstream::hold_streams`) until released; the fake
        // going away ends a held body.
        let (shared, sent) = (&p.guard.0, p.sent);
        let held = |h: &Option<usize>| h.is_some_and(|n| sent >= n);
        if held(&shared.hold.borrow()) {
            let mut hold = shared.hold.subscribe();
            tokio::select! {
                _ = hold.wait_for(|h| !held(h)) => {}
                () = shared.until_shutdown() => return None,
            }
        }
        p.sent += 1;
        Some((Ok(frame), p))
    })
}
