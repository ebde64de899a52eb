//! Stateful Responses over HTTP, black-box: `store` and `previous_response_id`
//! on every upstream wire (the gateway keeps the state and sends the whole
//! conversation), whole and streamed; `GET`/`DELETE /v1/responses/{id}` and
//! `input_items`; another key's response is unknown; `store: false` keeps
//! nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use serde_json::{Value, json};
use switchyard_testkit::Vendor;

const OTHER_KEY: &str = "sk-gw-other-0123456789abcdef";

async fn start() -> Harness {
    let providers_extra = format!(
        r#"  oai-responses: {{ wire: openai-responses, endpoint: "{{openai}}/v1", credentials: {{ keys: ["{OPENAI_KEY}"] }} }}
"#
    );
    let extra_models = r#"  - id: m-responses
    deployments: [{ provider: oai-responses, model: gpt-5 }]
    capabilities: [vision, tools, structured_output, reasoning]
"#
    .to_owned();
    Harness::start_with(Options {
        providers_extra,
        extra_models,
        extra_keys: vec![OTHER_KEY.to_owned()],
        ..Options::default()
    })
    .await
}

async fn post_as(h: &Harness, key: &str, body: &Value) -> (u16, Value, String) {
    let r = h
        .client
        .post(format!("{}/v1/responses", h.base))
        .header("authorization", format!("Bearer {key}"))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null), text)
}

