//! Library mode, black box: a gateway in-process in front of test-kit fakes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use switchyard_core::embed::{
    AccessRule, Capability, Chain, Deployment, FailoverConfig, FailoverPreset, Gateway, Generate,
    Governance, Model, Pricing, Provider, RetryConfig, Route, Secret, Strategy, Target,
    UnrunnableServerTools,
};
use switchyard_core::exec::RequestRouting;
use switchyard_core::protocol::{
    Delta, Dialect, ErrorCode, HostedTool, Message, Request, Role, ServerTool, StreamEvent,
};
use switchyard_core::{Catalog, ConfigSource, InvalidRegistry, LoadError};
use switchyard_testkit::{FakeUpstream, Reply, Vendor};

async fn gateway() -> (Gateway, FakeUpstream, FakeUpstream) {
    let a = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    let b = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    let yaml = format!(
        "storage: {{ url: none }}\nproviders:\n  a: {{ wire: openai-chat, endpoint: \"{}/v1\", credentials: {{ keys: [ka-0000000001] }} }}\n  b: {{ wire: openai-chat, endpoint: \"{}/v1\", credentials: {{ keys: [kb-0000000001] }} }}\nmodels:\n  - {{ id: one, deployments: [{{ provider: a, model: up-one }}] }}\n  - {{ id: two, deployments: [{{ provider: b, model: up-two }}] }}\n",
        a.base_url(),
        b.base_url()
    );
    (Gateway::from_yaml("t.yaml", &yaml, &|_| None).unwrap(), a, b)
}

fn ask(model: &str) -> Request {
    Request {
        model: model.into(),
        messages: vec![Message::text(Role::User, "hi")],
        ..Request::default()
    }
}

#[tokio::test]
async fn invalid_model_ids_are_typed_errors_never_panics() {
    let (gw, ..) = gateway().await;
    for bad in [String::new(), "x".repeat(257), "a\nb".into()] {
        let err = gw.generate(Generate::new(ask(&bad))).await.unwrap_err();
        assert_eq!((err.status(), err.code()), (400, ErrorCode::InvalidModel), "{bad:?}");
    }
    let routing = RequestRouting::default().fallback("bad\u{0}");
    let err = gw.generate(Generate::new(ask("one")).routing(routing)).await;
    assert_eq!(err.unwrap_err().code(), ErrorCode::InvalidModel);
}

#[tokio::test]
async fn request_fallbacks_and_bounds_apply() {
    let (gw, a, b) = gateway().await;
    // The request's fallback serves when its model's only deployment fails.
    a.push(Reply::status(500));
    let routing = RequestRouting::default().fallback("two");
    let answer = gw.generate(Generate::new(ask("one")).routing(routing)).await.unwrap();
    assert_eq!((answer.provider.as_str(), answer.attempts.len()), ("b", 2));
    // max_fallbacks: 0 keeps to the model's own candidates.
    a.push(Reply::status(500));
    let routing = RequestRouting::default().fallback("two").max_fallbacks(0);
    let err = gw.generate(Generate::new(ask("one")).routing(routing)).await;
    assert_eq!(err.unwrap_err().status(), 502);
    assert_eq!(b.request_count(), 1, "the fallback was not tried");
    // An attempt timeout shorter than the upstream's first byte fails the attempt.
    a.push(Reply::auto().first_byte_delay(Duration::from_secs(5)));
    let routing = RequestRouting::default().attempt_timeout(Duration::from_millis(100));
    let err = gw.generate(Generate::new(ask("one")).routing(routing)).await;
    assert_eq!(err.unwrap_err().code(), ErrorCode::UpstreamTimeout);
}

#[tokio::test]
async fn many_gateways_live_in_one_process() {
    let (one, a1, _) = gateway().await;
    let (two, a2, _) = gateway().await;
    one.generate(Generate::new(ask("one"))).await.unwrap();
    two.generate(Generate::new(ask("one"))).await.unwrap();
    two.generate(Generate::new(ask("one"))).await.unwrap();
    assert_eq!((a1.request_count(), a2.request_count()), (1, 2));
}

