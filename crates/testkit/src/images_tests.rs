#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use base64::Engine as _;
use serde_json::{Value, json};

use super::*;

const OPENAI: Api = Api::OpenAi { deployment: false };
const AZURE: Api = Api::OpenAi { deployment: true };
const IMAGEN: &str = "imagen-4.0-generate-001";

fn refused(api: Api, model: &str, body: &Value) -> String {
    check(api, model, body).expect_err(&format!("{body} should be refused"))
}

fn passes(api: Api, model: &str, body: &Value) {
    assert_eq!(check(api, model, body), Ok(()), "{body}");
}

fn b64(s: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(s.as_str().unwrap()).unwrap()
}

// ---------------------------------------------------------------------------
// The fake's PNGs

/// A PNG's chunks (type, data), each CRC checked with a CRC written here,
/// bit by bit from the polynomial, apart from the crate's.
fn chunks(png: &[u8]) -> Vec<([u8; 4], Vec<u8>)> {
    fn reference_crc(bytes: &[u8]) -> u32 {
        let mut crc = 0xffff_ffff_u32;
        for &byte in bytes {
            for bit in 0..8 {
                let top = (crc ^ u32::from(byte >> bit)) & 1;
                crc >>= 1;
                if top == 1 {
                    crc ^= 0xedb8_8320;
                }
            }
        }
        !crc
    }
    assert_eq!(png[..8], PNG_SIGNATURE, "signature");
    assert_eq!(PNG_SIGNATURE, *b"\x89PNG\r\n\x1a\n");
    let mut rest = &png[8..];
    let mut out = Vec::new();
    while !rest.is_empty() {
        let len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        let kind: [u8; 4] = rest[4..8].try_into().unwrap();
        let data = rest[8..8 + len].to_vec();
        let crc = u32::from_be_bytes(rest[8 + len..12 + len].try_into().unwrap());
        assert_eq!(crc, reference_crc(&rest[4..8 + len]), "{} CRC", String::from_utf8_lossy(&kind));
        out.push((kind, data));
        rest = &rest[12 + len..];
    }
    out
}

#[test]
fn crc32_and_adler32_match_their_check_values() {
    assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    assert_eq!(crc32(b""), 0);
    assert_eq!(crc32(b"IEND"), 0xae42_6082, "the CRC every PNG ends with");
    assert_eq!(adler32(b"Wikipedia"), 0x11e6_0398);
    assert_eq!(adler32(b""), 1);
}

#[test]
fn fake_png_is_a_valid_png_of_its_colour() {
    let png = fake_png("a red fox", 0);
    let chunks = chunks(&png);
    let kinds: Vec<&[u8]> = chunks.iter().map(|(k, _)| &k[..]).collect();
    assert_eq!(kinds, [&b"IHDR"[..], b"IDAT", b"IEND"]);
    let ihdr = &chunks[0].1;
    assert_eq!(ihdr.len(), 13);
    assert_eq!(u32::from_be_bytes(ihdr[0..4].try_into().unwrap()), PNG_SIDE);
    assert_eq!(u32::from_be_bytes(ihdr[4..8].try_into().unwrap()), PNG_SIDE);
    assert_eq!(ihdr[8..], [8, 2, 0, 0, 0], "8-bit RGB, deflate, no interlace");
    assert!(chunks[2].1.is_empty());
    // The zlib stream: its header, one stored final block, its Adler-32.
    let idat = &chunks[1].1;
    assert_eq!(((u16::from(idat[0]) << 8) | u16::from(idat[1])) % 31, 0, "zlib FCHECK");
    assert_eq!(idat[0] & 0x0f, 8, "deflate");
    assert_eq!(idat[2], 1, "BFINAL, stored");
    let len = usize::from(u16::from_le_bytes([idat[3], idat[4]]));
    assert_eq!(u16::from_le_bytes([idat[5], idat[6]]), !u16::from_le_bytes([idat[3], idat[4]]));
    let pixels = &idat[7..7 + len];
    assert_eq!(idat.len(), 7 + len + 4);
    assert_eq!(idat[7 + len..], adler32(pixels).to_be_bytes());
    let [r, g, b] = fake_colour("a red fox", 0);
    let row = [0, r, g, b, r, g, b];
    assert_eq!(pixels, [row, row].concat());
}

