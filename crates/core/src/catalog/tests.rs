use super::*;
use crate::config::ConfigSource;
use crate::util::{Date, Secret, fnv1a};

pub(super) fn compile(yaml: &str) -> Result<Catalog, InvalidRegistry> {
    let env = |k: &str| (k == "KEY").then(|| "sk-test-123456".to_owned());
    let raw = ConfigSource::from_text("t.yaml", yaml).parse_with(&env).unwrap();
    Catalog::compile(&raw, "t.yaml", &env)
}

pub(super) const BASE: &str = r#"
providers:
  a: { wire: openai-chat, endpoint: "http://127.0.0.1:1/v1", credentials: { env: [KEY] } }
  b: { wire: anthropic, endpoint: "http://127.0.0.1:2", credentials: { env: [KEY] } }
  off: { wire: gemini, credentials: { env: [UNSET_VAR], optional: true } }
models:
  - id: m1
    aliases: [m-one, m1-2025]
    deployments: [{ provider: a, model: up-m1 }, { provider: b }]
    pricing: { input: 1, output: 2 }
  - id: m2
    hidden: true
    deployments: [{ provider: b, model: up-m2 }]
  - id: old
    retires: "2020-01-01"
    deployments: [{ provider: a }]
routes:
  - name: Claude Route
    match: "claude-*"
    provider: b
    fallbacks: [{ provider: a, model: m1 }]
"#;

#[test]
fn resolves_ids_aliases_and_forgiving_names() {
    let c = compile(BASE).unwrap();
    let today = Date::parse("2026-11-30").unwrap();
    for name in ["m1", "M1", "m_one", "m one", "m1-2025[1m]"] {
        let p = c.plan(name, today, &Scope::default()).unwrap();
        assert_eq!(p.public_model, "m1", "{name}");
        assert_eq!(p.candidates[0].upstream_model, "up-m1");
        assert_eq!(p.candidates[1].provider.name, "b");
    }
    assert!(matches!(c.plan("old", today, &Scope::default()), Err(ResolveError::Retired { .. })));
    assert!(matches!(c.plan("nope", today, &Scope::default()), Err(ResolveError::NotFound(_))));
    let visible: Vec<_> = c.visible_models(today).map(|m| m.id.as_str()).collect();
    assert_eq!(visible, ["m1"]);
}

#[test]
fn disabled_provider_is_a_warning_not_a_crash() {
    let c = compile(BASE).unwrap();
    assert!(c.provider("off").unwrap().unavailable.as_deref().unwrap().contains("UNSET_VAR"));
    assert!(c.warnings.iter().any(|w| w.contains("UNSET_VAR")));
}

#[test]
fn route_ids_are_slug_plus_stable_hash() {
    let c = compile(BASE).unwrap();
    assert_eq!(c.routes[0].id, format!("claude-route-{:06x}", fnv1a(b"Claude Route") & 0xff_ffff));
}

#[test]
fn unlisted_models_follow_the_first_matching_route_when_allowed() {
    let yaml = BASE.replace("providers:", "gateway: { allow_unlisted_models: true }\nproviders:");
    let c = compile(&yaml).unwrap();
    let p = c.plan("claude-x", Date::parse("2026-01-01").unwrap(), &Scope::default()).unwrap();
    assert_eq!(p.candidates[0].provider.name, "b");
    assert_eq!(p.candidates[0].upstream_model, "claude-x");
    assert_eq!(
        p.candidates[1].upstream_model, "up-m1",
        "fallback naming a catalog id uses its deployment"
    );
    assert_eq!(p.descriptor, vec![format!("route:{}", c.routes[0].id)]);
    assert!(matches!(
        c.plan("other", Date::parse("2026-01-01").unwrap(), &Scope::default()),
        Err(ResolveError::NoRoute(_))
    ));
}

#[test]
fn problems_are_all_listed_with_lines() {
    let yaml = r#"
providers:
  a: { wire: mock }
models:
  - id: x
    deployments: [{ provider: nowhere }]
  - id: x
    aliases: [x]
    fallbacks: [x, y]
"#;
    let err = compile(yaml).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("model_registry_invalid"), "{text}");
    assert!(
        text.contains("t.yaml:6: models[x].deployments: unknown provider \"nowhere\""),
        "{text}"
    );
    assert!(text.contains("t.yaml:7: models[].id: \"x\" is defined twice"), "{text}");
    assert!(text.contains("t.yaml:8:"), "{text}");
    assert!(text.contains("cannot fall back to itself"), "{text}");
    assert!(text.contains("\"y\" is not a model id"), "{text}");
}

