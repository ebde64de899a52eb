//! The storage suite: every case is written once (`async fn case_xxx(store: Store)`)
//! and runs against both backends, each on a fresh, migrated database from
//! [`switchyard_store::testing`]:
//!
//! * SQLite: a new file in the temp folder (WAL and all), removed afterwards.
//! * PostgreSQL: a new schema in the database at `SWITCHYARD_TEST_POSTGRES_URL`
//!   (the store connects with `search_path` set to it), dropped afterwards. With
//!   the variable unset these tests print `SKIPPED: …` and pass, unless
//!   `SWITCHYARD_REQUIRE_POSTGRES=1`, which makes a missing variable or an
//!   unreachable server a failure (CI sets both).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};

use sqlx::Row;
use switchyard_core::access::{self, Principal};
use switchyard_core::record::{AttemptRecord, RequestRecord};
use switchyard_protocol::Usage;
use switchyard_store::db::hash_secret;
use switchyard_store::seal::Sealer;
use switchyard_store::testing::{self, TestDb};
use switchyard_store::*;

// ------------------------------------------------------------------ harness

static SEQ: AtomicUsize = AtomicUsize::new(0);

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}_{}_{}_{nanos}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed))
}

/// Runs `case` on its own task so a failing assertion still lets us close the pool
/// and remove the database, then re-raises the failure.
async fn run_case<F, Fut>(db: TestDb, backend: Backend, case: F)
where
    F: FnOnce(Store) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    assert_eq!(db.backend(), backend);
    let outcome = tokio::spawn(case(db.store().clone())).await;
    db.cleanup().await;
    if let Err(e) = outcome {
        std::panic::resume_unwind(e.into_panic());
    }
}

async fn run_sqlite<F, Fut>(case: F)
where
    F: FnOnce(Store) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    run_case(testing::sqlite_temp().await, Backend::Sqlite, case).await;
}

async fn run_postgres<F, Fut>(case: F)
where
    F: FnOnce(Store) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    if let Some(db) = testing::postgres().await {
        run_case(db, Backend::Postgres, case).await;
    }
}

/// One `#[tokio::test]` per case and backend: `sqlite::case_x`, `postgres::case_x`.
macro_rules! suite {
    ($($case:ident),+ $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    crate::run_sqlite(super::$case).await
                }
            )+
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    crate::run_postgres(super::$case).await
                }
            )+
        }
    };
}

suite!(
    case_migrations_are_idempotent,
    case_a_newer_releases_schema_does_not_stop_this_one,
    case_users,
    case_projects,
    case_groups,
    case_api_keys,
    case_api_key_secret_is_not_stored,
    case_api_key_limits,
    case_rules,
    case_credentials,
    case_credentials_with_the_sealer,
    case_records_insert_and_get,
    case_records_filters,
    case_records_limit,
    case_usage,
    case_usage_slo_and_groupings,
    case_retention,
    case_concurrent_writers,
    case_rollups_match_the_records,
    case_rollups_count_a_record_once,
    case_rollups_backfill_matches_what_writes_keep,
    case_usage_series_is_hour_by_hour,
    case_slices_agree_with_the_fine_rollups,
    case_the_ledger_reads_what_the_records_cost,
    case_retention_deletes_in_batches_and_keeps_the_rollups,
    case_rollup_retention_keeps_the_daily_slices,
    case_content_is_stored_compressed_apart_and_read_back,
    case_console_sessions,
    case_oidc_logins_are_taken_once,
    case_records_keyset_pages_and_filters,
    case_each_record_lands_in_its_day_and_a_replay_counts_once,
    case_retention_drops_whole_days_and_cuts_the_last_by_time,
    case_rows_in_default_move_into_their_day,
    case_upkeep_at_once_from_two_callers_makes_each_day_once,
    case_stored_responses_are_their_owners,
    case_media_jobs_are_claimed_once_and_their_ends_kept,
    case_batches_and_their_files_are_kept,
);

#[path = "suite/rollups.rs"]
mod rollups;
use rollups::{
    case_rollups_backfill_matches_what_writes_keep, case_rollups_count_a_record_once,
    case_rollups_match_the_records, case_slices_agree_with_the_fine_rollups,
    case_the_ledger_reads_what_the_records_cost, case_usage_series_is_hour_by_hour,
};
#[path = "suite/retention.rs"]
mod retention;
use retention::{
    case_retention_deletes_in_batches_and_keeps_the_rollups,
    case_rollup_retention_keeps_the_daily_slices,
};
#[path = "suite/contents.rs"]
mod contents;
use contents::case_content_is_stored_compressed_apart_and_read_back;
#[path = "suite/sessions.rs"]
mod sessions;
use sessions::{case_console_sessions, case_oidc_logins_are_taken_once};
#[path = "suite/responses.rs"]
mod responses;
use responses::case_stored_responses_are_their_owners;
#[path = "suite/batches.rs"]
mod batches;
use batches::case_batches_and_their_files_are_kept;
#[path = "suite/jobs.rs"]
mod jobs;
use jobs::case_media_jobs_are_claimed_once_and_their_ends_kept;
#[path = "suite/listing.rs"]
mod listing;
use listing::case_records_keyset_pages_and_filters;
#[path = "suite/partitions.rs"]
mod partitions;
use partitions::{
    case_each_record_lands_in_its_day_and_a_replay_counts_once,
    case_retention_drops_whole_days_and_cuts_the_last_by_time,
    case_rows_in_default_move_into_their_day,
    case_upkeep_at_once_from_two_callers_makes_each_day_once,
};

/// Every non-null text value of `table` (what a raw dump of it would show).
async fn text_values(store: &Store, table: &str) -> Vec<String> {
    let sql = sqlx::AssertSqlSafe(format!("SELECT * FROM {table}"));
    let mut out = Vec::new();
    match store.pool() {
        DbPool::Sqlite(p) => {
            for row in sqlx::query(sql).fetch_all(p).await.unwrap() {
                for i in 0..row.len() {
                    if let Ok(Some(s)) = row.try_get::<Option<String>, _>(i) {
                        out.push(s);
                    }
                }
            }
        }
        DbPool::Postgres(p) => {
            for row in sqlx::query(sql).fetch_all(p).await.unwrap() {
                for i in 0..row.len() {
                    if let Ok(Some(s)) = row.try_get::<Option<String>, _>(i) {
                        out.push(s);
                    }
                }
            }
        }
    }
    out
}

async fn member(store: &Store, email: &str) -> User {
    store
        .create_user(NewUser {
            email: email.into(),
            name: None,
            role: CallerRole::Member,
            project_id: None,
        })
        .await
        .unwrap()
}

// -------------------------------------------------------------- migrations

