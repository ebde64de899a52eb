#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use base64::Engine as _;
use serde_json::{Value, json};

use super::*;

const OPENAI: Api = Api::OpenAi { deployment: false };
const TITAN_V2: &str = "amazon.titan-embed-text-v2:0";
const TITAN_V1: &str = "amazon.titan-embed-text-v1";
const COHERE: &str = "cohere.embed-english-v3";

fn refused(api: Api, model: &str, body: &Value) -> String {
    check(api, model, body).expect_err(&format!("{body} should be refused"))
}

fn passes(api: Api, model: &str, body: &Value) {
    assert_eq!(check(api, model, body), Ok(()), "{body}");
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()
}

#[test]
fn fake_vectors_are_deterministic_exact_and_prefixes() {
    let a = fake_vector("hello", 16);
    assert_eq!(a, fake_vector("hello", 16));
    assert_ne!(a, fake_vector("hello!", 16));
    assert_eq!(&a[..8], &fake_vector("hello", 8)[..]);
    for v in &a {
        assert!((-1.0..=1.0).contains(v));
        assert_eq!((v * 1024.0).fract(), 0.0, "{v} is not a multiple of 1/1024");
    }
    // Through JSON and back, exactly.
    let back: Vec<f32> = serde_json::from_str(&json!(a).to_string()).unwrap();
    assert_eq!(back, a);
    assert!(fake_vector("", 0).is_empty());
}

#[test]
fn token_counts_round_up_and_never_reach_zero() {
    assert_eq!(token_count(""), 1);
    assert_eq!(token_count("abc"), 1);
    assert_eq!(token_count("abcd"), 1);
    assert_eq!(token_count("abcde"), 2);
    assert_eq!(token_count("ééééé"), 2);
}

// ---------------------------------------------------------------------------
// OpenAI

#[test]
fn openai_takes_each_input_form() {
    for input in [json!("a"), json!(["a", "b"]), json!([1, 2, 3]), json!([[1, 2], [3]])] {
        passes(OPENAI, "", &json!({"model": "text-embedding-3-small", "input": input}));
    }
    let all = json!({"model": "text-embedding-3-small", "input": "a", "encoding_format": "base64",
        "dimensions": 4, "user": "u-1"});
    passes(OPENAI, "", &all);
}

#[test]
fn openai_refuses_bad_inputs_and_caps_the_batch() {
    let body = |input: Value| json!({"model": "text-embedding-3-small", "input": input});
    for input in [
        json!(""),
        json!([]),
        json!(["a", ""]),
        json!([["a"]]),
        json!(["a", [1]]),
        json!([[]]),
        json!(7),
        json!({"text": "a"}),
    ] {
        refused(OPENAI, "", &body(input));
    }
    let at_cap: Vec<String> = (0..OPENAI_MAX_INPUTS).map(|i| format!("t{i}")).collect();
    passes(OPENAI, "", &body(json!(at_cap)));
    let over: Vec<String> = (0..=OPENAI_MAX_INPUTS).map(|i| format!("t{i}")).collect();
    let err = refused(OPENAI, "", &body(json!(over)));
    assert!(err.contains("maximum length 2048") && err.contains("2049"), "{err}");
    let long = "x".repeat(4 * 8192 + 1);
    assert!(refused(OPENAI, "", &body(json!(long))).contains("maximum context length"));
    let err = refused(OPENAI, "", &json!({"model": "text-embedding-3-small"}));
    assert!(err.contains("'input'"), "{err}");
    let err = refused(OPENAI, "", &json!({"input": "a"}));
    assert!(err.contains("model"), "{err}");
    refused(OPENAI, "", &Value::Null);
}

