//! End to end: the built `switchyard` binary's operator subcommands against a
//! fresh database named by a temporary configuration file. Request records (which
//! only the gateway writes) are inserted through the Store API.
//!
//! Every case is written once (`async fn case_x(db: TestDb)`) and runs on both
//! backends (`x_sqlite`, `x_postgres`; see `switchyard_store::testing`): SQLite in
//! a temporary file, PostgreSQL in a fresh schema at `SWITCHYARD_TEST_POSTGRES_URL`
//! (the config file's URL selects it with `search_path`; skipped, saying so, when
//! the variable is unset, unless `SWITCHYARD_REQUIRE_POSTGRES=1`).

// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use switchyard_core::record::{AttemptRecord, RequestRecord};
use switchyard_store::seal::{SealedRef, Sealer};
use switchyard_store::testing::TestDb;

const OLD_SECRET: &str = "the first gateway secret of 36 bytes";
const NEW_SECRET: &str = "the second gateway secret of 37 bytes";
const PROVIDER_KEY: &str = "sk-test-PROVIDER-KEY-0123456789";

/// Variables that would change what the binary does if the test runner had them.
const CLEARED: &[&str] = &[
    "SWITCHYARD_CONFIG",
    "SWITCHYARD_SECRET",
    "SWITCHYARD_SECRET_ID",
    "SWITCHYARD_PREVIOUS_SECRETS",
    "SWITCHYARD_ADMIN_KEY",
    "SWITCHYARD_API_KEY",
];

use switchyard_store::on_both_backends;

on_both_backends! {
    case_users_projects_groups_and_keys =>
        users_projects_groups_and_keys_sqlite, users_projects_groups_and_keys_postgres;
    case_key_limits_at_creation_and_later =>
        key_limits_at_creation_and_later_sqlite, key_limits_at_creation_and_later_postgres;
    case_routing_policies_of_keys_and_projects =>
        routing_policies_of_keys_and_projects_sqlite,
        routing_policies_of_keys_and_projects_postgres;
    case_rules_add_list_delete => rules_add_list_delete_sqlite, rules_add_list_delete_postgres;
    case_config_rules_naming_no_one_are_warned_about =>
        config_rules_naming_no_one_are_warned_about_sqlite,
        config_rules_naming_no_one_are_warned_about_postgres;
    case_credentials_and_secret_rotation =>
        credentials_and_secret_rotation_sqlite, credentials_and_secret_rotation_postgres;
    case_logs_and_usage => logs_and_usage_sqlite, logs_and_usage_postgres;
    case_limits_and_budgets => limits_and_budgets_sqlite, limits_and_budgets_postgres;
    case_failures_are_one_line_and_nonzero =>
        failures_are_one_line_and_nonzero_sqlite, failures_are_one_line_and_nonzero_postgres;
    case_config_comes_from_the_flag_the_variable_or_the_default =>
        config_comes_from_the_flag_the_variable_or_the_default_sqlite,
        config_comes_from_the_flag_the_variable_or_the_default_postgres;
    case_status_classes_page_through_more_than_a_store_page =>
        status_classes_page_through_more_than_a_store_page_sqlite,
        status_classes_page_through_more_than_a_store_page_postgres;
}

/// A temporary folder holding `config.yaml`, which names the test's database.
struct Env {
    dir: PathBuf,
    config: PathBuf,
}