async fn get_as(h: &Harness, key: &str, path: &str) -> (u16, Value) {
    let r = h
        .client
        .get(format!("{}{path}", h.base))
        .header("authorization", format!("Bearer {key}"))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// The text of a Responses answer's messages.
fn text_of(response: &Value) -> String {
    let mut out = String::new();
    for item in response["output"].as_array().into_iter().flatten() {
        for part in item["content"].as_array().into_iter().flatten() {
            out.push_str(part["text"].as_str().unwrap_or_default());
        }
    }
    out
}

/// A streamed answer's terminal response (`response.completed`).
fn completed(body: &str) -> Value {
    let events = sse_events(body.as_bytes());
    let done = events.iter().rev().find(|e| e.data.contains("\"response.completed\"")).unwrap();
    serde_json::from_str::<Value>(&done.data).unwrap()["response"].clone()
}

#[tokio::test]
async fn later_turns_continue_earlier_ones_on_every_wire() {
    let h = start().await;
    for (model, vendor) in [
        ("m-openai", Vendor::OpenAi),
        ("m-anthropic", Vendor::Anthropic),
        ("m-gemini", Vendor::Gemini),
        ("m-bedrock", Vendor::Bedrock),
        ("m-responses", Vendor::OpenAi),
    ] {
        // Turn one, stored.
        let first = json!({"model": model, "input": "My name is Ada Lovelace.", "store": true});
        let (status, one, text) = post_as(&h, GATEWAY_KEY, &first).await;
        assert_eq!(status, 200, "{model}: {text}");
        let id1 = one["id"].as_str().unwrap().to_owned();
        let answer1 = text_of(&one);
        assert!(!answer1.is_empty(), "{model}: {one}");
        // Turn two continues it, streamed.
        let second = json!({"model": model, "previous_response_id": id1,
                            "input": "What is my name?", "stream": true, "store": true});
        let before = h.fake(vendor).request_count();
        let (status, _, body) = post_as(&h, GATEWAY_KEY, &second).await;
        assert_eq!(status, 200, "{model}: {body}");
        let seen = h.fake(vendor).received()[before..].last().cloned().unwrap();
        let sent = seen.body.to_string();
        // The whole conversation went upstream: turn one, its answer, turn two.
        assert!(sent.contains("My name is Ada Lovelace."), "{model}: {sent}");
        assert!(sent.contains(&answer1), "{model}: {answer1} not in {sent}");
        assert!(sent.contains("What is my name?"), "{model}: {sent}");
        assert!(!sent.contains("previous_response_id"), "{model}: {sent}");
        let two = completed(&body);
        let id2 = two["id"].as_str().unwrap().to_owned();
        assert_ne!(id1, id2, "{model}");
        // Turn three continues the streamed one: it was stored before its
        // completion reached the client.
        let third = json!({"model": model, "previous_response_id": id2, "input": "Thanks.",
                           "store": true});
        let before = h.fake(vendor).request_count();
        let (status, _, text) = post_as(&h, GATEWAY_KEY, &third).await;
        assert_eq!(status, 200, "{model}: {text}");
        let sent = h.fake(vendor).received()[before..].last().unwrap().body.to_string();
        for said in ["My name is Ada Lovelace.", "What is my name?", "Thanks."] {
            assert!(sent.contains(said), "{model}: {said} not in {sent}");
        }
        assert!(sent.contains(&text_of(&two)), "{model}: turn two's answer in {sent}");
    }
    // A Responses upstream gets `store` as the client sent it, and is asked
    // for what its reasoning needs to be sent back.
    let last = h.openai.received().into_iter().rev().find(|r| r.path.ends_with("/responses"));
    let sent = last.unwrap().body;
    assert_eq!(sent["store"], true, "{sent}");
    assert!(sent["include"].as_array().unwrap().contains(&json!("reasoning.encrypted_content")));
}

#[tokio::test]
async fn a_stored_response_is_read_listed_and_deleted_by_its_key_only() {
    let h = start().await;
    let (status, one, text) = post_as(
        &h,
        GATEWAY_KEY,
        &json!({"model": "m-openai", "store": true, "input": [
            {"type": "message", "role": "user", "content": "first"},
            {"type": "message", "role": "user", "content": "second"},
        ]}),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let id = one["id"].as_str().unwrap().to_owned();
    let (status, got) = get_as(&h, GATEWAY_KEY, &format!("/v1/responses/{id}")).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got, one, "the response as its client got it");
    // Input items, newest first by default, paged.
    let (status, page) =
        get_as(&h, GATEWAY_KEY, &format!("/v1/responses/{id}/input_items?limit=1")).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["data"][0]["content"], "second");
    assert_eq!(page["has_more"], true);
    let after = page["last_id"].as_str().unwrap();
    let (_, page) =
        get_as(&h, GATEWAY_KEY, &format!("/v1/responses/{id}/input_items?limit=5&after={after}"))
            .await;
    assert_eq!(page["data"][0]["content"], "first");
    assert_eq!(page["has_more"], false);
    let (_, asc) =
        get_as(&h, GATEWAY_KEY, &format!("/v1/responses/{id}/input_items?order=asc")).await;
    assert_eq!(asc["data"][0]["content"], "first");

    // Another key: unknown, and cannot be continued or deleted.
    let (status, err) = get_as(&h, OTHER_KEY, &format!("/v1/responses/{id}")).await;
    assert_eq!(status, 404, "{err}");
    assert!(!err.to_string().contains("first"), "{err}");
    let (status, err, _) = post_as(
        &h,
        OTHER_KEY,
        &json!({"model": "m-openai", "previous_response_id": id, "input": "more"}),
    )
    .await;
    assert_eq!(status, 404, "{err}");
    assert_eq!(err["error"]["code"], "previous_response_not_found");
    assert_eq!(err["error"]["param"], "previous_response_id");
    let other = h
        .client
        .delete(format!("{}/v1/responses/{id}", h.base))
        .header("authorization", format!("Bearer {OTHER_KEY}"))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 404);
    // Its owner deletes it; then it is gone.
    let deleted: Value = h
        .client
        .delete(format!("{}/v1/responses/{id}", h.base))
        .header("authorization", format!("Bearer {GATEWAY_KEY}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(deleted, json!({"id": id, "object": "response", "deleted": true}));
    let (status, _) = get_as(&h, GATEWAY_KEY, &format!("/v1/responses/{id}")).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn store_false_keeps_nothing_and_a_missing_key_reads_nothing() {
    let h = start().await;
    // Not asked to store (the gateway's default): nothing kept, and the body
    // went upstream as it came.
    let (status, one, _) =
        post_as(&h, GATEWAY_KEY, &json!({"model": "m-responses", "input": "hi"})).await;
    assert_eq!(status, 200);
    let (status, _) =
        get_as(&h, GATEWAY_KEY, &format!("/v1/responses/{}", one["id"].as_str().unwrap())).await;
    assert_eq!(status, 404);
    let sent = h.openai.received().last().unwrap().body.clone();
    assert_eq!(sent, json!({"model": "gpt-5", "input": "hi"}), "the client's own body");
    let (status, one, text) =
        post_as(&h, GATEWAY_KEY, &json!({"model": "m-openai", "input": "hi", "store": false}))
            .await;
    assert_eq!(status, 200, "{text}");
    let id = one["id"].as_str().unwrap();
    let (status, _) = get_as(&h, GATEWAY_KEY, &format!("/v1/responses/{id}")).await;
    assert_eq!(status, 404);
    let (status, err, _) = post_as(
        &h,
        GATEWAY_KEY,
        &json!({"model": "m-openai", "previous_response_id": id, "input": "again"}),
    )
    .await;
    assert_eq!((status, &err["error"]["code"]), (404, &json!("previous_response_not_found")));
    // Not sent upstream as it came either: the field is the gateway's.
    let (status, err, _) = post_as(
        &h,
        GATEWAY_KEY,
        &json!({"model": "m-openai", "previous_response_id": 7, "input": "x"}),
    )
    .await;
    assert_eq!(status, 400, "{err}");
    let r = h.client.get(format!("{}/v1/responses/{id}", h.base)).send().await.unwrap();
    assert_eq!(r.status(), 401);
}

/// The stored response `id` once its status is no longer `queued` or
/// `in_progress`, polled as a client polls a background response.
async fn settled(h: &Harness, id: &str) -> Value {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let (status, got) = get_as(h, GATEWAY_KEY, &format!("/v1/responses/{id}")).await;
        assert_eq!(status, 200, "{got}");
        if !matches!(got["status"].as_str(), Some("queued" | "in_progress")) {
            return got;
        }
        assert!(std::time::Instant::now() < deadline, "still running: {got}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_background_response_is_answered_at_once_and_polled_to_its_end() {
    let h = start().await;
    let body = json!({"model": "m-anthropic", "input": "take your time", "store": true, "background": true});
    let (status, queued, text) = post_as(&h, GATEWAY_KEY, &body).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!((&queued["status"], &queued["background"]), (&json!("queued"), &json!(true)));
    let id = queued["id"].as_str().unwrap().to_owned();
    let done = settled(&h, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["id"], id);
    assert!(text_of(&done).contains("take your time"), "{done}");
    // It may be continued like any stored response.
    let next = json!({"model": "m-anthropic", "previous_response_id": id, "input": "go on"});
    let (status, _, text) = post_as(&h, GATEWAY_KEY, &next).await;
    assert_eq!(status, 200, "{text}");

    // A failure ends it `failed`, with the error.
    h.anthropic.push(switchyard_testkit::Reply::error(400, "bad request from the fake"));
    let (_, queued, _) = post_as(&h, GATEWAY_KEY, &body).await;
    let failed = settled(&h, queued["id"].as_str().unwrap()).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["status"], 400, "{failed}");

    // Background needs storing, and is not streamed.
    let unstored = json!({"model": "m-anthropic", "input": "x", "background": true});
    let (status, err, _) = post_as(&h, GATEWAY_KEY, &unstored).await;
    assert_eq!((status, &err["error"]["param"]), (400, &json!("background")), "{err}");
    let streamed = json!({"model": "m-anthropic", "input": "x", "background": true, "store": true, "stream": true});
    let (status, err, _) = post_as(&h, GATEWAY_KEY, &streamed).await;
    assert_eq!(status, 400, "{err}");
}

#[tokio::test]
async fn cancelling_a_background_response_stops_its_upstream_call() {
    let h = start().await;
    h.anthropic.push(switchyard_testkit::Reply::hang());
    let body =
        json!({"model": "m-anthropic", "input": "never ends", "store": true, "background": true});
    let (_, queued, text) = post_as(&h, GATEWAY_KEY, &body).await;
    let id = queued["id"].as_str().unwrap().to_owned();
    tokio::time::timeout(WAIT, h.anthropic.wait_for_requests(1)).await.unwrap();
    assert_eq!(h.anthropic.in_flight(), 1, "{text}");
    let cancel = |key: &'static str| {
        h.client
            .post(format!("{}/v1/responses/{id}/cancel", h.base))
            .header("authorization", format!("Bearer {key}"))
            .send()
    };
    assert_eq!(cancel(OTHER_KEY).await.unwrap().status(), 404, "another key's");
    let cancelled: Value = cancel(GATEWAY_KEY).await.unwrap().json().await.unwrap();
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    // The upstream call is dropped with the task.
    let deadline = std::time::Instant::now() + WAIT;
    while h.anthropic.in_flight() > 0 {
        assert!(std::time::Instant::now() < deadline, "the upstream call goes on");
        tokio::task::yield_now().await;
    }
    assert_eq!(settled(&h, &id).await["status"], "cancelled");
    // Once over, it cannot be cancelled again.
    assert_eq!(cancel(GATEWAY_KEY).await.unwrap().status(), 400);
}

#[tokio::test]
async fn a_background_response_its_gateway_lost_ends_failed() {
    let h = start().await;
    // As a restarted gateway finds it: queued, long past its deadline, with
    // no task running it.
    let owner = format!("key:{}", switchyard_core::stored_responses::key_digest(GATEWAY_KEY));
    let stale = switchyard_core::stored_responses::StoredResponse {
        id: "resp_lost".into(),
        owner,
        created_ms: 1_000,
        expires_ms: u64::MAX,
        input: vec![json!({"type": "message", "role": "user", "content": "x"})],
        response: json!({"id": "resp_lost", "object": "response", "status": "queued", "background": true, "output": []}),
    };
    h.state.gateway.runtime.responses.put(&stale).await.unwrap();
    let (status, got) = get_as(&h, GATEWAY_KEY, "/v1/responses/resp_lost").await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(
        (&got["status"], &got["error"]["code"]),
        (&json!("failed"), &json!("background_lost"))
    );
    // And so it stays.
    let kept =
        h.state.gateway.runtime.responses.get(&stale.owner, "resp_lost", 2_000).await.unwrap();
    assert_eq!(kept.unwrap().response["status"], "failed");
}

#[tokio::test]
async fn an_item_reference_resolves_within_the_conversation_it_continues() {
    let h = start().await;
    let first = json!({"model": "m-openai", "store": true, "input": [
        {"type": "message", "role": "user", "id": "msg_keep", "content": "Remember the word lighthouse."}
    ]});
    let (status, one, text) = post_as(&h, GATEWAY_KEY, &first).await;
    assert_eq!(status, 200, "{text}");
    let id1 = one["id"].as_str().unwrap().to_owned();
    let answer_id = one["output"][0]["id"].as_str().unwrap().to_owned();
    // Naming an earlier item and the stored answer by id: both are sent as
    // the items they name.
    let second = json!({"model": "m-openai", "previous_response_id": id1, "input": [
        {"type": "item_reference", "id": "msg_keep"},
        {"type": "item_reference", "id": answer_id},
        {"type": "message", "role": "user", "content": "Which word?"}
    ]});
    let before = h.openai.request_count();
    let (status, _, text) = post_as(&h, GATEWAY_KEY, &second).await;
    assert_eq!(status, 200, "{text}");
    let sent = h.openai.received()[before..].last().unwrap().body.clone();
    let said: Vec<(&str, &str)> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap_or_default()))
        .collect();
    let echo = format!("echo: {}", "Remember the word lighthouse.");
    // The conversation, then the two items named, then the new turn.
    assert_eq!(
        said,
        [
            ("user", "Remember the word lighthouse."),
            ("assistant", echo.as_str()),
            ("user", "Remember the word lighthouse."),
            ("assistant", echo.as_str()),
            ("user", "Which word?"),
        ],
        "{sent}"
    );
    // One that names nothing in that conversation is refused, named.
    let missing = json!({"model": "m-openai", "previous_response_id": id1,
                         "input": [{"type": "item_reference", "id": "msg_elsewhere"}]});
    let (status, err, _) = post_as(&h, GATEWAY_KEY, &missing).await;
    assert_eq!((status, err["error"]["param"].as_str()), (400, Some("input[0]")), "{err}");
    assert!(err["error"]["message"].as_str().unwrap().contains("msg_elsewhere"), "{err}");
    // Without a conversation to resolve in, refused by name too.
    let alone =
        json!({"model": "m-openai", "input": [{"type": "item_reference", "id": "msg_keep"}]});
    let (status, err, _) = post_as(&h, GATEWAY_KEY, &alone).await;
    assert_eq!(status, 400, "{err}");
    assert!(err["error"]["message"].as_str().unwrap().contains("item_reference"), "{err}");
}
