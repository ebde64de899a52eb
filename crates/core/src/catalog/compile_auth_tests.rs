#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::catalog::{Catalog, InvalidRegistry};
use crate::config::ConfigSource;

fn compile(yaml: &str, vars: &[(&str, &str)]) -> Result<Catalog, InvalidRegistry> {
    let owned: Vec<(String, String)> =
        vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    let env = move |k: &str| owned.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let raw = ConfigSource::from_text("t.yaml", yaml).parse_with(&env).unwrap();
    Catalog::compile(&raw, "t.yaml", &env)
}

fn problems(yaml: &str, vars: &[(&str, &str)]) -> Vec<String> {
    let err = compile(yaml, vars).unwrap_err();
    err.problems.iter().map(|p| p.render(&err.file)).collect()
}

#[test]
fn a_cloud_credential_on_a_wire_that_takes_keys_is_refused_at_its_line() {
    let yaml = "providers:\n  a:\n    wire: openai-chat\n    credentials:\n      aws: {}\n";
    let found = problems(yaml, &[]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("t.yaml:5:"), "{found:?}");
    assert!(found[0].contains("credentials.aws: the wire takes an API key"), "{found:?}");

    let yaml = "providers:\n  a:\n    wire: anthropic\n    credentials:\n      google:\n        service_account_env: SA\n";
    let found = problems(yaml, &[("SA", "{}")]);
    assert!(found[0].starts_with("t.yaml:6:"), "{found:?}");
    assert!(found[0].contains("credentials.google: the wire takes an API key"), "{found:?}");
}

#[test]
fn one_cloud_source_and_no_keys_beside_it() {
    let yaml = "providers:\n  a:\n    wire: anthropic\n    credentials:\n      env: [KEY]\n      \
                aws: {}\n      google: { service_account_file: a.json, service_account_env: SA }\n";
    let found = problems(yaml, &[("KEY", "k")]).join("\n");
    assert!(
        found.contains("t.yaml:7: providers.a.credentials: aws or google, not both"),
        "{found}"
    );
    assert!(found.contains("is instead of keys"), "{found}");
    let yaml = "providers:\n  a:\n    wire: anthropic\n    credentials:\n      \
                google: { service_account_file: a.json, service_account_env: SA }\n";
    let found = problems(yaml, &[]).join("\n");
    assert!(found.contains("service_account_file or service_account_env, not both"), "{found}");
}

#[test]
fn an_optional_provider_whose_credential_cannot_work_is_disabled_with_a_warning() {
    let yaml = "providers:\n  a:\n    wire: anthropic\n    credentials:\n      optional: true\n      \
                aws: {}\n";
    let catalog = compile(yaml, &[]).unwrap();
    let why = catalog.provider("a").unwrap().unavailable.clone().unwrap();
    assert!(why.contains("credentials.aws"), "{why}");
    assert!(catalog.warnings.iter().any(|w| w.contains("credentials.aws")));
}

#[test]
fn a_region_fills_the_endpoint_and_must_be_a_host_label() {
    let yaml = "providers:\n  a:\n    wire: anthropic\n    endpoint: \"https://llm.{region}.example\"\n    \
                region: eu-west-3\n    credentials: { none: true }\n";
    let catalog = compile(yaml, &[]).unwrap();
    assert_eq!(catalog.provider("a").unwrap().endpoint, "https://llm.eu-west-3.example");

    let bad = yaml.replace("eu-west-3", "evil.com/x");
    let found = problems(&bad, &[]);
    assert!(found[0].starts_with("t.yaml:5:"), "{found:?}");
    assert!(found[0].contains("is not a region name"), "{found:?}");

    let none = yaml.replace("    region: eu-west-3\n", "");
    let found = problems(&none, &[]);
    assert!(found[0].starts_with("t.yaml:4:"), "{found:?}");
    assert!(found[0].contains("needs a region"), "{found:?}");
}

#[test]
fn aws_keys_need_their_secret_and_are_not_a_profile() {
    let yaml = "providers:\n  a:\n    wire: anthropic\n    credentials:\n      aws:\n        \
                access_key_id: AKID\n";
    let found = problems(yaml, &[]).join("\n");
    assert!(
        found.contains("t.yaml:6: providers.a.credentials.aws.secret_access_key: missing"),
        "{found}"
    );
    let yaml = "providers:\n  a:\n    wire: anthropic\n    credentials:\n      aws:\n        \
                profile: prod\n        access_key_id: AKID\n        secret_access_key: s\n";
    let found = problems(yaml, &[]).join("\n");
    assert!(
        found.contains("t.yaml:7: providers.a.credentials.aws: a profile or keys, not both"),
        "{found}"
    );
    // The secret is never shown.
    assert!(!found.contains(": s\n") && !found.ends_with(": s"), "{found}");
}

#[test]
fn a_service_account_variable_is_read_whatever_its_name() {
    let yaml = "providers:\n  a:\n    wire: vertex-gemini\n    region: global\n    credentials:\n      \
                google: { service_account_env: MY_VERTEX_SA }\n";
    let sa = serde_json::json!({
        "type": "service_account",
        "project_id": "from-the-account",
        "private_key": switchyard_testkit::vertex::PRIVATE_KEY_PEM,
        "client_email": "a@b.iam.gserviceaccount.com",
    })
    .to_string();
    let catalog = compile(yaml, &[("MY_VERTEX_SA", &sa)]).unwrap();
    let p = catalog.provider("a").unwrap();
    assert_eq!(
        p.endpoint,
        "https://aiplatform.googleapis.com/v1/projects/from-the-account/locations/global"
    );
    assert!(p.cloud.is_some() && p.keys.is_empty());
    let regional = yaml.replace("region: global", "region: europe-west4\n    project: mine");
    let catalog = compile(&regional, &[("MY_VERTEX_SA", &sa)]).unwrap();
    assert_eq!(
        catalog.provider("a").unwrap().endpoint,
        "https://europe-west4-aiplatform.googleapis.com/v1/projects/mine/locations/europe-west4"
    );
}