#[test]
fn fake_pngs_are_deterministic_and_tell_prompts_and_indexes_apart() {
    assert_eq!(fake_png("cat", 1), fake_png("cat", 1));
    let colours =
        [fake_colour("cat", 0), fake_colour("cat", 1), fake_colour("dog", 0), fake_colour("", 0)];
    for (i, a) in colours.iter().enumerate() {
        for b in &colours[i + 1..] {
            assert_ne!(a, b);
        }
    }
    assert_ne!(fake_png("cat", 0), fake_png("cat", 1));
    assert_ne!(fake_image_url("cat", 0), fake_image_url("cat", 1));
    assert!(fake_image_url("cat", 0).starts_with(URL_PREFIX));
    assert!(fake_image_url("cat", 0).ends_with(".png"));
    let encoded = fake_png_b64("cat", 2);
    assert_eq!(b64(&Value::from(encoded.clone())), fake_png("cat", 2));
    assert_eq!(encoded.len() % 4, 0, "padded");
}

// ---------------------------------------------------------------------------
// OpenAI

#[test]
fn openai_takes_each_models_fields() {
    let all_dalle3 = json!({"model": "dall-e-3", "prompt": "p", "n": 1, "size": "1792x1024",
        "quality": "hd", "response_format": "b64_json", "style": "natural", "user": "u"});
    passes(OPENAI, "", &all_dalle3);
    let all_dalle2 = json!({"model": "dall-e-2", "prompt": "p", "n": 10, "size": "256x256",
        "quality": "standard", "response_format": "url", "user": "u"});
    passes(OPENAI, "", &all_dalle2);
    let all_gpt_image = json!({"model": "gpt-image-1", "prompt": "p", "n": 3,
        "size": "1536x1024", "quality": "high", "user": "u", "output_format": "webp",
        "background": "transparent", "moderation": "low", "output_compression": 80});
    passes(OPENAI, "", &all_gpt_image);
    passes(OPENAI, "", &json!({"model": "gpt-image-1-mini", "prompt": "p", "size": "auto"}));
    // Optional fields may be null.
    passes(OPENAI, "", &json!({"model": "dall-e-3", "prompt": "p", "n": null, "size": null}));
}

#[test]
fn openai_refuses_unknown_fields_by_name() {
    let err = refused(OPENAI, "", &json!({"prompt": "p", "seed": 3}));
    assert_eq!(err, "Unrecognized request argument supplied: seed");
    let err = refused(OPENAI, "", &json!({"model": "gpt-image-1", "prompt": "p", "stream": true}));
    assert_eq!(err, "Unrecognized request argument supplied: stream");
    refused(OPENAI, "", &json!("a prompt"));
}

#[test]
fn openai_refuses_fields_a_model_does_not_take() {
    for format in [json!("b64_json"), json!("url"), Value::Null] {
        let body = json!({"model": "gpt-image-1", "prompt": "p", "response_format": format});
        assert_eq!(refused(OPENAI, "", &body), "Unknown parameter: 'response_format'.");
    }
    for model in ["dall-e-2", "gpt-image-1"] {
        let err = refused(OPENAI, "", &json!({"model": model, "prompt": "p", "style": "vivid"}));
        assert_eq!(err, "Unknown parameter: 'style'.");
    }
    for (field, value) in [
        ("output_format", json!("png")),
        ("background", json!("opaque")),
        ("moderation", json!("low")),
        ("output_compression", json!(50)),
    ] {
        for model in ["dall-e-2", "dall-e-3"] {
            let mut body = json!({"model": model, "prompt": "p"});
            body[field] = value.clone();
            assert_eq!(refused(OPENAI, "", &body), format!("Unknown parameter: '{field}'."));
        }
    }
}

