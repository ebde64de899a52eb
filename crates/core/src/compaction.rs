//! Compaction in the gateway: a request that asks for its conversation to be
//! compacted ([`Request::compaction`], see [`switchyard_protocol::compaction`]) is
//! answered with a summary the model it names writes, whatever that model's wire.
//!
//! The summarisation request ([`compaction::summarisation_request`]: the
//! conversation, the instruction, no tool calls) goes through the whole pipeline
//! like any other (routing, access rules, limits, failover, metering, one record,
//! its route descriptor noting `compaction`), answered canonically; this module
//! then turns the summary into what the client asked for. A client of the
//! Responses API gets one [`Part::Compaction`], the summary sealed with the
//! gateway's seal, which the edge writes as a `compaction` item (whole, or as the
//! compact endpoint's object when the request came from there), or streamed: the
//! response's start at the upstream's first content, keep-alives while the
//! summary is written, then the item and the stop when it is done (a sealed
//! summary cannot be shown a piece at a time). A library caller gets the summary
//! itself, as the answer's text.
//!
//! A trigger whose every deployment speaks the Responses API itself (a
//! Responses upstream, on the same-format fast path) is not summarised here:
//! it goes as the client sent it, the upstream compacts, and its own item comes
//! back to it on the next turn ([`Snapshot::compacts_natively`]; the descriptor
//! says `compaction:upstream`).
//!
//! [`Request::compaction`]: switchyard_protocol::Request::compaction

use std::sync::Arc;
use std::time::Duration;

use switchyard_protocol::{
    BlockKind, ClientFormat, ErrorCode, Part, Response, ResponseAccumulator, Seal, StopReason,
    StreamEvent, compaction, continuity,
};
use tokio::sync::mpsc;

use crate::continuity::BoxFuture;
use crate::exec::{Chunk, ChunkStream, Delivery, Inbound, Output, Success};
use crate::record::SharedSink;
use crate::runtime::Runtime;
use crate::{GatewayError, Snapshot};

/// How the route descriptor (and so the record) names a summarisation request.
const PURPOSE: &str = "compaction";

/// How it names a compaction the upstream did itself.
const NATIVE: &str = "compaction:upstream";

/// Room between the compacting stream's events and the client connection.
const CHANNEL: usize = 8;

/// Answer a request that asks for compaction (`inbound.request.compaction` set).
// Boxed, with its type written out: the pipeline's future holds this one, which
// holds the pipeline's (for the summarisation request).
pub(crate) fn execute(
    snapshot: Arc<Snapshot>,
    mut inbound: Inbound,
    runtime: Arc<Runtime>,
    sink: SharedSink,
) -> BoxFuture<'static, Result<Success, GatewayError>> {
    Box::pin(async move {
        // Every deployment speaks the client's own API: it compacts, and its
        // item comes back to it as the client sent it.
        if snapshot.compacts_natively(&inbound, &runtime) {
            return snapshot.run(inbound, runtime, sink, Some(NATIVE)).await;
        }
        let seal = match inbound.output {
            Output::Canonical => None,
            Output::Client if inbound.format != ClientFormat::OpenAiResponses => {
                return Err(GatewayError::new(
                    ErrorCode::UnsupportedCompaction,
                    "compaction is answered in the OpenAI Responses API only",
                ));
            }
            Output::Client => Some(runtime.seal.clone().ok_or_else(|| {
                GatewayError::new(
                    ErrorCode::CompactionUnavailable,
                    "this gateway has no seal for compaction items",
                )
            })?),
        };
        let asked = Arc::clone(&inbound.request);
        inbound.request = Arc::new(compaction::summarisation_request(&asked));
        // What goes upstream is the summarisation request, never the client's body.
        inbound.raw = None;
        inbound.output = Output::Canonical;
        let keepalive = snapshot.catalog.settings.keepalive;
        let mut success = snapshot.run(inbound, runtime, sink, Some(PURPOSE)).await?;
        let Some(seal) = seal else { return Ok(success) };
        // The edge encodes for the request the client made: it says which answer the
        // client asked for (a trigger's response, the compact endpoint's object).
        success.request = asked;
        success.delivery = match success.delivery {
            Delivery::Response { response, record } => {
                let summary = compaction::summary_of(&response.content);
                let sealed = seal_summary(seal.as_ref(), &summary)?;
                // The metered usage, which the record has whatever the upstream said.
                let usage = record.as_ref().map_or(response.usage, |r| r.usage);
                let response = Response {
                    content: vec![Part::Compaction { sealed }],
                    // Completed whatever the upstream's stop: the summary is what it is.
                    stop_reason: Some(StopReason::EndTurn),
                    stop_sequence: None,
                    usage,
                    ..*response
                };
                Delivery::Response { response: Box::new(response), record }
            }
            Delivery::Stream(events) => Delivery::Stream(stream(events, seal, keepalive)),
            // Asked for canonically, the pipeline answers so.
            other => other,
        };
        Ok(success)
    })
}

