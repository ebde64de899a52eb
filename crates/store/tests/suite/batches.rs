//! Batches: files their owner's alone, read back whole; batches claimed by one
//! runner at a time, their ends never overwritten; each line's answer kept.

use switchyard_core::batches::{Batch, BatchCaller, BatchStatus, BatchStore, FileMeta, LineResult};

use super::*;

const FAR: u64 = 4_000_000_000_000;

fn file(id: &str, owner: &str, created_ms: u64) -> FileMeta {
    FileMeta {
        id: id.into(),
        owner: owner.into(),
        purpose: "batch".into(),
        filename: "in.jsonl".into(),
        bytes: 10,
        created_ms,
        expires_ms: FAR,
    }
}

fn batch(id: &str) -> Batch {
    Batch {
        id: id.into(),
        owner: "key:aaaa".into(),
        caller: BatchCaller {
            key_hash: Some("ab".repeat(32)),
            key_prefix: Some("sk-gw-x".into()),
            project: None,
        },
        endpoint: "/v1/chat/completions".into(),
        input_file_id: "file-1".into(),
        completion_window: "24h".into(),
        status: BatchStatus::InProgress,
        output_file_id: None,
        error_file_id: None,
        errors: Vec::new(),
        metadata: None,
        times: Default::default(),
        expires_ms: FAR,
        total: 3,
        completed: 0,
        failed: 0,
        lease_until_ms: 0,
        forget_ms: FAR,
        native: None,
    }
}

pub(crate) async fn case_batches_and_their_files_are_kept(store: Store) {
    let content = "{\"custom_id\":\"a\"}\n".repeat(500);
    store.put_file(&file("file-1", "key:aaaa", 1), content.as_bytes()).await.unwrap();
    store.put_file(&file("file-2", "key:aaaa", 2), b"x").await.unwrap();
    let (meta, got) = store.file("key:aaaa", "file-1", true).await.unwrap().unwrap();
    assert_eq!((meta.filename.as_str(), got), ("in.jsonl", content.clone().into_bytes()));
    let (_, none) = store.file("key:aaaa", "file-1", false).await.unwrap().unwrap();
    assert!(none.is_empty(), "metadata alone");
    assert!(store.file("key:bbbb", "file-1", true).await.unwrap().is_none(), "another owner");
    let listed: Vec<String> =
        store.files("key:aaaa").await.unwrap().into_iter().map(|f| f.id).collect();
    assert_eq!(listed, ["file-2", "file-1"], "newest first");
    assert!(!store.delete_file("key:bbbb", "file-2").await.unwrap());
    assert!(store.delete_file("key:aaaa", "file-2").await.unwrap());

    let store = std::sync::Arc::new(store);
    for i in 0..6 {
        assert!(store.put_batch(&batch(&format!("batch_{i}"))).await.unwrap());
    }
    let (a, b) =
        tokio::join!(store.claim_batches(100, 5_000, 4), store.claim_batches(100, 5_000, 4));
    let mut ids: Vec<String> = a.unwrap().into_iter().chain(b.unwrap()).map(|b| b.id).collect();
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!((ids.len(), n), (6, 6), "each claimed once: {ids:?}");
    assert!(store.claim_batches(200, 5_000, 10).await.unwrap().is_empty());
    let mut done = batch("batch_0");
    done.enter(BatchStatus::Completed, 300);
    assert!(store.put_batch(&done).await.unwrap());
    assert!(!store.put_batch(&batch("batch_0")).await.unwrap(), "an end is kept");
    let kept = store.batch("key:aaaa", "batch_0").await.unwrap().unwrap();
    assert_eq!((kept.status, kept.times.get("completed")), (BatchStatus::Completed, Some(&300)));
    assert!(store.batch("key:bbbb", "batch_0").await.unwrap().is_none());
    assert_eq!(store.batches("key:aaaa").await.unwrap().len(), 6);
    assert_eq!(
        store.claim_batches(6_000, 5_000, 10).await.unwrap().len(),
        5,
        "the ended one never"
    );

    for (index, ok) in [(2, true), (0, false), (1, true)] {
        let r = LineResult { index, ok, line: format!("{{\"line\":{index}}}") };
        store.put_result("batch_1", &r).await.unwrap();
    }
    store
        .put_result("batch_1", &LineResult { index: 0, ok: true, line: "again".into() })
        .await
        .unwrap();
    let results = store.results("batch_1").await.unwrap();
    let got: Vec<(u32, bool, &str)> =
        results.iter().map(|r| (r.index, r.ok, r.line.as_str())).collect();
    assert_eq!(got, [(0, true, "again"), (1, true, "{\"line\":1}"), (2, true, "{\"line\":2}")]);
    assert!(store.results("batch_2").await.unwrap().is_empty());
}
