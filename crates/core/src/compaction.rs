//! Compaction in the gateway: a request that asks for its conversation to be
//! compacted ([`Request::compaction`], see [`switchyard_protocol::compaction`]) is
//! answered with a summary the model it names writes, whatever that model's wire.
//!
//! The summarisation request ([`compaction::summarisation_request`]: the
//! conversation, the instruction, no tool calls) goes through the whole pipeline
//! like any other (routing, access rules, limits, failover, metering, one record,
//! its route descriptor noting `compaction`), answered canonically; this module
//! then turns the summary into what the client asked for. A client of the
//! Responses API gets one `compaction` item, its `encrypted_content` the summary
//! sealed with the gateway's seal: whole, as the compact endpoint's object, or
//! streamed (`response.created` at the upstream's first content, keep-alives while
//! the summary is written, the item and `response.completed` when it is done: a
//! sealed summary cannot be shown a piece at a time). A library caller gets the
//! summary itself, as the answer's text.
//!
//! [`Request::compaction`]: switchyard_protocol::Request::compaction

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use switchyard_protocol::{
    ClientFormat, Compaction, ErrorCode, ResponseAccumulator, Seal, StopReason, StreamEncoder,
    StreamEvent, compaction, continuity, responses,
};
use tokio::sync::mpsc;

use crate::exec::{Chunk, ChunkStream, Delivery, Inbound, Output, Success};
use crate::record::SharedSink;
use crate::runtime::Runtime;
use crate::{GatewayError, Snapshot};

/// How the route descriptor (and so the record) names a summarisation request.
const PURPOSE: &str = "compaction";

/// The one format compaction answers in. Its answers are written here, not at the
/// edge: a sealed item has no canonical form yet, so they reach the edge as bytes
/// in this format (as a pass-through would).
const FORMAT: ClientFormat = ClientFormat::OpenAiResponses;

/// Room between the compacting stream's events and the client connection.
const CHANNEL: usize = 8;

/// Answer a request that asks for compaction (`inbound.request.compaction` set).
pub(crate) async fn execute(
    snapshot: &Arc<Snapshot>,
    mut inbound: Inbound,
    runtime: &Arc<Runtime>,
    sink: SharedSink,
) -> Result<Success, GatewayError> {
    let kind = inbound.request.compaction.clone().unwrap_or(Compaction::Trigger);
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
    inbound.request = Arc::new(compaction::summarisation_request(&inbound.request));
    // What goes upstream is the summarisation request, never the client's body.
    inbound.raw = None;
    inbound.output = Output::Canonical;
    let keepalive = snapshot.catalog.settings.keepalive;
    let mut success = snapshot.run(inbound, runtime, sink, Some(PURPOSE)).await?;
    let Some(seal) = seal else { return Ok(success) };
    success.delivery = match success.delivery {
        Delivery::Response { response, record } => {
            let usage = record.map(|r| r.usage).unwrap_or_default();
            let summary = compaction::summary_of(&response.content);
            let token = seal_summary(seal.as_ref(), &summary)?;
            let body = match &kind {
                Compaction::Trigger => responses::encode_compaction_response(
                    &response.id,
                    &response.model,
                    &token,
                    &usage,
                ),
                Compaction::Endpoint { retained } => {
                    responses::encode_compacted(&response.id, &token, retained, &usage)
                }
            };
            Delivery::Passthrough { format: FORMAT, body: Bytes::from(body.to_string()) }
        }
        Delivery::Stream(events) => Delivery::Stream(stream(events, seal, keepalive)),
        // Asked for canonically, the pipeline answers so.
        other => other,
    };
    Ok(success)
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

/// The Responses stream of a compaction: the response's start as soon as the
/// summary's events begin, keep-alives while it is written, then the one item and
/// the completed response (or the failure). The summary's own events are read,
/// not shown. The client going away drops `events`, which cancels the upstream.
fn stream(mut events: ChunkStream, seal: Arc<dyn Seal>, keepalive: Duration) -> ChunkStream {
    let (tx, rx) = mpsc::channel(CHANNEL);
    let send = |tx: mpsc::Sender<Chunk>, out: Vec<u8>| async move {
        let _ = tx.send(Chunk::Raw(Bytes::from(out))).await;
        let _ = tx.send(Chunk::End { error: None, record: None }).await;
    };
    tokio::spawn(async move {
        let mut encoder = responses::Encoder::new();
        let mut answer = ResponseAccumulator::default();
        let mut out = Vec::new();
        loop {
            let next = tokio::select! {
                biased;
                () = tx.closed() => return,
                next = tokio::time::timeout(keepalive, events.next()) => next,
            };
            match next {
                Err(_) => {
                    if tx.send(Chunk::KeepAlive).await.is_err() {
                        return;
                    }
                }
                Ok(None) => break,
                Ok(Some(Chunk::End { error: Some(err), .. })) => {
                    encoder.error(err.body(), &mut out);
                    return send(tx, out).await;
                }
                Ok(Some(Chunk::End { error: None, .. })) => break,
                Ok(Some(Chunk::Events(evs))) => {
                    for event in evs {
                        if matches!(event, StreamEvent::Start { .. } | StreamEvent::Usage { .. }) {
                            encoder.push(&event, &mut out);
                        }
                        answer.push(&event);
                    }
                }
                // Asked for canonically: no bytes; the pipeline's keep-alives are
                // this loop's own.
                Ok(Some(Chunk::Raw(_) | Chunk::KeepAlive)) => {}
            }
            if !out.is_empty()
                && tx.send(Chunk::Raw(Bytes::from(std::mem::take(&mut out)))).await.is_err()
            {
                return;
            }
        }
        let answer = answer.finish();
        if answer.stop_reason == Some(StopReason::MaxTokens) {
            tracing::warn!("a compaction summary reached the output limit: it may be cut short");
        }
        match seal_summary(seal.as_ref(), &compaction::summary_of(&answer.content)) {
            Ok(token) => {
                encoder.compaction(&token, &mut out);
                // Completed whatever the upstream's stop: the summary is what it is,
                // and a client waits for `response.completed`.
                let stop = StreamEvent::Stop { reason: StopReason::EndTurn, stop_sequence: None };
                encoder.push(&stop, &mut out);
                encoder.finish(&mut out);
            }
            Err(err) => encoder.error(err.body(), &mut out),
        }
        send(tx, out).await;
    });
    ChunkStream::new(Some(FORMAT), rx)
}
