#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Vertex AI through the real server, black box: Claude, Gemini and an open
//! model each on their Vertex wire, from the three client formats, whole and
//! streamed, authorized with an access token the gateway got for a service
//! account's JWT (the fake's token endpoint checks its RS256 signature, issuer,
//! audience and lifetime; its model routes take only a token it granted);
//! the endpoint's project and region filled in from the configuration; a
//! token endpoint that fails failing over to Anthropic's own API.

mod common;

use common::*;
use serde_json::{Value, json};
use switchyard_protocol::ClientFormat;
use switchyard_testkit::{FakeUpstream, Reply, Vendor, vertex};

struct Vertex {
    h: Harness,
    claude: FakeUpstream,
    gemini: FakeUpstream,
    open: FakeUpstream,
    _files: ConfigFile,
}

const CLAUDE_MODEL: &str = "claude-sonnet-4-5@20250929";
const OPEN_MODEL: &str = "meta/llama-4-maverick-17b-128e-instruct-maas";

async fn start() -> Vertex {
    let claude = FakeUpstream::start_vertex(Vendor::Anthropic).await.unwrap();
    let gemini = FakeUpstream::start_vertex(Vendor::Gemini).await.unwrap();
    let open = FakeUpstream::start_vertex(Vendor::OpenAi).await.unwrap();
    // One service account per fake: each grants tokens for its own routes.
    let files = ConfigFile::new("");
    let account = |name: &str, fake: &FakeUpstream| {
        let path = files.dir.join(format!("{name}.json"));
        let token_uri = format!("{}/token", fake.base_url());
        std::fs::write(&path, vertex::service_account_json(&token_uri)).unwrap();
        path.display().to_string()
    };
    // A token endpoint nothing answers: the provider's attempts fail over.
    let dead = files.dir.join("dead.json");
    std::fs::write(&dead, vertex::service_account_json("http://127.0.0.1:1/token")).unwrap();
    let place = "/v1/projects/{project}/locations/{region}";
    let providers_extra = format!(
        r#"  vertex-claude:
    wire: vertex-anthropic
    endpoint: "{claude}{place}"
    region: us-east5
    credentials: {{ google: {{ service_account_file: "{claude_sa}" }} }}
  vertex-gemini:
    wire: vertex-gemini
    endpoint: "{gemini}{place}"
    region: global
    credentials: {{ google: {{ service_account_file: "{gemini_sa}" }} }}
  vertex-open:
    wire: vertex-openai
    endpoint: "{open}{place}"
    region: us-central1
    project: test-project
    credentials: {{ google: {{ service_account_file: "{open_sa}" }} }}
  vertex-dead:
    wire: vertex-anthropic
    endpoint: "{claude}{place}"
    region: us-east5
    credentials: {{ google: {{ service_account_file: "{dead}" }} }}
"#,
        claude = claude.base_url(),
        gemini = gemini.base_url(),
        open = open.base_url(),
        claude_sa = account("claude", &claude),
        gemini_sa = account("gemini", &gemini),
        open_sa = account("open", &open),
        dead = dead.display(),
    );
    let extra_models = format!(
        r#"  - id: m-vertex-claude
    deployments: [{{ provider: vertex-claude, model: "{CLAUDE_MODEL}" }}]
  - id: m-vertex-gemini
    deployments: [{{ provider: vertex-gemini, model: gemini-2.5-pro }}]
  - id: m-vertex-open
    deployments: [{{ provider: vertex-open, model: "{OPEN_MODEL}" }}]
  - id: m-vertex-then-anthropic
    deployments: [{{ provider: vertex-claude, model: "{CLAUDE_MODEL}" }}, {{ provider: anthropic, model: up-anthropic }}]
  - id: m-bedrock-then-vertex
    deployments: [{{ provider: bedrock, model: "{BEDROCK_MODEL}" }}, {{ provider: vertex-claude, model: "{CLAUDE_MODEL}" }}]
  - id: m-dead-vertex
    deployments: [{{ provider: vertex-dead, model: "{CLAUDE_MODEL}" }}, {{ provider: anthropic, model: up-anthropic }}]
"#
    );
    let options = Options { providers_extra, extra_models, ..Options::default() };
    let h = Harness::start_with(options).await;
    Vertex { h, claude, gemini, open, _files: files }
}