#[test]
fn openai_refuses_unknown_fields_formats_and_dimensions_it_does_not_take() {
    let err = refused(OPENAI, "", &json!({"model": "m", "input": "a", "input_type": "query"}));
    assert_eq!(err, "Unrecognized request argument supplied: input_type");
    let err = refused(OPENAI, "", &json!({"model": "m", "input": "a", "encoding_format": "int8"}));
    assert!(err.contains("encoding_format"), "{err}");
    let ada = json!({"model": "text-embedding-ada-002", "input": "a", "dimensions": 4});
    assert_eq!(refused(OPENAI, "", &ada), "This model does not support specifying dimensions.");
    let zero = json!({"model": "text-embedding-3-small", "input": "a", "dimensions": 0});
    refused(OPENAI, "", &zero);
    let big = json!({"model": "text-embedding-3-small", "input": "a", "dimensions": 1537});
    refused(OPENAI, "", &big);
    let large = json!({"model": "text-embedding-3-large", "input": "a", "dimensions": 3072});
    passes(OPENAI, "", &large);
    refused(OPENAI, "", &json!({"model": "m", "input": "a", "user": 5}));
}

#[test]
fn an_azure_deployment_names_the_model() {
    let azure = Api::OpenAi { deployment: true };
    passes(azure, "my-ada", &json!({"input": "a"}));
    refused(azure, "my-ada", &json!({"input": "a", "dimensions": 4}));
    passes(azure, "text-embedding-3-small", &json!({"input": "a", "dimensions": 4}));
    let answer = answer(azure, "my-ada", &json!({"input": "a"}));
    assert_eq!(answer["model"], "my-ada");
}

#[test]
fn openai_answers_in_its_shape_and_reverses_batches_of_three_or_more() {
    let body = json!({"model": "text-embedding-3-small", "input": ["a", "bb", "ccc"]});
    let a = answer(OPENAI, "text-embedding-3-small", &body);
    assert_eq!(a["object"], "list");
    assert_eq!(a["model"], "text-embedding-3-small");
    let data = a["data"].as_array().unwrap();
    let indexes: Vec<u64> = data.iter().map(|d| d["index"].as_u64().unwrap()).collect();
    assert_eq!(indexes, [2, 1, 0]);
    for d in data {
        assert_eq!(d["object"], "embedding");
        let text = ["a", "bb", "ccc"][usize::try_from(d["index"].as_u64().unwrap()).unwrap()];
        assert_eq!(floats(&d["embedding"]), fake_vector(text, DEFAULT_DIMS));
    }
    assert_eq!(a["usage"], json!({"prompt_tokens": 3, "total_tokens": 3}));

    // Two inputs, or one: in order.
    let two = answer(OPENAI, "m", &json!({"model": "m", "input": ["a", "b"]}));
    assert_eq!(two["data"][0]["index"], 0);
    let one = answer(OPENAI, "m", &json!({"model": "m", "input": "hello"}));
    assert_eq!(one["data"].as_array().unwrap().len(), 1);
}

#[test]
fn openai_token_ids_embed_their_json_and_count_their_ids() {
    let ids = answer(OPENAI, "m", &json!({"model": "m", "input": [5, 6, 7]}));
    assert_eq!(ids["data"].as_array().unwrap().len(), 1);
    assert_eq!(floats(&ids["data"][0]["embedding"]), fake_vector("[5,6,7]", DEFAULT_DIMS));
    assert_eq!(ids["usage"]["prompt_tokens"], 3);
    let nested = answer(OPENAI, "m", &json!({"model": "m", "input": [[1], [2, 3]]}));
    assert_eq!(nested["usage"]["prompt_tokens"], 3);
}

#[test]
fn openai_base64_is_little_endian_f32_and_honours_dimensions() {
    let body = json!({"model": "text-embedding-3-large", "input": "hi", "encoding_format": "base64",
        "dimensions": 5});
    let a = answer(OPENAI, "text-embedding-3-large", &body);
    let text = a["data"][0]["embedding"].as_str().unwrap();
    let bytes = base64::engine::general_purpose::STANDARD.decode(text).unwrap();
    let back: Vec<f32> =
        bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    assert_eq!(back, fake_vector("hi", 5));
    assert_eq!(text.len() % 4, 0, "padded");
}

