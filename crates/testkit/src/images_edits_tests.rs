//! Image edits: the form's checks and answers, then the fakes' routes driven
//! over HTTP with hand-built multipart bodies.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use super::super::{PNG_SIGNATURE, fake_image_url, fake_png, png_chunk};
use super::*;
use crate::{FakeUpstream, Reply, Vendor, azure};

// ---------------------------------------------------------------------------
// Images by hand

/// A PNG's header alone (signature, `IHDR`, `IEND`): what the checks read.
fn png(width: u32, height: u32) -> Vec<u8> {
    let mut ihdr = width.to_be_bytes().to_vec();
    ihdr.extend(height.to_be_bytes());
    ihdr.extend([8, 6, 0, 0, 0]);
    let mut out = PNG_SIGNATURE.to_vec();
    png_chunk(&mut out, *b"IHDR", &ihdr);
    png_chunk(&mut out, *b"IEND", &[]);
    out
}

/// A JPEG's start: SOI, an APP0 segment to skip, a baseline frame header.
fn jpeg(width: u16, height: u16) -> Vec<u8> {
    let [h1, h2] = height.to_be_bytes();
    let [w1, w2] = width.to_be_bytes();
    vec![
        0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xff, 0xc0, 0x00, 0x0b, 8, h1, h2,
        w1, w2, 1, 1, 0x11, 0,
    ]
}

/// An extended WebP's header (`VP8X`: the canvas's width and height - 1).
fn webp(width: u32, height: u32) -> Vec<u8> {
    let mut out = b"RIFF\x1e\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00".to_vec();
    out.extend(&(width - 1).to_le_bytes()[..3]);
    out.extend(&(height - 1).to_le_bytes()[..3]);
    out
}

fn gif() -> Vec<u8> {
    b"GIF89a\x02\x00\x02\x00\x00\x00\x00;".to_vec()
}

/// A file part typed as its bytes say (PNG when they say nothing).
fn image(name: &str, bytes: &[u8]) -> FormPart {
    let mime = ImageFormat::sniff(bytes).map_or("image/png", ImageFormat::mime);
    FormPart::file(name, "image", Some(mime), bytes.to_vec())
}

fn decoded(v: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap()).unwrap()
}

#[test]
fn formats_are_told_by_their_bytes_and_sized_from_their_headers() {
    assert_eq!(ImageFormat::sniff(&fake_png("p", 0)), Some(ImageFormat::Png));
    assert_eq!(image_dimensions(&fake_png("p", 0)), Some((2, 2)));
    assert_eq!(image_dimensions(&png(4, 2)), Some((4, 2)));
    assert_eq!(ImageFormat::sniff(&jpeg(640, 480)), Some(ImageFormat::Jpeg));
    assert_eq!(image_dimensions(&jpeg(640, 480)), Some((640, 480)));
    assert_eq!(ImageFormat::sniff(&webp(300, 200)), Some(ImageFormat::Webp));
    assert_eq!(image_dimensions(&webp(300, 200)), Some((300, 200)));
    assert_eq!(ImageFormat::sniff(&gif()), Some(ImageFormat::Gif));
    assert_eq!(image_dimensions(&gif()), Some((2, 2)));
    assert_eq!(ImageFormat::sniff(b"hello"), None);
    assert_eq!(ImageFormat::sniff(b""), None);
    // Cut short: a format, but no size.
    assert_eq!(image_dimensions(&PNG_SIGNATURE), None);
    assert_eq!(image_dimensions(&[0xff, 0xd8, 0xff]), None);
    assert_eq!(ImageFormat::Webp.mime(), "image/webp");
}

