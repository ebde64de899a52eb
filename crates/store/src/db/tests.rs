use super::keys::{SECRET_BODY_LEN, URL_SAFE, new_secret};
use super::users::normalize_email;
use super::*;

#[test]
fn secrets_have_the_documented_shape() {
    let s = new_secret().unwrap();
    assert_eq!(s.len(), 3 + SECRET_BODY_LEN);
    assert!(s.starts_with("sy-"));
    assert!(s[3..].bytes().all(|b| URL_SAFE.contains(&b)), "{s}");
    assert_ne!(s, new_secret().unwrap());
    // Known vector: SHA-256("abc").
    assert_eq!(
        hash_secret("abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    let id = new_id("usr").unwrap();
    assert_eq!(id.len(), 4 + 24);
}

#[test]
fn every_migration_file_is_embedded() {
    for (dir, listed) in [("sqlite", SQLITE_MIGRATIONS), ("postgres", POSTGRES_MIGRATIONS)] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations").join(dir);
        let mut files: Vec<String> = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".sql"))
            .collect();
        files.sort();
        let expected: Vec<String> =
            listed.iter().map(|(v, d, _)| format!("{v:04}_{d}.sql")).collect();
        assert_eq!(files, expected, "{dir}");
    }
    assert_eq!(SQLITE_MIGRATIONS.len(), POSTGRES_MIGRATIONS.len());
}

/// Migrations only add (tables, columns, indexes), so the release before keeps
/// working on the schema a new one migrated, through a rolling deploy and a
/// rollback (`migrator`; docs/operations.md, "The database schema"). These did
/// more, before the rule: a new exception is a decision, documented there.
const REWROTE_OR_DROPPED: [i64; 5] = [5, 6, 8, 11, 12];

#[test]
fn migrations_only_add() {
    let forbidden =
        ["DROP ", "RENAME", "ALTER COLUMN", "DELETE FROM", "TRUNCATE", "UPDATE ", "INSERT "];
    for (dir, listed) in [("sqlite", SQLITE_MIGRATIONS), ("postgres", POSTGRES_MIGRATIONS)] {
        for (version, name, sql) in listed {
            if REWROTE_OR_DROPPED.contains(version) {
                continue;
            }
            let code: String = sql
                .lines()
                .map(|l| l.split("--").next().unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n")
                .to_ascii_uppercase();
            for word in forbidden {
                assert!(
                    !code.contains(word),
                    "{dir}/{version:04}_{name}.sql: {word:?}: a migration only adds (an older \
                     release runs on the schema it leaves)"
                );
            }
        }
    }
}

#[test]
fn emails_are_normalized_and_checked() {
    assert_eq!(normalize_email(" Alice@Example.COM ").unwrap(), "alice@example.com");
    for bad in ["", "alice", "@x", "a@", "a@b@c"] {
        assert!(normalize_email(bad).is_err(), "{bad}");
    }
    assert!(is_sqlite_memory("sqlite::memory:"));
    assert!(!is_sqlite_memory("sqlite://data/x.db"));
}

/// `storage.max_connections` sizes the pool; 0 is refused; an in-memory
/// database keeps its one connection whatever is asked.
#[tokio::test]
async fn the_pool_is_the_size_asked() {
    let path = std::env::temp_dir().join(format!("switchyard-pool-{}.db", std::process::id()));
    let url = format!("sqlite://{}", path.display());
    let size = |s: &Store| match s.pool() {
        DbPool::Sqlite(p) => p.options().get_max_connections(),
        DbPool::Postgres(p) => p.options().get_max_connections(),
    };
    let default = Store::connect(&url).await.expect("open");
    assert_eq!(size(&default), SQLITE_MAX_CONNECTIONS);
    let three = Store::connect_with(&url, Some(3)).await.expect("open");
    assert_eq!(size(&three), 3);
    assert!(Store::connect_with(&url, Some(0)).await.is_err());
    let memory = Store::connect_with("sqlite::memory:", Some(5)).await.expect("open");
    assert_eq!(size(&memory), 1);
    for s in [default, three, memory] {
        s.close().await;
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}
