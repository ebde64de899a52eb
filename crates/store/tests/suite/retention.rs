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

pub(crate) async fn case_rollup_retention_keeps_the_daily_slices(store: Store) {
    const HOUR: u64 = 3_600_000;
    const DAY: u64 = 24 * HOUR;
    let day0 = 20_000 * DAY;
    // Ten days, a record every six hours, two users.
    let batch: Vec<RequestRecord> = (0..40u64)
        .map(|i| {
            with(rec(&format!("r{i}"), day0 + i * 6 * HOUR + 60_000), |r| {
                r.user = Some(format!("usr_{}", i % 2));
                r.total_ms = 100 + i;
            })
        })
        .collect();
    store.insert_records(&batch).await.unwrap();
    let all = RecordFilter::default();
    let by_user = store.usage(&all, UsageBy::User, 0).await.unwrap();
    // Trimmed before day 4 at 09:30: the hours that ended by then go, the hour
    // it falls in stays.
    let cutoff = (day0 + 4 * DAY + 9 * HOUR + HOUR / 2) as i64;
    let deleted = store.delete_rollups_before(cutoff).await.unwrap();
    assert!(deleted > 0);
    assert_eq!(store.delete_rollups_before(cutoff).await.unwrap(), 0, "nothing left to trim");
    // Unfiltered and filtered on the grouping: whole days still there.
    assert_eq!(store.usage(&all, UsageBy::User, 0).await.unwrap(), by_user);
    let since_day1 = RecordFilter { since_ms: Some((day0 + DAY) as i64), ..all.clone() };
    let one = RecordFilter { user: Some("usr_1".into()), ..since_day1.clone() };
    let rows = store.usage(&one, UsageBy::User, 0).await.unwrap();
    assert_eq!(rows[0].requests, 18);
    // The hourly series and reports filtered across dimensions start at the
    // cutoff's hour.
    let series = store.usage_series(&all, UsageBy::User, 0).await.unwrap();
    assert_eq!(series.first().unwrap().hour_ms, (day0 + 4 * DAY + 12 * HOUR) as i64);
    let crossed = RecordFilter { model: Some("m".into()), ..since_day1 };
    let fine: u64 =
        store.usage(&crossed, UsageBy::User, 0).await.unwrap().iter().map(|r| r.requests).sum();
    assert_eq!(fine, 40 - 18);
}