async fn case_migrations_are_idempotent(store: Store) {
    // The harness migrated once already.
    store.migrate().await.unwrap();
    store.migrate().await.unwrap();
    store.ping().await.unwrap();
    let u = member(&store, "m@example.com").await;
    store.migrate().await.unwrap();
    assert_eq!(store.user(&u.id).await.unwrap(), Some(u));
    let versions: Vec<i64> = match store.pool() {
        DbPool::Sqlite(p) => {
            sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
                .fetch_all(p)
                .await
                .unwrap()
        }
        DbPool::Postgres(p) => {
            sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
                .fetch_all(p)
                .await
                .unwrap()
        }
    };
    assert_eq!(versions, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]);
    // Each PostgreSQL case runs in its own schema.
    if let DbPool::Postgres(p) = store.pool() {
        let schema: String =
            sqlx::query_scalar("SELECT current_schema()").fetch_one(p).await.unwrap();
        assert!(schema.starts_with("sy_test_"), "{schema}");
    }
}

/// A rolling deploy's older half, and a rollback: the database holds a
/// migration this binary does not know (a newer release's), and this binary
/// still migrates (nothing to do) and works on it.
async fn case_a_newer_releases_schema_does_not_stop_this_one(store: Store) {
    match store.pool() {
        DbPool::Sqlite(p) => {
            sqlx::query(
                "INSERT INTO _sqlx_migrations \
                 (version, description, success, checksum, execution_time) \
                 VALUES (9999, 'a newer release', TRUE, X'00', 0)",
            )
            .execute(p)
            .await
            .unwrap();
        }
        DbPool::Postgres(p) => {
            sqlx::query(
                "INSERT INTO _sqlx_migrations \
                 (version, description, success, checksum, execution_time) \
                 VALUES (9999, 'a newer release', TRUE, decode('00', 'hex'), 0)",
            )
            .execute(p)
            .await
            .unwrap();
        }
    }
    store.migrate().await.unwrap();
    let u = member(&store, "after-rollback@example.com").await;
    assert_eq!(store.user(&u.id).await.unwrap(), Some(u));
}

// ---------------------------------------------------------------- identity

async fn case_users(store: Store) {
    let alice = store
        .create_user(NewUser {
            email: " Alice@Example.com ".into(),
            name: Some("Alice".into()),
            role: CallerRole::Member,
            project_id: None,
        })
        .await
        .unwrap();
    assert_eq!(alice.email, "alice@example.com");
    assert_eq!(alice.name.as_deref(), Some("Alice"));
    assert!(alice.id.starts_with("usr_"));
    assert!(!alice.disabled);
    // A primary project named after the local part, with alice as a member.
    let primary =
        store.project(alice.primary_project_id.as_deref().unwrap()).await.unwrap().unwrap();
    assert_eq!(primary.name, "alice");
    assert_eq!(store.projects_of(&alice.id).await.unwrap(), std::slice::from_ref(&primary));

    assert_eq!(store.user(&alice.id).await.unwrap().as_ref(), Some(&alice));
    assert_eq!(store.user_by_email("ALICE@example.COM").await.unwrap().as_ref(), Some(&alice));
    assert_eq!(store.user("usr_missing").await.unwrap(), None);
    assert_eq!(store.user_by_email("nobody@example.com").await.unwrap(), None);

    // Same local part elsewhere: the project name gets a suffix.
    let alice2 = member(&store, "alice@other.org").await;
    let p2 = store.project(alice2.primary_project_id.as_deref().unwrap()).await.unwrap().unwrap();
    assert_eq!(p2.name, "alice-2");

    // Emails are unique, case-insensitively; nothing half-created remains.
    let dup = store
        .create_user(NewUser {
            email: "ALICE@example.com".into(),
            name: None,
            role: CallerRole::Viewer,
            project_id: None,
        })
        .await
        .unwrap_err();
    assert!(dup.is_conflict(), "{dup}");
    assert_eq!(store.list_projects().await.unwrap().len(), 2);

    // An explicit primary project; a missing one; a malformed email.
    let team = store.create_project("team").await.unwrap();
    let bob = store
        .create_user(NewUser {
            email: "bob@example.com".into(),
            name: None,
            role: CallerRole::Admin,
            project_id: Some(team.id.clone()),
        })
        .await
        .unwrap();
    assert_eq!(bob.primary_project_id.as_deref(), Some(team.id.as_str()));
    assert_eq!(store.projects_of(&bob.id).await.unwrap(), std::slice::from_ref(&team));
    let missing = store
        .create_user(NewUser {
            email: "carol@example.com".into(),
            name: None,
            role: CallerRole::Member,
            project_id: Some("prj_missing".into()),
        })
        .await
        .unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
    let bad = store
        .create_user(NewUser {
            email: "carol".into(),
            name: None,
            role: CallerRole::Member,
            project_id: None,
        })
        .await
        .unwrap_err();
    assert!(matches!(bad, StoreError::Invalid(_)), "{bad}");

    let emails: Vec<String> =
        store.list_users().await.unwrap().into_iter().map(|u| u.email).collect();
    assert_eq!(emails, ["alice@example.com", "alice@other.org", "bob@example.com"]);

    store.set_user_role(&alice.id, CallerRole::Admin).await.unwrap();
    assert_eq!(store.user(&alice.id).await.unwrap().unwrap().role, CallerRole::Admin);
    assert!(
        store.set_user_role("usr_missing", CallerRole::Admin).await.unwrap_err().is_not_found()
    );

    store.disable_user(&alice.id).await.unwrap();
    assert!(store.user(&alice.id).await.unwrap().unwrap().disabled);
    store.enable_user(&alice.id).await.unwrap();
    assert!(!store.user(&alice.id).await.unwrap().unwrap().disabled);
    assert!(store.disable_user("usr_missing").await.unwrap_err().is_not_found());
}

async fn case_projects(store: Store) {
    let research = store.create_project("research").await.unwrap();
    assert!(research.id.starts_with("prj_"));
    assert!(!research.log_content);
    assert_eq!(research.content_cap_bytes, 65_536);
    assert_eq!(store.project(&research.id).await.unwrap().as_ref(), Some(&research));
    assert_eq!(store.project_by_name("research").await.unwrap().as_ref(), Some(&research));
    assert_eq!(store.project("prj_missing").await.unwrap(), None);

    assert!(store.create_project("research").await.unwrap_err().is_conflict());
    assert!(matches!(store.create_project("  ").await, Err(StoreError::Invalid(_))));
    store.create_project("alpha").await.unwrap();
    let names: Vec<String> =
        store.list_projects().await.unwrap().into_iter().map(|p| p.name).collect();
    assert_eq!(names, ["alpha", "research"]);

    let bob = member(&store, "bob@example.com").await;
    store.add_project_member(&research.id, &bob.id).await.unwrap();
    store.add_project_member(&research.id, &bob.id).await.unwrap(); // idempotent
    let of_bob: Vec<String> =
        store.projects_of(&bob.id).await.unwrap().into_iter().map(|p| p.name).collect();
    assert_eq!(of_bob, ["bob", "research"]);
    assert_eq!(store.project_names_by_user().await.unwrap()[&bob.id], of_bob);
    assert!(store.add_project_member("prj_missing", &bob.id).await.unwrap_err().is_not_found());
    assert!(
        store.add_project_member(&research.id, "usr_missing").await.unwrap_err().is_not_found()
    );

    store.set_project_content(&research.id, true, 1024).await.unwrap();
    let p = store.project(&research.id).await.unwrap().unwrap();
    assert!(p.log_content);
    assert_eq!(p.content_cap_bytes, 1024);
    assert!(store.set_project_content("prj_missing", true, 1).await.unwrap_err().is_not_found());
}

