//! Key resolution: open mode while no key exists anywhere, then 401 for unknown keys
//! (cached or not), and immediate effect of invalidation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use axum::http::HeaderMap;
use switchyard_protocol::ErrorCode;
use switchyard_server::identity::Identity;
use switchyard_store::testing::sqlite_temp;
use switchyard_store::{NewKey, NewUser, Role};

fn bearer(key: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("authorization", format!("Bearer {key}").parse().unwrap());
    h
}

#[tokio::test]
async fn open_until_the_first_key_then_unknown_keys_are_refused_even_from_cache() {
    let db = sqlite_temp().await;
    let store = db.store().clone();
    let id = Identity::new(vec![], None, Some(store.clone()), None, Duration::from_secs(600));
    let stranger = bearer("sk-not-a-real-key-000000000");
    // Open: any key (the same one twice, the second from the cache) and no key at all.
    assert!(id.authenticate(&stranger).await.is_ok());
    assert!(id.authenticate(&stranger).await.is_ok());
    assert!(id.authenticate(&HeaderMap::new()).await.is_ok());

    let user = store
        .create_user(NewUser {
            email: "a@example.com".into(),
            name: None,
            role: Role::Member,
            project_id: None,
        })
        .await
        .unwrap();
    let (_, secret) =
        store.create_key(NewKey { user_id: user.id.clone(), ..NewKey::default() }).await.unwrap();
    id.invalidate();
    for _ in 0..2 {
        let err = id.authenticate(&stranger).await.unwrap_err();
        assert_eq!((err.status(), err.code()), (401, ErrorCode::InvalidApiKey));
    }
    assert_eq!(
        id.authenticate(&HeaderMap::new()).await.unwrap_err().code(),
        ErrorCode::MissingApiKey
    );
    let caller = id.authenticate(&bearer(&secret)).await.unwrap();
    assert_eq!(caller.principal.user_id.as_deref(), Some(user.id.as_str()));
    assert_eq!(caller.principal.role, Some(Role::Member));
}
