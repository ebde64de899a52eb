//! Deliver a successful attempt: the client's model name, the record, metrics,
//! and for streams the pump that carries the rest.

use super::*;
use switchyard_protocol::Framing;

/// The attempt that answered: which candidate, what it was sent without, its
/// answer and how long it took.
pub(super) struct Won {
    /// The candidate's index in the plan.
    pub(super) index: usize,
    /// The offered tools it does not run (it was sent the request without them).
    pub(super) dropped: Dropped,
    pub(super) answer: Answer,
    /// Its slot among the deployment's requests in flight, held while it answers.
    pub(super) in_flight: InFlightGuard,
    /// The attempt's time to its answer (a stream's: to its first content).
    pub(super) elapsed: Duration,
    /// It was asked for the request's schema in its system prompt: a stream is
    /// translated (never forwarded as the upstream's bytes) and checked at its end.
    pub(super) prompted: bool,
    /// A stream's destination statistics, told when it ends.
    pub(super) watch: Option<Watch>,
}

impl Snapshot {
    /// The answer of the attempt `won`, for the caller: renamed to the model it
    /// asked for, metered and recorded (a stream's pump records it when it ends).
    /// `tried`: the providers attempts were sent to, for the descriptor. Returns
    /// the continuity state to remember for the next turn too (the caller awaits
    /// the writes, so this stays a plain function and the request's future small).
    pub(super) fn deliver(
        self: &Arc<Self>,
        inbound: &Inbound,
        plan: &Plan,
        tried: &[String],
        won: Won,
        runtime: &Arc<Runtime>,
        guard: &mut RecordGuard,
    ) -> (Success, Vec<(String, Vec<u8>)>) {
        let Won { index, dropped, answer, in_flight, elapsed: attempt_time, prompted, watch } = won;
        let dropped = &dropped;
        let mut keep = Vec::new();
        let rate = guard.reservation.as_ref().and_then(|(_, r)| r.status);
        let Some(cand) = plan.candidates.get(index) else {
            // Unreachable by construction: `index` comes from iterating the plan.
            let served = Served {
                provider: String::new(),
                model: plan.public_model.clone(),
                upstream_model: String::new(),
                dropped_tools: Vec::new(),
            };
            let delivery = Delivery::Passthrough { format: inbound.format, body: Bytes::new() };
            let success = Success::new(served, String::new(), inbound, delivery, rate);
            return (success, keep);
        };
        let routing = guard.rec.routing.headline();
        let descriptor = descriptor(plan, tried);
        // The answer names the model as the client asked for it: agents compare it
        // with their request (Claude Code drops a turn's thinking from the next
        // request when it names another model). The served one is in the headers.
        let client_model = inbound.request.model.as_str();
        let renamed = cand.upstream_model != client_model;
        let served = Served {
            provider: cand.provider.name.clone(),
            model: plan.public_model.clone(),
            upstream_model: cand.upstream_model.clone(),
            dropped_tools: dropped.names(&inbound.request),
        };
        if !dropped.is_empty() {
            self.note_dropped(inbound, plan, cand, dropped, runtime);
        }
        guard.rec.served_provider = Some(served.provider.clone());
        guard.rec.upstream_model = Some(served.upstream_model.clone());
        guard.rec.descriptor.clone_from(&descriptor);
        let ttft = inbound.received.elapsed();
        guard.rec.ttft_ms = Some(ttft.as_millis() as u64);
        self.provider_meters(&served.provider, |m| m.ttft_seconds.record(ttft.as_secs_f64()));
        match answer {
            Answer::Whole(Whole::Forwarded { body, usage }) => {
                let body = if renamed { rename(body, client_model) } else { body };
                meter(&mut guard.rec, usage, || inbound.input_estimate(), 0, cand);
                drop(in_flight);
                guard.record_metrics();
                guard.write(200, None);
                let delivery = Delivery::Passthrough { format: inbound.format, body };
                (
                    Success::new(served, descriptor, inbound, delivery, rate).with_routing(routing),
                    keep,
                )
            }
            Answer::Whole(Whole::Parsed { mut response, raw }) => {
                client_model.clone_into(&mut response.model);
                if let Some(attempt) = guard.rec.attempts.last_mut() {
                    attempt.finish_reason =
                        response.stop_reason.map(|r| crate::otel::finish_reason(r).to_owned());
                }
                if let Some(trace) = guard.trace.as_mut().filter(|t| t.wants_text()) {
                    for part in &response.content {
                        if let Part::Text(t) = part {
                            trace.capture(&t.text);
                        }
                    }
                }
                keep.extend(continuity::signatures_to_keep(&response.content));
                if continuity::needs_store(inbound.format) {
                    keep.extend(continuity::thinking_to_keep(&response.content));
                }
                meter(
                    &mut guard.rec,
                    response.usage,
                    || inbound.input_estimate(),
                    text_bytes(&response.content),
                    cand,
                );
                if let Some(cap) = inbound.content_cap {
                    let text: String = response
                        .content
                        .iter()
                        .filter_map(|p| {
                            if let Part::Text(t) = p { Some(t.text.as_str()) } else { None }
                        })
                        .collect();
                    guard.rec.content =
                        Some(crate::record::content_json(&inbound.request, &text, cap));
                }
                drop(in_flight);
                guard.record_metrics();
                let record = (inbound.output == Output::Canonical).then(|| guard.copy(200, None));
                guard.write(200, None);
                let delivery = match raw {
                    // The fast path parsed the answer (to meter or log it) and forwards
                    // the upstream's own bytes.
                    Some(raw) if inbound.output == Output::Client => Delivery::Passthrough {
                        format: inbound.format,
                        body: if renamed { rename(raw, client_model) } else { raw },
                    },
                    _ => Delivery::Response { response: Box::new(response), record },
                };
                (
                    Success::new(served, descriptor, inbound, delivery, rate).with_routing(routing),
                    keep,
                )
            }
            Answer::Stream(mut committed) => {
                let report = StreamReport {
                    runtime: Arc::clone(runtime),
                    permit: committed.permit.take(),
                    identity: cand.identity(),
                    attempt_ms: attempt_time.as_secs_f64() * 1000.0,
                    ttft_ms: ttft.as_secs_f64() * 1000.0,
                    watch,
                    first_content: attempt_time,
                };
                // A mock provider has no wire, and its stream is never passed through.
                let wire = cand.provider.wire();
                let passthrough = inbound.output == Output::Client
                    && !prompted
                    && wire.is_some_and(|wire| inbound.fast_path(wire))
                    && matches!(committed.source, Source::Http { .. });
                // The gateway asked the wire for the usage the client did not
                // ask for (`upstream::splice`): it goes no further.
                let strip_usage = passthrough
                    && wire.is_some_and(|w| w.behaviour().stream_usage_option().is_some())
                    && !inbound.request.stream_usage;
                let (tx, rx) = mpsc::channel(STREAM_CHANNEL);
                let delivery = Delivery::Stream(ChunkStream {
                    passthrough: passthrough.then_some(inbound.format),
                    rx,
                });
                let outlet = Outlet {
                    tx,
                    canonical: inbound.output == Output::Canonical,
                    raw: Vec::new(),
                    events: Vec::new(),
                };
                let mut pump = Pump {
                    outlet,
                    passthrough,
                    idle: inbound.limits.idle_timeout.unwrap_or(self.catalog.settings.idle_timeout),
                    guard: guard.hand_over(),
                    request: Arc::clone(&inbound.request),
                    estimate: inbound.estimate.clone(),
                    candidate: cand.clone(),
                    usage: Usage::default(),
                    out_bytes: 0,
                    content_cap: inbound.content_cap,
                    captured: String::new(),
                    used: Vec::new(),
                    client_model: client_model.to_owned(),
                    rename: renamed,
                    continuity: (!passthrough).then(|| {
                        continuity::StreamContinuity::new(continuity::needs_store(inbound.format))
                    }),
                    strip_usage,
                    structured: prompted.then(crate::structured::Collected::default),
                    verbatim: passthrough
                        && !renamed
                        && !strip_usage
                        && wire.is_some_and(|w| w.spec().framing == Framing::Sse),
                    report,
                    _in_flight: in_flight,
                    deadline: inbound.limits.deadline.map(|d| inbound.received + d),
                    keepalive: self.catalog.settings.keepalive,
                    at_boundary: true,
                };
                let Committed { source, held_raw, held_frames, held, ended, used, .. } = committed;
                pump.used = used;
                pump.start(held_raw, &held_frames, held);
                if !ended {
                    // A new channel has room: the first content goes out with the
                    // response head, in one write instead of two.
                    pump.outlet.try_flush();
                }
                tokio::spawn(pump.run(source, ended));
                (
                    Success::new(served, descriptor, inbound, delivery, rate).with_routing(routing),
                    keep,
                )
            }
        }
    }
}