#[test]
fn edit_images_follow_the_prompt_and_the_input_images() {
    let (a, b) = (fake_png("a", 0), fake_png("b", 0));
    let one = fake_edit_png("p", &[&a], 0);
    assert_eq!(one, fake_edit_png("p", &[&a], 0), "deterministic");
    assert_eq!(one, fake_png(&edit_key("p", &[&a]), 0));
    assert_ne!(one, fake_png("p", 0), "not the generation's");
    assert_ne!(one, fake_edit_png("p", &[&b], 0), "the image counts");
    assert_ne!(one, fake_edit_png("q", &[&a], 0), "the prompt counts");
    assert_ne!(one, fake_edit_png("p", &[&a], 1), "the index counts");
    assert_ne!(fake_edit_png("p", &[&a, &b], 0), fake_edit_png("p", &[&b, &a], 0), "order");
    // Where one image ends counts too.
    assert_ne!(edit_key("p", &[b"ab", b"c"]), edit_key("p", &[b"a", b"bc"]));
    assert_eq!(
        decoded(&Value::from(fake_edit_png_b64("p", &[&a], 2))),
        fake_edit_png("p", &[&a], 2)
    );
    assert_eq!(fake_edit_image_url("p", &[&a], 1), fake_image_url(&edit_key("p", &[&a]), 1));
    assert!(edit_key("p", &[]).starts_with("p|"));
}

// ---------------------------------------------------------------------------
// Checks

fn dall_e_2(extra: &[FormPart]) -> Vec<FormPart> {
    let mut form = vec![FormPart::text("prompt", "add a hat"), image("image", &fake_png("s", 0))];
    form.extend_from_slice(extra);
    form
}

fn gpt_image(images: &[Vec<u8>], extra: &[FormPart]) -> Vec<FormPart> {
    let mut form = vec![FormPart::text("model", "gpt-image-1"), FormPart::text("prompt", "p")];
    form.extend(images.iter().map(|bytes| image("image[]", bytes)));
    form.extend_from_slice(extra);
    form
}

fn refused(form: &[FormPart]) -> String {
    check_edit(false, "", form).expect_err(&format!("{form:?} should be refused"))
}

#[test]
fn edits_take_each_models_fields() {
    let mask = FormPart::file("mask", "mask.png", Some("image/png"), fake_png("m", 0));
    let all = [
        mask.clone(),
        FormPart::text("model", "dall-e-2"),
        FormPart::text("n", "10"),
        FormPart::text("size", "256x256"),
        FormPart::text("quality", "standard"),
        FormPart::text("response_format", "b64_json"),
        FormPart::text("user", "u"),
    ];
    assert_eq!(check_edit(false, "", &dall_e_2(&all)), Ok(()));
    let images = [jpeg(8, 8), fake_png("x", 0), webp(8, 8)];
    let all = [
        FormPart::text("n", "2"),
        FormPart::text("size", "1536x1024"),
        FormPart::text("quality", "high"),
        FormPart::text("background", "transparent"),
        FormPart::text("output_format", "webp"),
        FormPart::text("output_compression", "80"),
        FormPart::text("input_fidelity", "high"),
        FormPart::text("user", "u"),
    ];
    assert_eq!(check_edit(false, "", &gpt_image(&images, &all)), Ok(()));
    // A mask of the first image's size; a file typed by its name alone.
    let untyped = FormPart::file("image", "photo.JPG", None, jpeg(2, 2));
    let form =
        [FormPart::text("model", "gpt-image-1-mini"), FormPart::text("prompt", "p"), untyped];
    assert_eq!(check_edit(false, "", &[&form[..], &[mask]].concat()), Ok(()));
    let sixteen = vec![fake_png("x", 0); GPT_IMAGE_MAX_IMAGES];
    assert_eq!(check_edit(false, "", &gpt_image(&sixteen, &[])), Ok(()));
}

