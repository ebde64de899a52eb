#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::config::ConfigSource;
use crate::util::Secret;
use crate::{Catalog, InvalidRegistry};

const CA: &[u8] = switchyard_testkit::tls::CA_PEM;
const CLIENT_CERT: &[u8] = switchyard_testkit::tls::CLIENT_CERT_PEM;
const CLIENT_KEY: &[u8] = switchyard_testkit::tls::CLIENT_KEY_PEM;
const SERVER_KEY: &[u8] = switchyard_testkit::tls::SERVER_KEY_PEM;

/// A fresh directory holding `tls/` with the test PKI, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("switchyard-client-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("tls")).unwrap();
        for (file, pem) in [
            ("ca.pem", CA),
            ("client.pem", CLIENT_CERT),
            ("client.key", CLIENT_KEY),
            ("server.key", SERVER_KEY),
        ] {
            std::fs::write(dir.join("tls").join(file), pem).unwrap();
        }
        Self(dir)
    }

    /// `yaml` written as `conf.yaml` here, read back and compiled as a file.
    fn compile(&self, yaml: &str) -> Result<Catalog, InvalidRegistry> {
        let path = self.0.join("conf.yaml");
        std::fs::write(&path, yaml).unwrap();
        let source = ConfigSource::from_path(&path).unwrap();
        let raw = source.parse_with(&|_| None).unwrap();
        Catalog::compile(&raw, "conf.yaml", &|_| None)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn provider(client: &str) -> String {
    format!(
        "providers:\n  internal:\n    wire: openai-chat\n    endpoint: \"https://llm.internal/v1\"\n    credentials: {{ none: true }}\n    client:\n{client}"
    )
}

fn problems(err: InvalidRegistry) -> Vec<String> {
    err.problems.iter().map(|p| p.render(&err.file)).collect()
}

#[test]
fn a_client_block_reads_its_files_beside_the_config_file() {
    let dir = Dir::new("reads");
    // Relative to the file, not to the working directory (the crate's, here,
    // which has no `tls/`).
    let catalog = dir
        .compile(&provider(
            "      ca_file: tls/ca.pem
      client_cert_file: tls/client.pem
      client_key_file: tls/client.key
      proxy: \"http://user:pr0xy-pass@proxy.internal:3128\"
      pool_max_idle_per_host: 8
      pool_idle_timeout_ms: 1500
",
        ))
        .unwrap();
    let spec = catalog.provider("internal").unwrap();
    let client = &spec.client;
    assert_eq!(client.ca_pem.as_deref(), Some(CA));
    let identity = client.identity.as_ref().unwrap();
    assert_eq!((identity.cert_chain_pem(), identity.key_pem()), (CLIENT_CERT, CLIENT_KEY));
    assert_eq!(client.proxy.as_deref(), Some("http://user:pr0xy-pass@proxy.internal:3128"));
    assert_eq!(client.pool_max_idle_per_host, 8);
    assert_eq!(client.pool_idle_timeout, Duration::from_millis(1500));
    // A proxy's error page is an answer too: its password is scrubbed from answers.
    assert!(spec.secrets.contains(&Secret::from("pr0xy-pass")));
    // An absolute path is read as it is.
    let absolute = format!("      ca_file: \"{}\"\n", dir.0.join("tls/ca.pem").display());
    let catalog = dir.compile(&provider(&absolute)).unwrap();
    assert_eq!(catalog.provider("internal").unwrap().client.ca_pem.as_deref(), Some(CA));
}

#[test]
fn without_a_client_block_a_provider_gets_the_defaults() {
    let dir = Dir::new("defaults");
    let catalog = dir.compile(&provider("      pool_max_idle_per_host: 2\n")).unwrap();
    let client = &catalog.provider("internal").unwrap().client;
    assert_eq!(client.pool_idle_timeout, crate::client::DEFAULT_POOL_IDLE_TIMEOUT);
    assert!(client.ca_pem.is_none() && client.identity.is_none() && client.proxy.is_none());
    let none = provider("").replace("    client:\n", "");
    let catalog = dir.compile(&none).unwrap();
    assert_eq!(catalog.provider("internal").unwrap().client, Default::default());
}

#[test]
fn a_client_block_s_problems_are_at_their_lines() {
    let dir = Dir::new("problems");
    let err = dir
        .compile(&provider(
            "      ca_file: tls/missing.pem
      client_cert_file: tls/client.pem
      proxy: \"socks5://user:hunter2@proxy:1080\"
      pool_idle_timeout_ms: 0
",
        ))
        .unwrap_err();
    let shown = problems(err);
    let missing = dir.0.join("tls/missing.pem");
    assert_eq!(shown.len(), 4, "{shown:#?}");
    assert!(
        shown[0].starts_with(&format!(
            "conf.yaml:7: providers.internal.client.ca_file: cannot read {}: ",
            missing.display()
        )),
        "{shown:#?}"
    );
    assert_eq!(
        shown[1],
        "conf.yaml:8: providers.internal.client.client_cert_file: needs client_key_file (its private key)"
    );
    assert_eq!(
        shown[2],
        "conf.yaml:9: providers.internal.client.proxy: \"socks5://user:****@proxy:1080\": the proxy must be http:// or https://"
    );
    assert_eq!(
        shown[3],
        "conf.yaml:10: providers.internal.client.pool_idle_timeout_ms: must be more than 0 (pool_max_idle_per_host: 0 keeps none)"
    );
}

#[test]
fn pem_that_is_not_what_its_field_says_is_a_problem_at_that_field() {
    let dir = Dir::new("pem");
    let err = dir
        .compile(&provider(
            "      ca_file: tls/client.key
      client_cert_file: tls/client.pem
      client_key_file: tls/server.key
",
        ))
        .unwrap_err();
    assert_eq!(
        problems(err),
        [
            "conf.yaml:7: providers.internal.client.ca_file: no CERTIFICATE block in it",
            "conf.yaml:9: providers.internal.client.client_key_file: does not belong to the client certificate (the chain's first)",
        ]
    );
    let err = dir
        .compile(&provider(
            "      client_cert_file: tls/client.key
      client_key_file: tls/nope.key
",
        ))
        .unwrap_err();
    let shown = problems(err);
    assert!(
        shown[0].starts_with(
            "conf.yaml:7: providers.internal.client.client_cert_file: no CERTIFICATE block in it"
        ),
        "{shown:#?}"
    );
    assert!(
        shown[1].starts_with("conf.yaml:8: providers.internal.client.client_key_file: cannot read"),
        "{shown:#?}"
    );
}

#[test]
fn the_mock_takes_no_client_block() {
    let dir = Dir::new("mock");
    let yaml = "providers:\n  m:\n    wire: mock\n    client: { pool_max_idle_per_host: 1 }\n";
    assert_eq!(
        problems(dir.compile(yaml).unwrap_err()),
        ["conf.yaml:4: providers.m.client: the mock makes no HTTP calls"]
    );
}

#[test]
fn a_reload_keeps_a_provider_s_client_only_while_its_options_are_unchanged() {
    let dir = Dir::new("reload");
    let pool = |n: usize| provider(&format!("      pool_max_idle_per_host: {n}\n"));
    let gateway =
        crate::Engine::new(dir.compile(&pool(1)).unwrap(), Arc::new(crate::record::NullSink))
            .unwrap();
    let runtime = || Arc::clone(&gateway.snapshot().runtimes["internal"]);
    let first = runtime();
    gateway.reload(dir.compile(&pool(1)).unwrap()).unwrap();
    assert!(Arc::ptr_eq(&first, &runtime()), "same options: the pool is kept");
    gateway.reload(dir.compile(&pool(2)).unwrap()).unwrap();
    assert!(!Arc::ptr_eq(&first, &runtime()), "other options: a new client");
}