impl Snapshot {
    /// A request served without offered tools: counted by tool and model, and
    /// logged once an hour per key, tool and model (not once per request: an agent
    /// that offers a tool on every turn would fill the log).
    fn note_dropped(
        &self,
        inbound: &Inbound,
        plan: &Plan,
        cand: &Candidate,
        dropped: &Dropped,
        runtime: &Runtime,
    ) {
        // A catalog id, never a name a client made up (unlisted models).
        let model = plan.model.as_ref().map_or("unlisted", |m| m.id.as_str());
        let key = inbound.principal.key_prefix.as_deref().unwrap_or("");
        let now = UnixMs::now();
        let mut counted: Vec<&str> = Vec::new();
        for tool in dropped.tools(&inbound.request) {
            let name = crate::hosted::metric_tool(tool);
            if counted.contains(&name) {
                continue;
            }
            counted.push(name);
            if self.catalog.settings.metrics {
                crate::telemetry::counter!("gateway_dropped_tools_total", "tool" => name, "model" => model.to_owned())
                    .increment(1);
            }
            if runtime.dropped_tools.due(key, name, model, now) {
                tracing::info!(
                    key, tool = name, model, deployment = %cand.label(), request_id = %inbound.id,
                    "an offered hosted tool was left out: the deployment does not run it \
                     (logged once an hour per key, tool and model)"
                );
            }
        }
    }
}