#[test]
fn edits_refuse_what_the_api_refuses() {
    let dall_e_3 = dall_e_2(&[FormPart::text("model", "dall-e-3")]);
    assert_eq!(
        refused(&dall_e_3),
        "Invalid value: 'dall-e-3'. Supported values are: 'dall-e-2' and 'gpt-image-1'."
    );
    let no_prompt: Vec<FormPart> =
        dall_e_2(&[]).into_iter().filter(|part| part.name != "prompt").collect();
    assert_eq!(refused(&no_prompt), "Missing required parameter: 'prompt'.");
    let empty = [FormPart::text("prompt", ""), image("image", &fake_png("s", 0))];
    assert!(refused(&empty).contains("string too short"));
    let long = [FormPart::text("prompt", &"x".repeat(1001)), image("image", &fake_png("s", 0))];
    assert!(refused(&long).contains("maximum length 1000"));
    assert_eq!(refused(&[FormPart::text("prompt", "p")]), "Missing required parameter: 'image'.");
    let err = refused(&dall_e_2(&[FormPart::text("seed", "1")]));
    assert_eq!(err, "Unrecognized request argument supplied: seed");
    for field in ["stream", "partial_images", "style", "moderation"] {
        let err = refused(&gpt_image(&[fake_png("x", 0)], &[FormPart::text(field, "1")]));
        assert_eq!(err, format!("Unrecognized request argument supplied: {field}"));
    }
    let err = refused(&gpt_image(&[fake_png("x", 0)], &[FormPart::text("response_format", "url")]));
    assert_eq!(err, "Unknown parameter: 'response_format'.");
    for (field, value) in [("input_fidelity", "high"), ("background", "opaque")] {
        let err = refused(&dall_e_2(&[FormPart::text(field, value)]));
        assert_eq!(err, format!("Unknown parameter: '{field}'."));
    }
    for (field, value) in [
        ("n", "11"),
        ("n", "0"),
        ("n", "two"),
        ("n", "1.5"),
        ("size", "1792x1024"),
        ("quality", "hd"),
        ("response_format", "png"),
    ] {
        refused(&dall_e_2(&[FormPart::text(field, value)]));
    }
    let err = refused(&dall_e_2(&[FormPart::text("n", "two")]));
    assert!(err.contains("expected an integer, but got a string"), "{err}");
    let err = refused(&gpt_image(&[fake_png("x", 0)], &[FormPart::text("input_fidelity", "max")]));
    assert!(err.starts_with("Invalid value: 'max'."), "{err}");
    // Twice, or a file where text is due (and the other way round).
    let err = refused(&dall_e_2(&[FormPart::text("prompt", "again")]));
    assert!(err.starts_with("Duplicate parameter: 'prompt'."), "{err}");
    let err = refused(&dall_e_2(&[image("image", &fake_png("t", 0))]));
    assert!(err.starts_with("Duplicate parameter: 'image'."), "{err}");
    let err = refused(&[FormPart::text("prompt", "p"), FormPart::text("image", "cat.png")]);
    assert_eq!(err, "Invalid type for 'image': expected a file, but got a string instead.");
    let err = refused(&dall_e_2(&[FormPart::file("user", "u.txt", None, "u")]));
    assert_eq!(err, "Invalid type for 'user': expected a string, but got a file instead.");
    let both = gpt_image(&[fake_png("x", 0)], &[image("image", &fake_png("y", 0))]);
    assert!(refused(&both).contains("not both"));
}

