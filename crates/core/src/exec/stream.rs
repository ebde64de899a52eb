//! Streams: held until their first content (the commit point), then pumped to
//! the client; their outcome is reported when they end.

use super::*;

/// A stream past its commit point: the held events (and raw bytes) up to and
/// including the first content event, and the rest still to read.
pub(super) struct Committed {
    pub(super) source: Source,
    pub(super) held_raw: Vec<u8>,
    /// `held_raw` as frames (kept with it).
    pub(super) held_frames: Vec<Frame>,
    pub(super) held: Vec<StreamEvent>,
    pub(super) ended: bool,
    /// The credentials the attempt used (its key, what its cloud credential
    /// minted), to scrub from what the stream says after the commit point (the
    /// provider's platform keys are on the candidate).
    pub(super) used: Vec<Secret>,
    /// The credential's breaker permit, reported when the stream ends.
    pub(super) permit: Option<Permit>,
}

/// Read the stream until its first content event (or its end), holding everything
/// before it. Any failure here is still invisible to the client.
/// `reported` collects the usage the upstream reported while held, so a stream that
/// fails before its commit point is still metered. At most `cap` bytes are held:
/// an upstream that sends endless events with no content in them (each resets
/// the idle timer) fails the attempt instead of growing the gateway's memory.
pub(super) async fn commit(
    mut source: Source,
    idle: Duration,
    keep_raw: bool,
    cap: usize,
    reported: &mut Usage,
) -> Result<Committed, Failure> {
    let mut seen = 0usize;
    let mut held_raw = Vec::new();
    let mut held_frames = Vec::new();
    let mut held = Vec::new();
    loop {
        let batch = match tokio::time::timeout(idle, source.next()).await {
            Err(_) => {
                return Err(Failure::Transport {
                    class: TransportClass::Timeout,
                    message: "stream idle before first content".into(),
                });
            }
            Ok(r) => r?,
        };
        let Some(batch) = batch else {
            return Ok(Committed {
                source,
                held_raw,
                held_frames,
                held,
                ended: true,
                used: Vec::new(),
                permit: None,
            });
        };
        seen = seen.saturating_add(batch.raw.len());
        if seen > cap {
            return Err(Failure::Malformed(format!(
                "more than {cap} bytes streamed before the first content (max_response_bytes)"
            )));
        }
        if keep_raw {
            held_raw.extend_from_slice(&batch.raw);
            held_frames.extend(batch.frames);
        }
        let content = batch.events.iter().any(StreamEvent::is_content);
        for ev in &batch.events {
            if let StreamEvent::Usage { usage } = ev {
                reported.merge(usage);
            }
        }
        held.extend(batch.events);
        if content || batch.end {
            return Ok(Committed {
                source,
                held_raw,
                held_frames,
                held,
                ended: batch.end,
                used: Vec::new(),
                permit: None,
            });
        }
    }
}

/// A streamed attempt's report to the runtime, made when the stream ends: the
/// breaker hears its outcome then (a stream that breaks after its first content
/// is a failure, not the success its start looked like), and only a stream that
/// ended well feeds the latency statistics. Dropped unreported (the client went
/// away), it gives the permit back with no outcome.
pub(super) struct StreamReport {
    pub(super) runtime: Arc<Runtime>,
    pub(super) permit: Option<Permit>,
    pub(super) identity: String,
    pub(super) attempt_ms: f64,
    pub(super) ttft_ms: f64,
    /// The destination's statistics: told how the stream ended, or (dropped
    /// untold: the client went away) a cancellation.
    pub(super) watch: Option<Watch>,
    /// The attempt's time to its first content.
    pub(super) first_content: Duration,
}

impl StreamReport {
    /// The stream ended (not cancelled), having produced `output_tokens`.
    pub(super) fn ended(&mut self, ended: Ended, output_tokens: Option<u64>) {
        if let Some(watch) = self.watch.take() {
            watch.end(ended, Some(self.first_content), output_tokens);
        }
    }