fn body(format: ClientFormat, model: &str, text: &str, stream: bool) -> Value {
    let messages = json!([{"role": "user", "content": text}]);
    match format {
        ClientFormat::OpenAiChat => json!({"model": model, "stream": stream,
            "stream_options": {"include_usage": true}, "messages": messages}),
        ClientFormat::Anthropic => {
            json!({"model": model, "stream": stream, "max_tokens": 128, "messages": messages})
        }
        ClientFormat::OpenAiResponses => json!({"model": model, "stream": stream, "input": text}),
        ClientFormat::Gemini => unreachable!("the three formats with a fixed path"),
    }
}

#[tokio::test]
async fn every_vertex_wire_answers_every_format_with_one_token_per_account() {
    let v = start().await;
    let formats =
        [ClientFormat::OpenAiChat, ClientFormat::Anthropic, ClientFormat::OpenAiResponses];
    let cases = [
        ("m-vertex-claude", "vertex-claude", &v.claude),
        ("m-vertex-gemini", "vertex-gemini", &v.gemini),
        ("m-vertex-open", "vertex-open", &v.open),
    ];
    for (model, provider, fake) in cases {
        for format in formats {
            for stream in [false, true] {
                let text = format!("hello {provider} from {format:?} stream={stream}");
                let r = v.h.post(path(format), &body(format, model, &text, stream)).await;
                let status = r.status();
                let seen = r.headers().get("x-gateway-provider").cloned();
                let bytes = r.bytes().await.unwrap();
                assert_eq!(
                    status,
                    200,
                    "{model} {format:?} {stream}: {}",
                    String::from_utf8_lossy(&bytes)
                );
                assert_eq!(seen.unwrap(), provider);
                let got = if stream {
                    decode_stream(format, &bytes)
                } else {
                    decode_whole(format, &bytes)
                };
                assert!(got.text().contains(&text), "{model} {format:?} {stream}: {}", got.text());
                let rx = fake.received().pop().unwrap();
                assert!(
                    rx.header("authorization").unwrap().starts_with("Bearer ya29.fake-vertex-")
                );
                assert!(rx.path.starts_with("/v1/projects/test-project/locations/"), "{}", rx.path);
            }
        }
        // Cached until shortly before it expires: one grant for every request.
        assert_eq!(fake.tokens_granted(), 1, "{provider}");
    }
    // Each wire's facts, as the fakes saw them.
    let claude = v.claude.received().pop().unwrap();
    assert_eq!(
        claude.path,
        format!(
            "/v1/projects/test-project/locations/us-east5/publishers/anthropic/models/{CLAUDE_MODEL}:streamRawPredict"
        )
    );
    assert_eq!(claude.body["anthropic_version"], vertex::ANTHROPIC_VERSION);
    assert!(claude.body.get("model").is_none());
    let gemini = v.gemini.received().pop().unwrap();
    assert_eq!(
        gemini.path,
        "/v1/projects/test-project/locations/global/publishers/google/models/gemini-2.5-pro:streamGenerateContent"
    );
    assert_eq!(gemini.query.as_deref(), Some("alt=sse"));
    let open = v.open.received().pop().unwrap();
    assert_eq!(
        open.path,
        "/v1/projects/test-project/locations/us-central1/endpoints/openapi/chat/completions"
    );
    assert_eq!(open.body["model"], OPEN_MODEL);
}