#[test]
fn edits_check_each_image_and_the_mask() {
    // dall-e-2: one square PNG below 4 MiB.
    let err = refused(&[FormPart::text("prompt", "p"), image("image", &png(4, 2))]);
    assert!(err.contains("square images only, but got an image of 4x2"), "{err}");
    let jpg = FormPart::file("image", "a.jpg", Some("image/jpeg"), jpeg(2, 2));
    let err = refused(&[FormPart::text("prompt", "p"), jpg]);
    assert_eq!(
        err,
        "Invalid file 'image': unsupported mimetype ('image/jpeg'). Supported file formats are \
         'image/png'."
    );
    let mut big = png(8, 8);
    big.resize(DALL_E_2_MAX_IMAGE_BYTES, 0);
    let err = refused(&[FormPart::text("prompt", "p"), image("image", &big)]);
    assert!(err.contains("less than 4 MB"), "{err}");
    big.truncate(DALL_E_2_MAX_IMAGE_BYTES - 1);
    assert_eq!(
        check_edit(false, "", &[FormPart::text("prompt", "p"), image("image", &big)]),
        Ok(())
    );
    let two =
        [FormPart::text("prompt", "p"), image("image[]", &png(2, 2)), image("image[]", &png(2, 2))];
    assert!(refused(&two).contains("dall-e-2 edits exactly one image"));

    // gpt-image: PNG, JPEG or WebP, by type and by bytes; at most 16.
    let gif_part = FormPart::file("image[]", "a.gif", Some("image/gif"), gif());
    let err = refused(&gpt_image(&[fake_png("x", 0)], &[gif_part]));
    assert_eq!(
        err,
        "Invalid file 'image[1]': unsupported mimetype ('image/gif'). Supported file formats are \
         'image/jpeg', 'image/png', and 'image/webp'."
    );
    let disguised = FormPart::file("image[]", "a.png", Some("image/png"), gif());
    let err = refused(&gpt_image(&[], &[disguised]));
    assert_eq!(err, "Invalid image file or mode for image 1, please check your image file.");
    let octet = FormPart::file("image[]", "a.png", Some("application/octet-stream"), png(2, 2));
    assert!(
        refused(&gpt_image(&[], &[octet]))
            .contains("unsupported mimetype ('application/octet-stream')")
    );
    let unnamed = FormPart::file("image[]", "blob", None, png(2, 2));
    assert!(refused(&gpt_image(&[], &[unnamed])).contains("failed to determine mimetype"));
    let err = refused(&gpt_image(&vec![fake_png("x", 0); GPT_IMAGE_MAX_IMAGES + 1], &[]));
    assert!(err.contains("maximum length 16, but got an array with length 17"), "{err}");

    // The mask: a PNG of the image's size.
    let mask = |bytes: Vec<u8>, ct| FormPart::file("mask", "mask", Some(ct), bytes);
    let err = refused(&dall_e_2(&[mask(png(4, 4), "image/png")]));
    assert!(err.contains("same dimensions as the image (2x2), but it is 4x4"), "{err}");
    let err = refused(&dall_e_2(&[mask(jpeg(2, 2), "image/jpeg")]));
    assert!(err.starts_with("Invalid file 'mask': unsupported mimetype ('image/jpeg')"), "{err}");
    let err = refused(&dall_e_2(&[mask(gif(), "image/png")]));
    assert_eq!(err, "Invalid image file or mode for mask, please check your image file.");
    let first = gpt_image(&[webp(300, 200), png(2, 2)], &[mask(png(300, 200), "image/png")]);
    assert_eq!(check_edit(false, "", &first), Ok(()));
}

#[test]
fn deployments_name_the_model() {
    let form = [FormPart::text("prompt", "p"), image("image", &png(2, 2))];
    assert_eq!(check_edit(true, "prod-gpt-image-1", &form), Ok(()));
    assert_eq!(check_edit(true, "my-dall-e-2", &form), Ok(()));
    let err = check_edit(true, "prod-dall-e-3", &form).unwrap_err();
    assert!(err.contains("images edit operation does not work"), "{err}");
    let err = check_edit(true, "images", &form).unwrap_err();
    assert!(err.contains("name it after its model"), "{err}");
    // The form's model changes nothing on a deployment route.
    let named = [&form[..], &[FormPart::text("model", "dall-e-3")]].concat();
    assert_eq!(check_edit(true, "prod-gpt-image-1", &named), Ok(()));
}

