use proptest::prelude::*;
use serde_json::json;

use super::*;

fn text(t: &str) -> EmbedInput {
    EmbedInput::Text(t.into())
}

#[test]
fn openai_input_comes_in_four_shapes_and_bad_ones_are_named() {
    let parse = |v: serde_json::Value| openai::parse_request(v.to_string().as_bytes());
    let one = parse(json!({"model": "e", "input": "hi"})).unwrap();
    assert_eq!(one.inputs, [text("hi")]);
    let many = parse(json!({"model": "e", "input": ["a", "b"], "dimensions": 256,
        "encoding_format": "base64", "user": "u-1"}))
    .unwrap();
    assert_eq!(many.inputs, [text("a"), text("b")]);
    assert_eq!(
        (many.dimensions, many.encoding, many.user.as_deref()),
        (Some(256), Encoding::Base64, Some("u-1"))
    );
    let ids = parse(json!({"model": "e", "input": [1, 2, 3]})).unwrap();
    assert_eq!(ids.inputs, [EmbedInput::Tokens(vec![1, 2, 3])]);
    let nested = parse(json!({"model": "e", "input": [[1], [2, 3]]})).unwrap();
    assert_eq!(nested.inputs.len(), 2);
    for (bad, says) in [
        (json!({"model": "e"}), "input: required"),
        (json!({"model": "e", "input": []}), "input: must not be empty"),
        (json!({"model": "e", "input": [{"text": "x"}]}), "input[0]: expected a string"),
        (json!({"model": "e", "input": [-1]}), "token ids are integers"),
        (json!({"model": "e", "input": "x", "dimensions": 0}), "dimensions: expected a positive"),
        (
            json!({"model": "e", "input": "x", "encoding_format": "int8"}),
            "encoding_format: \"int8\"",
        ),
    ] {
        let e = parse(bad.clone()).unwrap_err().to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn openai_answers_in_input_order_as_floats_or_base64() {
    let resp = EmbedResponse {
        model: "up".into(),
        vectors: vec![vec![0.5, -1.0], vec![2.0, 0.25]],
        input_tokens: Some(7),
    };
    let written = |encoding| -> serde_json::Value {
        serde_json::from_slice(&openai::write_response(&resp, "emb", encoding)).unwrap()
    };
    let floats = written(Encoding::Float);
    assert_eq!(floats["data"][1]["embedding"], json!([2.0, 0.25]));
    assert_eq!((&floats["model"], &floats["usage"]["prompt_tokens"]), (&json!("emb"), &json!(7)));
    let b64 = written(Encoding::Base64);
    let back = from_base64(b64["data"][0]["embedding"].as_str().unwrap()).unwrap();
    assert_eq!(back, [0.5, -1.0]);
    // An upstream may send the entries out of order, or as base64.
    let upstream = json!({"model": "up", "data": [
        {"index": 1, "embedding": [3.0]},
        {"index": 0, "embedding": to_base64(&[1.0])}],
        "usage": {"prompt_tokens": 4}});
    let parsed = openai::parse_response(upstream.to_string().as_bytes()).unwrap();
    assert_eq!(parsed.vectors, [vec![1.0], vec![3.0]]);
    assert_eq!(parsed.input_tokens, Some(4));
    let holey =
        json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 2, "embedding": [1.0]}]});
    assert!(openai::parse_response(holey.to_string().as_bytes()).is_err());
}

#[test]
fn an_openai_upstream_is_asked_for_floats() {
    let req = EmbedRequest {
        dimensions: Some(512),
        encoding: Encoding::Base64,
        ..EmbedRequest::default()
    };
    let body = openai::encode_request(
        &req,
        &[text("a"), EmbedInput::Tokens(vec![9])],
        "text-embedding-3-small",
    );
    assert_eq!(
        body,
        json!({"model": "text-embedding-3-small", "input": ["a", [9]],
        "encoding_format": "float", "dimensions": 512})
    );
}

