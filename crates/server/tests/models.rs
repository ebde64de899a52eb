//! Model discovery in each client's shape: Codex's `ModelsResponse`, Anthropic's
//! paged list (Claude Code's gateway discovery), OpenAI's list, and one model by id.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use serde::Deserialize;
use serde_json::Value;

/// Models for these tests, after the harness's own.
const EXTRA: &str = "  - id: m-wide
    deployments: [{ provider: anthropic, model: up-wide }]
    context_window: 200000
    max_output_tokens: 64000
    capabilities: [tools, reasoning]
  - id: m-old
    deployments: [{ provider: openai, model: up-old }]
    retires: 2000-01-01
  - id: m-keyless
    deployments: [{ provider: keyless, model: up-keyless }]
";

const KEYLESS: &str = r#"  keyless: { wire: openai-chat, endpoint: "{openai}/v1", credentials: { env: [SWITCHYARD_TEST_NEVER_SET], optional: true } }
"#;

async fn start(extra: &str) -> Harness {
    Harness::start_with(Options {
        extra_models: format!("{EXTRA}{extra}"),
        providers_extra: KEYLESS.into(),
        ..Options::default()
    })
    .await
}

async fn get(h: &Harness, path: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut req = h.client.get(format!("{}{path}", h.base));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = tokio::time::timeout(WAIT, req.send()).await.unwrap().unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}: {text}")))
}

fn bearer() -> String {
    format!("Bearer {GATEWAY_KEY}")
}

/// Claude Code's discovery request: Anthropic format, `x-api-key`.
async fn anthropic_list(h: &Harness, query: &str) -> (u16, Value) {
    get(
        h,
        &format!("/v1/models{query}"),
        &[("x-api-key", GATEWAY_KEY), ("anthropic-version", "2023-06-01")],
    )
    .await
}

fn ids(list: &Value, key: &str, field: &str) -> Vec<String> {
    list[key].as_array().unwrap().iter().map(|m| m[field].as_str().unwrap().to_owned()).collect()
}

// Codex's `ModelInfo` (codex-rs `protocol/src/openai_models.rs`), the fields that
// have no default there: one missing, or a value outside its enums, fails Codex's
// whole decode ("failed to decode models response").
#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Effort {
    None,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
}