#[test]
fn edits_answer_as_generations_do() {
    let source = fake_png("s", 0);
    let a = edit_answer_at(false, "", &dall_e_2(&[FormPart::text("n", "2")]), 7);
    assert_eq!(a["created"], 7);
    assert_eq!(
        a["data"],
        json!([{"url": fake_edit_image_url("add a hat", &[&source], 0)},
            {"url": fake_edit_image_url("add a hat", &[&source], 1)}])
    );
    assert!(a.get("usage").is_none());

    let images = [jpeg(2, 2), webp(2, 2)];
    let form = gpt_image(&images, &[FormPart::text("quality", "low")]);
    let a = edit_answer_at(false, "", &form, 7);
    let inputs: Vec<&[u8]> = images.iter().map(Vec::as_slice).collect();
    assert_eq!(decoded(&a["data"][0]["b64_json"]), fake_edit_png("p", &inputs, 0));
    // "p": one text token; two images; one low square out.
    assert_eq!(
        a["usage"],
        json!({"input_tokens": 389, "output_tokens": 272, "total_tokens": 661,
            "input_tokens_details": {"text_tokens": 1, "image_tokens": 388}})
    );
    assert_eq!(a["quality"], "low");
    assert_eq!(a["size"], "1024x1024");
    let err = edit_answer_at(false, "", &[FormPart::text("prompt", "p")], 7);
    assert_eq!(err, json!({"error": "Missing required parameter: 'image'."}));
}

// ---------------------------------------------------------------------------
// Over HTTP

const BOUNDARY: &str = "----switchyard-edit-test";

/// A multipart/form-data body of `parts`, written by hand.
fn multipart(parts: &[FormPart]) -> Vec<u8> {
    let mut out = Vec::new();
    for part in parts {
        let mut head =
            format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{}\"", part.name);
        if let Some(file) = &part.file_name {
            head.push_str(&format!("; filename=\"{file}\""));
        }
        head.push_str("\r\n");
        if let Some(ct) = &part.content_type {
            head.push_str(&format!("Content-Type: {ct}\r\n"));
        }
        head.push_str("\r\n");
        out.extend(head.as_bytes());
        out.extend(&part.data[..]);
        out.extend(b"\r\n");
    }
    out.extend(format!("--{BOUNDARY}--\r\n").as_bytes());
    out
}

fn form_type() -> String {
    format!("multipart/form-data; boundary={BOUNDARY}")
}

/// POSTs `body` as `content_type` with `headers`: the status and the JSON.
async fn post(
    url: &str,
    content_type: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (u16, Value) {
    // reqwest is built with `rustls-no-provider`: install one, even for http.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut request =
        reqwest::Client::new().post(url).header("content-type", content_type).body(body);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response =
        tokio::time::timeout(Duration::from_secs(10), request.send()).await.unwrap().unwrap();
    let status = response.status().as_u16();
    let bytes = response.bytes().await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn post_form(url: &str, parts: &[FormPart]) -> (u16, Value) {
    post(url, &form_type(), &[], multipart(parts)).await
}

#[tokio::test]
async fn dall_e_2_edits_over_http_answer_urls_or_b64() {
    let fake = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    let url = format!("{}/v1/images/edits", fake.base_url());
    let source = fake_png("source", 0);
    let mask = FormPart::file("mask", "mask.png", Some("image/png"), fake_png("mask", 0));
    let form = vec![
        FormPart::text("model", "dall-e-2"),
        FormPart::text("prompt", "add a hat"),
        FormPart::file("image", "source.png", Some("image/png"), source.clone()),
        mask,
        FormPart::text("n", "2"),
        FormPart::text("size", "512x512"),
    ];
    let (status, answer) = post_form(&url, &form).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["data"][1]["url"], fake_edit_image_url("add a hat", &[&source], 1));
    assert_eq!(answer["data"].as_array().unwrap().len(), 2);

    // b64 when asked, on the route without `/v1`, after a scripted delay.
    fake.push(Reply::auto().first_byte_delay(Duration::from_millis(150)));
    let short = format!("{}/images/edits", fake.base_url());
    let b64 = [&form[..], &[FormPart::text("response_format", "b64_json")]].concat();
    let start = Instant::now();
    let (status, answer) = post_form(&short, &b64).await;
    assert_eq!(status, 200, "{answer}");
    assert!(start.elapsed() >= Duration::from_millis(150));
    assert_eq!(decoded(&answer["data"][0]["b64_json"]), fake_edit_png("add a hat", &[&source], 0));
    assert_ne!(answer["data"][0]["b64_json"], fake_png_b64("add a hat", 0));

    // The form as received: the raw body, readable with `read_form`.
    let seen = fake.received();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].path, "/v1/images/edits");
    assert_eq!(seen[0].body, Value::Null, "no JSON");
    let read = read_form(seen[0].header("content-type"), seen[0].raw.clone()).await.unwrap();
    assert_eq!(read, form);
}

