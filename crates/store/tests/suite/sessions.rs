//! Console sessions: the token signs in, its hash is all that is stored, and a
//! revoked or expired session signs no one in.

use super::*;
use switchyard_store::db::{NewSession, SignIn};

fn new_session(ttl_ms: i64) -> NewSession {
    NewSession {
        method: SignIn::Key,
        key_hash: Some(hash_secret("sy-some-key")),
        subject: "usr_1".into(),
        name: Some("ada@example.com".into()),
        role: access::CallerRole::Viewer,
        address: Some("127.0.0.1".into()),
        user_agent: Some("test".into()),
        ttl_ms,
    }
}

pub(crate) async fn case_console_sessions(store: Store) {
    let (opened, token) = store.create_session(new_session(3_600_000)).await.unwrap();
    assert_eq!(opened.id, hash_secret(&token));
    let found = store.session(&token).await.unwrap().unwrap();
    assert_eq!(found, opened);
    assert_eq!(found.role, access::CallerRole::Viewer);
    // Neither the token nor anything that signs in is in the table.
    let dump = text_values(&store, "console_sessions").await;
    assert!(!dump.iter().any(|v| v.contains(&token)), "{dump:?}");
    // A wrong token, or the stored id presented as a token, finds nothing.
    assert_eq!(store.session("sys_0000").await.unwrap(), None);
    assert_eq!(store.session(&opened.id).await.unwrap(), None);
    // Two sessions are independent; revoking one leaves the other.
    let (other, other_token) = store.create_session(new_session(3_600_000)).await.unwrap();
    assert_ne!(other.csrf, opened.csrf);
    assert_eq!(store.list_sessions().await.unwrap().len(), 2);
    assert!(store.revoke_session(&opened.id).await.unwrap());
    assert!(!store.revoke_session(&opened.id).await.unwrap(), "revoked once");
    assert_eq!(store.session(&token).await.unwrap(), None);
    assert!(store.session(&other_token).await.unwrap().is_some());
    assert_eq!(store.list_sessions().await.unwrap(), vec![other.clone()]);
    // An expired session is gone; purge forgets ended ones.
    let (_, expired) = store.create_session(new_session(-1)).await.unwrap();
    assert_eq!(store.session(&expired).await.unwrap(), None);
    let purged = store.purge_sessions(i64::MAX).await.unwrap();
    assert_eq!(purged, 3, "the revoked, the expired and the one expiring before the cutoff");
}
