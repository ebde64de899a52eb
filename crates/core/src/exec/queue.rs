//! The admission queue: a request whose every candidate is at its capacity
//! (`limits:` on deployments) may wait for a slot, boundedly, instead of being
//! refused at once. Bounded twice: at most `limits.queue.max_waiting` requests
//! wait in an instance, each at most `max_wait_ms` (and never past its
//! deadline). The wait counts only until admission: a request that gets a slot
//! then runs as any other. It waits as long as the limits say a slot frees
//! (`Retry-After` of a rate), or polls briefly for a concurrency slot.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::config::raw::QueueConfig;
use crate::runtime::Runtime;
use crate::upstream::Failure;

/// How often a request waiting for a concurrency slot looks again (a slot frees
/// when some request ends, which no counter announces).
const POLL: Duration = Duration::from_millis(25);

/// A place in the queue, given back when dropped.
pub(super) struct Waiting(Arc<AtomicUsize>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// How long to wait before going round the candidates again; `None`: answer
/// now (not every failure was a capacity refusal, the queue is off or full, or
/// the request waited its share).
pub(super) fn wait_for_capacity(
    failures: &[(usize, Failure)],
    queue: QueueConfig,
    since: Instant,
    deadline: Instant,
    runtime: &Runtime,
    waiting: &mut Option<Waiting>,
) -> Option<Duration> {
    if queue.max_wait_ms == 0 || failures.is_empty() {
        return None;
    }
    let mut soonest: Option<u64> = None;
    for (_, f) in failures {
        let Failure::Capacity { code, retry_after_ms, .. } = f else { return None };
        // Limits that cannot be counted do not free by waiting.
        if *code != switchyard_protocol::ErrorCode::RateLimited {
            return None;
        }
        let ms = retry_after_ms.unwrap_or(0);
        soonest = Some(soonest.map_or(ms, |s| s.min(ms)));
    }
    let now = Instant::now();
    let until = (since + Duration::from_millis(queue.max_wait_ms)).min(deadline);
    let left = until.checked_duration_since(now).filter(|d| !d.is_zero())?;
    if waiting.is_none() {
        let queued = Arc::clone(&runtime.queued);
        if queued.fetch_add(1, Ordering::AcqRel) >= queue.max_waiting {
            queued.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        *waiting = Some(Waiting(queued));
    }
    // A rate says when its next unit frees; a lease (1 s: unknown) is polled.
    let wait = match soonest {
        Some(ms) if ms > 0 && ms < 1000 => Duration::from_millis(ms),
        _ => POLL,
    };
    Some(wait.min(left))
}