#[tokio::test]
async fn a_library_stream_ends_with_its_attempts_and_usage() {
    // `_b`, not `_`: the fallback's fake must outlive the request.
    let (gw, a, _b) = gateway().await;
    a.push(Reply::status(500));
    let routing = RequestRouting::default().fallback("two");
    let mut stream = gw.stream(Generate::new(ask("one")).routing(routing)).await.unwrap();
    assert_eq!(stream.provider, "b");
    assert!(stream.attempts().is_none(), "the record comes with the end");
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        if let StreamEvent::Delta { delta: Delta::Text { text: t }, .. } = event.unwrap() {
            text.push_str(&t);
        }
    }
    assert!(!text.is_empty());
    let attempts = stream.attempts().unwrap();
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0].deployment, "a/up-one");
    assert_eq!(attempts[0].outcome, "status_500");
    let usage = stream.usage().unwrap();
    assert!(usage.output_tokens.unwrap() > 0);
}

/// A library caller learns which offered tools its answer went without.
#[tokio::test]
async fn a_library_answer_names_the_tools_it_went_without() {
    let gw = Gateway::builder()
        .provider("local", Provider::mock())
        .model(Model::new("echo").deployment("local", "echo-1"))
        .model(
            Model::new("strict")
                .deployment("local", "echo-1")
                .unrunnable_server_tools(UnrunnableServerTools::Refuse),
        )
        .build()
        .unwrap();
    let offering = |model: &str| {
        let mut request = ask(model);
        request.extras.hosted_tools.push(HostedTool {
            kind: Some(ServerTool::WebSearch),
            dialect: Dialect::OpenAiResponses,
            tool_type: "web_search".into(),
            path: "tools[0]".into(),
            config: serde_json::json!({"type": "web_search"}),
        });
        Generate::new(request)
    };
    let answer = gw.generate(offering("echo")).await.unwrap();
    assert_eq!(answer.dropped_tools, ["web_search"]);
    let stream = gw.stream(offering("echo")).await.unwrap();
    assert_eq!(stream.dropped_tools, ["web_search"]);
    let plain = gw.generate(Generate::new(ask("echo"))).await.unwrap();
    assert!(plain.dropped_tools.is_empty());
    let err = gw.generate(offering("strict")).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::UnsupportedTool);
}

/// What a catalog compiled to, for comparing two: everything but the lookup
/// indexes (hash maps, whose `Debug` order differs between two equal catalogs).
fn compiled(c: &Catalog) -> String {
    format!(
        "{:?}",
        (
            &c.settings,
            &c.providers,
            &c.models,
            &c.routes,
            &c.rules,
            &c.storage,
            &c.security,
            &c.warnings
        )
    )
}

fn test_env(k: &str) -> Option<String> {
    (k == "ANTHROPIC_KEY").then(|| "sk-ant-0123456789".to_owned())
}

fn compile_yaml(yaml: &str) -> Result<Catalog, InvalidRegistry> {
    let raw = ConfigSource::from_text("t.yaml", yaml).parse_with(&test_env).unwrap();
    Catalog::compile(&raw, "t.yaml", &test_env)
}

const EVERYTHING: &str = r#"
storage: { url: none }
gateway:
  default_model: smart
  timeouts: { first_byte_ms: 30000 }
  breaker: { threshold: 3 }
providers:
  openai: { wire: openai-chat, endpoint: "http://127.0.0.1:9/v1", credentials: { keys: [sk-literal-0001] }, headers: { x-org: acme }, server_tools: [web_search], markup: 1.1 }
  claude: { wire: anthropic, credentials: { env: [ANTHROPIC_KEY] }, anthropic_betas: [context-1m-2025-08-07] }
  gemini: { wire: gemini, credentials: { env: [UNSET], optional: true }, governance: { european: true } }
  local: { wire: mock, latency_ms: 5 }
  vllm: { wire: openai-chat, endpoint: "http://127.0.0.1:8000/v1", credentials: { none: true }, surface: backend, drop_fields: [prompt_cache_key] }
models:
  - id: smart
    aliases: [clever]
    deployments: [{ provider: claude, model: claude-sonnet-4-5 }, { provider: openai, model: gpt-4.1, pricing: { input: 2, output: 8 } }]
    pricing: { input: 3, output: 15 }
    context_window: 200000
    capabilities: [vision, tools]
    fallbacks: [echo]
  - id: echo
    deployments: [{ provider: local }]
    pricing: { input: 0, output: 0 }
    hidden: true
    retires: "2099-01-01"
    owned_by: tests
  - id: big
    deployments: [{ provider: vllm, model: llama-70b, server_tools: [] }]
    unrunnable_server_tools: refuse
