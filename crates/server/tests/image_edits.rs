//! Image edits, black-box: OpenAI's multipart `/v1/images/edits` against
//! OpenAI's fake, which reads the form as the real API does (declared and
//! actual image types, DALL·E 2's one square PNG, GPT image models' several
//! `image[]`, no edits on DALL·E 3) and draws from the prompt and the images
//! it was given. Imagen edits nothing: its candidates are passed over.
//! Gemini's own image models edit by instruction on `generateContent`, the
//! images inline, against Gemini's fake, which checks the image fields as
//! the API does.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use serde_json::Value;
use switchyard_testkit::fake_gemini_image_b64;
use switchyard_testkit::fake_png;
use switchyard_testkit::images::{fake_edit_png_b64, read_form};

fn models() -> String {
    r#"  - id: e-gpt
    kind: image
    deployments: [{ provider: openai, model: gpt-image-1 }]
    pricing: { input: 5.0, output: 40.0 }
  - id: e-dalle2
    kind: image
    deployments: [{ provider: openai, model: dall-e-2 }]
    pricing: { per_image: 0.02 }
  - id: e-imagen
    kind: image
    deployments: [{ provider: gemini, model: imagen-4.0-generate-001 }]
    pricing: { per_image: 0.04 }
  - id: e-gemini-image
    kind: image
    deployments: [{ provider: gemini, model: gemini-2.5-flash-image }]
    pricing: { per_image: 0.039 }
  - id: e-imagen-then-gpt
    kind: image
    deployments: [{ provider: gemini, model: imagen-4.0-generate-001 }, { provider: openai, model: gpt-image-1 }]
"#
    .to_owned()
}

