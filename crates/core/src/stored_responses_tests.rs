use serde_json::json;

use super::*;

fn stored(owner: &str, id: &str, expires_ms: u64) -> StoredResponse {
    StoredResponse {
        id: id.into(),
        owner: owner.into(),
        created_ms: 1,
        expires_ms,
        input: vec![json!({"type": "message", "role": "user", "content": "hi"})],
        response: json!({"id": id, "output": [{"type": "message", "role": "assistant"}]}),
    }
}

#[tokio::test]
async fn a_response_is_its_owners_until_it_expires() {
    let s = LocalResponses::new(10);
    s.put(&stored("key:a", "resp_1", 100)).await.unwrap();
    assert_eq!(s.get("key:a", "resp_1", 50).await.unwrap().unwrap().output().len(), 1);
    assert_eq!(s.get("key:b", "resp_1", 50).await.unwrap(), None, "another owner's is unknown");
    assert_eq!(s.get("key:a", "resp_1", 100).await.unwrap(), None, "expired");
    assert!(!s.delete("key:b", "resp_1").await.unwrap());
    assert!(s.delete("key:a", "resp_1").await.unwrap());
    assert_eq!(s.get("key:a", "resp_1", 50).await.unwrap(), None);
}

#[tokio::test]
async fn the_oldest_go_first_past_the_capacity() {
    let s = LocalResponses::new(2);
    for id in ["r1", "r2", "r3"] {
        s.put(&stored("o", id, u64::MAX)).await.unwrap();
    }
    assert_eq!(s.get("o", "r1", 0).await.unwrap(), None);
    assert!(s.get("o", "r3", 0).await.unwrap().is_some());
}

#[test]
fn owners_are_keys_first() {
    let mut p = Principal::default();
    assert_eq!(owner_of(&p), "anonymous");
    p.user_id = Some("u1".into());
    assert_eq!(owner_of(&p), "user:u1");
    p.key_digest = Some(key_digest("sk-gw-secret"));
    let owner = owner_of(&p);
    assert!(owner.starts_with("key:") && owner.len() == 4 + 32, "{owner}");
    assert!(!owner.contains("secret"));
    assert_ne!(key_digest("sk-gw-a"), key_digest("sk-gw-b"));
}
