//! Stored Responses: one owner's, read back whole (compressed in the row),
//! invisible to another owner, gone when expired or deleted.

use super::*;
use serde_json::json;
use switchyard_core::stored_responses::{ResponseStore, StoredResponse};

pub(crate) async fn case_stored_responses_are_their_owners(store: Store) {
    let long = "a long turn ".repeat(2_000);
    let r = StoredResponse {
        id: "resp_1".into(),
        owner: "key:aaaa".into(),
        created_ms: 1_000,
        expires_ms: 10_000,
        input: vec![json!({"type": "message", "role": "user", "content": long})],
        response: json!({"id": "resp_1", "status": "completed",
                         "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}]}),
    };
    store.put(&r).await.unwrap();
    assert_eq!(store.get("key:aaaa", "resp_1", 5_000).await.unwrap(), Some(r.clone()));
    assert_eq!(store.get("key:bbbb", "resp_1", 5_000).await.unwrap(), None, "another owner");
    assert_eq!(store.get("key:aaaa", "resp_1", 10_000).await.unwrap(), None, "expired");
    // Compressed: the row holds no text of the conversation.
    let dump = text_values(&store, "stored_responses").await;
    assert!(!dump.iter().any(|v| v.contains("a long turn")), "{dump:?}");
    // Put again (a background response finishing): replaced.
    let done = StoredResponse { expires_ms: 20_000, ..r.clone() };
    store.put(&done).await.unwrap();
    assert_eq!(store.get("key:aaaa", "resp_1", 15_000).await.unwrap(), Some(done));
    assert!(!store.delete("key:bbbb", "resp_1").await.unwrap());
    assert!(store.delete("key:aaaa", "resp_1").await.unwrap());
    assert_eq!(store.get("key:aaaa", "resp_1", 0).await.unwrap(), None);
    // Retention forgets the expired.
    store.put(&StoredResponse { id: "resp_old".into(), expires_ms: 5, ..r.clone() }).await.unwrap();
    store.put(&StoredResponse { id: "resp_new".into(), ..r }).await.unwrap();
    assert_eq!(store.purge_responses(100).await.unwrap(), 1);
    assert!(store.get("key:aaaa", "resp_new", 0).await.unwrap().is_some());
}
