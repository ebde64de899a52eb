use serde_json::{Value, json};

use super::*;

fn req(prompt: &str) -> ImageRequest {
    ImageRequest { prompt: prompt.into(), n: 1, ..ImageRequest::default() }
}

#[test]
fn a_client_body_is_read_and_bad_ones_are_named() {
    let r = openai::parse_request(
        br#"{"model": "img", "prompt": "a lighthouse", "n": 3, "size": "1024x1024", "response_format": "url"}"#,
    )
    .unwrap();
    assert_eq!((r.model.as_str(), r.n, r.format), ("img", 3, Some(ImageFormat::Url)));
    for (body, says) in [
        (r#"{"model": "img"}"#, "prompt: required"),
        (r#"{"prompt": "x", "n": 11}"#, "n: an integer from 1 to 10"),
        (r#"{"prompt": "x", "response_format": "png"}"#, "response_format"),
        (r#"{"prompt": 7}"#, "prompt"),
    ] {
        let e = openai::parse_request(body.as_bytes()).unwrap_err().to_string();
        assert!(e.contains(says), "{body}: {e}");
    }
}

#[test]
fn openai_upstreams_are_asked_for_base64_unless_the_model_refuses_the_field() {
    let mut r = req("x");
    r.size = Some("1024x1024".into());
    let dalle = openai::encode_request(&r, 2, "dall-e-2");
    assert_eq!(dalle["response_format"], "b64_json");
    assert_eq!((&dalle["n"], &dalle["size"]), (&json!(2), &json!("1024x1024")));
    let gpt = openai::encode_request(&r, 1, "gpt-image-1");
    assert!(gpt.get("response_format").is_none(), "{gpt}");
    let answer = json!({"created": 1, "data": [{"b64_json": "AAAA", "revised_prompt": "x!"}],
                        "usage": {"input_tokens": 5, "output_tokens": 1056}});
    let parsed = openai::parse_response(answer.to_string().as_bytes()).unwrap();
    assert_eq!(parsed.images[0].revised_prompt.as_deref(), Some("x!"));
    assert_eq!((parsed.input_tokens, parsed.output_tokens), (Some(5), Some(1056)));
    let linked = json!({"data": [{"url": "https://x/y.png"}]});
    assert!(openai::parse_response(linked.to_string().as_bytes()).is_err(), "asked for base64");
}

#[test]
fn imagen_takes_sizes_as_aspect_ratios_and_refuses_what_it_has_not() {
    let mut r = req("a fox");
    r.size = Some("1792x1024".into());
    let body = imagen::encode_request(&r, 3, "imagen-4.0-generate-001").unwrap();
    assert_eq!(
        body,
        json!({"instances": [{"prompt": "a fox"}], "parameters": {"sampleCount": 3, "aspectRatio": "16:9"}})
    );
    for (change, says) in [
        (
            ImageRequest { size: Some("1536x1024".into()), ..req("x") },
            "size 1536x1024: Imagen makes",
        ),
        (ImageRequest { quality: Some("hd".into()), ..req("x") }, "quality hd"),
        (ImageRequest { style: Some("vivid".into()), ..req("x") }, "style vivid"),
        (ImageRequest { background: Some("transparent".into()), ..req("x") }, "background"),
    ] {
        let e = imagen::encode_request(&change, 1, "imagen").unwrap_err().to_string();
        assert!(e.contains(says), "{e}");
    }
    let answer = json!({"predictions": [
        {"bytesBase64Encoded": "AAAA", "mimeType": "image/png"},
        {"raiFilteredReason": "unsafe"}
    ]});
    let parsed = imagen::parse_response(answer.to_string().as_bytes()).unwrap();
    assert_eq!(parsed.images.len(), 1, "a filtered image is left out");
    let none = json!({"predictions": [{"raiFilteredReason": "unsafe"}]});
    let e = imagen::parse_response(none.to_string().as_bytes()).unwrap_err().to_string();
    assert!(e.contains("filtered: unsafe"), "{e}");
}

#[test]
fn requests_over_a_providers_count_are_split() {
    assert_eq!(calls(10, 4), [4, 4, 2]);
    assert_eq!(calls(1, 1), [1]);
    assert_eq!(calls(3, 10), [3]);
    let spec = crate::Wire::Gemini.spec().images.unwrap();
    assert_eq!(spec.max_images("imagen-4.0-generate-001"), 4);
    let openai = crate::Wire::OpenAiChat.spec().images.unwrap();
    assert_eq!((openai.max_images("dall-e-3"), openai.max_images("gpt-image-1")), (1, 10));
    assert_eq!(
        spec.url(crate::Wire::Gemini.spec(), "https://g", "imagen-4.0-generate-001", &req("x")),
        "https://g/v1beta/models/imagen-4.0-generate-001:predict"
    );
    let joined = ImageResponse::join(vec![
        ImageResponse { images: vec![], input_tokens: Some(1), output_tokens: Some(2) },
        ImageResponse { images: vec![], input_tokens: None, output_tokens: Some(2) },
    ]);
    assert_eq!((joined.input_tokens, joined.output_tokens), (None, Some(4)));
}

#[test]
fn the_answer_is_openais_shape() {
    let written = openai::write_response(
        7,
        &[
            (openai::Delivered::B64("AAAA"), Some("r")),
            (openai::Delivered::Url("https://g/i/1".into()), None),
        ],
        Some((3, 4)),
    );
    let v: Value = serde_json::from_slice(&written).unwrap();
    assert_eq!(
        v,
        json!({"created": 7, "data": [{"b64_json": "AAAA", "revised_prompt": "r"}, {"url": "https://g/i/1"}],
               "usage": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}})
    );
}

fn part(name: &str, bytes: &[u8]) -> edits::FormPart {
    edits::FormPart { name: name.into(), bytes: bytes.to_vec(), ..edits::FormPart::default() }
}

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n0000";

#[test]
fn an_edit_form_is_read_and_bad_ones_are_named() {
    let r = edits::parse_request(&[
        part("model", b"gpt-image-1"),
        part("prompt", b"add a moon"),
        part("image[]", PNG),
        part("image[]", b"\xff\xd8\xff\xe0jpeg"),
        part("mask", PNG),
        part("n", b"2"),
        part("input_fidelity", b"high"),
    ])
    .unwrap();
    let edit = r.edit.clone().unwrap();
    assert_eq!((r.model.as_str(), r.n, edit.images.len()), ("gpt-image-1", 2, 2));
    assert_eq!(
        (edit.images[1].mime.as_str(), edit.images[0].name.as_str()),
        ("image/jpeg", "image.png")
    );
    assert_eq!(edit.input_fidelity.as_deref(), Some("high"));
    for (parts, says) in [
        (vec![part("image", PNG)], "prompt: required"),
        (vec![part("prompt", b"x")], "image: required"),
        (vec![part("prompt", b"x"), part("image", b"GIF89a")], "image: expected a PNG"),
        (
            vec![part("prompt", b"x"), part("image", PNG), part("mask", b"\xff\xd8\xff")],
            "mask: expected a PNG",
        ),
        (
            vec![part("prompt", b"x"), part("image", PNG), part("colour", b"red")],
            "colour: unknown parameter",
        ),
        (vec![part("prompt", b"x"), part("image", PNG), part("n", b"11")], "n: an integer"),
    ] {
        let e = edits::parse_request(&parts).unwrap_err().to_string();
        assert!(e.contains(says), "{e} / {says}");
    }
    let many: Vec<_> = std::iter::once(part("prompt", b"x"))
        .chain((0..17).map(|_| part("image[]", PNG)))
        .collect();
    assert!(edits::parse_request(&many).unwrap_err().to_string().contains("at most 16"));
}

#[test]
fn an_edit_goes_upstream_as_a_form_of_the_same_fields() {
    let r = edits::parse_request(&[
        part("prompt", b"add a moon"),
        part("image", PNG),
        part("mask", PNG),
        part("size", b"512x512"),
    ])
    .unwrap();
    let spec = crate::openai_chat::SPEC.images.unwrap();
    let (body, content_type) = spec.encode(&r, 1, "dall-e-2").unwrap();
    let boundary = content_type.strip_prefix("multipart/form-data; boundary=").unwrap();
    let text = String::from_utf8_lossy(&body);
    assert!(text.ends_with(&format!("--{boundary}--\r\n")), "{text}");
    for field in [
        "name=\"model\"\r\n\r\ndall-e-2",
        "name=\"prompt\"\r\n\r\nadd a moon",
        "name=\"size\"\r\n\r\n512x512",
        "name=\"response_format\"\r\n\r\nb64_json",
        "name=\"image\"; filename=\"image.png\"",
        "name=\"mask\"; filename=\"mask.png\"",
    ] {
        assert!(text.contains(field), "{field}: {text}");
    }
    let gpt = spec.encode(&r, 1, "gpt-image-1").unwrap();
    assert!(!String::from_utf8_lossy(&gpt.0).contains("response_format"));
    assert_eq!(
        spec.url(&crate::openai_chat::SPEC, "https://api.openai.com/v1", "dall-e-2", &r),
        "https://api.openai.com/v1/images/edits"
    );
    // Imagen edits nothing: refused by name, so the candidate is passed over.
    let imagen = crate::gemini::SPEC.images.unwrap();
    assert!(
        imagen
            .check(&r, "imagen-4.0-generate-001")
            .unwrap_err()
            .to_string()
            .contains("edits no images")
    );
}

#[test]
fn gemini_image_models_generate_and_edit_on_generate_content() {
    use crate::images::gemini;
    let wire = crate::Wire::Gemini.spec();
    let Some(imagen) = wire.images else { panic!("Gemini makes images") };
    assert!(
        gemini::is_native("gemini-2.5-flash-image")
            && gemini::is_native("gemini-3-pro-image-preview")
    );
    assert!(
        !gemini::is_native("imagen-4.0-generate-001") && !gemini::is_native("gemini-2.5-flash")
    );
    // Imagen stays on :predict, and edits nothing.
    assert_eq!(imagen.for_model(wire, "imagen-4.0-generate-001"), imagen);
    let spec = imagen.for_model(wire, "gemini-2.5-flash-image");
    assert_eq!(spec.body, ImageBody::Gemini);
    let mut r = req("a red fox");
    r.n = 3;
    r.size = Some("1536x1024".into());
    assert_eq!(
        spec.url(wire, "https://g.example", "gemini-2.5-flash-image", &r),
        "https://g.example/v1beta/models/gemini-2.5-flash-image:generateContent"
    );
    assert_eq!(calls(r.n, spec.max_images("gemini-2.5-flash-image")), [1, 1, 1]);
    let (body, ct) = spec.encode(&r, 1, "gemini-2.5-flash-image").unwrap_or_default();
    assert_eq!(ct, "application/json");
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    assert_eq!(body["contents"][0]["parts"], serde_json::json!([{"text": "a red fox"}]));
    assert_eq!(body["generationConfig"]["responseModalities"], serde_json::json!(["IMAGE"]));
    assert_eq!(body["generationConfig"]["imageConfig"]["aspectRatio"], "3:2");
    // An edit: the images inline after the instruction; a mask is refused by name.
    let png = b"\x89PNG\r\n\x1a\nrest".to_vec();
    r.edit = Some(ImageEdit {
        images: vec![InputFile { name: "in.png".into(), mime: "image/png".into(), bytes: png }],
        mask: None,
        input_fidelity: None,
    });
    assert!(spec.check(&r, "gemini-2.5-flash-image").is_ok());
    assert!(imagen.check(&r, "imagen-4.0-generate-001").is_err(), "Imagen edits nothing");
    let (body, _) = spec.encode(&r, 1, "gemini-2.5-flash-image").unwrap_or_default();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    assert_eq!(body["contents"][0]["parts"][1]["inlineData"]["mimeType"], "image/png");
    assert_eq!(body["contents"][0]["parts"][1]["inlineData"]["data"], "iVBORw0KGgpyZXN0");
    if let Some(e) = r.edit.as_mut() {
        e.mask = Some(InputFile::default());
    }
    let err =
        spec.check(&r, "gemini-2.5-flash-image").err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("mask"), "{err}");
    let mut odd = req("x");
    odd.size = Some("1000x100".into());
    assert!(spec.check(&odd, "gemini-2.5-flash-image").is_err());

    let answer = br#"{"candidates":[{"content":{"role":"model","parts":[{"text":"Here it is"},{"inlineData":{"mimeType":"image/png","data":"AAAA"}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":1290}}"#;
    let parsed = spec.parse(answer).unwrap_or_default();
    assert_eq!(parsed.images.len(), 1);
    assert_eq!((parsed.images[0].b64.as_str(), parsed.output_tokens), ("AAAA", Some(1290)));
    let blocked = br#"{"promptFeedback":{"blockReason":"SAFETY"}}"#;
    let err = spec.parse(blocked).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("SAFETY"), "{err}");
}