async fn case_groups(store: Store) {
    let ml = store.create_group("ml").await.unwrap();
    let ops = store.create_group("ops").await.unwrap();
    assert!(ml.id.starts_with("grp_"));
    assert!(store.create_group("ml").await.unwrap_err().is_conflict());
    assert_eq!(store.group_by_name("ml").await.unwrap().as_ref(), Some(&ml));
    assert_eq!(store.group_by_name("nope").await.unwrap(), None);

    let u = member(&store, "u@example.com").await;
    let other = member(&store, "o@example.com").await;
    assert!(store.groups_of(&u.id).await.unwrap().is_empty());
    store.add_group_member(&ops.id, &u.id).await.unwrap();
    store.add_group_member(&ml.id, &u.id).await.unwrap();
    store.add_group_member(&ml.id, &u.id).await.unwrap(); // idempotent
    store.add_group_member(&ml.id, &other.id).await.unwrap();
    assert_eq!(store.groups_of(&u.id).await.unwrap(), ["ml", "ops"]);
    assert_eq!(store.groups_of(&other.id).await.unwrap(), ["ml"]);
    // Everyone's at once, the same.
    let all = store.group_names_by_user().await.unwrap();
    assert_eq!(
        (&all[&u.id], &all[&other.id]),
        (&vec!["ml".to_owned(), "ops".into()], &vec!["ml".into()])
    );
    assert!(store.add_group_member("grp_missing", &u.id).await.unwrap_err().is_not_found());
    assert!(store.add_group_member(&ml.id, "usr_missing").await.unwrap_err().is_not_found());
    assert_eq!(store.list_groups().await.unwrap(), [ml, ops]);
}

// ---------------------------------------------------------------- API keys

async fn case_api_keys(store: Store) {
    let u = member(&store, "k@example.com").await;
    let expires = 4_102_444_800_000; // 2100-01-01
    let (key, secret) = store
        .create_key(NewKey {
            user_id: u.id.clone(),
            project_id: u.primary_project_id.clone(),
            label: Some("laptop".into()),
            allowed_models: Some(vec!["claude-*".into(), "gpt-5".into()]),
            limits: None,
            expires_at: Some(expires),
        })
        .await
        .unwrap();
    assert_eq!(secret.len(), 43);
    assert!(secret.starts_with("sy-"));
    assert_eq!(key.prefix, secret[..9], "sy- and 6 characters");
    assert!(key.id.starts_with("key_"));
    assert_eq!(key.expires_at, Some(expires));
    assert!(!format!("{key:?}").contains(&secret[11..]));

    // Lookup by secret; a near miss finds nothing.
    assert_eq!(store.key_by_secret(&secret).await.unwrap().as_ref(), Some(&key));
    assert_eq!(store.key_by_secret(&secret[..42]).await.unwrap(), None);
    assert_eq!(store.key_by_secret(&format!("{secret}x")).await.unwrap(), None);
    assert_eq!(store.key(&key.id).await.unwrap().as_ref(), Some(&key));
    let stored = store.key(&key.id).await.unwrap().unwrap();
    assert_eq!(
        stored.allowed_models.as_deref(),
        Some(&["claude-*".to_owned(), "gpt-5".to_owned()][..])
    );
    assert_eq!(stored.label.as_deref(), Some("laptop"));
    assert!(stored.is_active(expires - 1));
    assert!(!stored.is_active(expires));

    // A second key: a different secret; listing by user.
    let (key2, secret2) =
        store.create_key(NewKey { user_id: u.id.clone(), ..NewKey::default() }).await.unwrap();
    assert_ne!(secret, secret2);
    assert_eq!(key2.expires_at, None);
    assert_eq!(key2.allowed_models, None);
    let mut ids: Vec<String> =
        store.list_keys(Some(&u.id)).await.unwrap().into_iter().map(|k| k.id).collect();
    ids.sort();
    let mut want = vec![key.id.clone(), key2.id.clone()];
    want.sort();
    assert_eq!(ids, want);
    assert_eq!(store.list_keys(None).await.unwrap().len(), 2);
    assert!(store.list_keys(Some("usr_other")).await.unwrap().is_empty());

    // Revocation: the row is still returned (the caller decides), revoked once.
    store.revoke_key(&key.id).await.unwrap();
    let revoked = store.key_by_secret(&secret).await.unwrap().unwrap();
    let at = revoked.revoked_at.unwrap();
    assert!(!revoked.is_active(0));
    tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    store.revoke_key(&key.id).await.unwrap();
    assert_eq!(store.key(&key.id).await.unwrap().unwrap().revoked_at, Some(at));
    assert!(store.revoke_key("key_missing").await.unwrap_err().is_not_found());
    assert!(store.key(&key2.id).await.unwrap().unwrap().revoked_at.is_none());

    // last_used_at only moves forward; unknown ids are ignored.
    store.touch_key(&key2.id, 1_000).await.unwrap();
    store.touch_key(&key2.id, 500).await.unwrap();
    assert_eq!(store.key(&key2.id).await.unwrap().unwrap().last_used_at, Some(1_000));
    store.touch_key(&key2.id, 2_000).await.unwrap();
    assert_eq!(store.key(&key2.id).await.unwrap().unwrap().last_used_at, Some(2_000));
    store.touch_key("key_missing", 1).await.unwrap();

    // A key needs an existing user (and project).
    let err = store.create_key(NewKey { user_id: "usr_missing".into(), ..NewKey::default() }).await;
    assert!(err.unwrap_err().is_not_found());
    let err = store
        .create_key(NewKey {
            user_id: u.id.clone(),
            project_id: Some("prj_missing".into()),
            ..NewKey::default()
        })
        .await;
    assert!(err.unwrap_err().is_not_found());
    assert_eq!(store.list_keys(None).await.unwrap().len(), 2);
}

