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
}

impl RecordGuard {
    pub(super) fn finish(mut self, status: u16, error_code: Option<&str>) {
        self.write(status, error_code);
    }

    pub(super) fn write(&mut self, status: u16, error_code: Option<&str>) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        self.rec.status = status;
        self.rec.error_code = error_code.map(str::to_owned);
        // Failed attempts that reported usage add their cost (the answering
        // attempt's own cost is already on the record; unknown stays unknown).
        let failed: Option<f64> =
            self.rec.attempts.iter().filter_map(|a| a.cost_usd).reduce(|a, b| a + b);
        if let Some(extra) = failed {
            self.rec.cost_usd = match (self.rec.served_provider.is_some(), self.rec.cost_usd) {
                (true, Some(c)) => Some(c + extra),
                (true, None) => None,
                (false, _) => Some(extra),
            };
        }
        self.rec.total_ms = self.started.elapsed().as_millis() as u64;
        if let Some((admission, reservation)) = self.reservation.take() {
            // Settling may do IO; off the request's path. (A guard dropped outside
            // a runtime has nowhere to run it: the reservation then expires.)
            let (usage, cost) = (self.rec.usage, self.rec.cost_usd);
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move { admission.settle(reservation, usage, cost).await });
            }
        }
        self.sink.record(std::mem::take(&mut self.rec));
    }
}

impl Drop for RecordGuard {
    fn drop(&mut self) {
        self.write(499, Some("client_closed_request"));
    }
}