routes:
  - name: Smart first
    match: smart
    provider: openai
    fallbacks: [{ provider: claude, weight: 2 }, { provider: local, model: echo }]
    strategy: weighted
    retry: { max_retries: 2, statuses: [429], backoff_ms: 100, max_wait_ms: 1000 }
    failover: { preset: strict }
    max_attempts: 4
    context_fallbacks: [big]
    unrunnable_server_tools: drop
    by_scope: { dimension: project, unmapped: shared, chains: { team: { provider: claude, fallbacks: [{ provider: openai }], strategy: cost } } }
access_rules:
  - { name: no-big, effect: deny, pattern: big, reason: too expensive, group: interns, priority: 5 }
"#;

#[test]
fn a_builder_config_compiles_to_the_same_catalog_as_its_yaml() {
    let builder = Gateway::builder()
        .env(test_env)
        .default_model("smart")
        .settings(|s| {
            s.timeouts.first_byte_ms = 30_000;
            s.breaker.threshold = 3.0;
        })
        .provider(
            "openai",
            Provider::openai_compatible("http://127.0.0.1:9/v1")
                .key(Secret::from("sk-literal-0001"))
                .header("x-org", "acme")
                .server_tools([ServerTool::WebSearch])
                .markup(1.1),
        )
        .provider(
            "claude",
            Provider::anthropic()
                .key_env("ANTHROPIC_KEY")
                .anthropic_betas(["context-1m-2025-08-07"]),
        )
        .provider(
            "gemini",
            Provider::gemini()
                .key_env("UNSET")
                .optional()
                .governance(Governance::default().european(true)),
        )
        .provider("local", Provider::mock().latency(Duration::from_millis(5)))
        .provider(
            "vllm",
            Provider::openai_compatible("http://127.0.0.1:8000/v1")
                .no_key()
                .backend()
                .drop_field("prompt_cache_key"),
        )
        .model(
            Model::new("smart")
                .alias("clever")
                .deployment("claude", "claude-sonnet-4-5")
                .deploy(
                    Deployment::new("openai")
                        .model("gpt-4.1")
                        .pricing(Pricing::per_million(2.0, 8.0)),
                )
                .pricing(Pricing::per_million(3.0, 15.0))
                .context_window(200_000)
                .capabilities([Capability::Vision, Capability::Tools])
                .fallback("echo"),
        )
        .model(
            Model::new("echo")
                .deploy(Deployment::new("local"))
                .pricing(Pricing::per_million(0.0, 0.0))
                .hidden()
                .retires("2099-01-01")
                .owned_by("tests"),
        )
        .model(
            Model::new("big")
                .deploy(Deployment::new("vllm").model("llama-70b").server_tools([]))
                .unrunnable_server_tools(UnrunnableServerTools::Refuse),
        )
        .route(
            Route::new("Smart first", "smart", Target::new("openai"))
                .fallback(Target::new("claude").weight(2))
                .fallback(Target::new("local").model("echo"))
                .strategy(Strategy::Weighted)
                .retry(
                    RetryConfig::default()
                        .max_retries(2)
                        .statuses([429])
                        .backoff_ms(100)
                        .max_wait_ms(1000),
                )
                .failover(FailoverConfig::default().preset(FailoverPreset::Strict))
                .max_attempts(4)
                .unrunnable_server_tools(UnrunnableServerTools::Drop)
                .context_fallback("big")
                .project(
                    "team",
                    Chain::new(Target::new("claude"))
                        .fallback(Target::new("openai"))
                        .strategy(Strategy::Cost),
                )
                .other_projects_shared(),
        )
        .access_rule(
            AccessRule::deny("no-big", "big", "too expensive").group("interns").priority(5),
        );
    let from_code = builder.compile().unwrap();
    let from_yaml = compile_yaml(EVERYTHING).unwrap();
    assert_eq!(compiled(&from_code), compiled(&from_yaml));
    // Not vacuous: the parts the builder set are there.
    assert_eq!(from_code.warnings.len(), 1, "{:?}", from_code.warnings);
    assert_eq!(from_code.routes[0].scopes.as_ref().unwrap().chains.len(), 1);
    assert_eq!(from_code.provider("claude").unwrap().keys, [Secret::from("sk-ant-0123456789")]);
}