#[test]
fn provider_and_gateway_problems_have_lines_too() {
    // Each problem at the line of the field it is about; a provider with no
    // credentials block at all, at its name.
    let yaml = r#"gateway: { default_model: nowhere }
providers:
  emptykey:
    wire: openai-chat
    credentials: { keys: [""] }
  unset:
    wire: anthropic
    credentials:
      env:
        - KEY_NOT_THERE
  ftp:
    wire: openai-chat
    endpoint: "ftp://x"
    credentials: { none: true }
  undeclared:
    wire: gemini
  marked: { wire: mock, markup: -1 }
models: []
"#;
    let err = compile(yaml).unwrap_err();
    let lines: Vec<(Option<u64>, &str)> =
        err.problems.iter().map(|p| (p.line, p.message.split(':').next().unwrap_or(""))).collect();
    let mut want = vec![
        (Some(1), "gateway.default_model"),
        (Some(5), "providers.emptykey.credentials"),
        (Some(10), "providers.unset.credentials"),
        (Some(13), "providers.ftp.endpoint"),
        (Some(15), "providers.undeclared.credentials"),
        (Some(17), "providers.marked.markup"),
    ];
    let mut got = lines.clone();
    got.sort_by_key(|(l, _)| *l);
    want.sort_by_key(|(l, _)| *l);
    assert_eq!(got, want, "{err}");
}

#[test]
fn a_model_is_reachable_through_its_route_deployments_or_fallbacks() {
    let yaml = r#"
providers:
  on: { wire: openai-chat, endpoint: "http://127.0.0.1:1/v1", credentials: { env: [KEY] } }
  off: { wire: gemini, credentials: { env: [UNSET_VAR], optional: true } }
  mine: { wire: anthropic, credentials: { byok_only: true } }
models:
  - { id: direct, deployments: [{ provider: on }], pricing: { input: 1, output: 1 } }
  - { id: keyless, deployments: [{ provider: off }] }
  - { id: routed, deployments: [{ provider: off }] }
  - { id: falls-back, deployments: [{ provider: off }], fallbacks: [direct] }
  - { id: own-key, deployments: [{ provider: mine }] }
routes:
  - { name: r, match: routed, provider: on }
"#;
    let c = compile(yaml).unwrap();
    let reachable = |byok: &[(String, Secret)]| -> Vec<&str> {
        c.models
            .iter()
            .filter(|m| c.reachable(m, |p| p.reachable_with(byok)))
            .map(|m| m.id.as_str())
            .collect()
    };
    assert_eq!(reachable(&[]), ["direct", "routed", "falls-back"]);
    let own = [("mine".to_owned(), Secret::new("sk-own"))];
    assert_eq!(reachable(&own), ["direct", "routed", "falls-back", "own-key"]);
}

#[test]
fn embedded_default_compiles_without_any_keys() {
    let raw = ConfigSource::embedded().parse_with(&|_| None).unwrap();
    let c = Catalog::compile(&raw, "<embedded default>", &|_| None).unwrap();
    assert!(c.provider("openai").unwrap().unavailable.is_some());
    assert!(c.settings.api_keys.is_empty());
    // A request naming no model gets this one where it enters (the request context).
    assert_eq!(c.settings.default_model.as_deref(), Some("mock-echo"));
    assert!(c.plan("mock-echo", Date::today(), &Scope::default()).is_ok());
}

pub(super) fn problems(yaml: &str) -> String {
    compile(yaml).unwrap_err().to_string()
}

const PROVIDERS: &str = r#"
providers:
  a: { wire: openai-chat, endpoint: "http://127.0.0.1:1/v1", credentials: { env: [KEY] } }
  b: { wire: anthropic, endpoint: "http://127.0.0.1:2", credentials: { env: [KEY] } }
models:
  - id: priced
    deployments: [{ provider: a }, { provider: b, model: up-b }]
    pricing: { input: 1, output: 2 }
  - id: free-text
    deployments: [{ provider: b, model: unpriced-b }]
"#;

#[test]
fn deprecated_single_fallback_keys_are_refused_with_the_new_form() {
    let text = problems(&format!(
        "{PROVIDERS}routes:\n  - name: r\n    match: \"x*\"\n    provider: a\n    fallback_provider: b\n"
    ));
    assert!(text.contains("fallback_provider is no longer supported"), "{text}");
    assert!(text.contains("fallbacks: [{ provider:"), "{text}");
}