#[test]
fn openai_caps_prompts_per_model() {
    for (model, cap) in [
        ("dall-e-2", DALL_E_2_MAX_PROMPT),
        ("dall-e-3", DALL_E_3_MAX_PROMPT),
        ("gpt-image-1", GPT_IMAGE_MAX_PROMPT),
    ] {
        passes(OPENAI, "", &json!({"model": model, "prompt": "é".repeat(cap)}));
        let err = refused(OPENAI, "", &json!({"model": model, "prompt": "x".repeat(cap + 1)}));
        assert!(err.contains(&format!("maximum length {cap}")), "{err}");
    }
    let err = refused(OPENAI, "", &json!({"model": "dall-e-3", "prompt": ""}));
    assert!(err.contains("string too short"), "{err}");
    let err = refused(OPENAI, "", &json!({"model": "dall-e-3"}));
    assert_eq!(err, "Missing required parameter: 'prompt'.");
    let err = refused(OPENAI, "", &json!({"model": "dall-e-3", "prompt": ["p"]}));
    assert!(err.contains("expected a string, but got an array"), "{err}");
}

#[test]
fn openai_checks_n_sizes_and_qualities_per_model() {
    let body = |model: &str, field: &str, value: Value| {
        let mut b = json!({"model": model, "prompt": "p"});
        b[field] = value;
        b
    };
    for n in [json!(0), json!(11), json!(-1), json!(1.5), json!("2")] {
        refused(OPENAI, "", &body("dall-e-2", "n", n));
    }
    let err = refused(OPENAI, "", &body("dall-e-2", "n", json!(11)));
    assert!(err.contains("Expected a value <= 10"), "{err}");
    let err = refused(OPENAI, "", &body("dall-e-3", "n", json!(2)));
    assert!(err.contains("dall-e-3 supports n=1 only"), "{err}");

    let sizes = [
        ("dall-e-2", ["256x256", "512x512", "1024x1024"].as_slice(), "1792x1024"),
        ("dall-e-3", &["1024x1024", "1792x1024", "1024x1792"], "512x512"),
        ("gpt-image-1", &["1024x1024", "1536x1024", "1024x1536", "auto"], "1792x1024"),
    ];
    for (model, good, bad) in sizes {
        for size in good {
            passes(OPENAI, "", &body(model, "size", json!(size)));
        }
        let err = refused(OPENAI, "", &body(model, "size", json!(bad)));
        assert!(
            err.starts_with(&format!("Invalid value: '{bad}'. Supported values are:")),
            "{err}"
        );
    }
    let qualities = [
        ("dall-e-2", ["standard"].as_slice(), "hd"),
        ("dall-e-3", &["standard", "hd"], "high"),
        ("gpt-image-1", &["low", "medium", "high", "auto"], "hd"),
    ];
    for (model, good, bad) in qualities {
        for quality in good {
            passes(OPENAI, "", &body(model, "quality", json!(quality)));
        }
        refused(OPENAI, "", &body(model, "quality", json!(bad)));
    }
    refused(OPENAI, "", &body("dall-e-3", "response_format", json!("png")));
    refused(OPENAI, "", &body("dall-e-3", "style", json!("natural ")));
    refused(OPENAI, "", &body("dall-e-3", "user", json!(7)));
    refused(OPENAI, "", &body("gpt-image-1", "output_format", json!("gif")));
    refused(OPENAI, "", &body("gpt-image-1", "background", json!("white")));
    refused(OPENAI, "", &body("gpt-image-1", "moderation", json!("high")));
    refused(OPENAI, "", &body("gpt-image-1", "output_compression", json!(101)));
}