#[tokio::test]
async fn gpt_image_edits_over_http_answer_b64_and_usage() {
    let fake = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    let url = format!("{}/v1/images/edits", fake.base_url());
    let (first, second) = (fake_png("first", 0), jpeg(2, 2));
    let form = [
        FormPart::text("model", "gpt-image-1"),
        FormPart::text("prompt", "combine them"),
        FormPart::file("image[]", "a.png", Some("image/png"), first.clone()),
        FormPart::file("image[]", "b.jpg", Some("image/jpeg"), second.clone()),
        FormPart::text("input_fidelity", "high"),
    ];
    let (status, answer) = post_form(&url, &form).await;
    assert_eq!(status, 200, "{answer}");
    let data = answer["data"].as_array().unwrap();
    assert_eq!(data.len(), 1);
    assert_eq!(decoded(&data[0]["b64_json"]), fake_edit_png("combine them", &[&first, &second], 0));
    assert!(data[0].get("url").is_none());
    // 12 characters: 3 text tokens; two images in; one medium square out.
    assert_eq!(
        answer["usage"],
        json!({"input_tokens": 391, "output_tokens": 1056, "total_tokens": 1447,
            "input_tokens_details": {"text_tokens": 3, "image_tokens": 388}})
    );
    assert_eq!(answer["output_format"], "png");
}

#[tokio::test]
async fn edit_refusals_are_recorded_and_leave_the_script() {
    let fake = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    let url = format!("{}/v1/images/edits", fake.base_url());
    fake.push(Reply::status(500));
    let png_image = |bytes: Vec<u8>| FormPart::file("image", "i.png", Some("image/png"), bytes);
    let prompt = FormPart::text("prompt", "p");
    let gpt = FormPart::text("model", "gpt-image-1");
    let seventeen: Vec<FormPart> = (0..17)
        .map(|i| FormPart::file("image[]", "i.png", Some("image/png"), fake_png("x", i)))
        .collect();
    let cases: Vec<(Vec<FormPart>, &str)> = vec![
        (
            vec![FormPart::text("model", "dall-e-3"), prompt.clone(), png_image(png(2, 2))],
            "Invalid value: 'dall-e-3'. Supported values are: 'dall-e-2' and 'gpt-image-1'.",
        ),
        (vec![png_image(png(2, 2))], "Missing required parameter: 'prompt'."),
        (
            vec![prompt.clone(), FormPart::file("image", "i.gif", Some("image/gif"), gif())],
            "Invalid file 'image': unsupported mimetype ('image/gif'). Supported file formats \
             are 'image/png'.",
        ),
        (
            vec![
                gpt.clone(),
                prompt.clone(),
                FormPart::file("image", "i.gif", Some("image/gif"), gif()),
            ],
            "Invalid file 'image': unsupported mimetype ('image/gif'). Supported file formats \
             are 'image/jpeg', 'image/png', and 'image/webp'.",
        ),
        (
            vec![prompt.clone(), png_image(png(4, 2))],
            "Invalid input image: dall-e-2 edits square images only, but got an image of 4x2.",
        ),
        (
            vec![
                gpt.clone(),
                prompt.clone(),
                png_image(png(2, 2)),
                FormPart::text("response_format", "b64_json"),
            ],
            "Unknown parameter: 'response_format'.",
        ),
        (
            [vec![gpt, prompt], seventeen].concat(),
            "Invalid 'image': array too long. Expected an array with maximum length 16, but got \
             an array with length 17 instead.",
        ),
    ];
    for (form, message) in &cases {
        let (status, err) = post_form(&url, form).await;
        assert_eq!(status, 400, "{err}");
        assert_eq!(err["error"]["message"], *message);
        assert_eq!(err["error"]["type"], "invalid_request_error");
    }
    // Not multipart: a JSON body, and a form without its boundary.
    let json_body = json!({"prompt": "p", "image": "x"}).to_string().into_bytes();
    let (status, err) = post(&url, "application/json", &[], json_body).await;
    assert_eq!(status, 400);
    assert_eq!(
        err["error"]["message"],
        "Invalid Content-Type header (application/json), expected multipart/form-data. (HINT: \
         If you're using curl, you can pass -H 'Content-Type: multipart/form-data')"
    );
    let (status, err) = post(&url, "multipart/form-data", &[], b"--x--".to_vec()).await;
    assert_eq!(status, 400);
    assert!(err["error"]["message"].as_str().unwrap().contains("no boundary"), "{err}");

    assert_eq!(fake.script_len(), 1, "refusals take nothing from the script");
    assert_eq!(fake.received().len(), cases.len() + 2, "and are recorded");
    let good = [FormPart::text("prompt", "p"), png_image(png(2, 2))];
    assert_eq!(post_form(&url, &good).await.0, 500, "the scripted reply");
    assert_eq!(post_form(&url, &good).await.0, 200);
    // Edits are POSTs.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let got = reqwest::Client::new().get(&url).send().await.unwrap();
    assert_eq!(got.status(), 405);
}

