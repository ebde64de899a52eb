//! Values built in code must equal what YAML's serde defaults give, or a builder
//! config and the same YAML would compile differently. Compared by `Debug` (the
//! types have no `PartialEq`); locations are part of it, so the parsed side's
//! required spanned fields are reset to [`unlocated`] first.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde::de::DeserializeOwned;

use super::*;
use crate::access::Effect;

fn parse<T: DeserializeOwned>(yaml: &str) -> T {
    serde_saphyr::from_str(yaml).unwrap()
}

fn same<T: std::fmt::Debug>(built: &T, parsed: &T) {
    assert_eq!(format!("{built:?}"), format!("{parsed:?}"));
}

#[test]
fn defaults_equal_an_empty_yaml_block() {
    same(&RawConfig::default(), &parse("{}"));
    same(&GatewaySettings::default(), &parse("{}"));
    same(&Timeouts::default(), &parse("{}"));
    same(&BreakerSettings::default(), &parse("{}"));
    same(&StorageConfig::default(), &parse("{}"));
    same(&SecurityConfig::default(), &parse("{}"));
    same(&Credentials::default(), &parse("{}"));
    same(&Governance::default(), &parse("{}"));
    same(&Pricing::default(), &parse("{}"));
    same(&Requires::default(), &parse("{}"));
    same(&RetryConfig::default(), &parse("{}"));
    same(&FailoverConfig::default(), &parse("{}"));
}

#[test]
fn constructors_equal_yaml_with_only_the_required_fields() {
    for (wire, yaml) in [
        (WireName::OpenaiChat, "{ wire: openai-chat }"),
        (WireName::Anthropic, "{ wire: anthropic }"),
        (WireName::Gemini, "{ wire: gemini }"),
        (WireName::AzureOpenai, "{ wire: azure-openai }"),
        (WireName::AzureOpenaiV1, "{ wire: azure-openai-v1 }"),
        (WireName::OpenaiResponses, "{ wire: openai-responses }"),
        (WireName::Mock, "{ wire: mock }"),
    ] {
        same(&ProviderConfig::new(wire), &parse(yaml));
    }

    let mut model: ModelConfig = parse("{ id: m }");
    model.id = unlocated(model.id.value);
    same(&ModelConfig::new("m"), &model);

    let mut deployment: DeploymentConfig = parse("{ provider: p }");
    deployment.provider = unlocated(deployment.provider.value);
    same(&DeploymentConfig::new("p"), &deployment);

    let mut route: RouteConfig = parse("{ name: r, match: 'm-*', provider: p }");
    route.pattern = unlocated(route.pattern.value);
    route.provider = unlocated(route.provider.value);
    same(&RouteConfig::new("r", "m-*", "p"), &route);

    let mut target: RouteTarget = parse("{ provider: p }");
    target.provider = unlocated(target.provider.value);
    same(&RouteTarget::new("p"), &target);

    let mut chain: ScopeChain = parse("{ provider: p }");
    chain.provider = unlocated(chain.provider.value);
    same(&ScopeChain::new("p"), &chain);

    let mut scopes: ByScope = parse("{ dimension: project, chains: {} }");
    scopes.dimension = unlocated(scopes.dimension.value);
    same(&ByScope::new("project"), &scopes);

    let mut rule: RuleConfig = parse("{ name: n, effect: deny, pattern: 'x-*', reason: closed }");
    rule.name = unlocated(rule.name.value);
    same(&RuleConfig::new("n", Effect::Deny, "x-*", "closed"), &rule);
}

#[test]
fn a_provider_name_from_code_compares_by_name_and_has_no_line() {
    let parsed: ProviderName = parse("p");
    assert_eq!(ProviderName::new("p"), parsed);
    assert_eq!(ProviderName::new("p").location().line(), 0);
}

#[test]
fn azure_credentials_debug_shows_no_secret() {
    let c: AzureCredentialsConfig =
        parse("{ tenant_id: t, client_id: c, client_secret: hush-XYZ, scope: s }");
    let shown = format!("{c:?}");
    assert!(!shown.contains("hush-XYZ") && shown.contains("tenant_id"), "{shown}");
}