    pub(super) fn finish(&mut self, outcome: Option<Outcome>) {
        if outcome == Some(Outcome::Success) {
            self.runtime.latency.observe_attempt(&self.identity, self.attempt_ms);
            self.runtime.latency.observe_ttft(&self.identity, self.ttft_ms);
        }
        if let Some(permit) = self.permit.take() {
            match outcome {
                Some(outcome) => self.runtime.health.report(permit, outcome, UnixMs::now()),
                None => self.runtime.health.abandon(permit),
            }
        }
    }
}

impl Drop for StreamReport {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take() {
            self.runtime.health.abandon(permit);
        }
    }
}

/// Where a stream goes: chunks to the caller, which encodes them into its format
/// (or takes the canonical events as they are). What is ready but not yet sent
/// waits here, so each upstream batch leaves as one chunk.
pub(super) struct Outlet {
    pub(super) tx: mpsc::Sender<Chunk>,
    /// A library caller: it gets the record with the end, and no keep-alives.
    pub(super) canonical: bool,
    /// Pass-through bytes ready to go.
    pub(super) raw: Vec<u8>,
    /// Canonical events ready to go.
    pub(super) events: Vec<StreamEvent>,
}

impl Outlet {
    fn take(&mut self) -> Option<Chunk> {
        if !self.raw.is_empty() {
            return Some(Chunk::Raw(Bytes::from(std::mem::take(&mut self.raw))));
        }
        if !self.events.is_empty() {
            return Some(Chunk::Events(std::mem::take(&mut self.events)));
        }
        None
    }

    /// Send what is ready; false: the receiver is gone.
    async fn flush(&mut self) -> bool {
        match self.take() {
            Some(chunk) => self.tx.send(chunk).await.is_ok(),
            None => true,
        }
    }

    /// Send what is ready if there is room now, else keep it for the next flush.
    pub(super) fn try_flush(&mut self) {
        if let Some(chunk) = self.take()
            && let Err(
                mpsc::error::TrySendError::Full(chunk) | mpsc::error::TrySendError::Closed(chunk),
            ) = self.tx.try_send(chunk)
        {
            match chunk {
                Chunk::Raw(b) => self.raw = b.into(),
                Chunk::Events(evs) => self.events = evs,
                _ => {}
            }
        }
    }

    /// A keep-alive, unless the caller takes none; false: the receiver is gone.
    async fn keepalive(&mut self) -> bool {
        self.canonical || self.tx.send(Chunk::KeepAlive).await.is_ok()
    }

    async fn closed(&mut self) {
        self.tx.closed().await;
    }

    /// End the stream, after what is ready; false: the receiver is gone.
    async fn end(
        &mut self,
        error: Option<GatewayError>,
        record: Option<Box<RequestRecord>>,
    ) -> bool {
        self.flush().await && self.tx.send(Chunk::End { error, record }).await.is_ok()
    }
}

/// Resolves at `deadline`; never without one.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