#[test]
fn openai_checks_gpt_image_format_rules_and_models() {
    let base = |extra: Value| {
        let mut b = json!({"model": "gpt-image-1", "prompt": "p"});
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };
    let err = refused(OPENAI, "", &base(json!({"output_compression": 50})));
    assert!(err.contains("PNG"), "{err}");
    passes(OPENAI, "", &base(json!({"output_compression": 100})));
    passes(OPENAI, "", &base(json!({"output_format": "jpeg", "output_compression": 0})));
    let err =
        refused(OPENAI, "", &base(json!({"output_format": "jpeg", "background": "transparent"})));
    assert!(err.contains("JPEG"), "{err}");

    // No model is dall-e-2's rules; an unknown model is refused.
    passes(OPENAI, "", &json!({"prompt": "p", "size": "256x256"}));
    refused(OPENAI, "", &json!({"prompt": "p", "size": "1792x1024"}));
    refused(OPENAI, "", &json!({"prompt": "p", "model": "gpt-4o"}));
    refused(OPENAI, "", &json!({"prompt": "p", "model": 3}));
}

#[test]
fn azure_deployments_are_read_by_their_names() {
    passes(AZURE, "prod-dall-e-3", &json!({"prompt": "p", "style": "vivid"}));
    passes(AZURE, "my-gpt-image-1", &json!({"prompt": "p", "quality": "low"}));
    refused(AZURE, "my-gpt-image-1", &json!({"prompt": "p", "response_format": "url"}));
    // The body's model changes nothing on a deployment route.
    passes(AZURE, "dall-e-3", &json!({"prompt": "p", "model": "whatever"}));
    let err = refused(AZURE, "images", &json!({"prompt": "p"}));
    assert!(err.contains("name it after its model"), "{err}");
}

#[test]
fn openai_answers_urls_by_default_and_b64_when_asked() {
    let a = answer_at(OPENAI, "", &json!({"prompt": "a cat", "n": 3}), 1_700_000_000);
    assert_eq!(a["created"], 1_700_000_000);
    let data = a["data"].as_array().unwrap();
    assert_eq!(data.len(), 3);
    for (i, item) in data.iter().enumerate() {
        assert_eq!(item, &json!({"url": fake_image_url("a cat", i)}));
    }
    assert!(a.get("usage").is_none());

    let body = json!({"model": "dall-e-3", "prompt": "a cat", "response_format": "b64_json"});
    let a = answer(OPENAI, "", &body);
    assert!(a["created"].as_u64().unwrap() > 1_700_000_000);
    let item = &a["data"][0];
    assert_eq!(b64(&item["b64_json"]), fake_png("a cat", 0));
    assert_eq!(item["revised_prompt"], revised_prompt("a cat"));
    assert_ne!(item["revised_prompt"], "a cat");
    assert!(item.get("url").is_none());
}

#[test]
fn gpt_image_answers_b64_with_usage() {
    let prompt = "a lighthouse at dusk";
    let body = json!({"model": "gpt-image-1", "prompt": prompt, "n": 2});
    let a = answer_at(OPENAI, "", &body, 5);
    let data = a["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    for (i, item) in data.iter().enumerate() {
        assert_eq!(item.as_object().unwrap().len(), 1, "{item}");
        assert_eq!(b64(&item["b64_json"]), fake_png(prompt, i));
    }
    // 20 characters: 5 tokens in; two medium squares out.
    assert_eq!(
        a["usage"],
        json!({"input_tokens": 5, "output_tokens": 2112, "total_tokens": 2117,
            "input_tokens_details": {"text_tokens": 5, "image_tokens": 0}})
    );
    assert_eq!(a["size"], "1024x1024");
    assert_eq!(a["quality"], "medium");
    assert_eq!(a["background"], "opaque");
    assert_eq!(a["output_format"], "png");

    let body = json!({"model": "gpt-image-1", "prompt": "abcde", "size": "1024x1536",
        "quality": "high", "output_format": "webp", "background": "transparent"});
    let a = answer_at(OPENAI, "", &body, 5);
    assert_eq!(a["usage"]["input_tokens"], 2);
    assert_eq!(a["usage"]["output_tokens"], 6240);
    assert_eq!(a["output_format"], "webp");
    assert_eq!(a["background"], "transparent");
    assert_eq!(gpt_image_output_tokens("1536x1024", "low"), 408);
    assert_eq!(gpt_image_output_tokens("1024x1024", "low"), 272);
    assert_eq!(gpt_image_output_tokens("1024x1024", "high"), 4160);
    assert_eq!(gpt_image_output_tokens("1024x1536", "medium"), 1584);
}

