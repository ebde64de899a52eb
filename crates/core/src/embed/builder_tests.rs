#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::config::raw::Unmapped;
use crate::embed::{Chain, Model, Route, Target};

#[test]
fn secrets_never_appear_in_debug_output() {
    let builder = GatewayBuilder::new()
        .provider(
            "p",
            Provider::openai()
                .key(Secret::from("sk-literal-0123456789"))
                .header("api-key", "header-secret-0123456789"),
        )
        .settings(|s| s.api_keys = vec!["gateway-key-0123456789".into()]);
    let shown = format!("{builder:?}");
    for secret in ["sk-literal-0123456789", "header-secret-0123456789", "gateway-key-0123456789"] {
        assert!(!shown.contains(secret), "{shown}");
    }
    assert!(shown.contains("api-key"), "header names are shown: {shown}");
}

#[test]
fn literal_keys_reach_the_catalog_and_env_keys_only_through_the_lookup() {
    let builder = || {
        GatewayBuilder::new()
            .provider("lit", Provider::openai().key(Secret::from("sk-literal-0123456789")))
            .provider("env", Provider::anthropic().key_env("KEY").optional())
    };
    let catalog = builder().compile().unwrap();
    let keys = |c: &Catalog, p: &str| c.provider(p).unwrap().keys.clone();
    assert_eq!(keys(&catalog, "lit"), [Secret::from("sk-literal-0123456789")]);
    assert!(keys(&catalog, "env").is_empty(), "no lookup: nothing is read");
    let catalog = builder().env(|k| (k == "KEY").then(|| "sk-env-0123456789".into())).compile();
    assert_eq!(keys(&catalog.unwrap(), "env"), [Secret::from("sk-env-0123456789")]);
}

#[test]
fn a_provider_given_twice_is_listed_with_the_compiler_s_problems() {
    let err = GatewayBuilder::new()
        .name("app")
        .provider("p", Provider::mock())
        .provider("p", Provider::mock())
        .model(Model::new("m").deployment("nowhere", "x"))
        .compile()
        .unwrap_err();
    let shown: Vec<String> = err.problems.iter().map(|p| p.render(&err.file)).collect();
    assert_eq!(
        shown,
        [
            "app: providers.p: defined twice",
            "app: models[m].deployments: unknown provider \"nowhere\""
        ]
    );
}

#[test]
fn the_library_default_storage_is_none() {
    let catalog = GatewayBuilder::new().compile().unwrap();
    assert_eq!(catalog.storage.url, "none");
    assert_eq!(catalog.storage.retention_days, StorageConfig::default().retention_days);
}

#[test]
fn project_chains_and_a_primary_s_model_and_weight_are_kept() {
    let route = Route::new("r", "m*", Target::new("a").model("up").weight(3))
        .project("team", Chain::new(Target::new("b")).strategy(Strategy::Cost))
        .other_projects_shared();
    let c = &route.config;
    assert_eq!((c.provider.value.as_str(), c.model.as_deref()), ("a", Some("up")));
    assert_eq!(c.weight.as_ref().map(|w| w.value), Some(3));
    let scopes = c.by_scope.as_ref().unwrap();
    assert_eq!(scopes.dimension.value, "project");
    assert_eq!(scopes.unmapped, Unmapped::Shared);
    assert_eq!(scopes.chains["team"].strategy, Some(Strategy::Cost));
}

const CA: &[u8] = include_bytes!("../../../testkit/data/tls/ca.pem");
const CLIENT_CERT: &[u8] = include_bytes!("../../../testkit/data/tls/client.pem");
const CLIENT_KEY: &[u8] = include_bytes!("../../../testkit/data/tls/client.key");
const SERVER_KEY: &[u8] = include_bytes!("../../../testkit/data/tls/server.key");

#[test]
fn client_options_reach_the_catalog_as_given() {
    let options = ClientOptions::default()
        .ca_pem(CA)
        .identity(ClientIdentity::from_pem(CLIENT_CERT, CLIENT_KEY))
        .proxy("https://proxy.internal:8443")
        .pool_max_idle_per_host(0)
        .pool_idle_timeout(Duration::from_secs(5));
    let catalog = GatewayBuilder::new()
        .provider("p", Provider::openai().no_key().client(options.clone()))
        .compile()
        .unwrap();
    assert_eq!(catalog.provider("p").unwrap().client, options);
}

#[test]
fn client_options_are_checked_as_a_file_s_are_without_lines() {
    let bad = ClientOptions::default()
        .identity(ClientIdentity::from_pem(CLIENT_CERT, SERVER_KEY))
        .proxy("socks5://proxy:1080")
        .pool_idle_timeout(Duration::ZERO);
    let err = GatewayBuilder::new()
        .provider("p", Provider::openai().no_key().client(bad))
        .provider("m", Provider::mock().client(ClientOptions::default()))
        .compile()
        .unwrap_err();
    let shown: Vec<String> = err.problems.iter().map(|p| p.render(&err.file)).collect();
    assert_eq!(
        shown,
        [
            "<builder>: providers.m.client: the mock makes no HTTP calls",
            "<builder>: providers.p.client.identity: does not belong to the client certificate (the chain's first)",
            "<builder>: providers.p.client.proxy: \"socks5://proxy:1080\": the proxy must be http:// or https://",
            "<builder>: providers.p.client.pool_idle_timeout_ms: must be more than 0 (pool_max_idle_per_host: 0 keeps none)",
        ]
    );
}

#[test]
fn a_client_key_and_proxy_password_never_appear_in_debug_output() {
    let options = ClientOptions::default()
        .identity(ClientIdentity::from_pem(CLIENT_CERT, CLIENT_KEY))
        .proxy("http://user:pr0xy-pass@proxy:3128");
    let builder = GatewayBuilder::new().provider("p", Provider::openai().client(options));
    let shown = format!("{builder:?}");
    let key = std::str::from_utf8(CLIENT_KEY).unwrap().lines().nth(1).unwrap();
    assert!(!shown.contains("pr0xy-pass") && !shown.contains(key), "{shown}");
    assert!(shown.contains("user:****@proxy:3128"), "{shown}");
}