/// Moves a committed stream to the client: translate (or pass through), observe
/// usage, end cleanly or with an in-format error, then write the record.
pub(super) struct Pump {
    pub(super) outlet: Outlet,
    pub(super) passthrough: bool,
    pub(super) idle: Duration,
    pub(super) guard: RecordGuard,
    pub(super) request: Arc<Request>,
    /// The request's input estimate, shared with the pipeline (whichever computes
    /// it first).
    pub(super) estimate: context::Estimate,
    pub(super) candidate: Candidate,
    pub(super) usage: Usage,
    pub(super) out_bytes: usize,
    /// When the project logs content: the cap, and the response text so far.
    pub(super) content_cap: Option<usize>,
    pub(super) captured: String,
    /// The credentials the attempt used (scrubbed from what the stream says).
    pub(super) used: Vec<Secret>,
    /// The model as the client named it, which the stream names too.
    pub(super) client_model: String,
    /// Passed through, the upstream's events name another model: rename it.
    pub(super) rename: bool,
    /// What the upstream needs back next turn that the client cannot carry:
    /// call signatures, signed thinking (see [`continuity`]).
    pub(super) continuity: Option<continuity::StreamContinuity>,
    /// Passed through, an OpenAI stream carries the usage-only chunk the gateway
    /// asked for (to meter it) and the client did not: it is left out.
    pub(super) strip_usage: bool,
    /// Prompted structured output: the text so far, checked against the
    /// request's schema when the stream ends.
    pub(super) structured: Option<crate::structured::Collected>,
    /// Passed through as the upstream's own bytes: no event is renamed or
    /// left out, and the wire streams SSE as every client format does (an
    /// event-stream's frames are written back as SSE events instead).
    pub(super) verbatim: bool,
    /// The attempt's health and latency, reported when the stream ends.
    pub(super) report: StreamReport,
    /// Held for the stream's life: the deployment counts as busy until it ends.
    pub(super) _in_flight: InFlightGuard,
    /// A deadline the caller set for the whole request (library callers); a
    /// stream that is still receiving has none otherwise.
    pub(super) deadline: Option<Instant>,
    /// How often a keep-alive goes to the client while the upstream is silent.
    pub(super) keepalive: Duration,
    /// Whether what went to the client so far ends at an event boundary, so a
    /// keep-alive may go in (a passed-through chunk may end inside an event).
    pub(super) at_boundary: bool,
}

impl Pump {
    /// Meter, capture and remember what the events carry; translated, queue them
    /// for the caller (the start naming the client's model).
    pub(super) fn observe(&mut self, events: Vec<StreamEvent>) {
        for ev in &events {
            if let Some(continuity) = &mut self.continuity {
                continuity.push(ev);
            }
            if let Some(collected) = &mut self.structured {
                collected.observe(ev);
            }
            match ev {
                StreamEvent::Usage { usage } => self.usage.merge(usage),
                StreamEvent::Stop { reason, .. } => {
                    if let Some(attempt) = self.guard.rec.attempts.last_mut() {
                        attempt.finish_reason =
                            Some(crate::otel::finish_reason(*reason).to_owned());
                    }
                }
                StreamEvent::Delta { delta, .. } => {
                    if let (Some(trace), switchyard_protocol::Delta::Text { text }) =
                        (&mut self.guard.trace, delta)
                    {
                        trace.capture(text);
                    }
                    if let (Some(cap), switchyard_protocol::Delta::Text { text }) =
                        (self.content_cap, delta)
                        && self.captured.len() < cap
                    {
                        self.captured.push_str(text);
                    }
                    self.out_bytes += match delta {
                        switchyard_protocol::Delta::Text { text }
                        | switchyard_protocol::Delta::Thinking { text } => text.len(),
                        switchyard_protocol::Delta::ToolArguments { json } => json.len(),
                        switchyard_protocol::Delta::Signature { .. } => 0,
                    }
                }
                _ => {}
            }
        }
        if self.passthrough {
            return;
        }
        for mut ev in events {
            if let StreamEvent::Start { model, .. } = &mut ev {
                model.clone_from(&self.client_model);
            }
            self.outlet.events.push(ev);
        }
    }

    /// Queue what was held up to the commit point.
    pub(super) fn start(
        &mut self,
        held_raw: Vec<u8>,
        held_frames: &[Frame],
        held: Vec<StreamEvent>,
    ) {
        if self.verbatim && !held_raw.is_empty() {
            self.at_boundary = held_raw.ends_with(b"\n\n") || held_raw.ends_with(b"\r\n\r\n");
        }
        self.forward(held_raw, held_frames);
        self.observe(held);
    }