#[test]
fn refused_bodies_answer_their_error() {
    let a = answer(OPENAI, "", &json!({"prompt": "p", "x": 1}));
    assert_eq!(a["error"], "Unrecognized request argument supplied: x");
}

#[test]
fn azure_dress_adds_filter_results_to_each_image() {
    let a = answer_at(AZURE, "dall-e-3", &json!({"prompt": "p"}), 1);
    let dressed = azure_dress(a);
    let item = &dressed["data"][0];
    assert_eq!(item["content_filter_results"]["violence"]["filtered"], false);
    assert_eq!(item["prompt_filter_results"]["jailbreak"]["detected"], false);
    assert_eq!(item["url"], fake_image_url("p", 0));
    assert_eq!(azure_dress(json!({"error": "x"})), json!({"error": "x"}));
}

// ---------------------------------------------------------------------------
// Imagen

fn imagen_body(parameters: Value) -> Value {
    json!({"instances": [{"prompt": "a robot"}], "parameters": parameters})
}

#[test]
fn imagen_takes_its_parameters() {
    for api in [Api::Imagen, Api::VertexImagen] {
        passes(api, IMAGEN, &json!({"instances": [{"prompt": "a robot"}]}));
        let all = imagen_body(json!({"sampleCount": 1, "aspectRatio": "16:9",
            "personGeneration": "allow_adult", "imageSize": "2K",
            "outputOptions": {"mimeType": "image/jpeg"}}));
        passes(api, IMAGEN, &all);
        passes(api, "imagen-4.0-ultra-generate-001", &imagen_body(json!({"imageSize": "1K"})));
        for ratio in ["1:1", "3:4", "4:3", "9:16", "16:9"] {
            passes(api, IMAGEN, &imagen_body(json!({ "aspectRatio": ratio })));
        }
        for person in ["dont_allow", "allow_adult", "allow_all"] {
            passes(api, IMAGEN, &imagen_body(json!({ "personGeneration": person })));
        }
    }
}

#[test]
fn imagen_wants_one_instance_with_a_prompt() {
    for api in [Api::Imagen, Api::VertexImagen] {
        let two = json!({"instances": [{"prompt": "a"}, {"prompt": "b"}]});
        assert!(refused(api, IMAGEN, &two).contains("exactly one instance"));
        refused(api, IMAGEN, &json!({"instances": []}));
        refused(api, IMAGEN, &json!({"parameters": {}}));
        refused(api, IMAGEN, &json!({"instances": {"prompt": "a"}}));
        refused(api, IMAGEN, &json!({"instances": ["a"]}));
        refused(api, IMAGEN, &json!({"instances": [{"prompt": ""}]}));
        refused(api, IMAGEN, &json!({"instances": [{}]}));
        refused(api, IMAGEN, &json!({"instances": [{"prompt": 7}]}));
        refused(api, IMAGEN, &json!([{"prompt": "a"}]));
    }
}

#[test]
fn imagen_refuses_unknown_fields_in_googles_words() {
    let api = Api::Imagen;
    let err = refused(api, IMAGEN, &json!({"instances": [{"prompt": "a"}], "model": "m"}));
    assert_eq!(err, "Invalid JSON payload received. Unknown name \"model\": Cannot find field.");
    let err = refused(api, IMAGEN, &json!({"instances": [{"prompt": "a", "image": {}}]}));
    assert!(err.contains("Unknown name \"image\" at 'instances[0]'"), "{err}");
    let err = refused(api, IMAGEN, &imagen_body(json!({"numberOfImages": 2})));
    assert!(err.contains("Unknown name \"numberOfImages\" at 'parameters'"), "{err}");
    let err = refused(api, IMAGEN, &imagen_body(json!({"outputOptions": {"quality": 1}})));
    assert!(err.contains("at 'parameters.outputOptions'"), "{err}");
}