// ---------------------------------------------------------------------------
// Gemini

fn content(text: &str) -> Value {
    json!({"parts": [{"text": text}]})
}

fn batch_request(model: &str, text: &str) -> Value {
    json!({"model": format!("models/{model}"), "content": content(text)})
}

#[test]
fn gemini_embeds_one_content_and_checks_its_fields() {
    let m = "gemini-embedding-001";
    let body = json!({"content": content("hi"), "taskType": "RETRIEVAL_DOCUMENT",
        "title": "T", "outputDimensionality": 4});
    passes(Api::GeminiEmbed, m, &body);
    let a = answer(Api::GeminiEmbed, m, &body);
    assert_eq!(a, json!({"embedding": {"values": fake_vector("hi", 4)}}));
    passes(
        Api::GeminiEmbed,
        m,
        &json!({"content": content("hi"), "task_type": "CLUSTERING",
        "model": "models/gemini-embedding-001", "output_dimensionality": 3}),
    );

    let err = refused(Api::GeminiEmbed, m, &json!({"content": content("hi"), "x": 1}));
    assert!(err.contains("Unknown name \"x\""), "{err}");
    refused(Api::GeminiEmbed, m, &json!({"content": content("hi"), "taskType": "SEARCH"}));
    let err = refused(
        Api::GeminiEmbed,
        m,
        &json!({"content": content("hi"), "taskType": "RETRIEVAL_QUERY", "title": "T"}),
    );
    assert!(err.contains("RETRIEVAL_DOCUMENT"), "{err}");
    refused(Api::GeminiEmbed, m, &json!({"content": content("hi"), "title": "T"}));
    refused(Api::GeminiEmbed, m, &json!({"content": content("hi"), "outputDimensionality": 0}));
    refused(Api::GeminiEmbed, m, &json!({"content": content("hi"), "outputDimensionality": 3073}));
    refused(Api::GeminiEmbed, m, &json!({"content": content("hi"), "model": "models/other"}));
    // No text: no parts, an empty text, only another kind of part, no content.
    for bad in [
        json!({"parts": []}),
        content(""),
        json!({"parts": [{"inlineData": {"mimeType": "image/png", "data": "AA=="}}]}),
        json!({"parts": [{"text": "a", "bogus": 1}]}),
    ] {
        refused(Api::GeminiEmbed, m, &json!({ "content": bad }));
    }
    refused(Api::GeminiEmbed, m, &json!({}));
}

#[test]
fn gemini_joins_text_parts() {
    let body = json!({"content": {"role": "user", "parts": [{"text": "a"}, {"text": "b"}]}});
    let a = answer(Api::GeminiEmbed, "m", &body);
    assert_eq!(a["embedding"]["values"], json!(fake_vector("a\nb", DEFAULT_DIMS)));
}

#[test]
fn gemini_batches_answer_in_order_and_are_capped() {
    let m = "gemini-embedding-001";
    let requests: Vec<Value> = ["a", "b", "c"].iter().map(|t| batch_request(m, t)).collect();
    let a = answer(Api::GeminiBatch, m, &json!({ "requests": requests }));
    let values: Vec<Value> =
        ["a", "b", "c"].iter().map(|t| json!({"values": fake_vector(t, DEFAULT_DIMS)})).collect();
    assert_eq!(a, json!({ "embeddings": values }));

    let full: Vec<Value> =
        (0..GEMINI_MAX_BATCH).map(|i| batch_request(m, &i.to_string())).collect();
    passes(Api::GeminiBatch, m, &json!({ "requests": full }));
    let over: Vec<Value> =
        (0..=GEMINI_MAX_BATCH).map(|i| batch_request(m, &i.to_string())).collect();
    assert_eq!(
        refused(Api::GeminiBatch, m, &json!({ "requests": over })),
        "* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch"
    );
    refused(Api::GeminiBatch, m, &json!({"requests": []}));
    refused(Api::GeminiBatch, m, &json!({}));
}

