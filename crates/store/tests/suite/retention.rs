//! Retention: records deleted in bounded batches, the hourly rollups kept, and
//! on SQLite the freed pages handed back so the file stays bounded.

use super::*;

pub(crate) async fn case_retention_deletes_in_batches_and_keeps_the_rollups(store: Store) {
    let content = "x".repeat(2_000);
    for chunk in 0..5u64 {
        let batch: Vec<RequestRecord> = (0..200u64)
            .map(|i| {
                with(rec(&format!("old-{chunk}-{i}"), 1_000 + chunk * 200 + i), |r| {
                    r.content = Some(content.clone());
                })
            })
            .collect();
        store.insert_records(&batch).await.unwrap();
    }
    store.insert_records(&[rec("new", 5_000_000)]).await.unwrap();
    // 64 at a time: sixteen statements, the last short.
    assert_eq!(store.delete_records_in_batches(1_000_000, 64).await.unwrap(), 1_000);
    let all = RecordFilter { limit: Some(1_000), ..RecordFilter::default() };
    let left: Vec<String> =
        store.list_records(&all).await.unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(left, ["new"]);
    // The rollups outlive the records.
    let usage = store.usage(&RecordFilter::default(), UsageBy::Model, 0).await.unwrap();
    assert_eq!(usage[0].requests, 1_001);
    if let DbPool::Sqlite(p) = store.pool() {
        let free: i64 = sqlx::query_scalar("PRAGMA freelist_count").fetch_one(p).await.unwrap();
        assert!(free > 0, "the deleted rows' pages are free, still in the file");
    }
    store.reclaim().await.unwrap();
    if let DbPool::Sqlite(p) = store.pool() {
        let mode: i64 = sqlx::query_scalar("PRAGMA auto_vacuum").fetch_one(p).await.unwrap();
        assert_eq!(mode, 2, "incremental");
        let free: i64 = sqlx::query_scalar("PRAGMA freelist_count").fetch_one(p).await.unwrap();
        assert_eq!(free, 0, "every freed page handed back");
    }
}