#[test]
fn imagen_caps_sample_count_and_checks_values() {
    for api in [Api::Imagen, Api::VertexImagen] {
        for n in 1..=4 {
            passes(api, IMAGEN, &imagen_body(json!({ "sampleCount": n })));
        }
        for bad in [json!(0), json!(5), json!(-1), json!("2"), json!(1.5)] {
            refused(api, IMAGEN, &imagen_body(json!({ "sampleCount": bad })));
        }
        for (field, bad) in [
            ("aspectRatio", json!("2:1")),
            ("aspectRatio", json!(1)),
            ("personGeneration", json!("allow_everyone")),
            ("imageSize", json!("4K")),
            ("outputOptions", json!({"mimeType": "image/webp"})),
            ("outputOptions", json!("image/png")),
        ] {
            let mut params = json!({});
            params[field] = bad;
            refused(api, IMAGEN, &imagen_body(params));
        }
        // Only Imagen 4's standard and ultra models take an output size.
        for model in ["imagen-4.0-fast-generate-001", "imagen-3.0-generate-002"] {
            let err = refused(api, model, &imagen_body(json!({"imageSize": "1K"})));
            assert!(err.contains("output size"), "{err}");
        }
    }
}

#[test]
fn vertex_takes_its_own_parameters_and_gemini_does_not() {
    let extras = [
        json!({"sampleImageSize": "2K"}),
        json!({"addWatermark": false}),
        json!({"seed": 42, "addWatermark": false}),
        json!({"enhancePrompt": true}),
        json!({"outputOptions": {"mimeType": "image/jpeg", "compressionQuality": 75}}),
    ];
    for params in extras {
        passes(Api::VertexImagen, IMAGEN, &imagen_body(params.clone()));
        let err = refused(Api::Imagen, IMAGEN, &imagen_body(params));
        assert!(err.contains("Unknown name"), "{err}");
    }
    let v = Api::VertexImagen;
    refused(v, IMAGEN, &imagen_body(json!({"seed": -1})));
    refused(v, IMAGEN, &imagen_body(json!({"seed": 4_294_967_296_u64})));
    refused(v, IMAGEN, &imagen_body(json!({"addWatermark": "no"})));
    refused(v, IMAGEN, &imagen_body(json!({"outputOptions": {"compressionQuality": 101}})));
    refused(v, "imagen-3.0-fast-generate-001", &imagen_body(json!({"sampleImageSize": "1K"})));
    // A negative prompt: the older models only.
    let negative = imagen_body(json!({"negativePrompt": "no text"}));
    passes(v, "imagen-3.0-generate-001", &negative);
    let err = refused(v, "imagen-3.0-generate-002", &negative);
    assert!(err.contains("not supported"), "{err}");
    refused(v, IMAGEN, &negative);
    refused(Api::Imagen, "imagen-3.0-generate-001", &negative);
}

#[test]
fn imagen_answers_sample_count_pngs() {
    for api in [Api::Imagen, Api::VertexImagen] {
        let a = answer(api, IMAGEN, &json!({"instances": [{"prompt": "a robot"}]}));
        let predictions = a["predictions"].as_array().unwrap();
        assert_eq!(predictions.len(), 4, "the default");
        for (i, p) in predictions.iter().enumerate() {
            assert_eq!(p["mimeType"], "image/png");
            assert_eq!(p["bytesBase64Encoded"], fake_png_b64("a robot", i));
            assert_eq!(p.as_object().unwrap().len(), 2);
        }
        let a = answer(api, IMAGEN, &imagen_body(json!({"sampleCount": 2})));
        assert_eq!(a["predictions"].as_array().unwrap().len(), 2);
        assert_eq!(b64(&a["predictions"][1]["bytesBase64Encoded"]), fake_png("a robot", 1));
    }
}

#[test]
fn routes_tell_imagen_and_openai_paths() {
    assert!(is_imagen("imagen-3.0-generate-002"));
    assert!(!is_imagen("text-embedding-005"));
    assert!(!is_imagen("gemini-2.5-flash-image"));
    assert!(is_openai_route("/v1/images/generations"));
    assert!(is_openai_route("/images/generations"));
    assert!(!is_openai_route("/v1/images/edits"));
}