#[test]
fn weight_zero_duplicate_and_unpriced_fallbacks_are_refused() {
    let yaml = format!(
        "{PROVIDERS}routes:\n  - name: r\n    match: \"x*\"\n    provider: a\n    weight: 0\n    fallbacks:\n      - {{ provider: b, model: priced }}\n      - {{ provider: b, model: priced }}\n      - {{ provider: b, model: unpriced-b }}\n"
    );
    let text = problems(&yaml);
    assert!(text.contains("weight 0 is refused"), "{text}");
    assert!(text.contains("b is listed twice"), "{text}");
    assert!(text.contains("b/unpriced-b serves no priced catalog model"), "{text}");
}

#[test]
fn missing_credential_source_refuses_boot_unless_optional_or_byok_only() {
    let base = "providers:\n  p: { wire: openai-chat, credentials: { env: [UNSET_X] CREDS } }\nmodels:\n  - { id: m, deployments: [{ provider: p }] }\n";
    let text = problems(&base.replace(" CREDS", ""));
    assert!(text.contains("UNSET_X is not set"), "{text}");
    assert!(compile(&base.replace(" CREDS", ", optional: true")).is_ok());
    let c = compile(&base.replace(" CREDS", ", byok_only: true")).unwrap();
    assert!(c.provider("p").unwrap().unavailable.is_some());
}

#[test]
fn shadowed_routes_are_warned_about() {
    let yaml = format!(
        "{PROVIDERS}routes:\n  - {{ name: wide, match: \"pri*\", provider: a }}\n  - {{ name: narrow, match: \"pric*\", provider: b }}\n"
    );
    let c = compile(&yaml).unwrap();
    assert!(
        c.warnings.iter().any(|w| w.contains("\"narrow\"") && w.contains("shadowed")),
        "{:?}",
        c.warnings
    );
}

#[test]
fn per_project_chains_and_unmapped_projects() {
    let yaml = format!(
        "{PROVIDERS}routes:\n  - name: r\n    match: \"priced\"\n    provider: a\n    by_scope:\n      dimension: project\n      UNMAPPED\n      chains:\n        storefront: {{ provider: b }}\n"
    );
    let today = Date::parse("2026-01-01").unwrap();
    let refuse = compile(&yaml.replace("UNMAPPED", "unmapped: refuse")).unwrap();
    let p = refuse
        .plan("priced", today, &Scope { project: Some("storefront"), ..Scope::default() })
        .unwrap();
    assert_eq!(p.candidates[0].provider.name, "b");
    assert_eq!(
        p.candidates[0].upstream_model, "up-b",
        "the scope chain uses the model's deployment there"
    );
    assert!(p.descriptor.contains(&"scope:project=storefront".to_owned()));
    assert!(matches!(
        refuse.plan("priced", today, &Scope { project: Some("other"), ..Scope::default() }),
        Err(ResolveError::ScopeRefused { .. })
    ));
    let shared = compile(&yaml.replace("UNMAPPED", "unmapped: shared")).unwrap();
    let p = shared
        .plan("priced", today, &Scope { project: Some("other"), ..Scope::default() })
        .unwrap();
    assert_eq!(p.candidates[0].provider.name, "a");
    assert!(p.descriptor.contains(&"scope:project=other".to_owned()));
}

#[test]
fn amplification_is_bounded_by_the_hard_maximums() {
    let yaml = format!(
        "{PROVIDERS}routes:\n  - {{ name: r, match: \"x*\", provider: a, max_fallbacks: 1000, max_attempts: 1000, retry: {{ max_retries: 50 }} }}\n"
    );
    let c = compile(&yaml).unwrap();
    let p = &c.routes[0].policy;
    assert_eq!(
        (p.max_fallbacks, p.max_attempts, p.max_retries),
        (HARD_MAX_FALLBACKS, HARD_MAX_ATTEMPTS, MAX_RETRIES)
    );
    assert_eq!(AttemptPolicy::default().max_fallbacks, DEFAULT_MAX_FALLBACKS);
    assert_eq!(AttemptPolicy::default().max_attempts, DEFAULT_MAX_ATTEMPTS);
    assert_eq!(c.warnings.len(), 3, "{:?}", c.warnings);
}

