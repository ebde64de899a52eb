//! Media jobs: one owner's, read back whole, never claimed by two pollers at
//! once, their ends never overwritten, forgotten once ended and expired.

use super::*;
use serde_json::json;
use switchyard_core::jobs::{Job, JobPrices, JobStatus, JobStore};

/// An expiry well after any test run (2096).
const FAR: u64 = 4_000_000_000_000;

fn job(id: &str, next_poll_ms: u64) -> Job {
    Job {
        id: id.into(),
        owner: "key:aaaa".into(),
        model: "clips".into(),
        provider: "fal".into(),
        deployment: "fal/fal-ai/kling-video/v2".into(),
        upstream_model: "fal-ai/kling-video/v2".into(),
        upstream_id: format!("up-{id}"),
        credential: Some("fp".into()),
        status: JobStatus::Queued,
        queue_position: Some(2),
        input: json!({"prompt": "a fox", "duration": "5"}).as_object().cloned().unwrap(),
        result: None,
        error: None,
        created_ms: 1,
        updated_ms: 1,
        completed_ms: None,
        polls: 0,
        failed_polls: 0,
        next_poll_ms,
        lease_until_ms: 0,
        prices: JobPrices { per_second: Some(0.05), per_job: None },
        seconds: None,
        cost_usd: None,
        record: None,
        expires_ms: FAR,
    }
}

pub(crate) async fn case_media_jobs_are_claimed_once_and_their_ends_kept(store: Store) {
    let store = std::sync::Arc::new(store);
    let first = job("job_1", 10);
    assert!(store.put(&first).await.unwrap());
    assert_eq!(store.get("key:aaaa", "job_1").await.unwrap(), Some(first.clone()));
    assert_eq!(store.get("key:bbbb", "job_1").await.unwrap(), None, "another owner");
    for i in 2..=20 {
        store.put(&job(&format!("job_{i}"), 10 + i)).await.unwrap();
    }
    // Two pollers at once: between them every due job, none twice.
    let (a, b) = tokio::join!(store.claim(100, 5_000, 15), store.claim(100, 5_000, 15));
    let mut ids: Vec<String> = a.unwrap().into_iter().chain(b.unwrap()).map(|j| j.id).collect();
    let claimed = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), claimed, "a job claimed twice: {ids:?}");
    assert_eq!(claimed, 20);
    assert!(store.claim(200, 5_000, 50).await.unwrap().is_empty(), "all held");
    // A cancel stored first; the poller's older answer does not undo it.
    let mut cancelled = first.clone();
    cancelled.status = JobStatus::Cancelled;
    cancelled.completed_ms = Some(50);
    assert!(store.put(&cancelled).await.unwrap());
    let mut late = first.clone();
    late.status = JobStatus::InProgress;
    assert!(!store.put(&late).await.unwrap());
    assert_eq!(store.get("key:aaaa", "job_1").await.unwrap().unwrap().status, JobStatus::Cancelled);
    // Past the lease, the unended ones are due again; the ended one never.
    let again = store.claim(6_000, 5_000, 50).await.unwrap();
    assert_eq!(again.len(), 19);
    assert!(again.iter().all(|j| j.lease_until_ms == 11_000 && j.id != "job_1"));
    // Retention forgets ended jobs past their expiry only.
    assert_eq!(store.purge_jobs(FAR as i64 - 1).await.unwrap(), 0);
    assert_eq!(store.purge_jobs(FAR as i64).await.unwrap(), 1);
    assert!(store.get("key:aaaa", "job_2").await.unwrap().is_some());
}