#[tokio::test]
async fn claude_on_vertex_fails_over_to_anthropic_before_the_first_byte() {
    let v = start().await;
    v.claude.push(Reply::status(529));
    let r =
        v.h.post(
            "/v1/messages",
            &body(ClientFormat::Anthropic, "m-vertex-then-anthropic", "overloaded?", true),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-gateway-provider"], "anthropic");
    let route = r.headers()["x-gateway-route"].to_str().unwrap().to_owned();
    assert!(route.contains("failover:vertex-claude->anthropic"), "{route}");
    let got = decode_stream(ClientFormat::Anthropic, &r.bytes().await.unwrap());
    assert!(got.text().contains("overloaded?"), "{}", got.text());
}

#[tokio::test]
async fn a_token_endpoint_that_fails_fails_over_and_is_recorded() {
    let v = start().await;
    let r =
        v.h.post(
            "/v1/chat/completions",
            &body(ClientFormat::OpenAiChat, "m-dead-vertex", "dead token", false),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-gateway-provider"], "anthropic");
    let route = r.headers()["x-gateway-route"].to_str().unwrap().to_owned();
    assert!(route.contains("credential_failed:vertex-dead"), "{route}");
    let records = tokio::time::timeout(WAIT, v.h.sink.wait_len(1)).await.unwrap();
    let attempts = &records[0].attempts;
    assert_eq!(attempts[0].outcome, "credential", "{attempts:?}");
    assert_eq!(attempts[1].outcome, "ok");
    // Nothing reached the Vertex fake without a token.
    assert!(v.claude.received().is_empty());
}

#[tokio::test]
async fn a_request_without_a_granted_token_is_refused_by_the_fake() {
    let v = start().await;
    let url = format!(
        "{}/v1/projects/test-project/locations/us-east5/publishers/anthropic/models/{CLAUDE_MODEL}:rawPredict",
        v.claude.base_url()
    );
    let forged = client()
        .post(url)
        .bearer_auth("ya29.not-granted")
        .json(&json!({"anthropic_version": vertex::ANTHROPIC_VERSION, "max_tokens": 8,
            "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 401);
    let body: Value = forged.json().await.unwrap();
    assert_eq!(body["error"]["status"], "UNAUTHENTICATED");
}

#[tokio::test]
async fn a_claude_clients_own_body_goes_to_vertex_with_only_the_betas_it_takes() {
    let v = start().await;
    let body = json!({
        "model": "m-vertex-claude",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "my own body"}],
        "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
        "metadata": {"user_id": "session-7"},
    });
    let betas = "context-management-2025-06-27,interleaved-thinking-2025-05-14";
    let r = v.h.post_with("/v1/messages", &body, &[("anthropic-beta", betas)]).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let rx = v.claude.received().pop().unwrap();
    // The client's own body, edited for Vertex: no model, the version.
    assert!(rx.body.get("model").is_none(), "{}", rx.body);
    assert_eq!(rx.body["anthropic_version"], vertex::ANTHROPIC_VERSION);
    assert_eq!(rx.body["metadata"]["user_id"], "session-7", "the client's own fields stay");
    // The provider lists no flags: none goes, and the field one gates goes with it.
    assert_eq!(rx.header("anthropic-beta"), None);
    assert!(rx.body.get("context_management").is_none(), "{}", rx.body);
    let records = tokio::time::timeout(WAIT, v.h.sink.wait_len(1)).await.unwrap();
    let edits = &records[0].field_edits;
    assert!(edits.iter().any(|e| e.contains("context_management: dropped")), "{edits:?}");
}

#[tokio::test]
async fn a_vertex_provider_listing_a_flag_keeps_it_and_its_field() {
    // The listed flag passes, the other does not; the body is the client's own
    // (a translation would not carry `context_management`).
    let claude = FakeUpstream::start_vertex(Vendor::Anthropic).await.unwrap();
    let extra = "    anthropic_betas: [context-management-2025-06-27]\n";
    let (options, _files) = vertex_claude("listed", &claude, CLAUDE_MODEL, extra);
    let h = Harness::start_with(options).await;
    let body = json!({
        "model": "m-listed",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "listed"}],
        "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
    });
    let betas = "context-management-2025-06-27,interleaved-thinking-2025-05-14";
    let r = h.post_with("/v1/messages", &body, &[("anthropic-beta", betas)]).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let rx = claude.received().pop().unwrap();
    assert_eq!(rx.header("anthropic-beta"), Some("context-management-2025-06-27"));
    assert!(rx.body.get("context_management").is_some(), "{}", rx.body);
}

#[tokio::test]
async fn claude_on_bedrock_fails_over_to_claude_on_vertex_mid_tool_loop() {
    let v = start().await;
    v.h.bedrock.set_default(Reply::status(503));
    // A Claude client's tool loop with signed thinking from an earlier turn:
    // Vertex gets Anthropic's body, thinking and tool ids paired.
    let body = json!({
        "model": "m-bedrock-then-vertex",
        "max_tokens": 2048,
        "stream": true,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "tools": [{"name": "get_weather", "description": "weather", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": "weather in Paris?"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "look it up", "signature": "sig-from-an-earlier-turn"},
                {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}}
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "18C"}]}
        ]
    });
    let r = v.h.post("/v1/messages", &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-gateway-provider"], "vertex-claude");
    let route = r.headers()["x-gateway-route"].to_str().unwrap().to_owned();
    assert!(route.contains("failover:bedrock->vertex-claude"), "{route}");
    let _ = decode_stream(ClientFormat::Anthropic, &r.bytes().await.unwrap());
    let rx = v.claude.received().pop().unwrap();
    let turn = &rx.body["messages"][1]["content"];
    assert_eq!(turn[0]["signature"], "sig-from-an-earlier-turn", "{turn}");
    assert_eq!(turn[1]["id"], rx.body["messages"][2]["content"][0]["tool_use_id"]);
    assert!(!v.h.bedrock.received().is_empty(), "Bedrock was tried first");
}

