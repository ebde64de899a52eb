//! Catalog discovery, black box: each vendor's fake lists its models (with
//! its credential required and its pages), and the catalog is compared.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use switchyard_core::discover::{Deployed, Outcome, ProviderDiscovery, discover};
use switchyard_core::{Catalog, ConfigSource};
use switchyard_testkit::{FakeModel, FakeUpstream, Vendor, bedrock};

struct Fakes {
    openai: FakeUpstream,
    anthropic: FakeUpstream,
    gemini: FakeUpstream,
    bedrock: FakeUpstream,
}

async fn fakes() -> Fakes {
    let openai = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    openai.set_models(["gpt-a", "gpt-b"].map(FakeModel::new));
    // More than a page of Anthropic's 20 and Gemini's 50: the pages are followed.
    let anthropic = FakeUpstream::start(Vendor::Anthropic).await.unwrap();
    anthropic.set_models((0..25).map(|i| FakeModel::new(format!("claude-{i:02}"))));
    let gemini = FakeUpstream::start(Vendor::Gemini).await.unwrap();
    gemini.set_models((0..60).map(|i| FakeModel::new(format!("gemini-{i:02}"))));
    let bedrock = FakeUpstream::start(Vendor::Bedrock).await.unwrap();
    bedrock.set_models([
        FakeModel::new("anthropic.claude-sonnet-4-5-20250929-v1:0"),
        FakeModel::new("anthropic.claude-3-haiku-20240307-v1:0").retiring(),
    ]);
    Fakes { openai, anthropic, gemini, bedrock }
}

fn catalog(f: &Fakes, aws_secret: &str) -> Catalog {
    let yaml = format!(
        r#"storage: {{ url: none }}
providers:
  openai: {{ wire: openai-chat, endpoint: "{}/v1", credentials: {{ keys: [sk-openai-0000000001] }} }}
  anthropic: {{ wire: anthropic, endpoint: "{}", credentials: {{ keys: [sk-ant-0000000001] }} }}
  gemini: {{ wire: gemini, endpoint: "{}", credentials: {{ keys: [gm-key-0000000001] }} }}
  bedrock:
    wire: bedrock
    endpoint: "{}"
    region: {}
    credentials: {{ aws: {{ access_key_id: {}, secret_access_key: "{}" }} }}
models:
  - id: a
    deployments: [{{ provider: openai, model: gpt-a }}, {{ provider: anthropic, model: claude-24 }}]
  - id: gone
    deployments: [{{ provider: openai, model: gpt-gone }}]
  - id: g
    deployments: [{{ provider: gemini, model: gemini-59 }}]
  - id: sonnet
    deployments: [{{ provider: bedrock, model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0" }}]
  - id: haiku
    deployments: [{{ provider: bedrock, model: "anthropic.claude-3-haiku-20240307-v1:0" }}]
"#,
        f.openai.base_url(),
        f.anthropic.base_url(),
        f.gemini.base_url(),
        f.bedrock.base_url(),
        bedrock::REGION,
        bedrock::ACCESS_KEY_ID,
        aws_secret,
    );
    let env = |_: &str| None;
    let raw = ConfigSource::from_text("t.yaml", &yaml).parse_with(&env).unwrap();
    Catalog::compile(&raw, "t.yaml", &env).unwrap()
}

fn listed<'a>(
    found: &'a [ProviderDiscovery],
    name: &str,
) -> &'a switchyard_core::discover::Comparison {
    match &found.iter().find(|p| p.provider == name).unwrap().outcome {
        Outcome::Listed(c) => c,
        other => panic!("{name}: {other:?}"),
    }
}

fn deployed(model: &str, upstream: &str) -> Deployed {
    Deployed { model: model.into(), upstream_model: upstream.into() }
}

#[tokio::test]
async fn every_vendor_s_list_is_read_whole_and_compared() {
    let f = fakes().await;
    let found = discover(&catalog(&f, bedrock::SECRET_ACCESS_KEY), None).await.unwrap();

    let openai = listed(&found, "openai");
    assert_eq!((openai.listed, openai.matched), (2, 1));
    assert_eq!(openai.new.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), ["gpt-b"]);
    assert_eq!(openai.missing, [deployed("gone", "gpt-gone")]);

    // Two pages: the deployment is on the second.
    let anthropic = listed(&found, "anthropic");
    assert_eq!((anthropic.listed, anthropic.matched, anthropic.new.len()), (25, 1, 24));
    assert!(anthropic.missing.is_empty());
    assert_eq!(anthropic.new[0].display_name.as_deref(), Some("Fake claude-00"));
    let pages: Vec<Option<String>> =
        f.anthropic.received().iter().map(|r| r.query.clone()).collect();
    assert_eq!(pages, [None, Some("after_id=claude-19".to_owned())]);
    let first = &f.anthropic.received()[0];
    assert_eq!((first.method.as_str(), first.path.as_str()), ("GET", "/v1/models"));
    assert_eq!(first.header("x-api-key"), Some("sk-ant-0000000001"));

    let gemini = listed(&found, "gemini");
    assert_eq!((gemini.listed, gemini.matched), (60, 1));
    assert_eq!(f.gemini.received().len(), 2);
    assert_eq!(f.gemini.received()[0].header("x-goog-api-key"), Some("gm-key-0000000001"));

    // Signed with SigV4 (the fake checks it); an inference profile is its model.
    let bedrock = listed(&found, "bedrock");
    assert_eq!((bedrock.listed, bedrock.matched), (2, 2));
    assert_eq!(bedrock.retiring.len(), 1);
    assert_eq!(
        bedrock.retiring[0].deployment,
        deployed("haiku", "anthropic.claude-3-haiku-20240307-v1:0")
    );
    assert_eq!(bedrock.retiring[0].note, "LEGACY");
    // No generation was asked for.
    assert_eq!(f.openai.received().iter().filter(|r| r.method != "GET").count(), 0);
}