#[test]
fn gemini_batch_requests_name_the_urls_model() {
    let m = "gemini-embedding-001";
    let err = refused(Api::GeminiBatch, m, &json!({"requests": [batch_request("other", "a")]}));
    assert!(err.contains("must match the model in the URL"), "{err}");
    let err = refused(Api::GeminiBatch, m, &json!({"requests": [{"content": content("a")}]}));
    assert!(err.contains("requests[0].model"), "{err}");
    let mut extra = batch_request(m, "a");
    extra["bogus"] = json!(1);
    let err = refused(Api::GeminiBatch, m, &json!({ "requests": [extra] }));
    assert!(err.contains("Unknown name \"bogus\" at 'requests[0]'"), "{err}");
    let err = refused(Api::GeminiBatch, m, &json!({"requests": [batch_request(m, "a")], "x": 1}));
    assert!(err.contains("Unknown name \"x\""), "{err}");
}

// ---------------------------------------------------------------------------
// Vertex

fn instances(n: usize) -> Value {
    json!((0..n).map(|i| json!({"content": format!("text {i}")})).collect::<Vec<_>>())
}

#[test]
fn vertex_caps_instances_per_model() {
    let v = Api::VertexPredict;
    passes(v, "gemini-embedding-001", &json!({"instances": instances(1)}));
    let err = refused(v, "gemini-embedding-001", &json!({"instances": instances(2)}));
    assert!(err.contains("only supports 1 instance per request"), "{err}");
    passes(v, "text-embedding-005", &json!({ "instances": instances(VERTEX_MAX_INSTANCES) }));
    refused(v, "text-embedding-005", &json!({ "instances": instances(VERTEX_MAX_INSTANCES + 1) }));
    refused(v, "text-embedding-005", &json!({"instances": []}));
    refused(v, "text-embedding-005", &json!({}));
}

#[test]
fn vertex_refuses_unknown_fields_and_bad_values() {
    let v = Api::VertexPredict;
    let m = "text-embedding-005";
    let doc = json!({"content": "a", "task_type": "RETRIEVAL_DOCUMENT", "title": "t"});
    let ok = json!({"instances": [doc],
        "parameters": {"outputDimensionality": 4, "autoTruncate": false}});
    passes(v, m, &ok);
    for bad in [
        json!({"instances": instances(1), "extra": 1}),
        json!({"instances": [{"content": "a", "taskType": "RETRIEVAL_QUERY"}]}),
        json!({"instances": [{"content": "a", "task_type": "NOPE"}]}),
        json!({"instances": [{"content": "a", "title": "t"}]}),
        json!({"instances": [{"content": ""}]}),
        json!({"instances": [{"text": "a"}]}),
        json!({"instances": instances(1), "parameters": {"dimensions": 4}}),
        json!({"instances": instances(1), "parameters": {"outputDimensionality": 0}}),
        json!({"instances": instances(1), "parameters": {"autoTruncate": "yes"}}),
    ] {
        refused(v, m, &bad);
    }
}

#[test]
fn vertex_answers_predictions_with_statistics_and_truncates_when_allowed() {
    let v = Api::VertexPredict;
    let body = json!({"instances": [{"content": "a b"}, {"content": "cdefg"}],
        "parameters": {"outputDimensionality": 3}});
    let a = answer(v, "text-embedding-005", &body);
    let p = a["predictions"].as_array().unwrap();
    assert_eq!(p.len(), 2);
    assert_eq!(p[0]["embeddings"]["values"], json!(fake_vector("a b", 3)));
    assert_eq!(p[1]["embeddings"]["values"], json!(fake_vector("cdefg", 3)));
    assert_eq!(p[1]["embeddings"]["statistics"], json!({"token_count": 2, "truncated": false}));
    assert_eq!(a["metadata"]["billableCharacterCount"], 7);

    let long = "x".repeat(4 * 2048 + 4);
    let a = answer(v, "text-embedding-005", &json!({"instances": [{ "content": long }]}));
    assert_eq!(a["predictions"][0]["embeddings"]["statistics"]["truncated"], true);
    let strict = json!({"instances": [{ "content": long }], "parameters": {"autoTruncate": false}});
    refused(v, "text-embedding-005", &strict);
}

