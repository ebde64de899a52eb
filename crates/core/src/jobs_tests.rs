use super::*;

fn job(id: &str, owner: &str, next_poll_ms: u64) -> Job {
    Job {
        id: id.into(),
        owner: owner.into(),
        model: "clips".into(),
        provider: "fal".into(),
        deployment: "fal/fal-ai/kling-video".into(),
        upstream_model: "fal-ai/kling-video".into(),
        upstream_id: "abc".into(),
        credential: None,
        status: JobStatus::Queued,
        queue_position: None,
        input: Map::new(),
        result: None,
        error: None,
        created_ms: 1,
        updated_ms: 1,
        completed_ms: None,
        polls: 0,
        failed_polls: 0,
        next_poll_ms,
        lease_until_ms: 0,
        prices: JobPrices::default(),
        seconds: None,
        cost_usd: None,
        record: None,
        expires_ms: u64::MAX,
    }
}

#[tokio::test]
async fn a_job_is_its_owner_s_alone() {
    let store = LocalJobs::default();
    assert!(store.put(&job("job_1", "key:a", 0)).await.unwrap());
    assert!(store.get("key:a", "job_1").await.unwrap().is_some());
    assert!(store.get("key:b", "job_1").await.unwrap().is_none());
    assert!(store.get("key:a", "job_2").await.unwrap().is_none());
}

#[tokio::test]
async fn an_end_is_never_overwritten() {
    let store = LocalJobs::default();
    let mut j = job("job_1", "key:a", 0);
    j.status = JobStatus::Cancelled;
    assert!(store.put(&j).await.unwrap());
    j.status = JobStatus::InProgress;
    assert!(!store.put(&j).await.unwrap(), "a later poll's answer does not undo a cancel");
    assert_eq!(store.get("key:a", "job_1").await.unwrap().unwrap().status, JobStatus::Cancelled);
}

#[tokio::test]
async fn a_claimed_job_is_not_claimed_again_until_its_lease_lapses() {
    let store = LocalJobs::default();
    store.put(&job("job_1", "key:a", 100)).await.unwrap();
    store.put(&job("job_2", "key:a", 50)).await.unwrap();
    let mut ended = job("job_3", "key:a", 0);
    ended.status = JobStatus::Completed;
    store.put(&ended).await.unwrap();
    assert!(store.claim(10, 1_000, 10).await.unwrap().is_empty(), "none due yet");
    let first: Vec<String> =
        store.claim(100, 1_000, 10).await.unwrap().into_iter().map(|j| j.id).collect();
    assert_eq!(first, ["job_2", "job_1"], "the most overdue first; an ended job never");
    assert!(store.claim(500, 1_000, 10).await.unwrap().is_empty(), "held by the first claim");
    assert_eq!(
        store.claim(1_100, 1_000, 1).await.unwrap().len(),
        1,
        "the lease lapsed; the limit holds"
    );
}