#[test]
fn failover_presets() {
    let d = AttemptPolicy::default();
    for s in [401, 402, 403, 404, 408, 409, 425, 429, 500, 503, 599] {
        assert!(d.fails_over(s), "{s}");
    }
    for s in [400, 413, 422] {
        assert!(!d.fails_over(s), "{s}");
    }
    let yaml = format!(
        "{PROVIDERS}routes:\n  - {{ name: r, match: \"x*\", provider: a, failover: {{ preset: strict }} }}\n"
    );
    let strict = compile(&yaml).unwrap().routes[0].policy.clone();
    assert!(
        strict.fails_over(429)
            && strict.fails_over(502)
            && !strict.fails_over(401)
            && !strict.fails_over(404)
    );
}

#[test]
fn namespace_prefixes_map_onto_canonical_names() {
    let yaml = format!("gateway: {{ model_prefixes: [\"sy/\", \"switchyard/\"] }}\n{PROVIDERS}");
    let c = compile(&yaml).unwrap();
    let today = Date::parse("2026-01-01").unwrap();
    for name in ["sy/priced", "switchyard/priced", "SY/Priced", "priced"] {
        assert_eq!(
            c.plan(name, today, &Scope::default()).unwrap().public_model,
            "priced",
            "{name}"
        );
    }
    assert!(c.plan("other/priced", today, &Scope::default()).is_err());
}

#[test]
fn backend_surface_models_are_served_but_never_listed() {
    let yaml = PROVIDERS.replace(
        "credentials: { env: [KEY] } }\n  b:",
        "credentials: { env: [KEY] }, surface: backend }\n  b:",
    ) + "  - id: backend-only\n    deployments: [{ provider: a, model: x }]\n";
    let c = compile(&yaml).unwrap();
    let today = Date::parse("2026-01-01").unwrap();
    let listed: Vec<_> = c.visible_models(today).map(|m| m.id.as_str()).collect();
    assert!(!listed.contains(&"backend-only") && listed.contains(&"priced"), "{listed:?}");
    assert!(c.plan("backend-only", today, &Scope::default()).is_ok());
}

#[test]
fn routes_whose_deployments_miss_their_governance_requirements_are_refused() {
    let yaml = PROVIDERS.replace(
        "credentials: { env: [KEY] } }\n  b:",
        "credentials: { env: [KEY] }, governance: { european: true } }\n  b:",
    ) + "routes:\n  - { name: eu, match: \"pri*\", provider: a, requires: { european: true, no_retain: true } }\n  - { name: eu2, match: \"x*\", provider: a, requires: { european: true }, fallbacks: [{ provider: b, model: priced }] }\n";
    let text = problems(&yaml);
    assert!(text.contains("routes[eu].requires: a does not satisfy `no_retain`"), "{text}");
    assert!(text.contains("routes[eu2].requires: b/priced does not satisfy `european`"), "{text}");
    assert!(!text.contains("a does not satisfy `european`"), "{text}");
}

#[test]
fn a_model_narrowing_its_providers_governance_is_judged_at_boot_as_at_dispatch() {
    let yaml = PROVIDERS
        .replace(
            "credentials: { env: [KEY] } }\n  b:",
            "credentials: { env: [KEY] }, governance: { no_retain: true } }\n  b:",
        )
        .replace(
            "    pricing: { input: 1, output: 2 }\n",
            "    pricing: { input: 1, output: 2 }\n    governance: { no_retain: false }\n",
        )
        + "routes:\n  - { name: keep-nothing, match: \"pri*\", provider: a, requires: { no_retain: true } }\n";
    let text = problems(&yaml);
    assert!(
        text.contains(
            "routes[keep-nothing].requires: a serving model priced does not satisfy `no_retain`"
        ),
        "{text}"
    );
    // Without the model's narrowing the same route is fine.
    let ok = yaml.replace("    governance: { no_retain: false }\n", "");
    let c = compile(&ok).unwrap();
    let plan = c.plan("priced", Date::parse("2026-01-01").unwrap(), &Scope::default()).unwrap();
    assert!(plan.candidates[0].governance(&plan.requires).is_ok());
}

#[test]
fn access_rules_compile_with_one_subject_each() {
    let ok = format!(
        "{PROVIDERS}access_rules:\n  - {{ name: r1, effect: deny, pattern: \"pri*\", group: g, reason: no }}\n"
    );
    let c = compile(&ok).unwrap();
    assert_eq!(c.rules[0].subject, crate::access::Subject::Group("g".into()));
    let bad = format!(
        "{PROVIDERS}access_rules:\n  - {{ name: r1, effect: deny, pattern: x, group: g, user: u, reason: no }}\n  - {{ name: r1, effect: allow, pattern: y, reason: dup }}\n"
    );
    let text = problems(&bad);
    assert!(
        text.contains("at most one of role, group, project, user")
            && text.contains("defined twice"),
        "{text}"
    );
}

