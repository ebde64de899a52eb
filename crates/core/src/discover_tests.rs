#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use switchyard_protocol::Wire;
use switchyard_protocol::listing::ListedModel;

use super::{Comparison, Deployed, NewModel, Outcome, Retiring, compare, discover};
use crate::catalog::Catalog;
use crate::config::ConfigSource;

fn compile(yaml: &str) -> Catalog {
    let env = |k: &str| (k == "KEY").then(|| "sk-test-secret-value".to_owned());
    let raw = ConfigSource::from_text("t.yaml", yaml).parse_with(&env).unwrap();
    Catalog::compile(&raw, "t.yaml", &env).unwrap()
}

const YAML: &str = "
providers:
  bedrock:
    wire: bedrock
    region: us-east-1
    credentials: { env: [KEY] }
  other:
    wire: openai-chat
    endpoint: http://127.0.0.1:9/v1
    credentials: { env: [KEY] }
models:
  - id: sonnet
    deployments:
      - { provider: bedrock, model: \"us.anthropic.claude-sonnet-4-5-20250929-v1:0\" }
      - { provider: other, model: not-on-bedrock }
  - id: haiku-3
    deployments: [{ provider: bedrock, model: \"anthropic.claude-3-haiku-20240307-v1:0\" }]
  - id: gone
    deployments: [{ provider: bedrock, model: \"meta.llama2-70b-v1\" }]
";

fn deployed(model: &str, upstream: &str) -> Deployed {
    Deployed { model: model.into(), upstream_model: upstream.into() }
}

#[test]
fn new_missing_and_retiring_on_one_provider() {
    let catalog = compile(YAML);
    let bedrock = catalog.provider("bedrock").unwrap();
    let listed = [
        ListedModel::new("anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ListedModel {
            retiring: Some("LEGACY".into()),
            ..ListedModel::new("anthropic.claude-3-haiku-20240307-v1:0")
        },
        ListedModel {
            display_name: Some("Nova Pro".into()),
            ..ListedModel::new("amazon.nova-pro-v1:0")
        },
        // Named twice: one model.
        ListedModel::new("amazon.nova-pro-v1:0"),
    ];
    let found = compare(&catalog, bedrock, Wire::Bedrock, &listed);
    assert_eq!(
        found,
        Comparison {
            listed: 3,
            matched: 2,
            new: vec![NewModel {
                id: "amazon.nova-pro-v1:0".into(),
                display_name: Some("Nova Pro".into())
            }],
            // Another provider's deployment is not this one's to miss.
            missing: vec![deployed("gone", "meta.llama2-70b-v1")],
            retiring: vec![Retiring {
                deployment: deployed("haiku-3", "anthropic.claude-3-haiku-20240307-v1:0"),
                note: "LEGACY".into(),
                retires: None,
            }],
        }
    );
}

#[test]
fn a_retirement_date_is_a_day() {
    let catalog = compile(YAML);
    let other = catalog.provider("other").unwrap();
    let listed = [ListedModel {
        retiring: Some("deprecating".into()),
        retires_at: Some(1_751_328_000),
        ..ListedModel::new("not-on-bedrock")
    }];
    let found = compare(&catalog, other, Wire::OpenAiChat, &listed);
    assert_eq!(found.retiring[0].retires.as_deref(), Some("2025-07-01"));
    assert!(found.new.is_empty() && found.missing.is_empty());
}

#[tokio::test]
async fn what_cannot_be_listed_says_why_and_the_rest_still_runs() {
    let yaml = "
providers:
  mock: { wire: mock }
  azure:
    wire: azure-openai
    endpoint: https://r.openai.azure.com
    credentials: { env: [KEY] }
  off:
    wire: anthropic
    credentials: { env: [UNSET], optional: true }
  down:
    wire: openai-chat
    endpoint: http://127.0.0.1:9/v1
    credentials: { env: [KEY] }
models:
  - id: m
    deployments: [{ provider: mock }]
";
    let catalog = compile(yaml);
    let found = discover(&catalog, None).await.unwrap();
    let by = |name: &str| &found.iter().find(|p| p.provider == name).unwrap().outcome;
    let reason = |o: &Outcome| match o {
        Outcome::Unsupported { reason } | Outcome::Failed { reason } => reason.clone(),
        Outcome::Listed(_) => panic!("listed: {o:?}"),
    };
    assert!(matches!(by("mock"), Outcome::Unsupported { .. }));
    assert!(reason(by("azure")).contains("Azure Resource Manager"));
    assert!(reason(by("off")).starts_with("disabled"), "{:?}", by("off"));
    assert!(matches!(by("down"), Outcome::Failed { .. }), "{:?}", by("down"));
    for p in &found {
        assert!(!serde_json::to_string(p).unwrap().contains("sk-test-secret-value"));
    }
    assert!(discover(&catalog, Some("nope")).await.is_err());
    assert_eq!(discover(&catalog, Some("mock")).await.unwrap().len(), 1);
}