#[test]
fn gemini_embeds_one_or_a_batch_asked_alike() {
    let one = gemini::parse_embed_content(
        json!({"content": {"parts": [{"text": "hello"}]}, "taskType": "RETRIEVAL_QUERY",
            "outputDimensionality": 768})
        .to_string()
        .as_bytes(),
        "gemini-embedding-001",
    )
    .unwrap();
    assert_eq!(
        (one.inputs.len(), one.purpose, one.dimensions),
        (1, Some(Purpose::Query), Some(768))
    );
    let batch = json!({"requests": [
        {"model": "models/e", "content": {"parts": [{"text": "a"}]}},
        {"model": "models/e", "content": {"parts": [{"text": "b"}]}}]});
    let req = gemini::parse_batch(batch.to_string().as_bytes(), "e").unwrap();
    assert_eq!(req.inputs, [text("a"), text("b")]);
    let mixed = json!({"requests": [
        {"content": {"parts": [{"text": "a"}]}, "taskType": "CLUSTERING"},
        {"content": {"parts": [{"text": "b"}]}}]});
    let e = gemini::parse_batch(mixed.to_string().as_bytes(), "e").unwrap_err().to_string();
    assert!(e.contains("requests[1].taskType or outputDimensionality differs"), "{e}");
    let image =
        json!({"content": {"parts": [{"inlineData": {"mimeType": "image/png", "data": ""}}]}});
    let e = gemini::parse_embed_content(image.to_string().as_bytes(), "e").unwrap_err().to_string();
    assert!(e.contains("content.parts[0]: only text is embedded"), "{e}");

    let body = gemini::encode_batch(&one, &[text("x"), text("y")], "gemini-embedding-001").unwrap();
    assert_eq!(
        body["requests"][1],
        json!({"model": "models/gemini-embedding-001",
        "content": {"parts": [{"text": "y"}]}, "taskType": "RETRIEVAL_QUERY", "outputDimensionality": 768})
    );
    let ids = gemini::encode_batch(&one, &[EmbedInput::Tokens(vec![1])], "e").unwrap_err();
    assert!(ids.to_string().contains("input as token ids: Gemini takes text only"));
    let answer = json!({"embeddings": [{"values": [0.1]}, {"values": [0.2]}]});
    let parsed = gemini::parse_batch_response(answer.to_string().as_bytes(), "e").unwrap();
    assert_eq!(parsed.vectors.len(), 2);
    // Each f32 in its shortest form, not widened to f64's digits.
    assert_eq!(
        gemini::write_batch(&parsed),
        br#"{"embeddings":[{"values":[0.1]},{"values":[0.2]}]}"#
    );
    assert_eq!(gemini::write_embed_content(&parsed), br#"{"embedding":{"values":[0.1]}}"#);
}

#[test]
fn bedrock_titan_takes_one_text_and_its_sizes_and_cohere_a_batch() {
    assert_eq!(
        bedrock::Family::of("amazon.titan-embed-text-v2:0"),
        Some(bedrock::Family::Titan { v2: true })
    );
    assert_eq!(
        bedrock::Family::of("us.amazon.titan-embed-text-v1"),
        Some(bedrock::Family::Titan { v2: false })
    );
    assert_eq!(bedrock::Family::of("cohere.embed-multilingual-v3"), Some(bedrock::Family::Cohere));
    assert_eq!(bedrock::Family::of("anthropic.claude-sonnet-4"), None);
    let titan = bedrock::Family::Titan { v2: true };
    let req = EmbedRequest { dimensions: Some(512), ..EmbedRequest::default() };
    assert_eq!(
        bedrock::encode_request(titan, &req, &[text("a")]).unwrap(),
        json!({"inputText": "a", "dimensions": 512})
    );
    let odd = EmbedRequest { dimensions: Some(300), ..EmbedRequest::default() };
    let e = bedrock::encode_request(titan, &odd, &[text("a")]).unwrap_err().to_string();
    assert!(e.contains("256, 512 or 1024, not 300"), "{e}");
    assert!(bedrock::encode_request(titan, &req, &[text("a"), text("b")]).is_err());
    let query = EmbedRequest { purpose: Some(Purpose::Query), ..EmbedRequest::default() };
    let cohere =
        bedrock::encode_request(bedrock::Family::Cohere, &query, &[text("a"), text("b")]).unwrap();
    assert_eq!(cohere, json!({"texts": ["a", "b"], "input_type": "search_query"}));
    let e = bedrock::encode_request(bedrock::Family::Cohere, &req, &[text("a")]).unwrap_err();
    assert!(e.to_string().contains("dimensions: Cohere Embed"));

    let answer = json!({"embedding": [0.5, 0.25], "inputTextTokenCount": 3});
    let t = bedrock::parse_response(titan, answer.to_string().as_bytes(), "m").unwrap();
    assert_eq!((t.vectors, t.input_tokens), (vec![vec![0.5, 0.25]], Some(3)));
    for answer in
        [json!({"embeddings": [[1.0], [2.0]]}), json!({"embeddings": {"float": [[1.0], [2.0]]}})]
    {
        let c =
            bedrock::parse_response(bedrock::Family::Cohere, answer.to_string().as_bytes(), "m")
                .unwrap();
        assert_eq!(c.vectors, [vec![1.0], vec![2.0]]);
    }
}

#[test]
fn a_short_answer_to_a_batch_is_malformed() {
    let two = EmbedResponse { vectors: vec![vec![1.0], vec![2.0]], ..EmbedResponse::default() };
    assert!(two.clone().expect(2).is_ok());
    assert!(two.expect(3).unwrap_err().to_string().contains("2 embedding(s) for 3 input(s)"));
}

proptest! {
    #[test]
    fn batches_cover_every_input_once_in_order(len in 0usize..500, cap in 0usize..200) {
        let ranges = batches(len, cap);
        let flat: Vec<usize> = ranges.iter().flat_map(Clone::clone).collect();
        prop_assert_eq!(flat, (0..len).collect::<Vec<_>>());
        prop_assert!(ranges.iter().all(|r| !r.is_empty() && r.len() <= cap.max(1)));
    }

    #[test]
    fn answers_split_into_batches_join_as_one(
        vectors in prop::collection::vec(prop::collection::vec(-1e6f32..1e6, 1..4), 0..40),
        cap in 1usize..10,
    ) {
        let parts: Vec<EmbedResponse> = batches(vectors.len(), cap)
            .into_iter()
            .map(|r| EmbedResponse { model: "m".into(), vectors: vectors[r.clone()].to_vec(), input_tokens: Some(r.len() as u64) })
            .collect();
        let joined = EmbedResponse::join(parts);
        prop_assert_eq!(joined.input_tokens, Some(vectors.len() as u64));
        prop_assert_eq!(joined.vectors, vectors);
    }

    #[test]
    fn base64_keeps_every_value(vector in prop::collection::vec(any::<f32>().prop_filter("not NaN", |f| !f.is_nan()), 0..64)) {
        prop_assert_eq!(from_base64(&to_base64(&vector)).unwrap(), vector);
    }
}

#[test]
fn each_wire_says_where_it_embeds_and_how_many_a_call() {
    use crate::Wire;
    let url = |w: Wire, endpoint: &str, model: &str| {
        w.spec().embeddings.map(|e| e.url(w.spec(), endpoint, model))
    };
    assert_eq!(
        url(Wire::OpenAiChat, "https://api.openai.com/v1", "text-embedding-3-small").as_deref(),
        Some("https://api.openai.com/v1/embeddings")
    );
    assert_eq!(
        url(Wire::Gemini, "https://g", "gemini-embedding-001").as_deref(),
        Some("https://g/v1beta/models/gemini-embedding-001:batchEmbedContents")
    );
    assert_eq!(
        url(Wire::VertexGemini, "https://v/v1/projects/p/locations/l", "text-embedding-005")
            .as_deref(),
        Some(
            "https://v/v1/projects/p/locations/l/publishers/google/models/text-embedding-005:predict"
        )
    );
    assert_eq!(
        url(Wire::Bedrock, "https://b", "amazon.titan-embed-text-v2:0").as_deref(),
        Some("https://b/model/amazon.titan-embed-text-v2%3A0/invoke"),
        "the model as the AWS SDKs write a path label"
    );
    assert_eq!(
        url(Wire::AzureOpenAi, "https://a", "emb").as_deref(),
        Some("https://a/openai/deployments/emb/embeddings?api-version=2024-10-21")
    );
    assert_eq!(url(Wire::Anthropic, "https://x", "m"), None, "Anthropic serves no embeddings");
    assert_eq!(url(Wire::BedrockAnthropic, "https://x", "m"), None);

    let cap = |w: Wire, model: &str| w.spec().embeddings.unwrap().max_inputs(model);
    assert_eq!(cap(Wire::OpenAiChat, "x").unwrap(), 2048);
    assert_eq!(cap(Wire::Gemini, "x").unwrap(), 100);
    assert_eq!(cap(Wire::VertexGemini, "gemini-embedding-001").unwrap(), 1);
    assert_eq!(cap(Wire::VertexGemini, "text-embedding-005").unwrap(), 250);
    assert_eq!(cap(Wire::Bedrock, "us.cohere.embed-english-v3").unwrap(), 96);
    assert_eq!(cap(Wire::Bedrock, "amazon.titan-embed-text-v2:0").unwrap(), 1);
    let e = cap(Wire::Bedrock, "amazon.nova-pro-v1:0").unwrap_err().to_string();
    assert!(e.contains("amazon.nova-pro-v1:0 on Bedrock"), "{e}");
}

#[test]
fn vertex_predicts_instances_and_counts_their_tokens() {
    let req = EmbedRequest {
        purpose: Some(Purpose::Query),
        dimensions: Some(256),
        ..EmbedRequest::default()
    };
    let body = vertex::encode_request(&req, &[text("a"), text("b")]).unwrap();
    assert_eq!(
        body,
        json!({
            "instances": [
                {"content": "a", "task_type": "RETRIEVAL_QUERY"},
                {"content": "b", "task_type": "RETRIEVAL_QUERY"}
            ],
            "parameters": {"outputDimensionality": 256}
        })
    );
    let tokens = EmbedRequest { inputs: vec![EmbedInput::Tokens(vec![1])], ..req };
    assert!(vertex::encode_request(&tokens, &tokens.inputs).is_err(), "text only");
    let answer = json!({"predictions": [
        {"embeddings": {"values": [0.5], "statistics": {"token_count": 2.0, "truncated": false}}},
        {"embeddings": {"values": [0.25], "statistics": {"token_count": 3, "truncated": false}}}
    ]});
    let r = vertex::parse_response(answer.to_string().as_bytes(), "m").unwrap();
    assert_eq!((r.vectors, r.input_tokens), (vec![vec![0.5], vec![0.25]], Some(5)));
    let uncounted = json!({"predictions": [{"embeddings": {"values": [1.0]}}]});
    let r = vertex::parse_response(uncounted.to_string().as_bytes(), "m").unwrap();
    assert_eq!(r.input_tokens, None, "unknown, never zero");
}
