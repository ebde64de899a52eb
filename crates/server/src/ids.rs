//! Request ids: `req_` + 24 hex digits: the arrival time (unix milliseconds, 11
//! digits), a per-process tag (5 digits, from the start time and process id) and a
//! per-process counter (8 digits). Ids sort by time, so the audit table's primary-key
//! index grows at its right edge instead of taking writes at random pages, and two
//! instances only collide if they start with the same tag.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use switchyard_core::util::fnv1a;

static COUNTER: AtomicU64 = AtomicU64::new(0);

pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// 20 bits identifying this process among instances started at the same time.
fn instance_tag() -> u64 {
    static TAG: OnceLock<u64> = OnceLock::new();
    *TAG.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let mut seed = [0u8; 16];
        seed[..8].copy_from_slice(&nanos.to_le_bytes());
        seed[8..].copy_from_slice(&u64::from(std::process::id()).to_le_bytes());
        fnv1a(&seed) & 0xf_ffff
    })
}

pub fn request_id() -> String {
    request_id_at(unix_ms())
}

/// The id of a request that arrived at `ms` (unix milliseconds).
pub fn request_id_at(ms: u64) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("req_{:011x}{:05x}{:08x}", ms & 0xfff_ffff_ffff, instance_tag(), n as u32)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_unique_and_shaped() {
        let a = super::request_id();
        let b = super::request_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 28);
        assert!(a.starts_with("req_"));
        assert!(a[4..].bytes().all(|b| b.is_ascii_hexdigit()));
    }

    #[test]
    fn ids_sort_by_time_then_arrival() {
        let a = super::request_id_at(1_700_000_000_000);
        let b = super::request_id_at(1_700_000_000_000);
        let c = super::request_id_at(1_700_000_000_001);
        assert!(a < b && b < c, "{a} {b} {c}");
        assert_eq!(&a[4..15], format!("{:011x}", 1_700_000_000_000u64));
    }
}