// ---------------------------------------------------------------------------
// Bedrock

#[test]
fn bedrock_routes_embedding_models_only() {
    assert_eq!(
        bedrock_route("/model/amazon.titan-embed-text-v2%3A0/invoke"),
        Some((TITAN_V2.to_owned(), Api::Titan))
    );
    assert_eq!(
        bedrock_route("/model/us.cohere.embed-english-v3/invoke"),
        Some(("us.cohere.embed-english-v3".to_owned(), Api::Cohere))
    );
    for other in [
        "/model/amazon.titan-embed-text-v2%3A0/invoke-with-response-stream",
        "/model/anthropic.claude-3-haiku/invoke",
        "/model/amazon.titan-embed-text-v2%3A0/converse",
    ] {
        assert_eq!(bedrock_route(other), None, "{other}");
    }
    let p = format!(
        "/v1/projects/{PROJECT}/locations/us-central1/publishers/google/models/t%3Apredict"
    );
    assert_eq!(vertex_route(&p).as_deref(), Some("t"));
    assert_eq!(vertex_route(&p.replace("predict", "rawPredict")), None);
    assert_eq!(vertex_route(&p.replace(PROJECT, "other")), None);
}

#[test]
fn titan_v2_checks_its_fields_and_sizes() {
    let t = Api::Titan;
    passes(
        t,
        TITAN_V2,
        &json!({"inputText": "a", "dimensions": 256, "normalize": true,
        "embeddingTypes": ["float", "binary"]}),
    );
    let err = refused(t, TITAN_V2, &json!({"inputText": "a", "texts": ["a"]}));
    assert!(err.contains("extraneous key [texts] is not permitted"), "{err}");
    refused(t, TITAN_V2, &json!({"inputText": "a", "dimensions": 300}));
    refused(t, TITAN_V2, &json!({"inputText": ""}));
    refused(t, TITAN_V2, &json!({}));
    refused(t, TITAN_V2, &json!({"inputText": "a", "embeddingTypes": ["int8"]}));
    refused(t, TITAN_V2, &json!({"inputText": "a", "normalize": "yes"}));
    refused(t, TITAN_V2, &json!({"inputText": "x".repeat(4 * 8192 + 1)}));
    // The region prefix does not change the rules.
    passes(t, &format!("us.{TITAN_V2}"), &json!({"inputText": "a", "dimensions": 512}));
}

#[test]
fn titan_v1_takes_only_its_text() {
    passes(Api::Titan, TITAN_V1, &json!({"inputText": "a"}));
    for field in ["dimensions", "normalize", "embeddingTypes", "x"] {
        let mut body = json!({"inputText": "a"});
        body[field] = json!(256);
        let err = refused(Api::Titan, TITAN_V1, &body);
        assert!(err.contains(&format!("[{field}]")), "{err}");
    }
}

#[test]
fn titan_answers_its_vector_and_token_count() {
    let a = answer(Api::Titan, TITAN_V2, &json!({"inputText": "hello"}));
    assert_eq!(
        a,
        json!({"embedding": fake_vector("hello", DEFAULT_DIMS), "inputTextTokenCount": 2})
    );
    let a = answer(
        Api::Titan,
        TITAN_V2,
        &json!({"inputText": "hello", "dimensions": 1024,
        "embeddingTypes": ["binary"]}),
    );
    assert_eq!(a["embedding"].as_array().unwrap().len(), 1024);
    let bits = a["embeddingsByType"]["binary"].as_array().unwrap();
    assert_eq!(bits.len(), 1024);
    assert!(bits.iter().all(|b| b == 0 || b == 1));
    let v1 = answer(Api::Titan, TITAN_V1, &json!({"inputText": "hello"}));
    assert_eq!(v1["embedding"], json!(fake_vector("hello", DEFAULT_DIMS)));
}