#[tokio::test]
async fn a_built_gateway_answers_as_its_yaml_twin() {
    let yaml = "storage: { url: none }\nproviders: { local: { wire: mock } }\nmodels: [{ id: echo, aliases: [e], deployments: [{ provider: local, model: echo-1 }] }]\n";
    let twin = Gateway::from_yaml("t.yaml", yaml, &|_| None).unwrap();
    let built = Gateway::builder()
        .provider("local", Provider::mock())
        .model(Model::new("echo").alias("e").deployment("local", "echo-1"))
        .build()
        .unwrap();
    let one = twin.generate(Generate::new(ask("e"))).await.unwrap();
    let two = built.generate(Generate::new(ask("e"))).await.unwrap();
    assert_eq!(
        (&one.provider, &one.model, &one.upstream_model),
        (&two.provider, &two.model, &two.upstream_model)
    );
    assert_eq!(format!("{:?}", one.response.content), format!("{:?}", two.response.content));
}

#[tokio::test]
async fn gateways_built_from_one_builder_are_independent() {
    let fake = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    let provider = || {
        Provider::openai_compatible(format!("{}/v1", fake.base_url()))
            .key(Secret::from("ka-0000000001"))
    };
    let builder = Gateway::builder()
        .provider("a", provider())
        .model(Model::new("one").deployment("a", "up-one"));
    let one = builder.clone().build().unwrap();
    let two = builder.build().unwrap();
    one.generate(Generate::new(ask("one"))).await.unwrap();
    two.generate(Generate::new(ask("one"))).await.unwrap();
    assert_eq!(fake.request_count(), 2);
    // A reload of one leaves the other's catalog alone.
    let renamed = Gateway::builder()
        .provider("a", provider())
        .model(Model::new("renamed").deployment("a", "up-one"))
        .compile()
        .unwrap();
    one.engine().reload(renamed).unwrap();
    let err = one.generate(Generate::new(ask("one"))).await.unwrap_err();
    assert_eq!(err.status(), 404);
    one.generate(Generate::new(ask("renamed"))).await.unwrap();
    two.generate(Generate::new(ask("one"))).await.unwrap();
    assert_eq!(fake.request_count(), 4);
}

#[test]
fn a_builder_error_lists_the_problems_its_yaml_would() {
    let yaml = "storage: { url: none }\nproviders: { a: { wire: mock } }\nmodels:\n  - { id: m, deployments: [{ provider: ghost }], fallbacks: [nope] }\nroutes:\n  - { name: r, match: 'm*', provider: phantom }\n";
    let from_yaml = compile_yaml(yaml).unwrap_err();
    let built = Gateway::builder()
        .provider("a", Provider::mock())
        .model(Model::new("m").deploy(Deployment::new("ghost")).fallback("nope"))
        .route(Route::new("r", "m*", Target::new("phantom")))
        .build();
    let Err(LoadError::Invalid(from_code)) = built else { panic!("{built:?}") };
    let messages =
        |e: &InvalidRegistry| e.problems.iter().map(|p| p.message.clone()).collect::<Vec<_>>();
    assert_eq!(messages(&from_code), messages(&from_yaml));
    assert_eq!(from_code.problems.len(), 3, "{from_code}");
    assert!(from_yaml.problems.iter().all(|p| p.line.is_some()));
    // From code there is no line to name: `<builder>: message`.
    assert!(from_code.problems.iter().all(|p| p.line.is_none()));
    assert!(
        from_code
            .to_string()
            .contains("  <builder>: models[m].deployments: unknown provider \"ghost\""),
        "{from_code}"
    );
}

#[test]
fn a_negative_price_from_code_is_refused_naming_the_field() {
    let built = Gateway::builder()
        .provider("a", Provider::mock())
        .model(
            Model::new("m")
                .pricing(Pricing::default().input(-1.0))
                .deploy(Deployment::new("a").pricing(Pricing::default().output(f64::NAN))),
        )
        .build();
    let Err(LoadError::Invalid(err)) = built else { panic!("{built:?}") };
    let text = err.to_string();
    assert!(text.contains("models[m].pricing.input: -1 is not a price"), "{text}");
    assert!(text.contains("models[m].deployments[a].pricing.output: NaN is not a price"), "{text}");
}