#[tokio::test]
async fn a_refused_credential_is_that_provider_s_failure_alone() {
    let f = fakes().await;
    // Signed with a secret the fake does not hold.
    let catalog = catalog(&f, "not-the-secret-0001");
    let found = discover(&catalog, None).await.unwrap();
    let bedrock = found.iter().find(|p| p.provider == "bedrock").unwrap();
    let Outcome::Failed { reason } = &bedrock.outcome else {
        panic!("{bedrock:?}");
    };
    assert!(reason.starts_with("403"), "{reason}");
    assert!(!reason.contains("not-the-secret"), "{reason}");
    // The others are listed all the same.
    listed(&found, "openai");
    listed(&found, "gemini");
    // One provider alone, by name.
    let one = discover(&catalog, Some("openai")).await.unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].wire, "openai-chat");
}

#[tokio::test]
async fn clouds_list_with_their_own_credentials() {
    use switchyard_testkit::{azure, vertex};
    let az = FakeUpstream::start_azure().await.unwrap();
    az.set_models([FakeModel::new("gpt-4o-prod").retiring(), FakeModel::new("gpt-4.1")]);
    let gem = FakeUpstream::start_vertex(Vendor::Gemini).await.unwrap();
    // Over one page of the fake's 100: the token is followed.
    gem.set_models((0..120).map(|i| FakeModel::new(format!("gemini-{i:03}"))));
    let sa = vertex::service_account_json(&format!("{}/token", gem.base_url()));
    let yaml = format!(
        r#"storage: {{ url: none }}
providers:
  azure-v1: {{ wire: azure-openai-v1, endpoint: "{}", credentials: {{ keys: ["{}"] }} }}
  vertex:
    wire: vertex-gemini
    endpoint: "{}/v1/projects/{{project}}/locations/{{region}}"
    region: us-east5
    credentials: {{ google: {{ service_account_env: SA }} }}
models:
  - id: four-o
    deployments: [{{ provider: azure-v1, model: gpt-4o-prod }}]
  - id: pro
    deployments: [{{ provider: vertex, model: "gemini-119@001" }}]
"#,
        az.base_url(),
        azure::API_KEY,
        gem.base_url(),
    );
    let env = move |k: &str| (k == "SA").then(|| sa.clone());
    let raw = ConfigSource::from_text("t.yaml", &yaml).parse_with(&env).unwrap();
    let catalog = Catalog::compile(&raw, "t.yaml", &env).unwrap();
    let found = discover(&catalog, None).await.unwrap();

    let azure_found = listed(&found, "azure-v1");
    assert_eq!((azure_found.listed, azure_found.matched), (2, 1));
    assert_eq!(azure_found.retiring[0].note, "deprecating");
    assert_eq!(azure_found.retiring[0].retires.as_deref(), Some("2026-09-21"));
    let asked = az.received();
    assert_eq!(asked[0].header("api-key"), Some(azure::API_KEY));

    // A token minted from the service account; the version is not the list's.
    let vertex_found = listed(&found, "vertex");
    assert_eq!((vertex_found.listed, vertex_found.matched), (120, 1));
    assert!(gem.tokens_granted() >= 1);
    let lists: Vec<_> = gem.received().into_iter().filter(|r| r.method == "GET").collect();
    assert_eq!(lists.len(), 2);
    assert_eq!(lists[0].path, "/v1beta1/publishers/google/models");
}