#[test]
fn cohere_checks_its_fields_and_caps_texts() {
    let c = Api::Cohere;
    let ok = json!({"texts": ["a"], "input_type": "search_query", "truncate": "END",
        "embedding_types": ["float", "int8"]});
    passes(c, COHERE, &ok);
    let err = refused(c, COHERE, &json!({"texts": ["a"]}));
    assert!(err.contains("required key [input_type]"), "{err}");
    let texts: Vec<String> = (0..COHERE_MAX_TEXTS).map(|i| i.to_string()).collect();
    passes(c, COHERE, &json!({"texts": texts, "input_type": "clustering"}));
    let texts: Vec<String> = (0..=COHERE_MAX_TEXTS).map(|i| i.to_string()).collect();
    let err = refused(c, COHERE, &json!({"texts": texts, "input_type": "clustering"}));
    assert!(err.contains("maxItems: 96"), "{err}");
    for bad in [
        json!({"texts": [], "input_type": "clustering"}),
        json!({"texts": ["a", ""], "input_type": "clustering"}),
        json!({"texts": ["x".repeat(2049)], "input_type": "clustering"}),
        json!({"texts": ["a"], "input_type": "search"}),
        json!({"texts": ["a"], "input_type": "clustering", "truncate": "MIDDLE"}),
        json!({"texts": ["a"], "input_type": "clustering", "embedding_types": ["f16"]}),
        json!({"texts": ["a"], "input_type": "clustering", "output_dimension": 256}),
        json!({"inputText": "a", "input_type": "clustering"}),
    ] {
        refused(c, COHERE, &bad);
    }
    let err =
        refused(c, COHERE, &json!({"texts": ["a"], "input_type": "clustering", "dimensions": 8}));
    assert!(err.contains("extraneous key [dimensions]"), "{err}");
    // Embed v4 takes an output size.
    let v4 = json!({"texts": ["a"], "input_type": "clustering", "output_dimension": 256});
    passes(c, "cohere.embed-v4:0", &v4);
    assert_eq!(answer(c, "cohere.embed-v4:0", &v4)["embeddings"][0].as_array().unwrap().len(), 256);
}

#[test]
fn cohere_answers_floats_in_order_or_by_type() {
    let body = json!({"texts": ["a", "b", "c"], "input_type": "search_document"});
    let a = answer(Api::Cohere, COHERE, &body);
    assert_eq!(a["response_type"], "embeddings_floats");
    assert_eq!(a["texts"], json!(["a", "b", "c"]));
    let want: Vec<Vec<f32>> =
        ["a", "b", "c"].iter().map(|t| fake_vector(t, DEFAULT_DIMS)).collect();
    assert_eq!(a["embeddings"], json!(want));
    let id = a["id"].as_str().unwrap();
    assert_eq!(id.len(), 36);
    assert_eq!(id.matches('-').count(), 4);
    assert_eq!(answer(Api::Cohere, COHERE, &body)["id"], a["id"], "deterministic");

    let typed = json!({"texts": ["a"], "input_type": "search_document",
        "embedding_types": ["float", "int8", "ubinary"]});
    let a = answer(Api::Cohere, COHERE, &typed);
    assert_eq!(a["response_type"], "embeddings_by_type");
    assert_eq!(a["embeddings"]["float"], json!([fake_vector("a", DEFAULT_DIMS)]));
    assert_eq!(a["embeddings"]["int8"][0].as_array().unwrap().len(), DEFAULT_DIMS);
    assert_eq!(a["embeddings"]["ubinary"][0].as_array().unwrap().len(), DEFAULT_DIMS / 8);
}
