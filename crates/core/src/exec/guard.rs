//! The request record, written exactly once whatever happens.

use super::*;

/// Writes exactly one record per request: on `finish`, or on drop (the client went
/// away while the request was in flight).
pub(super) struct RecordGuard {
    pub(super) rec: RequestRecord,
    pub(super) sink: SharedSink,
    pub(super) started: Instant,
    pub(super) done: bool,
    /// Set aside by the admission stage; settled with what the request used.
    pub(super) reservation: Option<(Arc<dyn Admission>, Reservation)>,
    /// The answering deployment's capacity, taken by its attempt; given back
    /// with what the request used.
    pub(super) occupied: Option<Taken>,
    /// The request's metrics are recorded (`gateway.metrics`).
    pub(super) metrics: bool,
    /// Its trace, when spans are exported: handed to the exporter with the
    /// record.
    pub(super) trace: Option<crate::otel::RequestTrace>,
}

impl RecordGuard {
    /// The record of `inbound`, begun: written to `sink` when the request ends.
    pub(super) fn open(inbound: &Inbound, sink: SharedSink, metrics: bool) -> Self {
        let rec = RequestRecord {
            id: inbound.id.clone(),
            time_ms: inbound.time_ms,
            key_prefix: inbound.principal.key_prefix.clone(),
            user: inbound.principal.user_id.clone(),
            project: inbound.project.clone(),
            client_format: inbound.format.as_str().into(),
            requested_model: inbound.request.model.clone(),
            stream: inbound.request.stream,
            session_id: inbound.request.extras.session_id.clone(),
            ..RequestRecord::default()
        };
        let started = inbound.received;
        Self {
            rec,
            sink,
            started,
            done: false,
            reservation: None,
            occupied: None,
            metrics,
            trace: None,
        }
    }

    pub(super) fn finish(mut self, status: u16, error_code: Option<ErrorCode>) {
        self.write(status, error_code);
    }

    /// A request that failed with `err` before it was answered: counted and
    /// written with its status and code; `err` is handed back.
    pub(super) fn fail(&mut self, format: ClientFormat, err: GatewayError) -> GatewayError {
        if self.metrics {
            crate::telemetry::counter!("gateway_requests_total", "format" => format.as_str(), "status" => err.status().to_string()).increment(1);
        }
        self.write(err.status(), Some(err.code()));
        err
    }

    /// The record, unwritten, and the admission's reservation, handed to a
    /// media job that outlives the request (`jobs.rs`): it writes the record
    /// and settles the reservation when the job ends. The capacity an
    /// attempt took is given back now (a queued job holds no connection).
    pub(super) fn defer(&mut self) -> (RequestRecord, Option<crate::jobs::Reserved>) {
        self.done = true;
        if let Some(taken) = self.occupied.take() {
            taken.settle(self.rec.usage);
        }
        self.trace = None;
        (std::mem::take(&mut self.rec), self.reservation.take())
    }

    /// The record handed to a new owner (a stream's pump), which writes it; this
    /// guard is then done and writes nothing.
    pub(super) fn hand_over(&mut self) -> RecordGuard {
        let guard = RecordGuard {
            rec: std::mem::take(&mut self.rec),
            sink: Arc::clone(&self.sink),
            started: self.started,
            done: self.done,
            reservation: self.reservation.take(),
            occupied: self.occupied.take(),
            metrics: self.metrics,
            trace: self.trace.take(),
        };
        self.done = true;
        guard
    }

    /// The record as it will be written with this outcome (a library caller's copy).
    pub(super) fn copy(&self, status: u16, error_code: Option<ErrorCode>) -> Box<RequestRecord> {
        let mut rec = Box::new(self.rec.clone());
        complete(&mut rec, self.started, status, error_code);
        rec
    }

    pub(super) fn write(&mut self, status: u16, error_code: Option<ErrorCode>) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        complete(&mut self.rec, self.started, status, error_code);
        if let Some((admission, reservation)) = self.reservation.take() {
            // Settling may do IO; off the request's path. (A guard dropped outside
            // a runtime has nowhere to run it: the reservation then expires.)
            let (usage, cost) = (self.rec.usage, self.rec.cost_usd);
            let occupied = self.occupied.as_mut().and_then(|t| t.reservation.take());
            let occupied = occupied.filter(|r| !r.nothing);
            let reservation = Some(reservation).filter(|r| !r.nothing);
            // Most requests have no limit: no task for them.
            if (occupied.is_some() || reservation.is_some())
                && let Ok(rt) = tokio::runtime::Handle::try_current()
            {
                rt.spawn(async move {
                    for r in occupied.into_iter().chain(reservation) {
                        admission.settle(r, usage, cost).await;
                    }
                });
            }
        }
        if let Some(mut trace) = self.trace.take().filter(|t| t.sampled) {
            trace.ended = self.started.elapsed();
            let traces = trace.traces.clone();
            traces.submit(crate::otel::Finished { record: self.rec.clone(), trace });
        }
        self.sink.record(std::mem::take(&mut self.rec));
    }
}

/// A deployment's capacity taken for one attempt: given back with what the
/// attempt or request used, or, dropped unsettled (the caller went away in the
/// middle of the attempt), at once with nothing known used.
pub(super) struct Taken {
    pub(super) admission: Arc<dyn Admission>,
    pub(super) reservation: Option<Reservation>,
}

impl Taken {
    /// Give it back now, `used` having been used (off the request's path).
    pub(super) fn settle(mut self, used: Usage) {
        if let Some(r) = self.reservation.take() {
            spawn_settle(Arc::clone(&self.admission), r, used);
        }
    }
}

impl Drop for Taken {
    fn drop(&mut self) {
        if let Some(r) = self.reservation.take() {
            spawn_settle(Arc::clone(&self.admission), r, Usage::default());
        }
    }
}

fn spawn_settle(admission: Arc<dyn Admission>, r: Reservation, used: Usage) {
    if r.nothing {
        return;
    }
    // Outside a runtime there is nowhere to run it: leases then lapse by their TTL.
    if let Ok(rt) = tokio::runtime::Handle::try_current() {
        rt.spawn(async move { admission.settle(r, used, None).await });
    }
}

/// The record's final fields for this outcome.
fn complete(rec: &mut RequestRecord, started: Instant, status: u16, error_code: Option<ErrorCode>) {
    rec.status = status;
    rec.error_code = error_code.map(|c| c.as_str().to_owned());
    // Failed attempts that reported usage add their cost (the answering
    // attempt's own cost is already on the record; unknown stays unknown).
    let failed: Option<f64> = rec.attempts.iter().filter_map(|a| a.cost_usd).reduce(|a, b| a + b);
    if let Some(extra) = failed {
        rec.cost_usd = match (rec.served_provider.is_some(), rec.cost_usd) {
            (true, Some(c)) => Some(c + extra),
            (true, None) => None,
            (false, _) => Some(extra),
        };
    }
    rec.total_ms = started.elapsed().as_millis() as u64;
}

impl RecordGuard {
    /// The request's count and duration, where metrics are recorded.
    pub(super) fn record_metrics(&self) {
        if self.metrics {
            super::deliver::record_metrics(&self.rec);
        }
    }
}

impl Drop for RecordGuard {
    fn drop(&mut self) {
        self.write(499, Some(ErrorCode::ClientClosedRequest));
    }
}