/// A forwarded body naming the client's model; as it was if it names none.
pub(super) fn rename(body: Bytes, model: &str) -> Bytes {
    util::rename_model(&body, model).map_or(body, Bytes::from)
}

/// The handles a successful request records into, per client format. Registered
/// on first use and kept for the process, as the recorder is.
pub(super) struct FormatMeters {
    ok: crate::telemetry::Counter,
    stream_error: crate::telemetry::Counter,
    duration: crate::telemetry::Histogram,
}

impl FormatMeters {
    pub(super) fn new(format: Cow<'static, str>) -> Self {
        Self {
            ok: crate::telemetry::counter!("gateway_requests_total", "format" => format.clone(), "status" => "200"),
            stream_error: crate::telemetry::counter!("gateway_requests_total", "format" => format.clone(), "status" => "stream_error"),
            duration: crate::telemetry::histogram!("gateway_request_duration_seconds", "format" => format),
        }
    }

    pub(super) fn get(format: &str) -> Option<&'static FormatMeters> {
        static METERS: [OnceLock<FormatMeters>; 4] =
            [OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new()];
        let formats = [
            ClientFormat::OpenAiChat,
            ClientFormat::OpenAiResponses,
            ClientFormat::Anthropic,
            ClientFormat::Gemini,
        ];
        let i = formats.iter().position(|f| f.as_str() == format)?;
        let (cell, known) = (METERS.get(i)?, formats.get(i)?.as_str());
        Some(cell.get_or_init(|| FormatMeters::new(Cow::Borrowed(known))))
    }
}

/// Request-level metrics for a request that was answered (status 200), once per
/// request, low-cardinality labels only. An error code on it means its stream
/// failed after the commit point. (Called before the record's status is set.)
pub(super) fn record_metrics(rec: &RequestRecord) {
    let stream_error = rec.error_code.is_some();
    let secs = rec.total_ms as f64 / 1000.0;
    let unlisted;
    let m = match FormatMeters::get(&rec.client_format) {
        Some(m) => m,
        None => {
            unlisted = FormatMeters::new(rec.client_format.clone());
            &unlisted
        }
    };
    if stream_error { &m.stream_error } else { &m.ok }.increment(1);
    m.duration.record(secs);
}

/// Bytes of generated text, for estimating output tokens when none are reported.
pub(super) fn text_bytes(parts: &[Part]) -> usize {
    parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => t.text.len(),
            Part::Thinking { text, .. } => text.len(),
            Part::ToolCall(c) => c.arguments.len(),
            _ => 0,
        })
        .sum()
}

/// Fill missing counts by estimation and compute the cost.
/// `input_estimate`: the request's (asked for only when the upstream reported none).
pub(super) fn meter(
    rec: &mut RequestRecord,
    mut usage: Usage,
    input_estimate: impl FnOnce() -> u64,
    out_bytes: usize,
    cand: &Candidate,
) {
    if usage.input_tokens.is_none() {
        usage.input_tokens = Some(input_estimate());
        rec.estimated = true;
    }
    if usage.output_tokens.is_none() {
        usage.output_tokens = Some(estimate::output_tokens(out_bytes));
        rec.estimated = true;
    }
    rec.cost_usd = cost(&usage, cand.pricing.as_ref()).map(|c| c * cand.provider.markup);
    note_tier(rec, &usage, cand);
    rec.usage = usage;
}

/// The price tier a request was billed at, where not the base one, noted in
/// its record's descriptor (`price_tier:long_context`).
pub(super) fn note_tier(rec: &mut RequestRecord, usage: &Usage, cand: &Candidate) {
    if let Some(tier) = crate::record::price_tier(usage, cand.pricing.as_ref()) {
        if !rec.descriptor.is_empty() {
            rec.descriptor.push(' ');
        }
        rec.descriptor.push_str("price_tier:");
        rec.descriptor.push_str(tier);
    }
}