#[tokio::test]
async fn azure_edits_on_deployments_and_the_v1_api() {
    let fake = FakeUpstream::start_azure().await.unwrap();
    let key = [("api-key", azure::API_KEY)];
    let deployment = |name: &str| {
        format!(
            "{}/openai/deployments/{name}/images/edits?api-version=2025-04-01-preview",
            fake.base_url()
        )
    };
    let source = jpeg(2, 2);
    let form = [
        FormPart::text("prompt", "make it night"),
        FormPart::file("image", "day.jpg", Some("image/jpeg"), source.clone()),
        FormPart::text("quality", "low"),
    ];
    let (status, answer) =
        post(&deployment("prod-gpt-image-1"), &form_type(), &key, multipart(&form)).await;
    assert_eq!(status, 200, "{answer}");
    let item = &answer["data"][0];
    assert_eq!(decoded(&item["b64_json"]), fake_edit_png("make it night", &[&source], 0));
    assert_eq!(item["content_filter_results"]["violence"]["filtered"], false);
    assert_eq!(answer["usage"]["input_tokens_details"]["image_tokens"], 194);

    // dall-e-3 has no edits; a deployment route wants its api-version; a key.
    let (status, err) =
        post(&deployment("prod-dall-e-3"), &form_type(), &key, multipart(&form)).await;
    assert_eq!(status, 400);
    assert!(err["error"]["message"].as_str().unwrap().contains("does not work"), "{err}");
    let bare = format!("{}/openai/deployments/prod-gpt-image-1/images/edits", fake.base_url());
    assert_eq!(post(&bare, &form_type(), &key, multipart(&form)).await.0, 400);
    assert_eq!(
        post(&deployment("prod-gpt-image-1"), &form_type(), &[], multipart(&form)).await.0,
        401
    );

    // The v1 API: the model in the form, required.
    let v1 = format!("{}/openai/v1/images/edits", fake.base_url());
    let (status, err) = post(&v1, &form_type(), &key, multipart(&form)).await;
    assert_eq!(status, 400);
    assert_eq!(err["error"]["message"], "model: a deployment name is required");
    let named = [&form[..], &[FormPart::text("model", "gpt-image-1")]].concat();
    let (status, answer) = post(&v1, &form_type(), &key, multipart(&named)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        decoded(&answer["data"][0]["b64_json"]),
        fake_edit_png("make it night", &[&source], 0)
    );
    assert_eq!(fake.received().len(), 6);
}

#[test]
fn edit_routes_are_told_apart() {
    assert!(crate::images::is_openai_edit_route("/v1/images/edits"));
    assert!(crate::images::is_openai_edit_route("/images/edits"));
    assert!(!crate::images::is_openai_edit_route("/v1/images/generations"));
    assert!(crate::images::is_edit_path("/openai/deployments/d/images/edits"));
}