#[derive(Debug, Deserialize)]
struct EffortPreset {
    effort: Effort,
    description: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ShellType {
    Default,
    Local,
    UnifiedExec,
    Disabled,
    ShellCommand,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Visibility {
    List,
    Hide,
    None,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum TruncationMode {
    Bytes,
    Tokens,
}

#[derive(Debug, Deserialize)]
struct Truncation {
    #[allow(dead_code)]
    mode: TruncationMode,
    limit: i64,
}

/// As Codex 0.171 decodes it: `function` is gone, and an answer naming it fails to
/// decode whole.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ApplyPatch {
    Freeform,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Modality {
    Text,
    Image,
}

#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct CodexModel {
    slug: String,
    display_name: String,
    description: Option<String>,
    #[serde(default)]
    default_reasoning_level: Option<Effort>,
    supported_reasoning_levels: Vec<EffortPreset>,
    shell_type: ShellType,
    visibility: Visibility,
    supported_in_api: bool,
    priority: i32,
    upgrade: Option<Value>,
    base_instructions: String,
    supports_reasoning_summaries: bool,
    support_verbosity: bool,
    default_verbosity: Option<String>,
    apply_patch_tool_type: Option<ApplyPatch>,
    truncation_policy: Truncation,
    supports_parallel_tool_calls: bool,
    #[serde(default)]
    context_window: Option<i64>,
    #[serde(default)]
    auto_compact_token_limit: Option<i64>,
    effective_context_window_percent: i64,
    experimental_supported_tools: Vec<String>,
    input_modalities: Vec<Modality>,
}

#[derive(Debug, Deserialize)]
struct CodexModels {
    models: Vec<CodexModel>,
}

/// Codex asks with `client_version` and decodes `{"models": [ModelInfo]}`; each
/// model's window and reasoning levels come from the catalog.
#[tokio::test]
async fn codex_gets_its_models_response_with_catalog_facts() {
    let h = start("").await;
    let (status, openai) = get(&h, "/v1/models", &[("authorization", &bearer())]).await;
    assert_eq!(status, 200);
    assert_eq!(openai["object"], "list", "without client_version: OpenAI's list");

    let (status, v) =
        get(&h, "/v1/models?client_version=0.130.0", &[("authorization", &bearer())]).await;
    assert_eq!(status, 200);
    let codex: CodexModels = serde_json::from_value(v.clone())
        .unwrap_or_else(|e| panic!("Codex could not decode this ({e}): {v:#}"));
    let slugs: Vec<&str> = codex.models.iter().map(|m| m.slug.as_str()).collect();
    assert_eq!(slugs, ids(&openai, "data", "id"), "the same models as the list");
    for id in ["m-hidden", "m-old", "m-keyless"] {
        assert!(!slugs.contains(&id), "{id} is not listed: {slugs:?}");
    }
    let priorities: Vec<i32> = codex.models.iter().map(|m| m.priority).collect();
    assert!(priorities.windows(2).all(|w| w[0] < w[1]), "catalog order: {priorities:?}");
    for m in &codex.models {
        assert_eq!(m.visibility, Visibility::List);
        assert!(m.supported_in_api, "an API-key user sees only these");
        assert!(!m.base_instructions.trim().is_empty(), "Codex sends it as the system prompt");
        assert!(m.truncation_policy.limit > 0);
    }

    let wide = codex.models.iter().find(|m| m.slug == "m-wide").unwrap();
    assert_eq!(wide.context_window, Some(200_000));
    assert_eq!(wide.auto_compact_token_limit, Some(180_000));
    assert_eq!(wide.default_reasoning_level, Some(Effort::Medium));
    let efforts: Vec<&Effort> = wide.supported_reasoning_levels.iter().map(|p| &p.effort).collect();
    assert_eq!(efforts, [&Effort::Low, &Effort::Medium, &Effort::High]);
    assert!(wide.supported_reasoning_levels.iter().all(|p| !p.description.is_empty()));
    assert!(wide.supports_reasoning_summaries);
    assert!(wide.supports_parallel_tool_calls);
    assert_eq!(wide.input_modalities, [Modality::Text], "no vision declared");

    // A model that declares no reasoning gets no levels (Codex then sends none).
    let chain = codex.models.iter().find(|m| m.slug == "m-chain").unwrap();
    assert!(chain.supported_reasoning_levels.is_empty());
    assert_eq!(chain.default_reasoning_level, None);
    assert_eq!(chain.context_window, None, "unknown is left to Codex, not made up");
    let vision = codex.models.iter().find(|m| m.slug == "m-openai").unwrap();
    assert_eq!(vision.input_modalities, [Modality::Text, Modality::Image]);

    let (status, _) = get(&h, "/v1/models?client_version=0.130.0", &[]).await;
    assert_eq!(status, 401);
}

/// Claude Code's gateway discovery: Anthropic's list, paged as Anthropic pages.
#[tokio::test]
async fn anthropic_list_pages_by_limit_after_id_and_before_id() {
    // More than a default page: 22 more models.
    let bulk: String = (0..22)
        .map(|i| format!("  - id: claude-bulk-{i:02}\n    deployments: [{{ provider: mock }}]\n"))
        .collect();
    let h = start(&bulk).await;
    let (status, all) = anthropic_list(&h, "?limit=1000").await;
    assert_eq!(status, 200);
    let every = ids(&all, "data", "id");
    assert!(every.len() > 25, "{every:?}");
    assert_eq!(all["has_more"], false);
    assert_eq!(all["first_id"], every[0].as_str());
    assert_eq!(all["last_id"], every.last().unwrap().as_str());
    assert!(all["data"].as_array().unwrap().iter().all(|m| m["type"] == "model"
        && m["display_name"].is_string()
        && m["created_at"].is_string()));
    assert!(!every.iter().any(|id| id == "m-hidden" || id == "m-old" || id == "m-keyless"));

    let (_, first) = anthropic_list(&h, "").await;
    assert_eq!(ids(&first, "data", "id"), every[..20], "20 without a limit");
    assert_eq!(first["has_more"], true);

    // Walk forward three at a time.
    let mut walked = Vec::new();
    let mut query = "?limit=3".to_owned();
    loop {
        let (status, page) = anthropic_list(&h, &query).await;
        assert_eq!(status, 200, "{page}");
        let got = ids(&page, "data", "id");
        assert!(got.len() <= 3);
        walked.extend(got);
        if page["has_more"] == false {
            break;
        }
        query = format!("?limit=3&after_id={}", page["last_id"].as_str().unwrap());
    }
    assert_eq!(walked, every);

    // And back: the page just before an id.
    let (_, page) = anthropic_list(&h, &format!("?limit=2&before_id={}", every[5])).await;
    assert_eq!(ids(&page, "data", "id"), every[3..5]);
    assert_eq!(page["has_more"], true);
    let (_, page) = anthropic_list(&h, &format!("?limit=10&before_id={}", every[2])).await;
    assert_eq!(ids(&page, "data", "id"), every[..2]);
    assert_eq!(page["has_more"], false);
    let (_, page) = anthropic_list(&h, &format!("?after_id={}", every.last().unwrap())).await;
    assert_eq!(page["data"], serde_json::json!([]));
    assert_eq!((page["first_id"].is_null(), page["has_more"].as_bool()), (true, Some(false)));

    for query in [
        "?limit=0".to_owned(),
        "?limit=1001".to_owned(),
        "?limit=many".to_owned(),
        "?after_id=no-such-model".to_owned(),
        format!("?after_id={}&before_id={}", every[1], every[3]),
    ] {
        let (status, v) = anthropic_list(&h, &query).await;
        assert_eq!(status, 400, "{query}: {v}");
        assert_eq!(v["type"], "error", "{query}");
        assert_eq!(v["error"]["type"], "invalid_request_error", "{query}");
    }
}

/// One model by id or alias, in the caller's shape; 404 in that shape otherwise.
#[tokio::test]
async fn one_model_by_id_in_each_shape_and_404_in_the_callers() {
    let h = start("").await;
    let auth = bearer();
    let openai = [("authorization", auth.as_str())];
    let anthropic = [("x-api-key", GATEWAY_KEY), ("anthropic-version", "2023-06-01")];

    let (status, m) = get(&h, "/v1/models/m-wide", &openai).await;
    assert_eq!(status, 200);
    assert_eq!((m["id"].as_str(), m["object"].as_str()), (Some("m-wide"), Some("model")));
    assert!(m["owned_by"].is_string() && m["created"].is_number());
    assert_eq!(m["switchyard"]["context_window"], 200000);
    let (status, m) = get(&h, "/models/m-wide", &openai).await;
    assert_eq!((status, m["id"].as_str()), (200, Some("m-wide")), "the path without /v1");

    let (status, m) = get(&h, "/v1/models/m-wide", &anthropic).await;
    assert_eq!(status, 200);
    assert_eq!((m["type"].as_str(), m["id"].as_str()), (Some("model"), Some("m-wide")));
    assert!(m["display_name"].is_string() && m["created_at"].is_string());

    // An alias is named as asked; the catalog id is in the facts.
    let (status, m) = get(&h, "/v1/models/mock", &openai).await;
    assert_eq!((status, m["id"].as_str()), (200, Some("mock")));
    assert_eq!(m["switchyard"]["id"], "mock-echo");
    // Hidden models are served, so they can be looked up; they are only not listed.
    let (status, _) = get(&h, "/v1/models/m-hidden", &openai).await;
    assert_eq!(status, 200);

    for (model, code) in [
        ("no-such-model", "model_not_found"),
        ("m-old", "model_retired"),
        ("m-keyless", "model_not_found"),
    ] {
        let (status, v) = get(&h, &format!("/v1/models/{model}"), &openai).await;
        assert_eq!(status, 404, "{model}");
        assert_eq!(v["error"]["code"], code, "{model}: {v}");
        assert!(v.get("type").is_none(), "OpenAI shape: {v}");
        let (status, v) = get(&h, &format!("/v1/models/{model}"), &anthropic).await;
        assert_eq!(status, 404, "{model}");
        assert_eq!(
            (v["type"].as_str(), v["error"]["type"].as_str()),
            (Some("error"), Some("not_found_error"))
        );
        assert_eq!(v["error"]["code"], code, "{model}: {v}");
    }
    let (status, v) = get(&h, "/v1/models/m-wide", &[]).await;
    assert_eq!(status, 401);
    assert_eq!(v["error"]["code"], "missing_api_key");
    assert_eq!(h.upstream_requests(), 0);
}