impl Env {
    /// The folder only: `config.yaml` is not written yet (commands that need no
    /// database, such as `check`, write their own).
    fn scratch(name: &str) -> Env {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir()
            .join(format!("switchyard-cli-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("config.yaml");
        Env { dir, config }
    }

    fn new(name: &str, db: &TestDb) -> Env {
        let env = Env::scratch(name);
        // A JSON string is a YAML double-quoted scalar: any URL survives as is.
        let url = serde_json::to_string(db.url()).unwrap();
        std::fs::write(
            &env.config,
            format!(
                "storage: {{ url: {url} }}\n\
                 providers: {{ mock: {{ wire: mock }} }}\n\
                 models: [{{ id: mock-echo, deployments: [{{ provider: mock }}] }}]\n",
            ),
        )
        .unwrap();
        env
    }

    /// `switchyard check config.yaml` after writing `yaml` there.
    fn check(&self, yaml: &str) -> Out {
        std::fs::write(&self.config, yaml).unwrap();
        self.raw(&["check", &self.config.display().to_string()], &[], None)
    }

    /// `switchyard ARGS --config <config>`.
    fn run(&self, args: &[&str]) -> Out {
        self.run_with(args, &[], None)
    }

    fn run_with(&self, args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Out {
        let config = self.config.display().to_string();
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--config", &config]);
        self.raw(&all, env, stdin)
    }

    /// The binary with exactly these arguments, in the temporary folder.
    fn raw(&self, args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Out {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
        cmd.args(args).current_dir(&self.dir).stdout(Stdio::piped()).stderr(Stdio::piped());
        for var in CLEARED {
            cmd.env_remove(var);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
        let mut child = cmd.spawn().unwrap();
        if let Some(text) = stdin {
            child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        }
        let output = child.wait_with_output().unwrap();
        Out {
            args: args.join(" "),
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[derive(Debug)]
struct Out {
    args: String,
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn ok(self) -> Out {
        assert_eq!(self.code, 0, "`switchyard {}` failed: {self:#?}", self.args);
        self
    }

    /// Failed with exit status 1 and exactly one line on stderr.
    fn failed(self) -> Out {
        assert_eq!(self.code, 1, "`switchyard {}` should fail: {self:#?}", self.args);
        assert_eq!(self.stderr.lines().count(), 1, "{self:#?}");
        assert!(self.stderr.starts_with("switchyard: "), "{self:#?}");
        self
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("{e}: {self:#?}"))
    }

    fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

fn ids(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect()
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

async fn case_users_projects_groups_and_keys(db: TestDb) {
    let env = Env::new("keys", &db);
    let migrated = env.run(&["migrate"]).ok();
    assert!(
        migrated.stdout.contains(db.backend().as_str()) && migrated.stdout.contains("up to date"),
        "{migrated:#?}"
    );
    if let Some(file) = db.sqlite_path() {
        assert!(file.exists());
    }

    let alice = env
        .run(&["users", "create", "--email", "Alice@Example.com", "--name", "Alice", "--json"])
        .ok()
        .json();
    assert_eq!(alice["email"], "alice@example.com");
    assert_eq!(alice["role"], "member");
    let alice_id = alice["id"].as_str().unwrap().to_owned();
    env.run(&["users", "create", "--email", "bob@example.com", "--role", "viewer"]).ok();
    env.run(&["users", "set-role", "bob@example.com", "admin"]).ok();
    let users = env.run(&["users", "list", "--json"]).ok().json();
    assert_eq!(users.as_array().unwrap().len(), 2);
    assert_eq!(users[1]["email"], "bob@example.com");
    assert_eq!(users[1]["role"], "admin");
    let table = env.run(&["users", "list"]).ok().stdout;
    assert!(
        table.starts_with("ID  ") && table.contains("alice@example.com") && table.contains("Alice"),
        "{table}"
    );

    env.run(&["projects", "create", "research"]).ok();
    let projects = env.run(&["projects", "list", "--json"]).ok().json();
    let names: Vec<&str> =
        projects.as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["alice", "bob", "research"]);
    let research_id = projects[2]["id"].as_str().unwrap().to_owned();
    env.run(&["groups", "create", "ops"]).ok();
    env.run(&["groups", "add-member", "ops", "bob@example.com"]).ok();
    assert_eq!(env.run(&["groups", "list", "--json"]).ok().json()[0]["name"], "ops");

    // Binding a key to a project needs membership.
    let refused = env
        .run(&["keys", "create", "--user", "alice@example.com", "--project", "research"])
        .failed();
    assert!(refused.stderr.contains("not a member"), "{refused:#?}");
    env.run(&["projects", "add-member", "research", "alice@example.com"]).ok();

    let created = env
        .run(&[
            "keys",
            "create",
            "--user",
            "alice@example.com",
            "--project",
            "research",
            "--label",
            "ci",
            "--expires-in",
            "30d",
            "--allow-model",
            "mock-*",
            "--allow-model",
            "other-*",
        ])
        .ok();
    let secret = created.stdout.trim().to_owned();
    assert_eq!(created.stdout.lines().count(), 1, "{created:#?}");
    assert!(secret.starts_with("sy-") && secret.len() == 43, "{created:#?}");
    assert!(created.stderr.contains("will not be shown again"), "{created:#?}");
    assert!(created.stderr.contains("\"other-*\" matches no model"), "{created:#?}");
    let prefix = &secret[..9];

    // The secret works: the store finds the key by it.
    let found = db.store().key_by_secret(&secret).await.unwrap().unwrap();
    assert_eq!(found.prefix, prefix);

    let mut outputs = Vec::new();
    let listed = env.run(&["keys", "list", "--json"]).ok();
    let keys = listed.json();
    assert_eq!(keys.as_array().unwrap().len(), 1);
    let key = &keys[0];
    assert_eq!(key["prefix"], prefix);
    assert_eq!(key["user_id"].as_str(), Some(alice_id.as_str()));
    assert_eq!(key["project_id"].as_str(), Some(research_id.as_str()));
    assert_eq!(key["label"], "ci");
    assert_eq!(key["allowed_models"], json!(["mock-*", "other-*"]));
    let expires = key["expires_at"].as_i64().unwrap() - key["created_at"].as_i64().unwrap();
    assert!((30 * 86_400_000 - 60_000..=30 * 86_400_000 + 60_000).contains(&expires), "{expires}");
    assert!(key.get("hash").is_none() && key.get("secret").is_none(), "{key}");
    outputs.push(listed);
    let table = env.run(&["keys", "list", "--user", "alice@example.com"]).ok();
    assert!(table.stdout.contains(prefix) && table.stdout.contains("research"), "{table:#?}");
    outputs.push(table);
    assert_eq!(
        env.run(&["keys", "list", "--user", "bob@example.com", "--json"]).ok().json(),
        json!([])
    );

    let key_id = key["id"].as_str().unwrap().to_owned();
    let revoked = env.run(&["keys", "revoke", prefix]).ok();
    assert!(revoked.stdout.contains(&key_id), "{revoked:#?}");
    outputs.push(revoked);
    let again = env.run(&["keys", "revoke", &key_id]).ok();
    assert!(again.stdout.contains("already revoked"), "{again:#?}");
    outputs.push(again);
    let after = env.run(&["keys", "list", "--json"]).ok();
    assert!(after.json()[0]["revoked_at"].is_i64(), "{after:#?}");
    outputs.push(after);
    env.run(&["keys", "revoke", "key_000000000000000000000000"]).failed();

    // A key with --json carries its secret, in the JSON only.
    let bob_key = env.run(&["keys", "create", "--user", "bob@example.com", "--json"]).ok();
    let bob_secret = bob_key.json()["secret"].as_str().unwrap().to_owned();
    assert!(bob_secret.starts_with("sy-") && !bob_key.stderr.contains(&bob_secret), "{bob_key:#?}");
    outputs.push(env.run(&["keys", "list"]).ok());
    outputs.push(env.run(&["users", "list", "--json"]).ok());

    for out in &outputs {
        assert!(!out.all().contains(&secret), "{out:#?}");
        assert!(!out.all().contains(&bob_secret), "{out:#?}");
    }

    // Disabled users get no new keys.
    env.run(&["users", "disable", &alice_id]).ok();
    assert_eq!(env.run(&["users", "list", "--json"]).ok().json()[0]["disabled"], true);
    env.run(&["keys", "create", "--user", &alice_id]).failed();
}

/// A key's own rate limits: given to `keys create`, shown by `list` and `show`,
/// changed by `keys limits` (the values given, keeping the others) and cleared.
async fn case_key_limits_at_creation_and_later(db: TestDb) {
    let env = Env::new("key-limits", &db);
    env.run(&["users", "create", "--email", "ana@example.com"]).ok();
    let created = env
        .run(&[
            "keys",
            "create",
            "--user",
            "ana@example.com",
            "--rpm",
            "60",
            "--concurrent",
            "2",
            "--json",
        ])
        .ok();
    let key = created.json();
    assert_eq!(key["limits"], json!({"rpm": 60, "concurrent": 2}));
    let (id, prefix) = (key["id"].as_str().unwrap(), key["prefix"].as_str().unwrap());
    let secret = key["secret"].as_str().unwrap().to_owned();
    let stored = db.store().key(id).await.unwrap().unwrap();
    assert_eq!((stored.limits.unwrap().rpm, stored.limits.unwrap().tpm), (Some(60), None));

    let mut outputs = Vec::new();
    let listed = env.run(&["keys", "list", "--json"]).ok();
    assert_eq!(listed.json()[0]["limits"], json!({"rpm": 60, "concurrent": 2}));
    outputs.push(listed);
    let table = env.run(&["keys", "list"]).ok();
    assert!(
        table.stdout.contains("LIMITS") && table.stdout.contains("60 rpm, 2 at once"),
        "{table:#?}"
    );
    outputs.push(table);
    let shown = env.run(&["keys", "show", prefix]).ok();
    assert!(
        shown.stdout.lines().any(|l| l.starts_with("limits") && l.ends_with("60 rpm, 2 at once")),
        "{shown:#?}"
    );
    outputs.push(shown);
    assert_eq!(env.run(&["keys", "show", id, "--json"]).ok().json()["id"], id);

    // The values given replace those and keep the others; the note says when a
    // running gateway sees it (the key cache, 5 s by default).
    let changed = env.run(&["keys", "limits", id, "--tpm", "1000", "--rpm", "30"]).ok();
    assert!(changed.stdout.contains("30 rpm, 1000 tpm, 2 at once"), "{changed:#?}");
    assert!(changed.stdout.contains("within 5.0s on a running gateway"), "{changed:#?}");
    outputs.push(changed);
    let json_out = env.run(&["keys", "limits", prefix, "--concurrent", "1", "--json"]).ok();
    assert_eq!(json_out.json()["limits"], json!({"rpm": 30, "tpm": 1000, "concurrent": 1}));
    outputs.push(json_out);

    // Zero, nothing to change, and --clear with values are refused; nothing changes.
    let zero = env.run(&["keys", "limits", id, "--rpm", "0"]);
    assert_eq!(zero.code, 2, "{zero:#?}");
    assert!(zero.stderr.contains("at least 1"), "{zero:#?}");
    let zero = env.run(&["keys", "create", "--user", "ana@example.com", "--tpm", "0"]);
    assert_eq!(zero.code, 2, "{zero:#?}");
    let both = env.run(&["keys", "limits", id, "--clear", "--rpm", "5"]);
    assert_eq!(both.code, 2, "{both:#?}");
    let nothing = env.run(&["keys", "limits", id]).failed();
    assert!(nothing.stderr.contains("nothing to change"), "{nothing:#?}");
    env.run(&["keys", "limits", "key_000000000000000000000000", "--clear"]).failed();
    assert_eq!(
        env.run(&["keys", "list", "--json"]).ok().json()[0]["limits"],
        json!({"rpm": 30, "tpm": 1000, "concurrent": 1})
    );

    let cleared = env.run(&["keys", "limits", id, "--clear"]).ok();
    assert!(cleared.stdout.contains("no limits of its own"), "{cleared:#?}");
    outputs.push(cleared);
    assert_eq!(env.run(&["keys", "list", "--json"]).ok().json()[0]["limits"], Value::Null);
    let shown = env.run(&["keys", "show", id]).ok();
    assert!(
        shown.stdout.lines().any(|l| l.starts_with("limits") && l.ends_with(" -")),
        "{shown:#?}"
    );
    outputs.push(shown);
    for out in &outputs {
        assert!(!out.all().contains(&secret), "{out:#?}");
    }
}

async fn case_routing_policies_of_keys_and_projects(db: TestDb) {
    let env = Env::new("routing", &db);
    env.run(&["users", "create", "--email", "ana@example.com"]).ok();
    let key = env.run(&["keys", "create", "--user", "ana@example.com", "--json"]).ok().json();
    let id = key["id"].as_str().unwrap().to_owned();
    let shown = env.run(&["keys", "routing", &id]).ok();
    assert!(shown.stdout.ends_with("none (the routes')\n"), "{shown:#?}");

    // The options given replace those settings and keep the others.
    let set = env.run(&["keys", "routing", &id, "--strategy", "cost"]).ok();
    assert!(set.stdout.contains("is now strategy cost"), "{set:#?}");
    let set = env
        .run(&[
            "keys",
            "routing",
            &id,
            "--max-cost-per-1k-tokens",
            "0.004",
            "--unknown-cost",
            "allow",
        ])
        .ok();
    assert!(
        set.stdout.contains("strategy cost, at most $0.004 per 1k tokens, unpriced allowed"),
        "{set:#?}"
    );
    let stored = db.store().key(&id).await.unwrap().unwrap().routing.unwrap();
    assert_eq!(stored.max_cost_per_1k_tokens, Some(0.004));
    assert_eq!(stored.strategy, Some(switchyard_core::catalog::Strategy::Cost));

    // Checked before it is stored: an adaptive policy a cost strategy would not
    // read, a profile naming no catalog model, a negative ceiling.
    let idle = env.run(&["keys", "routing", &id, "--preset", "economy"]).failed();
    assert!(idle.stderr.contains("pins strategy cost, which does not read it"), "{idle:#?}");
    let file = env.dir.join("adaptive.json");
    std::fs::write(
        &file,
        r#"{"version": "v1", "weights": {"quality": 1}, "quality": {"profiles": [{"target": "nowhere", "score": 0.5}]}}"#,
    )
    .unwrap();
    let bad = env
        .run(&[
            "keys",
            "routing",
            &id,
            "--strategy",
            "adaptive",
            "--adaptive-file",
            file.to_str().unwrap(),
        ])
        .failed();
    assert!(bad.stderr.contains("`nowhere` is no catalog model"), "{bad:#?}");
    let negative = env.run(&["keys", "routing", &id, "--max-cost-per-1k-tokens=-1"]).failed();
    assert!(negative.stderr.contains("-1 is not a price"), "{negative:#?}");
    assert_eq!(db.store().key(&id).await.unwrap().unwrap().routing, Some(stored));

    // A project's, by name; --json prints the project; --clear removes it.
    env.run(&["projects", "create", "storefront"]).ok();
    let p = env
        .run(&[
            "projects",
            "routing",
            "storefront",
            "--strategy",
            "adaptive",
            "--preset",
            "quality",
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(p["routing"], json!({"strategy": "adaptive", "adaptive": {"preset": "quality"}}));
    let shown = env.run(&["projects", "routing", "storefront"]).ok();
    assert!(shown.stdout.contains("strategy adaptive, adaptive quality"), "{shown:#?}");
    let both = env.run(&["projects", "routing", "storefront", "--clear", "--strategy", "cost"]);
    assert_eq!(both.code, 2, "{both:#?}");
    env.run(&["projects", "routing", "storefront", "--clear"]).ok();
    assert_eq!(
        env.run(&["projects", "routing", "storefront", "--json"]).ok().stdout.trim(),
        "null"
    );
    env.run(&["keys", "routing", &id, "--clear"]).ok();
    assert_eq!(db.store().key(&id).await.unwrap().unwrap().routing, None);
}

/// Access rules in the file name projects and users by name (or id); one that
/// names no one in the database does nothing, and `check` says so.
async fn case_config_rules_naming_no_one_are_warned_about(db: TestDb) {
    let env = Env::new("config-rules", &db);
    let config = std::fs::read_to_string(&env.config).unwrap();
    std::fs::write(
        &env.config,
        format!(
            "{config}access_rules:\n             \x20 - {{ name: shop-closed, effect: deny, pattern: \"*\", project: storefront, reason: closed }}\n             \x20 - {{ name: carol-closed, effect: deny, pattern: \"*\", user: carol@example.com, reason: closed }}\n"
        ),
    )
    .unwrap();
    let path = env.config.display().to_string();
    // The first command creates and migrates the database.
    env.run(&["users", "create", "--email", "dave@example.com"]).ok();
    let out = env.raw(&["check", &path], &[], None).ok();
    for rule in ["shop-closed", "carol-closed"] {
        assert!(
            out.stdout.contains(&format!("access_rules[{rule}]"))
                && out.stdout.contains("is not in the database"),
            "{}",
            out.all()
        );
    }
    env.run(&["projects", "create", "storefront"]).ok();
    env.run(&["users", "create", "--email", "Carol@example.com"]).ok();
    let out = env.raw(&["check", &path], &[], None).ok();
    assert!(!out.stdout.contains("access_rules["), "{}", out.all());
}

/// `check` reads the database as it is: checking a file against a database an
/// older release left (migrated through 17 here) looks its rules' subjects up
/// and leaves its schema at 17, where `serve` or any operator command would
/// migrate it.
#[tokio::test]
async fn check_leaves_the_database_schema_as_it_is() {
    let db = switchyard_store::testing::sqlite_temp_through(17).await;
    let env = Env::new("check-as-is", &db);
    let config = std::fs::read_to_string(&env.config).unwrap();
    let path = env.config.display().to_string();
    let out = env.check(&format!(
        "{config}access_rules:\n  - {{ name: eve-closed, effect: deny, pattern: \"*\", user: eve@example.com, reason: closed }}\n"
    ));
    let out = out.ok();
    assert!(out.stdout.contains("access_rules[eve-closed]"), "{}", out.all());
    assert_eq!(db.store().schema_version().await.unwrap(), Some(17), "{path}");
    // A command that works on the database migrates it.
    env.run(&["users", "list"]).ok();
    assert!(db.store().schema_version().await.unwrap() > Some(17));
}

async fn case_rules_add_list_delete(db: TestDb) {
    let env = Env::new("rules", &db);
    let bob = env.run(&["users", "create", "--email", "bob@example.com", "--json"]).ok().json();
    env.run(&["groups", "create", "research"]).ok();

    env.run(&[
        "rules",
        "add",
        "--name",
        "opus-closed",
        "--effect",
        "deny",
        "--pattern",
        "Claude-Opus-*",
        "--reason",
        "too expensive",
    ])
    .ok();
    env.run(&[
        "rules",
        "add",
        "--name",
        "opus-research",
        "--effect",
        "allow",
        "--pattern",
        "claude-opus-*",
        "--group",
        "research",
        "--reason",
        "research may",
        "--priority",
        "10",
    ])
    .ok();
    env.run(&[
        "rules",
        "add",
        "--name",
        "bob-no-mock",
        "--effect",
        "deny",
        "--pattern",
        "mock-*",
        "--user",
        "bob@example.com",
        "--reason",
        "no",
        "--priority",
        "-5",
    ])
    .ok();
    // One subject at most; known groups only; unique names.
    let two = env.run(&[
        "rules",
        "add",
        "--name",
        "x",
        "--effect",
        "deny",
        "--pattern",
        "*",
        "--role",
        "admin",
        "--user",
        "bob@example.com",
        "--reason",
        "r",
    ]);
    assert_eq!(two.code, 2, "{two:#?}");
    env.run(&[
        "rules",
        "add",
        "--name",
        "x",
        "--effect",
        "deny",
        "--pattern",
        "*",
        "--group",
        "nope",
        "--reason",
        "r",
    ])
    .failed();
    let dup = env
        .run(&[
            "rules",
            "add",
            "--name",
            "opus-closed",
            "--effect",
            "deny",
            "--pattern",
            "*",
            "--reason",
            "r",
        ])
        .failed();
    assert!(dup.stderr.contains("already exists"), "{dup:#?}");

    let rules = env.run(&["rules", "list", "--json"]).ok().json();
    assert_eq!(
        rules.as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect::<Vec<_>>(),
        ["opus-research", "opus-closed", "bob-no-mock"]
    );
    assert_eq!(rules[0]["subject"], json!({ "kind": "group", "value": "research" }));
    assert_eq!(rules[0]["priority"], 10);
    // Patterns are normalized as in the configuration file.
    assert_eq!(rules[1]["pattern"], "claude-opus-*");
    assert_eq!(rules[1]["subject"], json!({ "kind": "any" }));
    assert_eq!(rules[1]["effect"], "deny");
    // A user subject is stored as the user's id (what the gateway matches).
    assert_eq!(rules[2]["subject"], json!({ "kind": "user", "value": bob["id"] }));
    let table = env.run(&["rules", "list"]).ok().stdout;
    assert!(table.contains("user:bob@example.com") && table.contains("too expensive"), "{table}");

    env.run(&["rules", "delete", "opus-closed"]).ok();
    env.run(&["rules", "delete", "opus-closed"]).failed();
    let left = env.run(&["rules", "list", "--json"]).ok().json();
    assert_eq!(left.as_array().unwrap().len(), 2);
    assert!(!left.to_string().contains("opus-closed"));
}

async fn case_credentials_and_secret_rotation(db: TestDb) {
    let env = Env::new("byok", &db);
    env.run(&["users", "create", "--email", "alice@example.com"]).ok();
    let old = [("SWITCHYARD_SECRET", OLD_SECRET)];
    let stdin = format!("{PROVIDER_KEY}\n");

    // Without the gateway secret nothing can be sealed.
    let no_secret = env.run_with(
        &["credentials", "set", "--user", "alice@example.com", "--provider", "mock"],
        &[],
        Some(&stdin),
    );
    assert!(no_secret.failed().stderr.contains("SWITCHYARD_SECRET is not set"));
    // Unknown providers and empty input are refused.
    env.run_with(
        &["credentials", "set", "--user", "alice@example.com", "--provider", "openai"],
        &old,
        Some(&stdin),
    )
    .failed();
    env.run_with(
        &["credentials", "set", "--user", "alice@example.com", "--provider", "mock"],
        &old,
        Some("\n"),
    )
    .failed();

    let set = env
        .run_with(
            &["credentials", "set", "--user", "alice@example.com", "--provider", "mock"],
            &old,
            Some(&stdin),
        )
        .ok();
    assert!(set.stdout.contains("fp-"), "{set:#?}");
    // From a variable, for a project.
    let by_var = env
        .run_with(
            &[
                "credentials",
                "set",
                "--project",
                "alice",
                "--provider",
                "mock",
                "--key-env",
                "MY_KEY",
            ],
            &[("SWITCHYARD_SECRET", OLD_SECRET), ("MY_KEY", "sk-project-KEY-987654321")],
            None,
        )
        .ok();
    assert!(by_var.stdout.contains("project alice"), "{by_var:#?}");

    let listed = env.run(&["credentials", "list", "--json"]).ok();
    let creds = listed.json();
    assert_eq!(creds.as_array().unwrap().len(), 2, "{listed:#?}");
    for c in creds.as_array().unwrap() {
        assert!(c["fingerprint"].as_str().unwrap().starts_with("fp-"), "{c}");
        assert_eq!(c["key_id"], "k1");
        assert!(c.get("ciphertext").is_none() && c.get("nonce").is_none(), "{c}");
    }
    let mine =
        env.run(&["credentials", "list", "--user", "alice@example.com", "--json"]).ok().json();
    assert_eq!(mine.as_array().unwrap().len(), 1);
    assert_eq!(mine[0]["owner_kind"], "user");
    let table = env.run(&["credentials", "list"]).ok();
    assert!(
        table.stdout.contains("user:alice@example.com") && table.stdout.contains("project:alice"),
        "{table:#?}"
    );
    for out in [&set, &by_var, &listed, &table] {
        assert!(
            !out.all().contains(PROVIDER_KEY) && !out.all().contains("sk-project-KEY"),
            "{out:#?}"
        );
    }

    // A new secret without the old one: refused, nothing changed.
    let new_only = [("SWITCHYARD_SECRET", NEW_SECRET), ("SWITCHYARD_SECRET_ID", "k2")];
    let refused = env.run_with(&["secrets", "rotate"], &new_only, None).failed();
    assert!(
        refused.stderr.contains("cannot open 2 of 2")
            && refused.stderr.contains("Nothing was changed"),
        "{refused:#?}"
    );
    let unchanged = env.run(&["credentials", "list", "--json"]).ok().json();
    assert_eq!(unchanged, creds);

    let previous = format!("k1:{OLD_SECRET}");
    let rotating = [
        ("SWITCHYARD_SECRET", NEW_SECRET),
        ("SWITCHYARD_SECRET_ID", "k2"),
        ("SWITCHYARD_PREVIOUS_SECRETS", previous.as_str()),
    ];
    let rotated = env.run_with(&["secrets", "rotate"], &rotating, None).ok();
    assert!(
        rotated.stdout.contains("resealed 2") && rotated.stdout.contains("0 already current"),
        "{rotated:#?}"
    );
    let again = env.run_with(&["secrets", "rotate"], &rotating, None).ok();
    assert!(
        again.stdout.contains("resealed 0") && again.stdout.contains("2 already current"),
        "{again:#?}"
    );
    for out in [&refused, &rotated, &again] {
        assert!(!out.all().contains(PROVIDER_KEY) && !out.all().contains(NEW_SECRET), "{out:#?}");
    }

    // The rows are now sealed under k2 and open with the new secret alone.
    let rows = db.store().all_credentials().await.unwrap();
    let new_only_sealer = Sealer::new(NEW_SECRET, "k2").unwrap();
    let mut opened: Vec<String> = rows
        .iter()
        .map(|r| {
            assert_eq!(r.key_id, "k2");
            let sealed =
                SealedRef { key_id: &r.key_id, nonce: &r.nonce, ciphertext: &r.ciphertext };
            new_only_sealer.open(&r.id, &sealed).unwrap().to_string()
        })
        .collect();
    opened.sort();
    assert_eq!(opened, ["sk-project-KEY-987654321", PROVIDER_KEY]);

    env.run(&["credentials", "delete", "--project", "alice", "--provider", "mock"]).ok();
    env.run(&["credentials", "delete", "--project", "alice", "--provider", "mock"]).failed();
    assert_eq!(
        env.run(&["credentials", "list", "--json"]).ok().json().as_array().unwrap().len(),
        1
    );
}

fn record(id: &str, ago_ms: u64) -> RequestRecord {
    let mut r = RequestRecord::new(id, now_ms() - ago_ms);
    r.client_format = "openai-chat".into();
    r.requested_model = "mock-echo".into();
    r.resolved_model = Some("mock-echo".into());
    r.provider = Some("mock".into());
    r.served_provider = Some("mock".into());
    r.upstream_model = Some("mock-echo".into());
    r.descriptor = "model:mock-echo".into();
    r.status = 200;
    r.attempts = vec![
        AttemptRecord::new("mock/mock-echo", "ok", 90, "primary").with_credential("fp-00c0ffee"),
    ];
    r.total_ms = 100;
    r
}

/// `r` changed by `edit` (records are non-exhaustive: no struct update syntax).
fn with(mut r: RequestRecord, edit: impl FnOnce(&mut RequestRecord)) -> RequestRecord {
    edit(&mut r);
    r
}

/// `limits` lists every limit in force, by scope; `budgets` each budget this
/// period, spent by the records (the local backend's live counters are the
/// gateway's own).
async fn case_limits_and_budgets(db: TestDb) {
    let env = Env::new("limits", &db);
    let url = serde_json::to_string(db.url()).unwrap();
    std::fs::write(
        &env.config,
        format!(
            "storage: {{ url: {url} }}\n\
             providers: {{ mock: {{ wire: mock }} }}\n\
             models: [{{ id: mock-echo, deployments: [{{ provider: mock, limits: {{ concurrent: 3 }} }}] }}]\n\
             limits: {{ projects: {{ research: {{ rpm: 600 }} }} }}\n\
             budgets:\n  - {{ scope: \"user:bea@example.com\", limit_usd: 10, period: week }}\n  \
             - {{ scope: gateway, limit_usd: 100, period: month, mode: warn }}\n",
        ),
    )
    .unwrap();
    let bea = env.run(&["users", "create", "--email", "bea@example.com", "--json"]).ok().json();
    let bea_id = bea["id"].as_str().unwrap().to_owned();
    env.run(&["keys", "create", "--user", "bea@example.com", "--tpm", "5000"]).ok();

    let limits = env.run(&["limits", "--json"]).ok().json();
    let rows = limits.as_array().unwrap();
    let scopes: Vec<&str> = rows.iter().map(|r| r["scope"].as_str().unwrap()).collect();
    assert_eq!(rows.len(), 3, "{limits}");
    assert!(scopes[0].starts_with("key:") && rows[0]["tpm"] == 5000, "{limits}");
    assert_eq!((scopes[1], &rows[1]["rpm"]), ("project:research", &json!(600)));
    assert_eq!(
        (scopes[2], &rows[2]["concurrent"]),
        ("deployment:mock-echo/mock/mock-echo", &json!(3))
    );
    let table = env.run(&["limits"]).ok().stdout;
    assert!(table.contains("project:research") && table.contains("per credential"), "{table}");

    // Spent by the records this period: bea's $0.25 this week counts for her
    // and for the gateway; last year's counts for neither.
    let spent = with(record("req-bea", 1_000), |r| {
        r.user = Some(bea_id.clone());
        r.cost_usd = Some(0.25);
    });
    let old = with(record("req-old", 400 * 86_400_000), |r| {
        r.user = Some(bea_id);
        r.cost_usd = Some(50.0);
    });
    db.store().insert_records(&[spent, old]).await.unwrap();
    let budgets = env.run(&["budgets", "--json"]).ok().json();
    let b = budgets.as_array().unwrap();
    assert_eq!(b.len(), 2, "{budgets}");
    assert_eq!(
        (&b[0]["scope"], &b[0]["period"], &b[0]["spent_usd"], &b[0]["source"]),
        (&json!("user:bea@example.com"), &json!("week"), &json!(0.25), &json!("records"))
    );
    assert_eq!((&b[1]["mode"], &b[1]["spent_usd"]), (&json!("warn"), &json!(0.25)));
    let table = env.run(&["budgets"]).ok().stdout;
    assert!(table.contains("$9.7500"), "what is left of bea's $10: {table}");
}

async fn case_logs_and_usage(db: TestDb) {
    let env = Env::new("logs", &db);
    let alice = env.run(&["users", "create", "--email", "alice@example.com", "--json"]).ok().json();
    let alice_id = alice["id"].as_str().unwrap().to_owned();
    let project_id = alice["primary_project_id"].as_str().unwrap().to_owned();

    let minute = 60_000;
    let ok = with(record("req-ok", 10 * minute), |r| {
        r.user = Some(alice_id.clone());
        r.key_prefix = Some("sy-AbCdEfGh".into());
        r.project = Some(project_id.clone());
        r.usage =
            serde_json::from_value(json!({ "input_tokens": 10, "output_tokens": 20 })).unwrap();
        r.cost_usd = Some(0.000_123_456_7);
    });
    let failover = with(record("req-failover", 5 * minute), |r| {
        r.user = Some(alice_id.clone());
        r.project = Some(project_id.clone());
        r.provider = Some("primary-x".into());
        r.descriptor = "route:r1 failover:primary-x->mock".into();
        r.attempts = vec![
            AttemptRecord::new("primary-x/big-model", "status_503", 400, "primary")
                .with_credential("fp-11111111"),
            AttemptRecord::new("mock/mock-echo", "ok", 1_000, "failover"),
        ];
        r.usage = serde_json::from_value(json!({ "input_tokens": 5, "output_tokens": 7 })).unwrap();
        r.estimated = true;
        r.cost_usd = None;
        r.stream = true;
        r.ttft_ms = Some(700);
        r.total_ms = 1_500;
    });
    let error = with(record("req-error", 2 * minute), |r| {
        r.requested_model = "other-model".into();
        r.resolved_model = Some("other-model".into());
        r.served_provider = None;
        r.status = 503;
        r.error_code = Some("upstream_unavailable".into());
        r.total_ms = 7_000;
    });
    let old = with(record("req-old", 3 * 24 * 60 * minute), |r| {
        r.requested_model = "old-model".into();
        r.resolved_model = None;
        r.status = 429;
        r.served_provider = None;
    });
    db.store()
        .insert_records(&[ok.clone(), failover.clone(), error.clone(), old.clone()])
        .await
        .unwrap();

    let list = |args: &[&str]| {
        let mut all = vec!["logs", "list", "--json"];
        all.extend(args);
        ids(&env.run(&all).ok().json())
    };
    assert_eq!(list(&[]), ["req-error", "req-failover", "req-ok", "req-old"]);
    assert_eq!(list(&["--since", "1h"]), ["req-error", "req-failover", "req-ok"]);
    assert_eq!(list(&["--until", "3m"]), ["req-failover", "req-ok", "req-old"]);
    assert_eq!(list(&["--since", "1h", "--until", "3m"]), ["req-failover", "req-ok"]);
    assert_eq!(list(&["--status", "5xx"]), ["req-error"]);
    assert_eq!(list(&["--status", "4xx"]), ["req-old"]);
    assert_eq!(list(&["--status", "200"]), ["req-failover", "req-ok"]);
    assert_eq!(list(&["--status", "2xx", "--limit", "1"]), ["req-failover"]);
    assert_eq!(list(&["--user", "alice@example.com"]), ["req-failover", "req-ok"]);
    assert_eq!(list(&["--project", "alice"]), ["req-failover", "req-ok"]);
    assert_eq!(list(&["--model", "other-model"]), ["req-error"]);
    assert_eq!(list(&["--limit", "1"]), ["req-error"]);
    let full = env.run(&["logs", "list", "--json", "--limit", "1"]).ok().json();
    assert_eq!(full[0]["error_code"], "upstream_unavailable");

    let table = env.run(&["logs", "list", "--since", "1h"]).ok().stdout;
    let ok_line = table.lines().find(|l| l.contains("req-ok")).unwrap();
    for want in ["alice@example.com", "mock-echo", "mock", "200", "10/20", "$0.000123", "100ms"] {
        assert!(ok_line.contains(want), "{want:?} missing from {ok_line:?}");
    }
    let fo_line = table.lines().find(|l| l.contains("req-failover")).unwrap();
    assert!(
        fo_line.contains("~5/7") && fo_line.contains(" ? ") && fo_line.contains("1.5s"),
        "{fo_line:?}"
    );
    assert!(table.lines().any(|l| l.contains("req-error") && l.contains("503")), "{table}");

    let shown = env.run(&["logs", "show", "req-failover"]).ok().stdout;
    for want in [
        "provider         primary-x",
        "served provider  mock (failed over from primary-x)",
        "descriptor       route:r1 failover:primary-x->mock",
        "user             alice@example.com (",
        "estimated        yes",
        "first token      700ms",
        "stream           yes",
        "cost             unknown",
        "input 5, output 7",
        "attempts (2)",
        "primary-x/big-model",
        "fp-11111111",
        "status_503",
        "400ms",
        "failover",
    ] {
        assert!(shown.contains(want), "{want:?} missing from\n{shown}");
    }
    let shown_ok = env.run(&["logs", "show", "req-ok"]).ok().stdout;
    assert!(
        shown_ok.contains("cost             $0.000123\n")
            && shown_ok.contains("key              sy-AbCdEfGh"),
        "{shown_ok}"
    );
    let as_json = env.run(&["logs", "show", "req-failover", "--json"]).ok().json();
    let back: RequestRecord = serde_json::from_value(as_json).unwrap();
    assert_eq!(back, failover);
    let missing = env.run(&["logs", "show", "req-nope"]).failed();
    assert!(missing.stderr.contains("req-nope"), "{missing:#?}");

    // Usage: the default window is 7 days, so the 3-day-old record counts.
    let by_provider = env.run(&["usage", "--by", "provider", "--json"]).ok().json();
    let rows = by_provider.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{by_provider}");
    let mock = rows.iter().find(|r| r["key"] == "mock").unwrap();
    assert_eq!(mock["requests"], 2);
    assert_eq!(mock["errors"], 0);
    assert_eq!(mock["input_tokens"], 15);
    assert_eq!(mock["output_tokens"], 27);
    assert_eq!(mock["cost_complete"], false);
    assert!((mock["cost_usd"].as_f64().unwrap() - 0.000_123_456_7).abs() < 1e-12);
    let none = rows.iter().find(|r| r["key"].is_null()).unwrap();
    assert_eq!((none["requests"].as_u64(), none["errors"].as_u64()), (Some(2), Some(2)));
    let recent = env.run(&["usage", "--since", "1h", "--by", "provider", "--json"]).ok().json();
    assert_eq!(
        recent.as_array().unwrap().iter().map(|r| r["requests"].as_u64().unwrap()).sum::<u64>(),
        3
    );

    let slo = env.run(&["usage", "--by", "model", "--slo-ms", "1000", "--json"]).ok().json();
    let echo = slo.as_array().unwrap().iter().find(|r| r["key"] == "mock-echo").unwrap();
    assert_eq!(echo["slo_breach_share"], 0.5);
    // Read from the hourly rollups: to the histogram's bucket, never below.
    let (p50, p95) = (echo["p50_ms"].as_u64().unwrap(), echo["p95_ms"].as_u64().unwrap());
    assert!((100..110).contains(&p50) && (1_500..1_637).contains(&p95), "{p50} {p95}");
    let default_slo = env.run(&["usage", "--by", "model", "--json"]).ok().json();
    let echo = default_slo.as_array().unwrap().iter().find(|r| r["key"] == "mock-echo").unwrap();
    assert_eq!(echo["slo_breach_share"], 0.0);

    let by_user = env.run(&["usage", "--by", "user"]).ok().stdout;
    let line = by_user.lines().find(|l| l.starts_with("alice@example.com")).unwrap();
    for want in ["$0.000123*", "107ms", "1.6s", "0.0%"] {
        assert!(line.contains(want), "{want:?} missing from {line:?}");
    }
    assert!(by_user.contains("(anonymous)") && by_user.contains("lower bound"), "{by_user}");
    let out_of_range = env.run(&["usage", "--slo-ms", "10"]);
    assert_eq!(out_of_range.code, 2, "{out_of_range:#?}");
}

async fn case_failures_are_one_line_and_nonzero(db: TestDb) {
    let env = Env::new("errors", &db);
    env.run(&["users", "create", "--email", "alice@example.com"]).ok();
    let dup = env.run(&["users", "create", "--email", "ALICE@example.com"]).failed();
    assert!(dup.stderr.contains("already exists"), "{dup:#?}");
    env.run(&["users", "create", "--email", "not-an-email"]).failed();
    env.run(&["users", "set-role", "nobody@example.com", "admin"]).failed();
    env.run(&["keys", "create", "--user", "nobody@example.com"]).failed();
    env.run(&["projects", "add-member", "no-such-project", "alice@example.com"]).failed();
    env.run(&["logs", "list", "--since", "1m", "--until", "1h"]).failed();

    let bad_duration =
        env.run(&["keys", "create", "--user", "alice@example.com", "--expires-in", "1y"]);
    assert_eq!(bad_duration.code, 2, "{bad_duration:#?}");
    assert!(bad_duration.stderr.contains("invalid duration"), "{bad_duration:#?}");
    let bad_status = env.run(&["logs", "list", "--status", "6xx"]);
    assert_eq!(bad_status.code, 2, "{bad_status:#?}");

    let missing =
        env.raw(&["users", "list", "--config", "/nonexistent/switchyard.yaml"], &[], None).failed();
    assert!(missing.stderr.contains("/nonexistent/switchyard.yaml"), "{missing:#?}");
    let no_db = env.dir.join("none.yaml");
    std::fs::write(
        &no_db,
        "storage: { url: none }\nproviders: { mock: { wire: mock } }\nmodels: [{ id: mock-echo, deployments: [{ provider: mock }] }]\n",
    )
    .unwrap();
    let none =
        env.raw(&["users", "list", "--config", &no_db.display().to_string()], &[], None).failed();
    assert!(none.stderr.contains("needs a database"), "{none:#?}");
}

async fn case_config_comes_from_the_flag_the_variable_or_the_default(db: TestDb) {
    let env = Env::new("config", &db);
    env.run(&["users", "create", "--email", "alice@example.com"]).ok();
    let config = env.config.display().to_string();
    let via_var =
        env.raw(&["users", "list", "--json"], &[("SWITCHYARD_CONFIG", &config)], None).ok().json();
    assert_eq!(via_var[0]["email"], "alice@example.com");

    // The embedded default keeps its database in the working directory.
    let default_db = env.dir.join("switchyard-data").join("switchyard.db");
    assert!(!default_db.exists());
    let migrated = env.raw(&["migrate"], &[], None).ok();
    assert!(migrated.stdout.contains("up to date"), "{migrated:#?}");
    assert!(default_db.exists());
    assert_eq!(env.raw(&["users", "list", "--json"], &[], None).ok().json(), json!([]));
}

async fn case_status_classes_page_through_more_than_a_store_page(db: TestDb) {
    let env = Env::new("pages", &db);
    env.run(&["migrate"]).ok();
    let base = now_ms() - 60_000;
    // 1,500 successes a millisecond apart, newest first; the store returns at most
    // 1,000 rows a query.
    let mut records: Vec<RequestRecord> = (0..1_500u64)
        .map(|i| with(record(&format!("ok-{i:04}"), 0), |r| r.time_ms = base - i))
        .collect();
    // A failure at the millisecond where the first page ends, sorting after the
    // success there (ids descend within a millisecond), so it is not on page one.
    let failed = |id: &str, time_ms: u64, status: u16| {
        with(record(id, 0), |r| {
            r.time_ms = time_ms;
            r.status = status;
        })
    };
    records.push(failed("boundary-5xx", base - 999, 502));
    records.push(failed("deep-5xx", base - 5_000, 503));
    records.push(failed("deep-4xx", base - 6_000, 404));
    db.store().insert_records(&records).await.unwrap();

    let list = |args: &[&str]| {
        let mut all = vec!["logs", "list", "--json"];
        all.extend(args);
        ids(&env.run(&all).ok().json())
    };
    assert_eq!(list(&["--status", "5xx"]), ["boundary-5xx", "deep-5xx"]);
    assert_eq!(list(&["--status", "5xx", "--limit", "1"]), ["boundary-5xx"]);
    assert_eq!(list(&["--status", "4xx"]), ["deep-4xx"]);
    let successes = list(&["--status", "2xx", "--limit", "1000"]);
    let expected: Vec<String> = (0..1_000).map(|i| format!("ok-{i:04}")).collect();
    assert_eq!(successes, expected);
    assert_eq!(list(&["--status", "200", "--limit", "1000"]), expected);
}

/// Every problem `check` finds is reported as `file:LINE: …`, provider-level ones
/// included, each at the field it is about (a provider with no credentials block,
/// at its name).
#[test]
fn check_reports_every_problem_at_its_line() {
    let env = Env::scratch("check-lines");
    let file = env.config.display().to_string();
    let yaml = r#"gateway: { default_model: nowhere }
providers:
  keyless:
    wire: openai-chat
    credentials: { keys: ["${SWITCHYARD_TEST_NEVER_SET_KEY:-}"] }
  unset:
    wire: anthropic
    credentials:
      env: [SWITCHYARD_TEST_NEVER_SET_ENV]
  ftp:
    wire: openai-chat
    endpoint: "ftp://x"
    credentials: { none: true }
  undeclared: { wire: gemini }
  marked: { wire: mock, markup: -1 }
models: [{ id: m, deployments: [{ provider: marked }] }]
"#;
    let out = env.check(yaml);
    assert_eq!(out.code, 1, "{out:#?}");
    let problems: Vec<&str> = out.stderr.lines().skip(1).map(str::trim).collect();
    assert_eq!(problems.len(), 6, "{out:#?}");
    for (line, field) in [
        (1, "gateway.default_model"),
        (5, "providers.keyless.credentials"),
        (9, "providers.unset.credentials"),
        (12, "providers.ftp.endpoint"),
        (14, "providers.undeclared.credentials"),
        (15, "providers.marked.markup"),
    ] {
        let want = format!("{file}:{line}: {field}: ");
        assert!(problems.iter().any(|p| p.starts_with(&want)), "{want:?} missing: {out:#?}");
    }

    // An unset variable without a default stops interpolation, at its line.
    let out = env.check(&yaml.replace("NEVER_SET_KEY:-}", "NEVER_SET_KEY}"));
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(
        out.stderr.starts_with(&format!(
            "switchyard: {file}:5: environment variable SWITCHYARD_TEST_NEVER_SET_KEY is not set"
        )),
        "{out:#?}"
    );
}

/// Logs written to a pipe (or a file) carry no colour escapes. The gateway is
/// started on the embedded default at `127.0.0.1:0` with stdout, where its logs
/// go, piped, and read up to its "listening" line.
#[test]
fn logs_to_a_pipe_are_not_coloured() {
    let env = Env::scratch("no-colour");
    let (_child, seen) = serve_until_listening(&env, &[]);
    for line in &seen {
        assert!(!line.contains('\x1b'), "a colour escape in a piped log line: {line:?}");
    }
}

/// Static keys shorter than 32 characters are warned about at start-up, the
/// bootstrap admin key too, each by its place and short prefix: never the key.
#[test]
fn short_static_keys_are_warned_about_without_printing_them() {
    const STATIC: &str = "static-16-chars!";
    const ADMIN: &str = "sy-admin-20-chars-x";
    let env = Env::scratch("short-keys");
    let (_child, seen) = serve_until_listening(
        &env,
        &[("SWITCHYARD_API_KEY", STATIC), ("SWITCHYARD_ADMIN_KEY", ADMIN)],
    );
    let logs = seen.join("\n");
    assert!(logs.contains("gateway.api_keys[0] (sta…) is 16 characters long"), "{logs}");
    assert!(logs.contains("SWITCHYARD_ADMIN_KEY (sy-adm…) is 19 characters long"), "{logs}");
    assert!(!logs.contains(STATIC) && !logs.contains(ADMIN), "{logs}");
}

/// `switchyard serve` on the embedded default at `127.0.0.1:0`, in `env`'s
/// folder, with `vars` set and its logs (stdout) piped: the process and its
/// log lines up to and including the "listening" one.
fn serve_until_listening(env: &Env, vars: &[(&str, &str)]) -> (KillOnDrop, Vec<String>) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--log-format", "text"])
        .current_dir(&env.dir)
        .env("SWITCHYARD_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // NO_COLOR would hide a colour defect: colour must go because stdout is a pipe.
    for var in
        CLEARED.iter().chain(&["NO_COLOR", "SWITCHYARD_LISTEN_ADDR", "SWITCHYARD_LOG_FORMAT"])
    {
        cmd.env_remove(var);
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let mut child = KillOnDrop(cmd.spawn().unwrap());
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)).map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut seen = Vec::new();
    while !seen.last().is_some_and(|l: &String| l.contains("switchyard listening")) {
        match rx.recv_timeout(std::time::Duration::from_secs(20)) {
            Ok(line) => seen.push(line),
            Err(e) => panic!("no \"switchyard listening\" line ({e}); seen: {seen:#?}"),
        }
    }
    (child, seen)
}

/// Ends the gateway a test started, however the test ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `check` prints a model's prices per million tokens as they were written.
#[test]
fn check_prints_prices_as_written() {
    let env = Env::scratch("check-prices");
    let out = env
        .check(
            "storage: { url: none }\n\
             providers: { mock: { wire: mock } }\n\
             models:\n\
             \x20 - { id: cheap, deployments: [{ provider: mock }], pricing: { input: 0.1, output: 0.4 } }\n\
             \x20 - { id: odd, deployments: [{ provider: mock }], pricing: { input: 0.3, output: 1.1 } }\n",
        )
        .ok();
    let line = |id: &str| {
        out.stdout
            .lines()
            .find(|l| l.trim_start().starts_with(id))
            .unwrap_or_else(|| panic!("no {id} line: {out:#?}"))
            .to_owned()
    };
    assert!(line("cheap").contains(" $0.1/0.4 per Mtok"), "{out:#?}");
    assert!(line("odd").contains(" $0.3/1.1 per Mtok"), "{out:#?}");
}

#[test]
fn check_refuses_a_route_whose_model_narrows_away_what_it_requires() {
    let env = Env::scratch("check-governance");
    let file = env.config.display().to_string();
    let yaml = r#"providers:
  vault: { wire: mock, governance: { no_retain: true } }
models:
  - id: keeps-logs
    deployments: [{ provider: vault }]
    governance: { no_retain: false }
routes:
  - { name: no-logs, match: "keeps-*", provider: vault, requires: { no_retain: true } }
"#;
    let out = env.check(yaml);
    assert_eq!(out.code, 1, "check says OK while every request would be denied: {out:#?}");
    assert!(
        out.stderr.contains(&format!("{file}:8: routes[no-logs].requires: vault serving model keeps-logs does not satisfy `no_retain`")),
        "{out:#?}"
    );
    // Without the model's narrowing the route is fine.
    let out = env.check(&yaml.replace("    governance: { no_retain: false }\n", ""));
    assert_eq!(out.code, 0, "{out:#?}");
}

/// `check` quotes the file as written, never a variable's value: not in a
/// snippet of a typo next to a key, and not in an endpoint's password, whether
/// the password comes from a variable or is written in the file.
#[test]
fn check_never_prints_a_secret() {
    const KEY: &str = "sk-live-CHECK-KEY-must-not-print-0123456789";
    const PASSWORD: &str = "pw-CHECK-PASSWORD-must-not-print";
    let env = Env::scratch("check-secrets");
    let file = env.config.display().to_string();
    let vars = [("SWITCHYARD_TEST_CHECK_KEY", KEY), ("SWITCHYARD_TEST_CHECK_PASSWORD", PASSWORD)];
    let check = |yaml: &str| {
        std::fs::write(&env.config, yaml).unwrap();
        let out = env.raw(&["check", &file], &vars, None);
        for secret in [KEY, PASSWORD, "must-not-print"] {
            assert!(!out.all().contains(secret), "{secret:?} printed: {out:#?}");
        }
        out
    };

    let out = check(
        "storage: { url: none }\n\
         providers:\n\
         \x20 openai:\n\
         \x20   wire: openai-chat\n\
         \x20   endpont: https://api.example\n\
         \x20   credentials: { keys: [\"${SWITCHYARD_TEST_CHECK_KEY}\"] }\n",
    );
    assert_eq!(out.code, 1, "{out:#?}");
    assert!(out.stderr.contains(&format!("{file}:5:5: unknown field `endpont`")), "{out:#?}");
    assert!(out.stderr.contains("[\"${SWITCHYARD_TEST_CHECK_KEY}\"]"), "{out:#?}");

    let out = check(
        "storage: { url: none }\n\
         providers:\n\
         \x20 proxied:\n\
         \x20   wire: openai-chat\n\
         \x20   endpoint: \"https://gw:${SWITCHYARD_TEST_CHECK_PASSWORD}@proxy.example/v1\"\n\
         \x20   credentials: { keys: [\"${SWITCHYARD_TEST_CHECK_KEY}\"] }\n\
         \x20 written:\n\
         \x20   wire: anthropic\n\
         \x20   endpoint: \"https://ops:pw-CHECK-PASSWORD-must-not-print@other.example\"\n\
         \x20   credentials: { none: true }\n\
         models: [{ id: m, deployments: [{ provider: proxied }, { provider: written }] }]\n",
    )
    .ok();
    assert!(out.stdout.contains("https://gw:****@proxy.example/v1"), "{out:#?}");
    assert!(out.stdout.contains("https://ops:****@other.example"), "{out:#?}");
}