async fn case_api_key_secret_is_not_stored(store: Store) {
    let u = member(&store, "s@example.com").await;
    let (key, secret) = store
        .create_key(NewKey { user_id: u.id.clone(), label: Some("ci".into()), ..NewKey::default() })
        .await
        .unwrap();
    let values = text_values(&store, "api_keys").await;
    // The dump did read the text columns...
    assert!(values.contains(&key.id), "{values:?}");
    assert!(values.contains(&key.prefix), "{values:?}");
    // ...and the only trace of the secret is its SHA-256 (plus the visible prefix).
    assert!(values.contains(&hash_secret(&secret)), "{values:?}");
    for v in &values {
        assert!(!v.contains(&secret), "secret stored in {v:?}");
        assert!(!v.contains(&secret[11..]), "secret body stored in {v:?}");
    }
    assert_eq!(hash_secret(&secret).len(), 64);
}

/// A key's own limits: stored with it (JSON, NULL for none), changed and
/// cleared later; zero limits refused, naming the field.
async fn case_api_key_limits(store: Store) {
    use switchyard_core::limits::Limits;
    let u = member(&store, "l@example.com").await;
    let limits = Limits::default().rpm(60).concurrent(2);
    let (key, secret) = store
        .create_key(NewKey { user_id: u.id.clone(), limits: Some(limits), ..NewKey::default() })
        .await
        .unwrap();
    assert_eq!(key.limits, Some(limits));
    assert_eq!(store.key_by_secret(&secret).await.unwrap().unwrap().limits, Some(limits));
    assert_eq!(store.list_keys(Some(&u.id)).await.unwrap()[0].limits, Some(limits));
    // Stored as the JSON of the limits that are set.
    let values = text_values(&store, "api_keys").await;
    assert!(values.contains(&r#"{"rpm":60,"concurrent":2}"#.to_owned()), "{values:?}");

    // Changed later: the whole set is replaced.
    let tpm = Limits::default().tpm(10_000);
    store.set_key_limits(&key.id, Some(tpm)).await.unwrap();
    assert_eq!(store.key(&key.id).await.unwrap().unwrap().limits, Some(tpm));
    // Cleared by None, and by limits with nothing set.
    store.set_key_limits(&key.id, None).await.unwrap();
    assert_eq!(store.key(&key.id).await.unwrap().unwrap().limits, None);
    store.set_key_limits(&key.id, Some(tpm)).await.unwrap();
    store.set_key_limits(&key.id, Some(Limits::default())).await.unwrap();
    assert_eq!(store.key(&key.id).await.unwrap().unwrap().limits, None);
    let (empty, _) = store
        .create_key(NewKey {
            user_id: u.id.clone(),
            limits: Some(Limits::default()),
            ..NewKey::default()
        })
        .await
        .unwrap();
    assert_eq!(store.key(&empty.id).await.unwrap().unwrap().limits, None);

    // Zero is refused, naming the field, and changes nothing.
    store.set_key_limits(&key.id, Some(tpm)).await.unwrap();
    let zero = Limits::default().rpm(5).concurrent(0);
    match store.set_key_limits(&key.id, Some(zero)).await {
        Err(StoreError::Invalid(m)) => assert!(m.contains("limits.concurrent"), "{m}"),
        other => panic!("zero concurrency accepted: {other:?}"),
    }
    assert_eq!(store.key(&key.id).await.unwrap().unwrap().limits, Some(tpm));
    let err = store
        .create_key(NewKey {
            user_id: u.id.clone(),
            limits: Some(Limits::default().rpm(0)),
            ..NewKey::default()
        })
        .await;
    match err {
        Err(StoreError::Invalid(m)) => assert!(m.contains("limits.rpm"), "{m}"),
        other => panic!("zero rpm accepted: {other:?}"),
    }
    assert_eq!(store.list_keys(Some(&u.id)).await.unwrap().len(), 2);
    assert!(store.set_key_limits("key_missing", None).await.unwrap_err().is_not_found());
}

// ------------------------------------------------------------ access rules

fn rule(name: &str, effect: Effect, pattern: &str, subject: Subject, priority: i64) -> NewRule {
    NewRule {
        name: name.into(),
        effect,
        pattern: pattern.into(),
        subject,
        reason: format!("{name} says so"),
        priority,
    }
}

async fn case_rules(store: Store) {
    let closed = store
        .create_rule(rule("opus-closed", Effect::Deny, "claude-opus-*", Subject::Any, 0))
        .await
        .unwrap();
    assert!(closed.id.starts_with("rul_"));
    let research = store
        .create_rule(rule(
            "opus-research",
            Effect::Allow,
            "claude-opus-*",
            Subject::Group("research".into()),
            10,
        ))
        .await
        .unwrap();
    let viewers = store
        .create_rule(rule("viewers", Effect::Deny, "*", Subject::Role(CallerRole::Viewer), 5))
        .await
        .unwrap();
    let person = store
        .create_rule(rule("one-user", Effect::Allow, "gpt-*", Subject::User("usr_x".into()), 5))
        .await
        .unwrap();
    let proj = store
        .create_rule(rule("one-project", Effect::Deny, "r-*", Subject::Project("prj_y".into()), -1))
        .await
        .unwrap();

    let listed = store.list_rules().await.unwrap();
    assert_eq!(
        listed,
        [research.clone(), person.clone(), viewers.clone(), closed.clone(), proj.clone()]
    );

    // Stored rules feed core's decision as they are.
    let rules: Vec<access::Rule> = listed.iter().map(|r| r.rule.clone()).collect();
    let who = Principal::user("u").role(CallerRole::Member);
    assert!(access::decide(&rules, &who, "claude-opus-5", None).is_err());
    let insider = who.clone().groups(["research"]);
    assert!(access::decide(&rules, &insider, "claude-opus-5", None).is_ok());

    assert!(
        store
            .create_rule(rule("viewers", Effect::Allow, "x", Subject::Any, 0))
            .await
            .unwrap_err()
            .is_conflict()
    );
    for bad in [
        rule("", Effect::Allow, "x", Subject::Any, 0),
        rule("p", Effect::Allow, " ", Subject::Any, 0),
        rule("g", Effect::Allow, "x", Subject::Group(String::new()), 0),
    ] {
        assert!(matches!(store.create_rule(bad).await, Err(StoreError::Invalid(_))));
    }

    assert!(store.delete_rule("viewers").await.unwrap());
    assert!(store.delete_rule(&closed.id).await.unwrap());
    assert!(!store.delete_rule("viewers").await.unwrap());
    assert!(!store.delete_rule(&closed.id).await.unwrap());
    assert_eq!(store.list_rules().await.unwrap(), [research, person, proj]);
}

// -------------------------------------------------------------------- BYOK

fn sealed(store: &Store, owner: (OwnerKind, &str), provider: &str, tag: &str) -> NewCredential {
    NewCredential {
        id: store.new_credential_id().unwrap(),
        owner_kind: owner.0,
        owner_id: owner.1.into(),
        provider: provider.into(),
        key_id: "k1".into(),
        nonce: format!("nonce-{tag}"),
        ciphertext: format!("ciphertext-{tag}"),
        fingerprint: format!("fp-{tag}"),
    }
}

async fn case_credentials(store: Store) {
    let first = sealed(&store, (OwnerKind::User, "usr_1"), "openai", "a");
    let row = store.put_credential(first.clone()).await.unwrap();
    assert_eq!(row.id, first.id);
    assert_eq!(row.ciphertext, "ciphertext-a");
    assert_eq!(row.nonce, "nonce-a");
    assert_eq!(row.created_at, row.updated_at);
    assert!(!format!("{row:?} {first:?}").contains("ciphertext-a"));
    assert!(!format!("{row:?} {first:?}").contains("nonce-a"));
    assert_eq!(
        store.credential(OwnerKind::User, "usr_1", "openai").await.unwrap().as_ref(),
        Some(&row)
    );
    assert_eq!(store.credential(OwnerKind::Project, "usr_1", "openai").await.unwrap(), None);

    // Upsert per (owner, provider): the replacement brings its own id.
    let second = sealed(&store, (OwnerKind::User, "usr_1"), "openai", "b");
    let replaced = store.put_credential(second.clone()).await.unwrap();
    assert_eq!(replaced.id, second.id);
    assert_eq!(replaced.ciphertext, "ciphertext-b");
    assert_eq!(replaced.fingerprint, "fp-b");
    assert_eq!(replaced.created_at, row.created_at);
    store
        .put_credential(sealed(&store, (OwnerKind::User, "usr_1"), "anthropic", "c"))
        .await
        .unwrap();
    store
        .put_credential(sealed(&store, (OwnerKind::Project, "prj_1"), "openai", "d"))
        .await
        .unwrap();

    // Listings carry no sealed fields.
    let all = store.list_credentials(None).await.unwrap();
    assert_eq!(all.len(), 3);
    let json = serde_json::to_string(&all).unwrap();
    assert!(!json.contains("ciphertext-") && !json.contains("nonce-"), "{json}");
    let mine: Vec<(String, String)> = store
        .list_credentials(Some((OwnerKind::User, "usr_1")))
        .await
        .unwrap()
        .into_iter()
        .map(|c| (c.provider, c.fingerprint))
        .collect();
    assert_eq!(mine, [("anthropic".into(), "fp-c".into()), ("openai".into(), "fp-b".into())]);
    assert_eq!(replaced.info(), all.iter().find(|c| c.id == second.id).unwrap().clone());

    // The full rows, for re-sealing; re-seal one.
    let rows = store.all_credentials().await.unwrap();
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().any(|r| r.ciphertext == "ciphertext-d"));
    store.update_sealed(&second.id, "k2", "nonce-e", "ciphertext-e", "fp-e").await.unwrap();
    let resealed = store.credential(OwnerKind::User, "usr_1", "openai").await.unwrap().unwrap();
    assert_eq!(
        (resealed.key_id.as_str(), resealed.nonce.as_str(), resealed.ciphertext.as_str()),
        ("k2", "nonce-e", "ciphertext-e")
    );
    assert_eq!(resealed.fingerprint, "fp-e");
    assert_eq!(resealed.id, second.id);
    // The replaced row's id is gone: a stale re-seal finds nothing.
    assert!(store.update_sealed(&first.id, "k2", "n", "c", "f").await.unwrap_err().is_not_found());
    assert!(matches!(
        store.update_sealed(&second.id, "k2", "", "c", "f").await,
        Err(StoreError::Invalid(_))
    ));
    let empty = NewCredential { ciphertext: String::new(), ..second.clone() };
    assert!(matches!(store.put_credential(empty).await, Err(StoreError::Invalid(_))));

    assert!(store.delete_credential(OwnerKind::User, "usr_1", "openai").await.unwrap());
    assert!(!store.delete_credential(OwnerKind::User, "usr_1", "openai").await.unwrap());
    assert_eq!(store.list_credentials(None).await.unwrap().len(), 2);
}

async fn case_credentials_with_the_sealer(store: Store) {
    const PLAIN: &str = "sk-provider-key-0123456789";
    let old = Sealer::new("the first gateway secret", "k1").unwrap();
    let id = store.new_credential_id().unwrap();
    let s = old.seal(&id, PLAIN).unwrap();
    store
        .put_credential(NewCredential {
            id: id.clone(),
            owner_kind: OwnerKind::Project,
            owner_id: "prj_1".into(),
            provider: "openai".into(),
            key_id: s.key_id,
            nonce: s.nonce,
            ciphertext: s.ciphertext,
            fingerprint: s.fingerprint,
        })
        .await
        .unwrap();
    assert!(text_values(&store, "provider_credentials").await.iter().all(|v| !v.contains(PLAIN)));

    // Rotation: re-seal every row under the new key, then open with it alone.
    let new = Sealer::new("the second gateway secret", "k2")
        .unwrap()
        .with_previous("the first gateway secret", "k1")
        .unwrap();
    for row in store.all_credentials().await.unwrap() {
        assert!(new.needs_rotation(&row.key_id));
        let r = new
            .reseal(
                &row.id,
                &switchyard_store::seal::SealedRef {
                    key_id: &row.key_id,
                    nonce: &row.nonce,
                    ciphertext: &row.ciphertext,
                },
            )
            .unwrap();
        store
            .update_sealed(&row.id, &r.key_id, &r.nonce, &r.ciphertext, &r.fingerprint)
            .await
            .unwrap();
    }
    let only_new = Sealer::new("the second gateway secret", "k2").unwrap();
    let row = store.credential(OwnerKind::Project, "prj_1", "openai").await.unwrap().unwrap();
    let opened = only_new
        .open(
            &row.id,
            &switchyard_store::seal::SealedRef {
                key_id: &row.key_id,
                nonce: &row.nonce,
                ciphertext: &row.ciphertext,
            },
        )
        .unwrap();
    assert_eq!(opened.as_str(), PLAIN);
}

// ------------------------------------------------------------------ records

fn rec(id: &str, time_ms: u64) -> RequestRecord {
    let mut r = RequestRecord::new(id, time_ms);
    r.client_format = "openai-chat".into();
    r.requested_model = "m".into();
    r.resolved_model = Some("m".into());
    r.descriptor = "route:r1".into();
    r.status = 200;
    r.total_ms = 100;
    r
}

/// `r` changed by `edit` (records are non-exhaustive: no struct update syntax).
fn with(mut r: RequestRecord, edit: impl FnOnce(&mut RequestRecord)) -> RequestRecord {
    edit(&mut r);
    r
}

// Every field set; `new` leaves fields core may add later at their defaults.
fn full_record() -> RequestRecord {
    let mut r = RequestRecord::new("req-full", 1_700_000_000_123);
    r.user = Some("usr_1".into());
    r.key_prefix = Some("sy-AbCdEfGh".into());
    r.project = Some("prj_1".into());
    r.client_format = "anthropic".into();
    r.requested_model = "claude".into();
    r.resolved_model = Some("claude-sonnet-5".into());
    r.route_id = Some("claude-4203d1".into());
    r.provider = Some("anthropic".into());
    r.served_provider = Some("bedrock".into());
    r.upstream_model = Some("anthropic.claude-sonnet-5".into());
    r.descriptor = "route:claude-4203d1 failover:anthropic->bedrock".into();
    r.status = 200;
    r.error_code = None;
    r.attempts = vec![
        AttemptRecord::new("anthropic/claude-sonnet-5", "status_529", 41, "primary")
            .with_credential("fp-1234abcd"),
        AttemptRecord::new("bedrock/anthropic.claude-sonnet-5", "ok", 900, "failover"),
    ];
    r.ttft_ms = Some(350);
    r.total_ms = 1_234;
    r.usage = Usage {
        input_tokens: Some(1_000),
        output_tokens: Some(200),
        cache_read_tokens: Some(300),
        cache_write_tokens: None,
        reasoning_tokens: Some(50),
    };
    r.cost_usd = Some(0.012_345_678_9);
    r.estimated = true;
    r.stream = true;
    r.session_id = Some("5b0c8a3e-1b2c-4d5e-8f90-0a1b2c3d4e5f".into());
    r.field_edits = vec!["prompt_cache_key: dropped".into(), "store: dropped".into()];
    r.cache = Some("hit".into());
    r.routing.intent = Some("code".into());
    r.routing.intent_rule = Some("tool_loop".into());
    r
}

async fn case_records_insert_and_get(store: Store) {
    let full = full_record();
    let batch = vec![full.clone(), rec("r1", 1_000), rec("r2", 2_000)];
    store.insert_records(&batch).await.unwrap();
    assert_eq!(store.record("req-full").await.unwrap(), Some(full.clone()));
    assert_eq!(store.record("r1").await.unwrap(), Some(rec("r1", 1_000)));
    assert_eq!(store.record("nope").await.unwrap(), None);

    // A replay of the same batch, and a batch mixing stored, new and repeated ids.
    store.insert_records(&batch).await.unwrap();
    let changed = with(rec("r1", 1_000), |r| r.status = 500);
    store.insert_records(&[changed, rec("r3", 3_000), rec("r3", 3_000)]).await.unwrap();
    store.insert_records(&[]).await.unwrap();
    let all = store.list_records(&RecordFilter::default()).await.unwrap();
    let ids: Vec<&str> = all.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["req-full", "r3", "r2", "r1"]);
    // The first write wins.
    assert_eq!(store.record("r1").await.unwrap().unwrap().status, 200);

    // A batch longer than one statement (split 64 + 8 + 1 + 1 + 1 + 1) keeps every
    // row, including a repeated id across two statements.
    let mut long: Vec<RequestRecord> =
        (0..75).map(|i| rec(&format!("long-{i:03}"), 10_000 + i)).collect();
    long.push(rec("long-000", 10_000));
    store.insert_records(&long).await.unwrap();
    let stored = store
        .list_records(&RecordFilter {
            since_ms: Some(10_000),
            until_ms: Some(10_075),
            limit: Some(500),
            ..RecordFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(stored.len(), 75);
    assert_eq!(store.record("long-074").await.unwrap(), Some(rec("long-074", 10_074)));

    // A non-finite cost is stored as unknown.
    store.insert_records(&[with(rec("nan", 5), |r| r.cost_usd = Some(f64::NAN))]).await.unwrap();
    assert_eq!(store.record("nan").await.unwrap().unwrap().cost_usd, None);

    // Out-of-range values are refused before anything is written.
    let huge = with(rec("r9", 9), |r| r.total_ms = u64::MAX);
    assert!(matches!(
        store.insert_records(&[rec("r8", 8), huge]).await,
        Err(StoreError::Invalid(_))
    ));
    assert_eq!(store.record("r8").await.unwrap(), None);
}

async fn case_records_filters(store: Store) {
    let batch = vec![
        with(rec("a", 1_000), |r| {
            r.user = Some("u1".into());
            r.project = Some("p1".into());
        }),
        with(rec("b", 2_000), |r| {
            r.user = Some("u2".into());
            r.project = Some("p1".into());
            r.resolved_model = Some("big".into());
        }),
        with(rec("c", 3_000), |r| {
            r.user = Some("u1".into());
            r.project = Some("p2".into());
            r.requested_model = "big".into();
            r.resolved_model = None;
            r.status = 404;
            r.error_code = Some("model_not_found".into());
        }),
        with(rec("d", 4_000), |r| {
            r.status = 429;
            r.routing.intent = Some("cheap".into());
        }),
    ];
    store.insert_records(&batch).await.unwrap();
    let ids = |v: Vec<RequestRecord>| v.into_iter().map(|r| r.id).collect::<Vec<_>>();
    let list = |f: RecordFilter| {
        let store = store.clone();
        async move { ids(store.list_records(&f).await.unwrap()) }
    };
    assert_eq!(list(RecordFilter::default()).await, ["d", "c", "b", "a"]);
    assert_eq!(
        list(RecordFilter { user: Some("u1".into()), ..Default::default() }).await,
        ["c", "a"]
    );
    assert_eq!(
        list(RecordFilter { project: Some("p1".into()), ..Default::default() }).await,
        ["b", "a"]
    );
    // Resolved or requested.
    assert_eq!(
        list(RecordFilter { model: Some("big".into()), ..Default::default() }).await,
        ["c", "b"]
    );
    assert_eq!(list(RecordFilter { status: Some(429), ..Default::default() }).await, ["d"]);
    assert_eq!(
        list(RecordFilter { intent: Some("cheap".into()), ..Default::default() }).await,
        ["d"]
    );
    // since inclusive, until exclusive.
    assert_eq!(
        list(RecordFilter { since_ms: Some(2_000), until_ms: Some(4_000), ..Default::default() })
            .await,
        ["c", "b"]
    );
    assert_eq!(
        list(RecordFilter {
            user: Some("u1".into()),
            project: Some("p2".into()),
            status: Some(404),
            since_ms: Some(3_000),
            ..Default::default()
        })
        .await,
        ["c"]
    );
    assert!(
        list(RecordFilter { user: Some("nobody".into()), ..Default::default() }).await.is_empty()
    );
    assert_eq!(list(RecordFilter { limit: Some(2), ..Default::default() }).await, ["d", "c"]);
    assert_eq!(list(RecordFilter { limit: Some(0), ..Default::default() }).await, ["d"]);
}

async fn case_records_limit(store: Store) {
    // More than one INSERT chunk, more than the maximum page.
    let batch: Vec<RequestRecord> = (0..1_205u64).map(|i| rec(&format!("r{i:05}"), i)).collect();
    store.insert_records(&batch).await.unwrap();
    let page = store.list_records(&RecordFilter::default()).await.unwrap();
    assert_eq!(page.len(), 100);
    assert_eq!(page[0].id, "r01204");
    assert_eq!(page[99].id, "r01105");
    let big = store
        .list_records(&RecordFilter { limit: Some(5_000), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(big.len(), 1_000);
    assert!(big.windows(2).all(|w| w[0].time_ms > w[1].time_ms));
    assert_eq!(store.delete_records_before(i64::MAX).await.unwrap(), 1_205);
}

// -------------------------------------------------------------------- usage

fn timed(id: &str, model: &str, total_ms: u64, cost: Option<f64>) -> RequestRecord {
    with(rec(id, 10_000), |r| {
        r.resolved_model = Some(model.into());
        r.requested_model = model.into();
        r.total_ms = total_ms;
        r.cost_usd = cost;
    })
}

async fn case_usage(store: Store) {
    let batch = vec![
        with(timed("a1", "alpha", 300, Some(0.25)), |r| {
            r.usage = Usage {
                input_tokens: Some(10),
                output_tokens: Some(5),
                cache_read_tokens: Some(2),
                cache_write_tokens: Some(1),
                reasoning_tokens: None,
            };
        }),
        with(timed("a2", "alpha", 10_000, Some(0.5)), |r| {
            r.usage = Usage { input_tokens: Some(20), ..Usage::default() };
            r.status = 502;
        }),
        with(timed("a3", "alpha", 100, None), |r| {
            r.error_code = Some("client_closed".into());
        }),
        timed("a4", "alpha", 200, Some(0.125)),
        timed("b1", "beta", 400, None),
        timed("b2", "beta", 600, None),
        with(timed("c1", "x", 50, Some(0.0)), |r| {
            r.resolved_model = None;
            r.requested_model = "gamma?".into();
        }),
        // Outside the window below.
        with(timed("old", "alpha", 99_999, Some(9.0)), |r| r.time_ms = 1),
    ];
    store.insert_records(&batch).await.unwrap();
    let f = RecordFilter { since_ms: Some(5_000), ..RecordFilter::default() };
    let rows = store.usage(&f, UsageBy::Model, 0).await.unwrap();
    let keys: Vec<Option<&str>> = rows.iter().map(|r| r.key.as_deref()).collect();
    assert_eq!(keys, [Some("alpha"), Some("beta"), Some("gamma?")]);

    let alpha = &rows[0];
    assert_eq!(alpha.requests, 4);
    assert_eq!(alpha.errors, 2);
    assert_eq!(
        (
            alpha.input_tokens,
            alpha.output_tokens,
            alpha.cache_read_tokens,
            alpha.cache_write_tokens
        ),
        (30, 5, 2, 1)
    );
    assert_eq!(alpha.cost_usd, Some(0.875));
    assert!(!alpha.cost_complete);
    // Sorted: 100, 200, 300, 10000 → nearest rank 2 and 4.
    assert_eq!((alpha.p50_ms, alpha.p95_ms), (200, 10_000));
    assert_eq!(alpha.slo_breach_share, 0.25);

    let beta = &rows[1];
    assert_eq!(beta.requests, 2);
    assert_eq!(beta.errors, 0);
    assert_eq!(beta.cost_usd, None, "only unknown costs");
    assert!(!beta.cost_complete);
    assert_eq!((beta.p50_ms, beta.p95_ms), (400, 600));
    assert_eq!(beta.input_tokens, 0);

    let gamma = &rows[2];
    assert_eq!(gamma.cost_usd, Some(0.0), "a known zero is not unknown");
    assert!(gamma.cost_complete);
    assert_eq!((gamma.p50_ms, gamma.p95_ms), (50, 50));
    assert_eq!(gamma.slo_breach_share, 0.0);

    // Without the window the old record joins alpha.
    // Read from the rollups: the percentile to its bucket (see rollups.rs).
    let all = store.usage(&RecordFilter::default(), UsageBy::Model, 0).await.unwrap();
    assert_eq!(all[0].requests, 5);
    assert!((99_999..109_100).contains(&all[0].p95_ms), "{}", all[0].p95_ms);
    // Nothing matches: no rows.
    let none = RecordFilter { user: Some("nobody".into()), ..RecordFilter::default() };
    assert!(store.usage(&none, UsageBy::Model, 0).await.unwrap().is_empty());
}

async fn case_usage_slo_and_groupings(store: Store) {
    let batch = vec![
        with(timed("1", "m", 400, Some(1.0)), |r| {
            r.user = Some("u1".into());
            r.project = Some("p1".into());
            r.served_provider = Some("openai".into());
        }),
        with(timed("2", "m", 600, Some(2.0)), |r| {
            r.user = Some("u1".into());
            r.project = Some("p2".into());
            r.served_provider = Some("azure".into());
        }),
        with(timed("3", "m", 70_000, Some(4.0)), |r| {
            r.user = Some("u2".into());
            r.project = Some("p1".into());
        }),
    ];
    store.insert_records(&batch).await.unwrap();
    let f = RecordFilter::default();
    let share = |slo| {
        let store = store.clone();
        let f = f.clone();
        async move { store.usage(&f, UsageBy::Model, slo).await.unwrap()[0].slo_breach_share }
    };
    // 0 → 5000; 100 → clamped to 500; a huge SLO → clamped to 60000.
    assert!((share(0).await - 1.0 / 3.0).abs() < 1e-9);
    assert!((share(100).await - 2.0 / 3.0).abs() < 1e-9);
    assert!((share(550).await - 2.0 / 3.0).abs() < 1e-9);
    assert!((share(1_000).await - 1.0 / 3.0).abs() < 1e-9);
    assert!((share(u64::MAX).await - 1.0 / 3.0).abs() < 1e-9);

    let by = |b| {
        let store = store.clone();
        let f = f.clone();
        async move {
            store
                .usage(&f, b, 0)
                .await
                .unwrap()
                .into_iter()
                .map(|r| (r.key, r.requests, r.cost_usd))
                .collect::<Vec<_>>()
        }
    };
    let s = |x: &str| Some(x.to_owned());
    assert_eq!(by(UsageBy::User).await, [(s("u1"), 2, Some(3.0)), (s("u2"), 1, Some(4.0))]);
    assert_eq!(by(UsageBy::Project).await, [(s("p1"), 2, Some(5.0)), (s("p2"), 1, Some(2.0))]);
    // A request no provider served groups under None.
    assert_eq!(
        by(UsageBy::Provider).await,
        [(None, 1, Some(4.0)), (s("azure"), 1, Some(2.0)), (s("openai"), 1, Some(1.0))]
    );
}

// ---------------------------------------------------------------- retention

async fn case_retention(store: Store) {
    store.insert_records(&[rec("a", 1_000), rec("b", 2_000), rec("c", 3_000)]).await.unwrap();
    assert_eq!(store.delete_records_before(2_000).await.unwrap(), 1);
    assert_eq!(store.delete_records_before(2_000).await.unwrap(), 0);
    assert_eq!(store.record("a").await.unwrap(), None);
    assert!(store.record("b").await.unwrap().is_some());
    assert_eq!(store.delete_records_before(10_000).await.unwrap(), 2);
    assert!(store.list_records(&RecordFilter::default()).await.unwrap().is_empty());
}

// -------------------------------------------------------------- concurrency

async fn case_concurrent_writers(store: Store) {
    // Users (read-then-write transactions), keys and record batches at once.
    let mut tasks = Vec::new();
    for i in 0..12 {
        let s = store.clone();
        tasks.push(tokio::spawn(async move {
            let u = member(&s, &format!("user{i}@example.com")).await;
            s.create_key(NewKey { user_id: u.id, ..NewKey::default() }).await.unwrap();
            let batch: Vec<RequestRecord> =
                (0..50u64).map(|j| rec(&format!("c{i}-{j}"), i * 100 + j)).collect();
            s.insert_records(&batch).await.unwrap();
            s.insert_records(&batch).await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    // Same local part, concurrently: every one gets its own primary project.
    let mut tasks = Vec::new();
    for i in 0..6 {
        let s = store.clone();
        tasks.push(tokio::spawn(async move { member(&s, &format!("same@host{i}.example")).await }));
    }
    let mut names = Vec::new();
    for t in tasks {
        let u = t.await.unwrap();
        names.push(store.project(&u.primary_project_id.unwrap()).await.unwrap().unwrap().name);
    }
    names.sort();
    assert_eq!(names, ["same", "same-2", "same-3", "same-4", "same-5", "same-6"]);
    assert_eq!(store.list_users().await.unwrap().len(), 18);
    assert_eq!(store.list_keys(None).await.unwrap().len(), 12);
    let f = RecordFilter { limit: Some(1_000), ..RecordFilter::default() };
    assert_eq!(store.list_records(&f).await.unwrap().len(), 600);
    // Twelve writers adding to one rollup group at once, each batch twice: every
    // record counted, once.
    let rolled = store.usage(&RecordFilter::default(), UsageBy::Model, 0).await.unwrap();
    assert_eq!(rolled[0].requests, 600);
    // The slices' histograms are merged by read and write back: none lost.
    let sql = "SELECT latency FROM request_rollup_slices WHERE dimension = ''";
    let histograms: Vec<String> = match store.pool() {
        DbPool::Sqlite(p) => sqlx::query_scalar(sql).fetch_all(p).await.unwrap(),
        DbPool::Postgres(p) => sqlx::query_scalar(sql).fetch_all(p).await.unwrap(),
    };
    let counted: i64 = histograms
        .iter()
        .flat_map(|h| h.split_whitespace())
        .map(|pair| pair.split_once(':').unwrap().1.parse::<i64>().unwrap())
        .sum();
    // An hour and a day each.
    assert_eq!(counted, 2 * 600);
}

// ------------------------------------------------------- backend-specific

#[tokio::test]
async fn sqlite_in_memory_keeps_one_database() {
    let store = Store::connect("sqlite::memory:").await.unwrap();
    store.migrate().await.unwrap();
    let u = member(&store, "mem@example.com").await;
    for _ in 0..3 {
        assert_eq!(store.user(&u.id).await.unwrap().as_ref(), Some(&u));
    }
    // A second in-memory store is a different database.
    let other = Store::connect("sqlite::memory:").await.unwrap();
    other.migrate().await.unwrap();
    assert_eq!(other.user(&u.id).await.unwrap(), None);
}

#[tokio::test]
async fn sqlite_creates_the_file_and_its_folder() {
    let dir = std::env::temp_dir().join(unique("switchyard_store_dir"));
    let path = dir.join("nested").join("store.db");
    let store = Store::connect(&format!("sqlite://{}", path.display())).await.unwrap();
    store.migrate().await.unwrap();
    member(&store, "file@example.com").await;
    store.close().await;
    assert!(path.exists());
    // Reopening finds the data and the migrations applied.
    let again = Store::connect(&format!("sqlite://{}", path.display())).await.unwrap();
    again.migrate().await.unwrap();
    assert!(again.user_by_email("file@example.com").await.unwrap().is_some());
    again.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The database and its `-wal` and `-shm` are the owner's only, and so are the
/// folders the store creates for them; a folder that exists keeps its mode.
#[cfg(unix)]
#[tokio::test]
async fn sqlite_files_are_the_owners_only() {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = std::env::temp_dir().join(unique("switchyard_store_modes"));
    let path = dir.join("nested").join("store.db");
    let store = Store::connect(&format!("sqlite://{}", path.display())).await.unwrap();
    store.migrate().await.unwrap();
    // A write, while the pool is open: SQLite removes -wal and -shm on close.
    member(&store, "modes@example.com").await;
    let with = |suffix: &str| {
        let mut p = path.clone().into_os_string();
        p.push(suffix);
        std::path::PathBuf::from(p)
    };
    for file in [path.clone(), with("-wal"), with("-shm")] {
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join("nested")), 0o700);
    store.close().await;

    let shared = dir.join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o750)).unwrap();
    let path = shared.join("store.db");
    let store = Store::connect(&format!("sqlite://{}", path.display())).await.unwrap();
    store.migrate().await.unwrap();
    store.close().await;
    assert_eq!(mode(&shared), 0o750, "an existing folder is the operator's");
    assert_eq!(mode(&path), 0o600);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn errors_and_debug_never_show_the_password() {
    let err = Store::connect("mysql://admin:hunter2secret@localhost/db").await.unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)));
    assert!(!err.to_string().contains("hunter2secret"), "{err}");
    let store = Store::connect("sqlite::memory:").await.unwrap();
    assert_eq!(format!("{store:?}"), "Store { backend: Sqlite, .. }");
}

#[tokio::test]
async fn postgres_unreachable_fails_fast_with_the_cause() {
    let started = std::time::Instant::now();
    let err = Store::connect("postgres://admin:hunter2secret@127.0.0.1:1/db").await.unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
    let msg = err.to_string();
    assert!(msg.contains("refused"), "{msg}");
    assert!(
        !msg.contains("hunter2secret") && !format!("{err:?}").contains("hunter2secret"),
        "{msg}"
    );
}
