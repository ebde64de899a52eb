//! The request listing the console pages through: keyset pagination in
//! (time, id) order, and the provider and key filters, in the listing and in
//! usage (rollups and records agree).

use super::*;

pub(crate) async fn case_records_keyset_pages_and_filters(store: Store) {
    // Two records share a millisecond: the id breaks the tie.
    let batch: Vec<RequestRecord> = [("a", 1_000), ("b", 2_000), ("c", 2_000), ("d", 3_000)]
        .into_iter()
        .map(|(id, t)| {
            with(rec(id, t), |r| {
                r.served_provider = Some(if id == "b" { "p2" } else { "p1" }.into());
                r.key_prefix = Some(if id == "a" { "sy-aaaaaa" } else { "sy-bbbbbb" }.into());
            })
        })
        .collect();
    store.insert_records(&batch).await.unwrap();
    let page = |before: Option<(i64, &str)>| {
        let store = store.clone();
        let f = RecordFilter {
            limit: Some(2),
            before: before.map(|(t, id)| (t, id.to_owned())),
            ..RecordFilter::default()
        };
        async move {
            store.list_records(&f).await.unwrap().into_iter().map(|r| r.id).collect::<Vec<_>>()
        }
    };
    assert_eq!(page(None).await, ["d", "c"]);
    assert_eq!(page(Some((2_000, "c"))).await, ["b", "a"]);
    assert_eq!(page(Some((1_000, "a"))).await, Vec::<String>::new());
    let ids = |f: RecordFilter| {
        let store = store.clone();
        async move {
            store.list_records(&f).await.unwrap().into_iter().map(|r| r.id).collect::<Vec<_>>()
        }
    };
    let by_provider = RecordFilter { provider: Some("p2".into()), ..RecordFilter::default() };
    assert_eq!(ids(by_provider.clone()).await, ["b"]);
    let by_key = RecordFilter { key_prefix: Some("sy-aaaaaa".into()), ..RecordFilter::default() };
    assert_eq!(ids(by_key).await, ["a"]);
    // Usage by key from the rollups (a whole-hour window) and from the records
    // (a status filter scans them) agree.
    let whole = RecordFilter { since_ms: Some(0), until_ms: Some(3_600_000), ..Default::default() };
    let keys = |rows: Vec<UsageRow>| -> Vec<(Option<String>, u64)> {
        let mut v: Vec<_> = rows.into_iter().map(|r| (r.key, r.requests)).collect();
        v.sort();
        v
    };
    let rolled = keys(store.usage(&whole, UsageBy::Key, 0).await.unwrap());
    assert_eq!(rolled, [(Some("sy-aaaaaa".into()), 1), (Some("sy-bbbbbb".into()), 3)]);
    let scanned = RecordFilter { status: Some(200), ..whole.clone() };
    assert_eq!(keys(store.usage(&scanned, UsageBy::Key, 0).await.unwrap()), rolled);
    let p2 = RecordFilter { provider: Some("p2".into()), ..whole };
    assert_eq!(
        keys(store.usage(&p2, UsageBy::Key, 0).await.unwrap()),
        [(Some("sy-bbbbbb".into()), 1)]
    );
}
