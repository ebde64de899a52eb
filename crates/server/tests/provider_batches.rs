//! Batches handed to providers' own batch APIs (`batch_api: true`),
//! black-box: the lines whose first deployment is on such a provider go to
//! it in one provider batch (OpenAI's file and `/batches`, Anthropic's
//! Message Batches, as the fakes serve them, each line answered by the fake's
//! own handler), the rest run by the gateway, and every answer comes back in
//! the caller's batch under its own `custom_id`, billed at the batch price
//! with a record per line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::batches::{chat_line, until_ended, upload};
use common::*;
use serde_json::{Value, json};
use switchyard_testkit::{FakeUpstream, Received, Reply, Vendor, vertex};

async fn start() -> Harness {
    let providers_extra = format!(
        r#"  openai-batch: {{ wire: openai-chat, endpoint: "{{openai}}/v1", credentials: {{ keys: ["{OPENAI_KEY}"] }}, batch_api: true }}
  anthropic-batch: {{ wire: anthropic, endpoint: "{{anthropic}}", credentials: {{ keys: ["{ANTHROPIC_KEY}"] }}, batch_api: true }}
"#
    );
    let extra_models = r#"  - id: m-native
    deployments: [{ provider: openai-batch, model: up-native }]
    pricing: { input: 1.0, output: 2.0, batch: 0.5 }
  - id: m-claude-native
    deployments: [{ provider: anthropic-batch, model: claude-native }]
    pricing: { input: 3.0, output: 15.0, batch: 0.5 }
  - id: m-batch
    deployments: [{ provider: openai, model: up-batch }]
    pricing: { input: 1.0, output: 2.0, batch: 0.5 }
"#
    .to_owned();
    Harness::start_with(Options {
        extra_models,
        providers_extra,
        gateway_extra: "  batches: { poll_interval_ms: 10, provider_poll_interval_ms: 10 }".into(),
        ..Options::default()
    })
    .await
}

