#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use switchyard_core::ConfigSource;
use switchyard_core::util::Secret;

use super::*;

fn catalog() -> Catalog {
    let yaml = r#"
storage: { url: none }
providers:
  two: { wire: openai-chat, endpoint: "http://127.0.0.1:1/v1", credentials: { keys: ["sk-first-0000000001", "sk-second-000000002"] } }
  local: { wire: openai-chat, endpoint: "http://127.0.0.1:2/v1", credentials: { none: true } }
models:
  - id: m
    deployments: [{ provider: two }, { provider: local }]
"#;
    let raw = ConfigSource::from_text("t.yaml", yaml).parse_with(&|_| None).unwrap();
    Catalog::compile(&raw, "t.yaml", &|_| None).unwrap()
}

fn key(provider: &str, secret: &str) -> CredentialKey {
    CredentialKey::new(provider, Secret::new(secret).fingerprint())
}

#[test]
fn credentials_are_labelled_by_position_never_by_their_secret() {
    let c = catalog();
    assert_eq!(credential_label(&c, &key("two", "sk-first-0000000001")), "key-1");
    assert_eq!(credential_label(&c, &key("two", "sk-second-000000002")), "key-2");
    assert_eq!(credential_label(&c, &key("two", "sk-a-callers-own-key")), "byok");
    assert_eq!(credential_label(&c, &CredentialKey::new("local", NO_CREDENTIAL)), "none");
    assert_eq!(credential_label(&c, &key("gone", "sk-first-0000000001")), "byok");
}

#[test]
fn callers_own_keys_share_one_series_showing_the_worst() {
    let c = catalog();
    let gauges = breaker_gauges(
        &c,
        vec![
            (key("two", "sk-first-0000000001"), BreakerState::Closed),
            (key("two", "sk-own-of-alice-0001"), BreakerState::Closed),
            (key("two", "sk-own-of-bob-000002"), BreakerState::HalfOpen { probe_in_flight: false }),
            (key("two", "sk-own-of-carol-0003"), BreakerState::Closed),
        ],
    );
    let labels: Vec<(&str, &str, f64)> =
        gauges.iter().map(|((p, l), v)| (p.as_str(), l.as_str(), *v)).collect();
    assert_eq!(labels, [("two", "byok", 1.0), ("two", "key-1", 0.0)]);
}

#[test]
fn admins_viewers_static_keys_and_open_mode_may_read() {
    let with = |role: Option<CallerRole>, user: Option<&str>| {
        let mut who = user.map_or_else(Principal::anonymous, Principal::user);
        who.role = role;
        who
    };
    assert!(may_read(&with(Some(CallerRole::Admin), Some("bootstrap-admin"))));
    assert!(may_read(&with(Some(CallerRole::Viewer), Some("u-1"))));
    assert!(may_read(&with(Some(CallerRole::Member), None)), "a static key");
    assert!(may_read(&with(None, None)), "open mode");
    assert!(!may_read(&with(Some(CallerRole::Member), Some("u-2"))), "a member's stored key");
}