#[tokio::test]
async fn claude_on_vertex_counts_tokens_with_vertexs_own_route() {
    let v = start().await;
    let count =
        json!({"model": "m-vertex-claude", "messages": [{"role": "user", "content": "count me"}]});
    let r = v.h.post("/v1/messages/count_tokens", &count).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let answer: Value = r.json().await.unwrap();
    assert!(answer["input_tokens"].as_u64().is_some(), "{answer}");
    let rx = v.claude.received().pop().unwrap();
    assert_eq!(
        rx.path,
        "/v1/projects/test-project/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict"
    );
    assert_eq!(rx.body["model"], CLAUDE_MODEL, "the body names the model its URL does not");
    assert_eq!(rx.body["anthropic_version"], vertex::ANTHROPIC_VERSION);
    assert!(rx.body.get("max_tokens").is_none(), "{}", rx.body);
}

#[tokio::test]
async fn what_vertex_refuses_is_learned_sent_again_once_without_and_kept_across_a_reload() {
    // A region that takes the context-management flag but not the effort
    // flag the provider lists, nor the `context_management` field itself.
    let (claude, options, _files) = lagging().await;
    let (h, file, reloader) = Harness::start_from_file(options.clone()).await;
    let betas = [("anthropic-beta", "context-management-2025-06-27,effort-2025-11-24")];
    let plain = json!({
        "model": "m-lagging",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hello"}],
    });
    let mut managed = plain.clone();
    managed["context_management"] = json!({"edits": [{"type": "clear_tool_uses_20250919"}]});

    // The refused flag: learned from Vertex's answer, the request sent again
    // once without it, the client none the wiser.
    let r = h.post_with("/v1/messages", &plain, &betas).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let rx = calls(&claude);
    assert_eq!(rx.len(), 2, "one refusal, one re-send");
    assert_eq!(
        rx[0].header("anthropic-beta"),
        Some("context-management-2025-06-27,effort-2025-11-24")
    );
    assert_eq!(rx[1].header("anthropic-beta"), Some("context-management-2025-06-27"));
    // Then left out from the start.
    claude.clear_received();
    let r = h.post_with("/v1/messages", &plain, &betas).await;
    assert_eq!(r.status(), 200);
    assert_eq!(calls(&claude).len(), 1);
    let records = tokio::time::timeout(WAIT, h.sink.wait_len(2)).await.unwrap();
    let edits = &records[1].field_edits;
    assert!(
        edits.contains(
            &"anthropic-beta: dropped effort-2025-11-24 (the provider refused it)".into()
        ),
        "{edits:?}"
    );

    // The refused field, the same way.
    claude.clear_received();
    let r = h.post_with("/v1/messages", &managed, &betas).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let rx = calls(&claude);
    assert_eq!(rx.len(), 2);
    assert!(rx[0].body.get("context_management").is_some());
    assert!(rx[1].body.get("context_management").is_none(), "{}", rx[1].body);

    // A reload keeps what was learned: one request, neither flag nor field.
    let mut changed = options;
    changed.extra_models.push_str("  - id: m-new\n    deployments: [{ provider: mock }]\n");
    file.write(&h.yaml(&changed));
    reloader.reload_now().await.unwrap();
    claude.clear_received();
    let r = h.post_with("/v1/messages", &managed, &betas).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let rx = calls(&claude);
    assert_eq!(rx.len(), 1, "nothing learned again after the reload");
    assert_eq!(rx[0].header("anthropic-beta"), Some("context-management-2025-06-27"));
    assert!(rx[0].body.get("context_management").is_none());

    // Claude's count on Vertex takes no flag: none goes, nor a gated field.
    claude.clear_received();
    let count = json!({"model": "m-lagging", "messages": [{"role": "user", "content": "count"}],
        "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}});
    let r = h.post_with("/v1/messages/count_tokens", &count, &betas).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let rx = calls(&claude);
    assert_eq!(rx.len(), 1);
    assert_eq!(rx[0].header("anthropic-beta"), None);
    assert!(rx[0].body.get("context_management").is_none(), "{}", rx[0].body);
}

#[tokio::test]
async fn a_refusal_is_sent_again_only_once() {
    // Two refusals in one request: the first is learned and the request sent
    // again once; the second reaches the client as Vertex's 400. The next
    // request learns it in turn.
    let (claude, options, _files) = lagging().await;
    let h = Harness::start_with(options).await;
    let betas = [("anthropic-beta", "context-management-2025-06-27,effort-2025-11-24")];
    let body = json!({
        "model": "m-lagging",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hello"}],
        "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
    });
    let r = h.post_with("/v1/messages", &body, &betas).await;
    assert_eq!(r.status(), 400);
    let err: Value = r.json().await.unwrap();
    assert!(err.to_string().contains("context_management"), "{err}");
    assert_eq!(calls(&claude).len(), 2);
    claude.clear_received();
    let r = h.post_with("/v1/messages", &body, &betas).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    assert_eq!(calls(&claude).len(), 2);
}

/// The model calls a fake received (not its token endpoint's).
fn calls(fake: &FakeUpstream) -> Vec<switchyard_testkit::Received> {
    fake.received().into_iter().filter(|rx| rx.path != "/token").collect()
}

/// A Vertex region that takes the context-management flag but not the effort
/// flag its provider (`lagging`, model `m-lagging`) lists, nor the
/// `context_management` field itself.
async fn lagging() -> (FakeUpstream, Options, ConfigFile) {
    let claude = FakeUpstream::start_vertex(Vendor::Anthropic).await.unwrap();
    claude.set_vertex_claude(vertex::ClaudeRules {
        betas: vec!["context-management-2025-06-27".into()],
        refused_fields: vec!["context_management".into()],
    });
    let extra = "    anthropic_betas: [context-management-2025-06-27, effort-2025-11-24]\n";
    let (options, files) = vertex_claude("lagging", &claude, CLAUDE_MODEL, extra);
    (claude, options, files)
}