/// A form as the OpenAI SDK sends it: text fields, then files with their
/// types.
fn form(fields: &[(&str, &str)], files: &[(&str, &str, &[u8])]) -> (String, Vec<u8>) {
    let boundary = "----sdk-boundary-7f3a";
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\ncontent-disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    for (name, filename, bytes) in files {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\ncontent-disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\ncontent-type: image/png\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

async fn edit(h: &Harness, (content_type, body): (String, Vec<u8>)) -> (u16, Value, String) {
    let r = h
        .client
        .post(format!("{}/v1/images/edits", h.base))
        .bearer_auth(GATEWAY_KEY)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let id = r
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, r.json().await.unwrap_or(Value::Null), id)
}

#[tokio::test]
async fn an_edit_reaches_the_upstream_as_a_form_of_every_image_and_is_metered() {
    let h = Harness::start_with(Options { extra_models: models(), ..Options::default() }).await;
    let (a, b) = (fake_png("first", 0), fake_png("second", 0));
    let (status, json, id) = edit(
        &h,
        form(
            &[("model", "e-gpt"), ("prompt", "put them side by side")],
            &[("image[]", "a.png", &a), ("image[]", "b.png", &b)],
        ),
    )
    .await;
    assert_eq!(status, 200, "{json}");
    // Drawn from the prompt and both images: both reached the upstream.
    assert_eq!(
        json["data"][0]["b64_json"],
        fake_edit_png_b64("put them side by side", &[&a, &b], 0)
    );
    let sent = h.openai.received().last().cloned().unwrap();
    assert_eq!(sent.path, "/v1/images/edits");
    let parts = read_form(sent.header("content-type"), sent.raw.clone()).await.unwrap();
    let names: Vec<&str> = parts.iter().map(|p| p.name.as_str()).collect();
    assert!(names.contains(&"image[]") && !names.contains(&"response_format"), "{names:?}");
    let model = parts.iter().find(|p| p.name == "model").unwrap();
    assert_eq!(model.data.as_ref(), b"gpt-image-1");
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    assert_eq!(rec.operation.as_deref(), Some("images"));
    assert!(
        rec.descriptor.contains("images:1") && rec.descriptor.ends_with("edit"),
        "{}",
        rec.descriptor
    );
    assert!(rec.cost_usd.is_some_and(|c| c > 0.0), "billed by its tokens: {:?}", rec.cost_usd);

    // DALL·E 2: one square PNG and a mask, answered with a link the gateway serves.
    let (status, json, id) = edit(
        &h,
        form(
            &[
                ("model", "e-dalle2"),
                ("prompt", "a red door"),
                ("size", "256x256"),
                ("response_format", "url"),
            ],
            &[("image", "door.png", &a), ("mask", "mask.png", &a)],
        ),
    )
    .await;
    assert_eq!(status, 200, "{json}");
    let link = json["data"][0]["url"].as_str().unwrap().to_owned();
    let fetched = h.client.get(&link).send().await.unwrap();
    assert_eq!(fetched.status().as_u16(), 200);
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    assert_eq!(rec.cost_usd, Some(0.02));
}

#[tokio::test]
async fn imagen_edits_nothing_so_its_candidates_are_passed_over() {
    let h = Harness::start_with(Options { extra_models: models(), ..Options::default() }).await;
    let img = fake_png("x", 0);
    let (status, json, _) =
        edit(&h, form(&[("model", "e-imagen"), ("prompt", "x")], &[("image", "x.png", &img)]))
            .await;
    assert_eq!(
        (status, json["error"]["code"].as_str()),
        (400, Some("unsupported_request")),
        "{json}"
    );
    assert!(json["error"]["message"].as_str().unwrap().contains("edits no images"), "{json}");
    assert!(h.gemini.received().is_empty(), "nothing sent to Gemini");
    let (status, json, _) = edit(
        &h,
        form(&[("model", "e-imagen-then-gpt"), ("prompt", "x")], &[("image", "x.png", &img)]),
    )
    .await;
    assert_eq!(status, 200, "{json}");
    assert_eq!(json["data"][0]["b64_json"], fake_edit_png_b64("x", &[&img], 0));
}

#[tokio::test]
async fn a_bad_form_is_named_before_anything_is_sent() {
    let h = Harness::start_with(Options {
        extra_models: models(),
        max_body_bytes: 4096,
        ..Options::default()
    })
    .await;
    let img = fake_png("x", 0);
    for (fields, files, says) in [
        (vec![("model", "e-gpt")], vec![("image", "x.png", img.as_slice())], "prompt: required"),
        (vec![("model", "e-gpt"), ("prompt", "x")], vec![], "image: required"),
        (
            vec![("model", "e-gpt"), ("prompt", "x")],
            vec![("image", "x.gif", &b"GIF89a...."[..])],
            "image: expected a PNG",
        ),
        (
            vec![("model", "e-gpt"), ("prompt", "x"), ("colour", "red")],
            vec![("image", "x.png", img.as_slice())],
            "colour: unknown parameter",
        ),
    ] {
        let (status, json, _) = edit(&h, form(&fields, &files)).await;
        assert_eq!(status, 400, "{json}");
        assert!(json["error"]["message"].as_str().unwrap().contains(says), "{json} / {says}");
    }
    let big = vec![0u8; 8192];
    let (status, json, _) =
        edit(&h, form(&[("model", "e-gpt"), ("prompt", "x")], &[("image", "x.png", &big)])).await;
    assert_eq!(status, 413, "{json}");
    let r = h.post("/v1/images/edits", &serde_json::json!({"model": "e-gpt", "prompt": "x"})).await;
    assert_eq!(r.status().as_u16(), 400);
    assert!(h.openai.received().is_empty(), "nothing sent upstream");
}

#[tokio::test]
async fn gemini_image_models_draw_and_edit_on_generate_content() {
    let h = Harness::start_with(Options { extra_models: models(), ..Options::default() }).await;
    // A generation: one image a call, the size as an aspect ratio.
    let r = h
        .post(
            "/v1/images/generations",
            &serde_json::json!({"model": "e-gemini-image", "prompt": "a lighthouse", "n": 2,
                                "size": "1536x1024", "response_format": "b64_json"}),
        )
        .await;
    let status = r.status().as_u16();
    let json: Value = r.json().await.unwrap();
    assert_eq!(status, 200, "{json}");
    let drawn = fake_gemini_image_b64("a lighthouse", &[]);
    assert_eq!(json["data"][0]["b64_json"], drawn.as_str());
    assert_eq!(json["data"][1]["b64_json"], drawn.as_str());
    let calls: Vec<_> = h
        .gemini
        .received()
        .into_iter()
        .filter(|r| r.path == "/v1beta/models/gemini-2.5-flash-image:generateContent")
        .collect();
    assert_eq!(calls.len(), 2, "one image a call");
    assert_eq!(
        calls[0].body["generationConfig"]["responseModalities"],
        serde_json::json!(["IMAGE"])
    );
    assert_eq!(calls[0].body["generationConfig"]["imageConfig"]["aspectRatio"], "3:2");

    // An edit: the instruction and the image inline; what comes back is drawn
    // from both.
    let img = fake_png("harbour", 0);
    let (status, json, id) = edit(
        &h,
        form(
            &[
                ("model", "e-gemini-image"),
                ("prompt", "add a red boat"),
                ("response_format", "b64_json"),
            ],
            &[("image", "h.png", &img)],
        ),
    )
    .await;
    assert_eq!(status, 200, "{json}");
    assert_eq!(
        json["data"][0]["b64_json"],
        fake_gemini_image_b64("add a red boat", std::slice::from_ref(&img))
    );
    assert_ne!(json["data"][0]["b64_json"], fake_gemini_image_b64("add a red boat", &[]));
    let sent = h.gemini.received().last().cloned().unwrap();
    assert_eq!(sent.body["contents"][0]["parts"][1]["inlineData"]["mimeType"], "image/png");
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    assert_eq!(rec.cost_usd, Some(0.039));
    assert!(rec.descriptor.ends_with("edit"), "{}", rec.descriptor);

    // They edit by instruction: a mask is refused by name, nothing sent.
    let before = h.gemini.received().len();
    let (status, json, _) = edit(
        &h,
        form(
            &[("model", "e-gemini-image"), ("prompt", "x")],
            &[("image", "h.png", &img), ("mask", "m.png", &img)],
        ),
    )
    .await;
    assert_eq!(
        (status, json["error"]["code"].as_str()),
        (400, Some("unsupported_request")),
        "{json}"
    );
    assert!(json["error"]["message"].as_str().unwrap().contains("mask"), "{json}");
    assert_eq!(h.gemini.received().len(), before);
}
