//! Request ids: `req_` + 24 hex digits, unique per process and unlikely to collide
//! across instances (time, process id and a counter, mixed with FNV-1a).

use std::sync::atomic::{AtomicU64, Ordering};

use switchyard_core::util::fnv1a;

static COUNTER: AtomicU64 = AtomicU64::new(0);

pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

pub fn request_id() -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut seed = [0u8; 24];
    seed[..8].copy_from_slice(&nanos.to_le_bytes());
    seed[8..16].copy_from_slice(&u64::from(std::process::id()).to_le_bytes());
    seed[16..].copy_from_slice(&n.to_le_bytes());
    format!("req_{:016x}{:08x}", fnv1a(&seed), n as u32)
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
    }
}