#[test]
fn governance_problems_name_their_own_route_after_one_that_did_not_compile() {
    let yaml = format!(
        "{PROVIDERS}routes:\n  - {{ name: ghost, match: \"g*\", provider: nowhere }}\n  - {{ name: eu, match: \"pri*\", provider: a, requires: {{ european: true }} }}\n  - {{ name: plain, match: \"free*\", provider: b }}\n"
    );
    let text = problems(&yaml);
    assert!(text.contains("routes[eu].requires: a"), "{text}");
    assert!(!text.contains("routes[plain]"), "{text}");
}

#[test]
fn server_tools_default_by_wire_and_are_checked_against_it() {
    use switchyard_protocol::{ServerTool, ServerTools};
    let c = compile(BASE).unwrap();
    let today = Date::parse("2026-11-30").unwrap();
    let plan = c.plan("m1", today, &Scope::default()).unwrap();
    // An OpenAI-compatible server runs none unless said so; Anthropic its own.
    assert_eq!(plan.candidates[0].server_tools, ServerTools::NONE);
    assert!(plan.candidates[1].server_tools.contains(ServerTool::WebSearch));
    assert!(plan.candidates[1].server_tools.contains(ServerTool::Mcp));
    assert!(!plan.candidates[1].server_tools.contains(ServerTool::FileSearch));

    let declared = BASE
        .replace(
            "credentials: { env: [KEY] } }\n  b:",
            "credentials: { env: [KEY] }, server_tools: [web_search] }\n  b:",
        )
        .replace(
            "deployments: [{ provider: b, model: up-m2 }]",
            "deployments: [{ provider: b, model: up-m2, server_tools: [web_search] }]",
        );
    let c = compile(&declared).unwrap();
    let plan = c.plan("m1", today, &Scope::default()).unwrap();
    assert_eq!(plan.candidates[0].server_tools, ServerTools::of([ServerTool::WebSearch]));
    let plan = c.plan("m2", today, &Scope::default()).unwrap();
    assert_eq!(plan.candidates[0].server_tools, ServerTools::of([ServerTool::WebSearch]));

    // A promise the wire cannot keep is refused at its line.
    let bad = BASE.replace(
        "credentials: { env: [KEY] } }\n  b:",
        "credentials: { env: [KEY] },\n      server_tools: [web_search, file_search] }\n  b:",
    );
    let p = problems(&bad);
    assert!(
        p.contains("t.yaml:4: providers.a.server_tools: file_search cannot run on the openai-chat wire (it runs: web_search)"),
        "{p}"
    );
    let bad = BASE.replace(
        "deployments: [{ provider: b, model: up-m2 }]",
        "deployments: [{ provider: b, model: up-m2, server_tools: [image_generation] }]",
    );
    assert!(problems(&bad).contains(
        "models[m2].deployments[b].server_tools: image_generation cannot run on the anthropic wire"
    ));
    // An unknown name is the parser's to refuse, with its line.
    let unknown = BASE.replace(
        "credentials: { env: [KEY] } }\n  b:",
        "credentials: { env: [KEY] }, server_tools: [teleport] }\n  b:",
    );
    let err = ConfigSource::from_text("t.yaml", &unknown).parse_with(&|_| None).unwrap_err();
    let err = err.to_string();
    assert!(err.starts_with("t.yaml:3:106: unknown variant `teleport`"), "{err}");
    // Beta flags are an Anthropic provider's setting.
    let betas = BASE.replace(
        "credentials: { env: [KEY] } }\n  b:",
        "credentials: { env: [KEY] }, anthropic_betas: [x] }\n  b:",
    );
    assert!(problems(&betas).contains("providers.a.anthropic_betas"));
}

#[test]
fn model_names_are_the_documented_set() {
    for good in [
        "gpt-5",
        "gemini-2.5-pro",
        "anthropic.claude-v2:1",
        "claude-x@20250101",
        "meta-llama/Llama-3-70b",
        "accounts/fireworks/models/x",
        "sy/auto",
        "a+b_c",
        "...x",
        &"x".repeat(256),
    ] {
        assert!(model_name_ok(good), "{good}");
    }
    for bad in [
        "",
        "gemini-x/../../../v1beta/files#",
        "gemini-x?key=injected&",
        "gemini-x%2F..%2Fcachedcontents",
        "/x",
        "x/",
        "a//b",
        "a/./b",
        "..",
        "a b",
        "a\u{0}b",
        "caf\u{e9}",
        "a~b",
        &"x".repeat(257),
    ] {
        assert!(!model_name_ok(bad), "{bad:?}");
    }
}

