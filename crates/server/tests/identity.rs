//! Key resolution: open mode while no key exists anywhere, then 401 for unknown keys
//! (cached or not), and immediate effect of invalidation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use axum::http::HeaderMap;
use switchyard_core::util::Secret;
use switchyard_protocol::ErrorCode;
use switchyard_server::identity::{Identity, short_key_warnings};
use switchyard_store::testing::sqlite_temp;
use switchyard_store::{CallerRole, NewKey, NewUser};

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
            role: CallerRole::Member,
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
    assert_eq!(caller.principal.role, Some(CallerRole::Member));
}

/// Records show a static or bootstrap key by a prefix that gives little away:
/// a known scheme and at most a fifth of the rest (3 characters of a
/// 16-character key). Keys under 32 characters are warned about once each, by
/// place and prefix, never by value.
#[tokio::test]
async fn static_keys_show_a_short_prefix_and_short_ones_are_warned_about() {
    const SHORT: &str = "0123456789abcdef";
    const ADMIN: &str = "sy-bootstrap-admin-0123456789abcdefghij";
    const SHORT_ADMIN: &str = "sy-admin-short-key";
    let keys = vec![Secret::new(SHORT), Secret::new(SHORT), Secret::new("k".repeat(32))];
    let id = Identity::new(keys.clone(), Some(Secret::new(ADMIN)), None, None, Duration::ZERO);
    let shown = |key: &str| {
        let id = &id;
        let key = key.to_owned();
        async move { id.authenticate(&bearer(&key)).await.unwrap().principal.key_prefix }
    };
    assert_eq!(shown(SHORT).await.as_deref(), Some("012"));
    assert_eq!(shown(ADMIN).await.as_deref(), Some("sy-bootst"));
    assert_eq!(shown(&"k".repeat(32)).await.as_deref(), Some("kkkkkk"));

    let admin = Secret::new(SHORT_ADMIN);
    let warnings = short_key_warnings(&keys, Some(&admin), "SWITCHYARD_ADMIN_KEY");
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    assert!(
        warnings[0].starts_with("gateway.api_keys[0] (012…) is 16 characters"),
        "{warnings:#?}"
    );
    assert!(
        warnings[1].starts_with("SWITCHYARD_ADMIN_KEY (sy-adm…) is 18 characters"),
        "{warnings:#?}"
    );
    for w in &warnings {
        assert!(!w.contains(SHORT) && !w.contains(SHORT_ADMIN), "{w}");
    }
    assert!(short_key_warnings(&[], Some(&Secret::new(ADMIN)), "X").is_empty());
}