    /// On the fast path, queue the upstream's own bytes, or its events with the
    /// model renamed when they name another one than the client asked for, and
    /// without a usage chunk it did not ask for. Event by event, as each
    /// completes: nothing is held back.
    ///
    /// The fast path joins a client to its own format's wire, and every client
    /// format streams SSE, so a frame here is an SSE event (or, from an AWS
    /// event-stream, the model's event a chunk carries) and is written back as one.
    pub(super) fn forward(&mut self, raw: impl AsRef<[u8]> + Into<Vec<u8>>, frames: &[Frame]) {
        if !self.passthrough {
            return;
        }
        // The upstream's bytes are whole frames here (`Source` holds back a frame
        // not yet complete), so a secret in one is scrubbed whole.
        let redactor =
            Redactor { platform: &self.candidate.provider.secrets, used: None, minted: &self.used };
        let out = &mut self.outlet.raw;
        if self.verbatim {
            match redactor.forwarded(raw.as_ref()) {
                Cow::Owned(clean) => out.extend_from_slice(&clean),
                Cow::Borrowed(_) if out.is_empty() => *out = raw.into(),
                Cow::Borrowed(clean) => out.extend_from_slice(clean),
            }
            return;
        }
        for ev in frames {
            if self.strip_usage && openai_chat::is_usage_only_chunk(ev.data.as_bytes()) {
                continue;
            }
            let renamed = if self.rename {
                util::rename_model(ev.data.as_bytes(), &self.client_model)
            } else {
                None
            };
            let data = renamed.as_deref().unwrap_or(ev.data.as_bytes());
            match redactor.forwarded(data) {
                // Untouched: the frame's own text.
                Cow::Borrowed(_) if renamed.is_none() => {
                    sse::write_event(out, ev.event.as_deref(), &ev.data);
                }
                data => sse::write_event(out, ev.event.as_deref(), &util::lossy(&data)),
            }
        }
    }

    /// A prompted stream that ended well, checked against the request's schema.
    /// Its content is the client's already, so an invalid answer cannot fail
    /// over: the stream ends with an error instead (`invalid_output` on the
    /// attempt; the deployment answered, so its breaker hears a success). One
    /// too long to check says so in the record's descriptor.
    fn check_structured(
        &mut self,
        error: &mut Option<GatewayError>,
        failed: &mut Option<(String, Option<Outcome>)>,
    ) {
        let Some(collected) = self.structured.take() else { return };
        let Some(schema) = crate::structured::schema_of(&self.request) else { return };
        match collected.finish(schema) {
            crate::structured::Verdict::Valid => {}
            crate::structured::Verdict::Unchecked => {
                tracing::warn!(request_id = %self.guard.rec.id, "prompted structured stream too long to check");
                self.guard.rec.descriptor.push_str(if self.guard.rec.descriptor.is_empty() {
                    "structured_output:unchecked"
                } else {
                    " structured_output:unchecked"
                });
            }
            crate::structured::Verdict::Invalid(why) => {
                let f = Failure::InvalidOutput(why);
                *error = Some(failure_error(&f, &self.candidate.provider.name));
                *failed = Some((f.outcome(), health_outcome(&f)));
            }
        }
    }

