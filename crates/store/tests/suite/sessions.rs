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

/// A sign-in through an identity provider under way: its values are fresh and
/// well formed, the cookie value is not stored, and it is taken once.
pub(crate) async fn case_oidc_logins_are_taken_once(store: Store) {
    let (token, begun) = store
        .begin_oidc_login("https://gw.example/console/oidc/callback", "/console/requests", 600_000)
        .await
        .unwrap()
        .unwrap();
    let (other_token, other) = store
        .begin_oidc_login("https://gw.example/cb", "/console", 600_000)
        .await
        .unwrap()
        .unwrap();
    assert_ne!(token, other_token);
    assert_ne!(begun.state, other.state);
    assert_ne!(begun.nonce, other.nonce);
    assert_ne!(begun.code_verifier, other.code_verifier);
    // RFC 7636: 43 to 128 unreserved characters.
    assert!((43..=128).contains(&begun.code_verifier.len()));
    assert!(begun.code_verifier.bytes().all(|b| b.is_ascii_alphanumeric()));
    let dump = text_values(&store, "console_oidc_logins").await;
    assert!(!dump.iter().any(|v| v.contains(&token)), "{dump:?}");
    // An unknown value, or the stored id, finds nothing and takes nothing.
    assert_eq!(store.take_oidc_login("syo_0000").await.unwrap(), None);
    assert_eq!(store.take_oidc_login(&hash_secret(&token)).await.unwrap(), None);
    let taken = store.take_oidc_login(&token).await.unwrap().unwrap();
    assert_eq!(taken, begun);
    assert_eq!(taken.redirect_uri, "https://gw.example/console/oidc/callback");
    assert_eq!(taken.next, "/console/requests");
    assert_eq!(store.take_oidc_login(&token).await.unwrap(), None, "taken twice");
    // Expired: not handed out, and purged by the next start.
    let (expired, _) =
        store.begin_oidc_login("https://gw.example/cb", "/console", -1).await.unwrap().unwrap();
    store.begin_oidc_login("https://gw.example/cb", "/console", 600_000).await.unwrap().unwrap();
    assert_eq!(store.take_oidc_login(&expired).await.unwrap(), None);
    assert!(store.take_oidc_login(&other_token).await.unwrap().is_some());
}
