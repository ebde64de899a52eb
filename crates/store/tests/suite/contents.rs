//! Logged content: stored deflated apart from the record row, read back with
//! the record, deleted with it.

use super::*;

pub(crate) async fn case_content_is_stored_compressed_apart_and_read_back(store: Store) {
    let content =
        r#"{"request":{"messages":[{"role":"user","content":"tell me"}]},"response":"ok"}"#
            .repeat(40);
    let logged = with(rec("logged", 1_000), |r| r.content = Some(content.clone()));
    store.insert_records(&[logged.clone(), rec("plain", 2_000)]).await.unwrap();
    // A replay stores nothing twice.
    store.insert_records(&[logged]).await.unwrap();
    let got = store.record("logged").await.unwrap().unwrap();
    assert_eq!(got.content.as_deref(), Some(content.as_str()));
    assert_eq!(store.record("plain").await.unwrap().unwrap().content, None);
    let listed = store.list_records(&RecordFilter::default()).await.unwrap();
    let listed: Vec<(String, bool)> = listed
        .into_iter()
        .map(|r| (r.id, r.content.as_deref() == Some(content.as_str())))
        .collect();
    assert_eq!(listed, [("plain".to_owned(), false), ("logged".to_owned(), true)]);
    // The row holds none of it; its own table holds it deflated.
    let (in_row, packed) = match store.pool() {
        DbPool::Sqlite(p) => (
            sqlx::query_scalar::<_, Option<String>>(
                "SELECT content FROM request_records WHERE id = 'logged'",
            )
            .fetch_one(p)
            .await
            .unwrap(),
            sqlx::query_scalar::<_, Vec<u8>>("SELECT content FROM request_contents")
                .fetch_all(p)
                .await
                .unwrap(),
        ),
        DbPool::Postgres(p) => (
            sqlx::query_scalar::<_, Option<String>>(
                "SELECT content FROM request_records WHERE id = 'logged'",
            )
            .fetch_one(p)
            .await
            .unwrap(),
            sqlx::query_scalar::<_, Vec<u8>>("SELECT content FROM request_contents")
                .fetch_all(p)
                .await
                .unwrap(),
        ),
    };
    assert_eq!(in_row, None);
    assert_eq!(packed.len(), 1);
    assert!(packed[0].len() * 10 < content.len(), "{} bytes of {}", packed[0].len(), content.len());
    // Retention takes the content with its record.
    assert_eq!(store.delete_records_before(1_500).await.unwrap(), 1);
    assert!(store.record("logged").await.unwrap().is_none());
    let left: i64 = match store.pool() {
        DbPool::Sqlite(p) => {
            sqlx::query_scalar("SELECT COUNT(*) FROM request_contents").fetch_one(p).await.unwrap()
        }
        DbPool::Postgres(p) => {
            sqlx::query_scalar("SELECT COUNT(*) FROM request_contents").fetch_one(p).await.unwrap()
        }
    };
    assert_eq!(left, 0);
}