#[tokio::test]
async fn a_stream_is_a_stream_and_finishes_into_the_response_generate_gives() {
    use futures_util::StreamExt as _;
    let gw = Gateway::builder()
        .provider("local", Provider::mock())
        .model(Model::new("echo").deployment("local", "echo-1"))
        .build()
        .unwrap();
    let mut request = ask("echo");
    request.messages = vec![Message::user("what is the weather?")];
    request.tools = vec![
        switchyard_core::protocol::Tool::function("weather", serde_json::json!({"type": "object"}))
            .with_description("the weather"),
    ];
    let whole = gw.generate(Generate::new(request.clone())).await.unwrap().response;
    // Through `futures::Stream`: the same events `next` gives.
    let events: Vec<StreamEvent> = gw
        .stream(Generate::new(request.clone()))
        .await
        .unwrap()
        .map(Result::unwrap)
        .collect()
        .await;
    assert!(events.iter().any(StreamEvent::is_content));
    let assembled = gw.stream(Generate::new(request)).await.unwrap().into_response().await.unwrap();
    assert_eq!(assembled.text(), whole.text());
    assert!(!whole.text().is_empty());
    assert_eq!(assembled.tool_calls().count(), whole.tool_calls().count());
    // A tool's answer goes back as one message.
    let back = Message::tool_result("call_1", "sunny");
    assert_eq!(back.role, Role::User);
}

/// Records as a caller's own accounting would keep them.
#[derive(Default)]
struct Kept(std::sync::Mutex<Vec<switchyard_core::RequestRecord>>);

impl switchyard_core::RecordSink for Kept {
    fn record(&self, record: switchyard_core::RequestRecord) {
        self.0.lock().unwrap().push(record);
    }
}

#[tokio::test]
async fn a_failure_says_what_happened_under_the_callers_id_and_reaches_the_sink() {
    let a = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    let b = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    let kept = std::sync::Arc::new(Kept::default());
    let gw = Gateway::builder()
        .provider(
            "a",
            Provider::openai_compatible(format!("{}/v1", a.base_url()))
                .key(Secret::from("ka-0000000001")),
        )
        .provider(
            "b",
            Provider::openai_compatible(format!("{}/v1", b.base_url()))
                .key(Secret::from("kb-0000000001")),
        )
        .model(Model::new("one").deployment("a", "up-one").deployment("b", "up-two"))
        .sink(kept.clone())
        .build()
        .unwrap();
    // Statuses that fail over at once (no retry on the same deployment).
    a.push(Reply::status(404));
    b.push(Reply::status(401));
    let failed = gw.generate(Generate::new(ask("one")).id("job-7:step-2")).await.unwrap_err();
    assert_eq!(failed.request_id, "job-7:step-2");
    assert_eq!(failed.status(), 502);
    let outcomes: Vec<&str> = failed.attempts.iter().map(|t| t.outcome.as_str()).collect();
    assert_eq!(outcomes, ["status_404", "status_401"]);
    assert_eq!(failed.record.as_ref().unwrap().id, "job-7:step-2");
    assert!(failed.to_string().contains("after 2 attempt(s)"), "{failed}");
    // The same record went to the sink; so does a success's, under its id.
    gw.generate(Generate::new(ask("one")).id("job-7:step-3")).await.unwrap();
    let ids: Vec<String> = kept.0.lock().unwrap().iter().map(|r| r.id.clone()).collect();
    assert_eq!(ids, ["job-7:step-2", "job-7:step-3"]);
    // An id records could not carry as it is is refused before anything runs.
    let bad = gw.generate(Generate::new(ask("one")).id("a b\n")).await.unwrap_err();
    assert_eq!(bad.status(), 400);
    assert!(bad.record.is_none());
}

#[tokio::test]
async fn a_provider_taking_unlisted_models_serves_provider_slash_model() {
    let fake = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    let gw = Gateway::builder()
        .provider(
            "openai",
            Provider::openai_compatible(format!("{}/v1", fake.base_url()))
                .key(Secret::from("sk-0000000001"))
                .allow_unlisted_models(),
        )
        .provider("closed", Provider::mock())
        .model(Model::new("listed").deployment("closed", "x"))
        .build()
        .unwrap();
    let answer = gw.generate(Generate::new(ask("openai/Meta-Llama/Llama-3.3-70B"))).await.unwrap();
    assert_eq!(
        (answer.provider.as_str(), answer.upstream_model.as_str()),
        ("openai", "Meta-Llama/Llama-3.3-70B")
    );
    assert_eq!(fake.received()[0].body["model"], "Meta-Llama/Llama-3.3-70B", "sent as written");
    // A provider that did not say so is reached only through the catalog.
    let refused = gw.generate(Generate::new(ask("closed/anything"))).await.unwrap_err();
    assert_eq!(refused.status(), 404);
    // A listed model keeps its own meaning.
    assert_eq!(gw.generate(Generate::new(ask("listed"))).await.unwrap().provider, "closed");
}