/// The last user text of a request the fake received, in any vendor's body.
fn asked(rx: &Received) -> String {
    if let Some(contents) = rx.body["contents"].as_array() {
        let last = contents.last().cloned().unwrap_or_default();
        return last["parts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["text"].as_str())
            .collect();
    }
    let last = rx.body["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or_default();
    match &last["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

/// Each fake answers with the text it was asked, so an answer read back
/// shows which request it belongs to.
fn echo(h: &Harness) {
    h.openai.set_chooser(|_, rx| {
        Reply::json(json!({
            "id": "chatcmpl-echo", "object": "chat.completion", "created": 1_700_000_000,
            "model": rx.body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": format!("echo: {}", asked(rx))}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14}
        }))
    });
    h.anthropic.set_chooser(|_, rx| {
        if asked(rx) == "refuse me" {
            return Reply::error(400, "messages: this request is refused");
        }
        Reply::json(json!({
            "id": "msg_01Echo", "type": "message", "role": "assistant", "model": rx.body["model"],
            "content": [{"type": "text", "text": format!("echo: {}", asked(rx))}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 20, "output_tokens": 6}
        }))
    });
}

async fn get(h: &Harness, path: &str) -> String {
    let r = h.client.get(format!("{}{path}", h.base)).bearer_auth(GATEWAY_KEY).send().await;
    let r = r.unwrap();
    assert_eq!(r.status(), 200, "{path}");
    r.text().await.unwrap()
}

async fn create(h: &Harness, lines: &[String]) -> String {
    let (status, file) = upload(h, GATEWAY_KEY, "batch", &lines.join("\n")).await;
    assert_eq!(status, 200, "{file}");
    let file = file["id"].as_str().unwrap().to_owned();
    let r = h
        .client
        .post(format!("{}/v1/batches", h.base))
        .bearer_auth(GATEWAY_KEY)
        .json(&json!({"input_file_id": file, "endpoint": "/v1/chat/completions", "completion_window": "24h"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_owned()
}

/// The output and error files' lines, by `custom_id`.
async fn answers(h: &Harness, b: &Value) -> std::collections::BTreeMap<String, Value> {
    let mut out = std::collections::BTreeMap::new();
    for field in ["output_file_id", "error_file_id"] {
        if let Some(f) = b[field].as_str() {
            for line in get(h, &format!("/v1/files/{f}/content")).await.lines() {
                let v: Value = serde_json::from_str(line).unwrap();
                out.insert(v["custom_id"].as_str().unwrap().to_owned(), v);
            }
        }
    }
    out
}

fn text_of(answer: &Value) -> &str {
    answer["response"]["body"]["choices"][0]["message"]["content"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn lines_for_an_openai_batch_provider_go_in_one_provider_batch_and_come_back_by_custom_id() {
    let h = start().await;
    echo(&h);
    let id = create(
        &h,
        &[
            chat_line("n-1", "m-native", "alpha"),
            chat_line("here", "m-batch", "gamma"),
            chat_line("n-2", "m-native", "beta"),
            chat_line("n-3", "m-native", "delta"),
            chat_line("lost", "no-such-model", "x"),
        ],
    )
    .await;
    let b = until_ended(&h, &id).await;
    assert_eq!(b["status"], "completed", "{b}");
    assert_eq!(b["request_counts"], json!({"total": 5, "completed": 4, "failed": 1}));
    assert_eq!(h.openai.batch_creates(), 1, "one provider batch for the three native lines");
    let got = answers(&h, &b).await;
    // The fake answers in reverse order: each answer is still its own line's.
    for (cid, text) in [("n-1", "alpha"), ("n-2", "beta"), ("n-3", "delta"), ("here", "gamma")] {
        assert_eq!(got[cid]["response"]["status_code"], 200, "{cid}: {}", got[cid]);
        assert_eq!(text_of(&got[cid]), format!("echo: {text}"), "{cid}");
        // Named as the caller asked for it, in the caller's format.
        assert_eq!(got[cid]["response"]["body"]["object"], "chat.completion");
    }
    assert_eq!(got["lost"]["response"]["status_code"], 404);
    // The provider ran the three native lines as the model deployed there.
    let direct: Vec<Received> = h.openai.received();
    let native: Vec<&Received> = direct.iter().filter(|r| r.body["model"] == "up-native").collect();
    assert_eq!(native.len(), 3, "each native line reached the provider once");
    // A record per line, the native ones naming the provider's batch, each at
    // half the price of the usage the provider reported.
    let records = h.sink.wait_len(4).await;
    let lines: Vec<_> =
        records.iter().filter(|r| r.descriptor.contains(&format!("batch:{id}"))).collect();
    assert_eq!(lines.len(), 4, "{records:?}");
    let provider_batch: Vec<_> =
        lines.iter().filter(|r| r.descriptor.contains("provider_batch:")).collect();
    assert_eq!(provider_batch.len(), 3, "{lines:?}");
    for r in provider_batch {
        assert_eq!(r.served_provider.as_deref(), Some("openai-batch"));
        assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (Some(10), Some(4)));
        let expected = (10.0 * 1.0 + 4.0 * 2.0) / 1e6 * 0.5;
        assert!((r.cost_usd.unwrap() - expected).abs() < 1e-12, "{:?}", r.cost_usd);
    }
}

#[tokio::test]
async fn an_anthropic_message_batch_answers_in_openai_shape_and_a_refused_request_is_its_error() {
    let h = start().await;
    echo(&h);
    let id = create(
        &h,
        &[
            chat_line("c-1", "m-claude-native", "hello"),
            chat_line("c-2", "m-claude-native", "refuse me"),
            chat_line("c-3", "m-claude-native", "world"),
        ],
    )
    .await;
    let b = until_ended(&h, &id).await;
    assert_eq!(b["status"], "completed", "{b}");
    assert_eq!(h.anthropic.batch_creates(), 1);
    let got = answers(&h, &b).await;
    assert_eq!(text_of(&got["c-1"]), "echo: hello");
    assert_eq!(text_of(&got["c-3"]), "echo: world");
    // Translated from Messages to Chat Completions, as a direct call would be.
    assert_eq!(got["c-1"]["response"]["body"]["choices"][0]["finish_reason"], "stop");
    assert_eq!(got["c-1"]["response"]["body"]["usage"]["prompt_tokens"], 20);
    let refused = &got["c-2"]["response"];
    assert_eq!(refused["status_code"], 400, "{refused}");
    assert!(
        refused["body"]["error"]["message"].as_str().unwrap_or_default().contains("refused"),
        "{refused}"
    );
    let records = h.sink.wait_len(3).await;
    let cost: Vec<f64> = records
        .iter()
        .filter(|r| r.descriptor.contains("provider_batch:") && r.status == 200)
        .map(|r| r.cost_usd.unwrap())
        .collect();
    assert_eq!(cost.len(), 2, "{records:?}");
    let expected = (20.0 * 3.0 + 6.0 * 15.0) / 1e6 * 0.5;
    assert!(cost.iter().all(|c| (c - expected).abs() < 1e-12), "{cost:?} vs {expected}");
}

#[tokio::test]
async fn a_provider_that_refuses_the_batch_leaves_its_lines_to_the_gateway() {
    let h = start().await;
    echo(&h);
    h.openai.fail_next_batch_creates(1, 500);
    let id =
        create(&h, &[chat_line("a", "m-native", "one"), chat_line("b", "m-native", "two")]).await;
    let b = until_ended(&h, &id).await;
    assert_eq!(b["status"], "completed", "{b}");
    assert_eq!(h.openai.batch_creates(), 1, "tried once, refused");
    let got = answers(&h, &b).await;
    assert_eq!(text_of(&got["a"]), "echo: one");
    assert_eq!(text_of(&got["b"]), "echo: two");
    let records = h.sink.wait_len(2).await;
    assert!(records.iter().all(|r| !r.descriptor.contains("provider_batch:")), "{records:?}");
}

#[tokio::test]
async fn cancelling_stops_the_provider_batch_and_its_unrun_lines_say_so() {
    let h = start().await;
    echo(&h);
    h.anthropic.hold_batches(true);
    let id = create(
        &h,
        &[chat_line("x", "m-claude-native", "one"), chat_line("y", "m-claude-native", "two")],
    )
    .await;
    let submitted = async {
        while h.anthropic.batch_creates() == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(WAIT, submitted).await.expect("the batch was handed over");
    let r = h
        .client
        .post(format!("{}/v1/batches/{id}/cancel", h.base))
        .bearer_auth(GATEWAY_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let b = until_ended(&h, &id).await;
    assert_eq!(b["status"], "cancelled", "{b}");
    assert_eq!(h.anthropic.batch_cancels(), 1, "the provider was told");
    let got = answers(&h, &b).await;
    assert_eq!(got.len(), 2);
    assert!(got.values().all(|l| l["error"]["code"] == "batch_cancelled"), "{got:?}");
    assert_eq!(
        h.anthropic.received().iter().filter(|r| r.path == "/v1/messages").count(),
        0,
        "no request ran"
    );
}

#[tokio::test]
async fn vertex_batch_prediction_stages_its_input_in_the_bucket_and_reads_the_answers_back() {
    let fake = FakeUpstream::start_vertex(Vendor::Gemini).await.unwrap();
    fake.set_chooser(|_, rx| {
        if asked(rx) == "refuse me" {
            return Reply::error(400, "contents: this request is refused");
        }
        Reply::json(json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": format!("echo: {}", asked(rx))}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10}
        }))
    });
    let files = ConfigFile::new("");
    let sa = files.dir.join("sa.json");
    std::fs::write(&sa, vertex::service_account_json(&format!("{}/token", fake.base_url())))
        .unwrap();
    let providers_extra = format!(
        r#"  vertex:
    wire: vertex-gemini
    endpoint: "{base}/v1/projects/{{project}}/locations/{{region}}"
    region: us-central1
    credentials: {{ google: {{ service_account_file: "{sa}" }} }}
    batch_api: true
    batch_bucket: "gs://sy-batches/runs"
    storage_endpoint: "{base}"
"#,
        base = fake.base_url(),
        sa = sa.display()
    );
    let extra_models = r#"  - id: m-gemini-native
    deployments: [{ provider: vertex, model: gemini-2.5-flash }]
    pricing: { input: 0.3, output: 2.5, batch: 0.5 }
"#
    .to_owned();
    let h = Harness::start_with(Options {
        providers_extra,
        extra_models,
        gateway_extra: "  batches: { poll_interval_ms: 10, provider_poll_interval_ms: 10 }".into(),
        ..Options::default()
    })
    .await;
    let id = create(
        &h,
        &[
            chat_line("g-1", "m-gemini-native", "sun"),
            chat_line("g-2", "m-gemini-native", "refuse me"),
            chat_line("g-3", "m-gemini-native", "moon"),
        ],
    )
    .await;
    let b = until_ended(&h, &id).await;
    assert_eq!(b["status"], "completed", "{b}");
    assert_eq!(b["request_counts"], json!({"total": 3, "completed": 2, "failed": 1}));
    assert_eq!(fake.batch_creates(), 1, "one job for the three lines");
    // Staged where the provider's bucket says, the job's answers beside it.
    let objects = fake.gcs_objects();
    let input = format!("gs://sy-batches/runs/{id}-0/input.jsonl");
    assert!(objects.contains(&input), "{objects:?}");
    let output = format!("gs://sy-batches/runs/{id}-0/output/");
    assert!(objects.iter().any(|o| o.starts_with(&output) && o.ends_with(".jsonl")), "{objects:?}");
    let got = answers(&h, &b).await;
    assert_eq!(text_of(&got["g-1"]), "echo: sun");
    assert_eq!(text_of(&got["g-3"]), "echo: moon");
    assert_eq!(got["g-1"]["response"]["body"]["usage"]["prompt_tokens"], 7);
    assert_eq!(got["g-2"]["response"]["status_code"], 400, "{}", got["g-2"]);
    // Each line reached the model once, as Vertex's generateContent takes it.
    let runs: Vec<Received> =
        fake.received().into_iter().filter(|r| r.path.ends_with(":generateContent")).collect();
    assert_eq!(runs.len(), 3);
    let records = h.sink.wait_len(3).await;
    let billed: Vec<f64> = records
        .iter()
        .filter(|r| r.descriptor.contains("provider_batch:") && r.status == 200)
        .map(|r| r.cost_usd.unwrap())
        .collect();
    let expected = (7.0 * 0.3 + 3.0 * 2.5) / 1e6 * 0.5;
    assert_eq!(billed.len(), 2, "{records:?}");
    assert!(billed.iter().all(|c| (c - expected).abs() < 1e-12), "{billed:?} vs {expected}");
}

#[tokio::test]
async fn bedrock_batch_inference_stages_records_in_s3_and_small_batches_run_here() {
    let region = switchyard_testkit::bedrock::REGION;
    let providers_extra = format!(
        "  bedrock-batch:\n    wire: bedrock-anthropic\n    endpoint: \"{{bedrock}}\"\n    \
         region: {region}\n    credentials: {{ aws: {{ access_key_id: {BEDROCK_ACCESS_KEY_ID}, \
         secret_access_key: \"{BEDROCK_SECRET}\" }} }}\n    batch_api: true\n    \
         batch_bucket: \"s3://sy-batches/runs\"\n    \
         batch_role_arn: \"arn:aws:iam::123456789012:role/BedrockBatch\"\n"
    );
    let extra_models = format!(
        "  - id: m-bedrock-native\n    deployments: [{{ provider: bedrock-batch, model: \
         \"{BEDROCK_MODEL}\" }}]\n    pricing: {{ input: 3.0, output: 15.0, batch: 0.5 }}\n"
    );
    let h = Harness::start_with(Options {
        providers_extra,
        extra_models,
        gateway_extra:
            "  batches: { poll_interval_ms: 10, provider_poll_interval_ms: 10, concurrency: 16 }"
                .into(),
        ..Options::default()
    })
    .await;
    h.bedrock.set_chooser(|_, rx| {
        if asked(rx) == "refuse me" {
            return Reply::error(400, "messages: this request is refused");
        }
        Reply::json(json!({
            "id": "msg_bdrk_01", "type": "message", "role": "assistant", "model": "claude",
            "content": [{"type": "text", "text": format!("echo: {}", asked(rx))}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 12, "output_tokens": 5}
        }))
    });
    // Bedrock runs 100 records at least.
    let mut lines: Vec<String> = (0..120)
        .map(|i| chat_line(&format!("b-{i}"), "m-bedrock-native", &format!("record {i}")))
        .collect();
    lines[7] = chat_line("b-7", "m-bedrock-native", "refuse me");
    let id = create(&h, &lines).await;
    let b = until_ended(&h, &id).await;
    assert_eq!(b["status"], "completed", "{b}");
    assert_eq!(b["request_counts"], json!({"total": 120, "completed": 119, "failed": 1}));
    assert_eq!(h.bedrock.batch_creates(), 1, "one job for the 120 records");
    let objects = h.bedrock.s3_objects();
    assert!(objects.contains(&format!("s3://sy-batches/runs/{id}-0/input.jsonl")), "{objects:?}");
    let got = answers(&h, &b).await;
    for i in [0, 1, 63, 119] {
        assert_eq!(text_of(&got[&format!("b-{i}")]), format!("echo: record {i}"), "b-{i}");
    }
    assert_eq!(got["b-7"]["response"]["status_code"], 400, "{}", got["b-7"]);
    let invoked = h.bedrock.received().iter().filter(|r| r.path.ends_with("/invoke")).count();
    assert_eq!(invoked, 120, "each record ran once, inside the job");
    let records = h.sink.wait_len(120).await;
    let expected = (12.0 * 3.0 + 5.0 * 15.0) / 1e6 * 0.5;
    let billed: Vec<f64> = records
        .iter()
        .filter(|r| r.descriptor.contains("provider_batch:") && r.status == 200)
        .map(|r| r.cost_usd.unwrap())
        .collect();
    assert_eq!(billed.len(), 119);
    assert!(billed.iter().all(|c| (c - expected).abs() < 1e-12), "{expected}");

    // Three lines are too few for a job: the gateway runs them.
    let small = create(
        &h,
        &[
            chat_line("s-1", "m-bedrock-native", "one"),
            chat_line("s-2", "m-bedrock-native", "two"),
            chat_line("s-3", "m-bedrock-native", "three"),
        ],
    )
    .await;
    let b = until_ended(&h, &small).await;
    assert_eq!(b["request_counts"], json!({"total": 3, "completed": 3, "failed": 0}), "{b}");
    assert_eq!(h.bedrock.batch_creates(), 1, "no job for three lines");
    assert_eq!(text_of(&answers(&h, &b).await["s-2"]), "echo: two");
}