    pub(super) async fn run(mut self, mut source: Source, mut ended: bool) {
        let mut error: Option<GatewayError> = None;
        // How the attempt ended after its commit point, when it did not end well:
        // the record's name for it and what the breaker hears (None: nothing,
        // the deployment was not at fault).
        let mut failed: Option<(String, Option<Outcome>)> = None;
        loop {
            if ended {
                break;
            }
            if !self.outlet.flush().await {
                return; // client went away: dropping `source` cancels the upstream call
            }
            // Wait for the upstream; while it is silent, keep the client's
            // connection alive, up to the silence allowed.
            let silent_since = Instant::now();
            let next = loop {
                let silent = silent_since.elapsed();
                let Some(left) = self.idle.checked_sub(silent).filter(|l| !l.is_zero()) else {
                    break Err(());
                };
                let deadline = self.deadline;
                let wait = tokio::select! {
                    biased;
                    _ = self.outlet.closed() => return,
                    _ = until(deadline) => None,
                    r = tokio::time::timeout(left.min(self.keepalive), source.next()) => Some(r),
                };
                match wait {
                    None => {
                        error = Some(GatewayError::new(
                            ErrorCode::DeadlineExceeded,
                            "the request deadline passed while streaming",
                        ));
                        failed = Some((ErrorCode::DeadlineExceeded.as_str().to_owned(), None));
                        break Err(());
                    }
                    Some(Ok(r)) => break Ok(r),
                    Some(Err(_)) if silent_since.elapsed() >= self.idle => break Err(()),
                    Some(Err(_)) => {
                        if self.at_boundary && !self.outlet.keepalive().await {
                            return;
                        }
                    }
                }
            };
            if error.is_some() {
                break;
            }
            match next {
                Err(()) => {
                    error = Some(GatewayError::new(
                        ErrorCode::StreamIdleTimeout,
                        "upstream stream went idle",
                    ));
                    let outcome = Outcome::Failure { retry_after: None };
                    failed = Some((TransportClass::Timeout.outcome().to_owned(), Some(outcome)));
                    break;
                }
                Ok(Err(f)) => {
                    let redactor = Redactor {
                        platform: &self.candidate.provider.secrets,
                        used: None,
                        minted: &self.used,
                    };
                    let f = f.redacted(&redactor);
                    error = Some(failure_error(&f, &self.candidate.provider.name));
                    failed = Some((f.outcome(), health_outcome(&f)));
                    break;
                }
                Ok(Ok(None)) => ended = true,
                Ok(Ok(Some(batch))) => {
                    let boundary = batch.raw.ends_with(b"\n\n") || batch.raw.ends_with(b"\r\n\r\n");
                    if self.verbatim && !batch.raw.is_empty() {
                        self.at_boundary = boundary;
                    }
                    self.forward(batch.raw, &batch.frames);
                    self.observe(batch.events);
                    ended = batch.end;
                }
            }
        }
        if error.is_none() {
            self.check_structured(&mut error, &mut failed);
        }
        if let Some(err) = &error {
            tracing::warn!(request_id = %self.guard.rec.id, code = err.code().as_str(), "stream failed after commit");
        }
        let (request, estimate) = (&self.request, &self.estimate);
        meter(
            &mut self.guard.rec,
            self.usage,
            || estimate.get(request),
            self.out_bytes,
            &self.candidate,
        );
        if let Some(cap) = self.content_cap {
            self.guard.rec.content =
                Some(crate::record::content_json(&self.request, &self.captured, cap));
        }
        if let Some(err) = &error {
            if let Some((outcome, health)) = failed.take() {
                if let Some(attempt) = self.guard.rec.attempts.last_mut() {
                    attempt.outcome = outcome;
                }
                self.report.ended(Ended::Error, self.guard.rec.usage.output_tokens);
                self.report.finish(health);
            }
            self.guard.rec.error_code = Some(err.code().as_str().to_owned());
        }
        let code = error.as_ref().map(GatewayError::code);
        // The library caller's copy of the record, as it will be written.
        let record = self.outlet.canonical.then(|| self.guard.copy(200, code));
        let delivered = self.outlet.end(error, record).await;
        match (code, delivered) {
            (Some(code), _) => {
                // Told already where the upstream failed; this is any other end
                // in error (not the client's cancellation).
                self.report.ended(Ended::Error, self.guard.rec.usage.output_tokens);
                self.guard.record_metrics();
                self.guard.finish(200, Some(code));
            }
            (None, true) => {
                self.report.ended(Ended::Success, self.guard.rec.usage.output_tokens);
                self.report.finish(Some(Outcome::Success));
                for (key, value) in self.continuity.take().map(|c| c.finish()).unwrap_or_default() {
                    self.report.runtime.continuity.put(key, value, continuity::TTL).await;
                }
                self.guard.record_metrics();
                self.guard.finish(200, None);
            }
            // Dropped: recorded as client_closed_request; the breaker hears nothing.
            (None, false) => {}
        }
    }
}
