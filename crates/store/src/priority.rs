//! The record path's threads run below the request threads.
//!
//! The audit writer's batches (encoding, binding, SQLite's `sqlite3_step` on
//! sqlx's connection thread, commits and checkpoints) take the CPU in slices of
//! milliseconds. At the same priority as the runtime's workers, on a busy core,
//! a request that arrives during one waits it out: the bench's p99 at 32
//! concurrent requests was 3.3 ms over nginx's. A nice value 10 above the
//! process's lets the scheduler preempt them for any request and give them the
//! time requests leave. Records are never dropped for it: the queue holds them
//! (and spills past its bound) until the writer catches up.
//!
//! A thread inherits its creator's nice value, so the writer lowers its own
//! thread first and then opens its SQLite connection from it
//! ([`crate::db::Store::background`]): sqlx's connection thread starts below too.

/// How far below the process's priority the record threads run.
#[cfg(target_os = "linux")]
const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread's scheduling priority to the process's nice value
/// plus 10 (at most 19). Best effort: where it cannot (another OS), nothing
/// changes.
pub(crate) fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{getpriority_process, setpriority_process};
        let tid = rustix::thread::gettid();
        let now = getpriority_process(Some(tid)).unwrap_or(0);
        if let Err(e) = setpriority_process(Some(tid), (now + BACKGROUND_NICE).min(19)) {
            tracing::debug!("cannot lower the audit writer's priority: {e}");
        }
    }
}