/// The sealed summary; an error when there is none (the model wrote no text) or
/// sealing failed.
fn seal_summary(seal: &dyn Seal, summary: &str) -> Result<String, GatewayError> {
    if summary.is_empty() {
        return Err(GatewayError::new(
            ErrorCode::CompactionFailed,
            "the model answered the compaction request without a summary",
        ));
    }
    continuity::seal_summary(seal, summary)
        .ok_or_else(|| GatewayError::new(ErrorCode::SealFailed, "the summary could not be sealed"))
}

/// The stream of a compaction: the response's start (and usage) as soon as the
/// summary's events begin, keep-alives while it is written, then the one
/// compaction block and the stop (or the failure). The summary's own content
/// events are read, not shown. The client going away drops `events`, which
/// cancels the upstream.
fn stream(mut events: ChunkStream, seal: Arc<dyn Seal>, keepalive: Duration) -> ChunkStream {
    let (tx, rx) = mpsc::channel(CHANNEL);
    tokio::spawn(async move {
        let mut answer = ResponseAccumulator::default();
        loop {
            let next = tokio::select! {
                biased;
                () = tx.closed() => return,
                next = tokio::time::timeout(keepalive, events.next()) => next,
            };
            let shown = match next {
                Err(_) => Chunk::KeepAlive,
                Ok(None) | Ok(Some(Chunk::End { error: None, .. })) => break,
                Ok(Some(Chunk::End { error: Some(err), .. })) => {
                    let _ = tx.send(Chunk::End { error: Some(err), record: None }).await;
                    return;
                }
                Ok(Some(Chunk::Events(evs))) => {
                    let shown: Vec<StreamEvent> = evs
                        .iter()
                        .filter(|e| {
                            matches!(e, StreamEvent::Start { .. } | StreamEvent::Usage { .. })
                        })
                        .cloned()
                        .collect();
                    for event in &evs {
                        answer.push(event);
                    }
                    if shown.is_empty() {
                        continue;
                    }
                    Chunk::Events(shown)
                }
                // Asked for canonically: no bytes; the pipeline's keep-alives are
                // this loop's own.
                Ok(Some(Chunk::Raw(_) | Chunk::KeepAlive)) => continue,
            };
            if tx.send(shown).await.is_err() {
                return;
            }
        }
        let answer = answer.finish();
        if answer.stop_reason == Some(StopReason::MaxTokens) {
            tracing::warn!("a compaction summary reached the output limit: it may be cut short");
        }
        let end = match seal_summary(seal.as_ref(), &compaction::summary_of(&answer.content)) {
            Ok(sealed) => {
                let events = vec![
                    StreamEvent::BlockStart { index: 0, kind: BlockKind::Compaction { sealed } },
                    StreamEvent::BlockStop { index: 0 },
                    // Completed whatever the upstream's stop: the summary is what it
                    // is, and a client waits for `response.completed`.
                    StreamEvent::Stop { reason: StopReason::EndTurn, stop_sequence: None },
                ];
                if tx.send(Chunk::Events(events)).await.is_err() {
                    return;
                }
                Chunk::End { error: None, record: None }
            }
            Err(err) => Chunk::End { error: Some(err), record: None },
        };
        let _ = tx.send(end).await;
    });
    ChunkStream::new(None, rx)
}