#[test]
fn a_name_outside_the_rule_is_refused_before_it_can_go_upstream() {
    let yaml = BASE.replace("providers:", "gateway: { allow_unlisted_models: true }\nproviders:");
    let c = compile(&yaml).unwrap();
    let today = Date::parse("2026-01-01").unwrap();
    for bad in ["claude-x/../../v1/files#", "claude-x?key=1", "claude-x%2f..", "claude-\u{e9}"] {
        let err = c.plan(bad, today, &Scope::default()).unwrap_err();
        assert!(matches!(&err, ResolveError::InvalidName(n) if n == bad), "{bad:?}: {err:?}");
        let err = crate::GatewayError::from(err);
        assert_eq!((err.status(), err.code()), (400, switchyard_protocol::ErrorCode::InvalidModel));
    }
    // At most 100 characters of a long name are quoted back.
    let long = format!("claude-{}#", "x".repeat(200));
    let Err(ResolveError::InvalidName(quoted)) = c.plan(&long, today, &Scope::default()) else {
        panic!("refused")
    };
    assert_eq!(quoted, format!("{}…", &long[..100]));
    assert!(c.plan("claude-x", today, &Scope::default()).is_ok());
}

#[test]
fn catalog_names_outside_the_rule_are_problems_at_their_lines() {
    let yaml = r#"
providers:
  a: { wire: gemini, credentials: { env: [KEY] } }
models:
  - id: "bad id?"
    deployments: [{ provider: a }]
  - id: fine
    aliases: ["al#ias"]
    deployments: [{ provider: a, model: "up/../files" }]
    pricing: { input: 1, output: 2 }
routes:
  - name: r
    match: "gemini-*"
    provider: a
    model: "x?key=1"
    fallbacks: [{ provider: a, model: fine }]
"#;
    let text = problems(yaml);
    for want in [
        "t.yaml:5: models[].id: \"bad-id?\" is not a valid model name",
        "t.yaml:6: models[bad-id?].deployments[a].model: \"bad id?\" is not a valid model name",
        "t.yaml:8: models[fine].aliases: \"al#ias\" is not a valid model name",
        "t.yaml:9: models[fine].deployments[a].model: \"up/../files\" is not a valid model name",
        "t.yaml:14: routes[r].model: \"x?key=1\" is not a valid model name",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
    // A target naming a catalog model sends that model's own upstream name.
    assert!(!text.contains("fallbacks[].model"), "{text}");
}

#[test]
fn edge_settings_compile_to_what_requests_are_compared_with() {
    let yaml = format!(
        r#"
gateway:
  allowed_hosts: ["Gateway.Internal", "switchyard."]
  allowed_origins: ["https://App.Example.com/", "http://localhost:3000", "https://a.example:443", "http://[::1]:80"]
  metrics_listen: "127.0.0.1:9090"
{PROVIDERS}"#
    );
    let s = compile(&yaml).unwrap().settings;
    assert_eq!(s.allowed_hosts, ["gateway.internal", "switchyard"]);
    assert_eq!(
        s.allowed_origins,
        ["https://app.example.com", "http://localhost:3000", "https://a.example", "http://[::1]"]
    );
    assert_eq!(s.metrics_listen.as_deref(), Some("127.0.0.1:9090"));
    let none = compile(PROVIDERS).unwrap().settings;
    assert!(none.allowed_hosts.is_empty() && none.allowed_origins.is_empty());
    assert_eq!(none.metrics_listen, None);
}

#[test]
fn edge_settings_that_could_never_match_are_problems_at_their_lines() {
    let yaml = format!(
        r#"
gateway:
  listen: "127.0.0.1:8080"
  allowed_hosts:
    - "https://gateway.internal"
    - "gateway.internal:8080"
    - "*.example.com"
  allowed_origins:
    - "app.example.com"
    - "https://app.example.com/path"
    - "null"
    - "ftp://files.example"
    - "https://app.example.com:99999"
  metrics_listen: "127.0.0.1:8080"
{PROVIDERS}"#
    );
    let text = problems(&yaml);
    for (line, what) in [
        (5, "gateway.allowed_hosts: \"https://gateway.internal\""),
        (6, "gateway.allowed_hosts: \"gateway.internal:8080\""),
        (7, "gateway.allowed_hosts: \"*.example.com\""),
        (9, "gateway.allowed_origins: \"app.example.com\""),
        (10, "gateway.allowed_origins: \"https://app.example.com/path\""),
        (11, "gateway.allowed_origins: \"null\""),
        (12, "gateway.allowed_origins: \"ftp://files.example\""),
        (13, "gateway.allowed_origins: \"https://app.example.com:99999\""),
        (14, "gateway.metrics_listen: the same address as gateway.listen"),
    ] {
        assert!(text.contains(&format!("t.yaml:{line}: {what}")), "{what} at {line}:\n{text}");
    }
    let no_port = format!("gateway:\n  metrics_listen: \"127.0.0.1\"\n{PROVIDERS}");
    assert!(problems(&no_port).contains("expected host:port"));
}

#[test]
fn numbers_that_cannot_mean_what_they_say_are_problems_naming_their_field() {
    let yaml = r#"
gateway:
  timeouts: { connect_ms: 0 }
  breaker: { threshold: -1 }
storage: { max_connections: 0 }
providers:
  a: { wire: openai-chat, endpoint: "http://127.0.0.1:1/v1", credentials: { env: [KEY] } }
models:
  - id: m
    context_window: 0
    pricing: { input: -1, output: .nan }
    deployments:
      - provider: a
        pricing: { input: 1, output: .inf }
"#;
    let text = problems(yaml);
    for want in [
        "t.yaml:9: models[m].pricing.input: -1 is not a price",
        "t.yaml:9: models[m].pricing.output: NaN is not a price",
        "t.yaml:9: models[m].context_window: must be greater than 0",
        "t.yaml:13: models[m].deployments[a].pricing.output: inf is not a price",
        "t.yaml: gateway.timeouts.connect_ms: must be greater than 0",
        "t.yaml: storage.max_connections: must be greater than 0",
        "t.yaml: gateway.breaker.threshold: must be a number greater than 0",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    // Zero prices are prices (a free model), and the defaults pass.
    let free = r#"
providers:
  a: { wire: openai-chat, endpoint: "http://127.0.0.1:1/v1", credentials: { env: [KEY] } }
models:
  - id: m
    pricing: { input: 0, output: 0, cache_read: 0 }
    deployments: [{ provider: a }]
"#;
    compile(free).unwrap();
}

#[test]
fn problems_are_listed_in_line_order() {
    // The default model is checked last, but its line comes first.
    let yaml = r#"
gateway: { default_model: ghost, timeouts: { idle_ms: 0 } }
providers:
  a: { wire: mock }
models:
  - id: x
    deployments: [{ provider: nowhere }]
"#;
    let err = compile(yaml).unwrap_err();
    let lines: Vec<Option<u64>> = err.problems.iter().map(|p| p.line).collect();
    assert_eq!(lines, [Some(2), Some(7), None], "{err}");
}

#[test]
fn gemini_runs_what_its_api_runs_unless_narrowed() {
    use switchyard_protocol::{ServerTool, ServerTools, Wire, carry};
    let yaml = r#"
providers:
  g: { wire: gemini, credentials: { env: [KEY] } }
  narrow: { wire: gemini, credentials: { env: [KEY] }, server_tools: [web_search] }
models:
  - id: gm
    deployments: [{ provider: g }, { provider: narrow }, { provider: g, model: g-none, server_tools: [] }]
"#;
    let c = compile(yaml).unwrap();
    let plan = c.plan("gm", Date::parse("2026-11-30").unwrap(), &Scope::default()).unwrap();
    let tools: Vec<ServerTools> = plan.candidates.iter().map(|c| c.server_tools).collect();
    let all =
        ServerTools::of([ServerTool::WebSearch, ServerTool::WebFetch, ServerTool::CodeExecution]);
    assert_eq!(all, carry::runnable(Wire::Gemini));
    assert_eq!(tools, [all, ServerTools::of([ServerTool::WebSearch]), ServerTools::NONE]);
}

#[test]
fn unrunnable_server_tools_is_the_routes_else_the_models_else_drop() {
    use crate::config::raw::UnrunnableServerTools::{Drop, Refuse};
    let yaml = BASE
        .replace("  - id: m2\n", "  - id: m2\n    unrunnable_server_tools: refuse\n")
        .replace(
            "    fallbacks: [{ provider: a, model: m1 }]\n",
            "    fallbacks: [{ provider: a, model: m1 }]\n  - { name: lenient, match: \"m2*\", provider: b, unrunnable_server_tools: drop }\n",
        );
    let c = compile(&yaml).unwrap();
    let today = Date::parse("2026-11-30").unwrap();
    let mode = |id: &str| c.plan(id, today, &Scope::default()).unwrap().unrunnable_server_tools;
    assert_eq!(mode("m1"), Drop, "the default");
    assert_eq!(mode("m2"), Drop, "the route's word over the model's");
    // Without the route, the model's.
    let no_route =
        BASE.replace("  - id: m2\n", "  - id: m2\n    unrunnable_server_tools: refuse\n");
    let c = compile(&no_route).unwrap();
    assert_eq!(c.plan("m2", today, &Scope::default()).unwrap().unrunnable_server_tools, Refuse);
    let bad = BASE.replace("  - id: m2\n", "  - id: m2\n    unrunnable_server_tools: ignore\n");
    let err = ConfigSource::from_text("t.yaml", &bad).parse_with(&|_| None).unwrap_err();
    assert!(err.to_string().contains("unknown variant `ignore`"), "{err}");
}

// The controls' configuration (`state:`, `limits:`, `budgets:`, caches).
#[path = "controls_tests.rs"]
mod controls;

#[test]
fn the_catalog_names_the_family_of_an_id_that_names_none() {
    use switchyard_protocol::{Family, ReasoningControl, Wire};
    let arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3";
    let models = format!(
        "models:\n  - id: profiled\n    family: claude\n    deployments: [{{ provider: b, model: \"{arn}\" }}]\n  \
         - id: unnamed\n    deployments: [{{ provider: b, model: \"{arn}\" }}]\n"
    );
    let yaml = BASE.replacen("models:\n", &models, 1);
    let c = compile(&yaml).unwrap();
    let today = Date::parse("2026-11-30").unwrap();
    let traits = |name: &str| {
        let plan = c.plan(name, today, &Scope::default()).unwrap();
        plan.candidates[0].traits(Wire::Anthropic)
    };
    assert_eq!(traits("profiled").family, Family::Claude);
    assert_eq!(traits("unnamed").family, Family::Other);
    // Read from the id where it names one.
    assert_eq!(traits("m2").family, Family::Other);
    assert_eq!(traits("m2").reasoning, ReasoningControl::Budget);
}

#[test]
fn console_oidc_is_compiled_and_its_problems_are_at_the_block_s_line() {
    let env = |k: &str| (k == "KEY" || k == "IDP_SECRET").then(|| "sk-test-123456".to_owned());
    let ok = format!(
        "{BASE}console:\n  oidc:\n    issuer: https://id.example.com/realms/ops/\n    client_id: gw\n    client_secret_env: IDP_SECRET\n    admin_groups: [ops]\n"
    );
    let raw = ConfigSource::from_text("t.yaml", &ok).parse_with(&env).unwrap();
    let c = Catalog::compile(&raw, "t.yaml", &env).unwrap();
    let o = c.console.oidc.as_deref().unwrap();
    assert_eq!(
        o.discovery_url(),
        "https://id.example.com/realms/ops/.well-known/openid-configuration"
    );
    assert_eq!((o.scope.as_str(), o.group_claim.as_str()), ("openid email profile", "groups"));
    assert_eq!(o.display_name, "Single sign-on");
    assert_eq!(o.client_secret.as_ref().map(Secret::expose), Some("sk-test-123456"));
    assert!(compile(BASE).unwrap().console.oidc.is_none());

    // The block's line: where its mapping starts, `oidc:`.
    let line = BASE.lines().count() + 2;
    let bad = format!(
        "{BASE}console:\n  oidc:\n    issuer: http://id.example.com\n    client_id: \"\"\n    client_secret_env: UNSET_VAR\n    scopes: [email]\n    redirect_url: gw.example/cb\n"
    );
    let text = problems(&bad);
    for what in [
        "console.oidc.issuer: must be an https URL",
        "console.oidc.client_id: required",
        "console.oidc.client_secret_env: the variable UNSET_VAR is not set",
        "console.oidc.scopes: must include openid",
        "console.oidc.redirect_url:",
        "console.oidc: admin_groups and viewer_groups are both empty",
    ] {
        assert!(text.contains(&format!("t.yaml:{line}: {what}")), "{what} at {line}:\n{text}");
    }
    // An unknown key is the parser's to refuse.
    let typo = format!(
        "{BASE}console:\n  oidc:\n    issuer: https://x\n    client_id: a\n    admin_group: [x]\n"
    );
    assert!(ConfigSource::from_text("t.yaml", &typo).parse_with(&env).is_err());
}
