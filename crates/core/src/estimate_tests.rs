use super::*;
use serde_json::json;
use switchyard_protocol::{
    Image, ImageSource, Message, Role, TextBlock, Tool, ToolCall, ToolResult,
};

fn user(parts: Vec<Part>) -> Message {
    Message { role: Role::User, content: parts }
}

fn image() -> Part {
    Part::Image(Image {
        source: ImageSource::Url { url: "https://example.com/a.png".into() },
        detail: None,
        cache_control: None,
    })
}

fn tool(name: &str, description: &str, parameters: serde_json::Value) -> Tool {
    Tool {
        name: name.into(),
        description: Some(description.into()),
        parameters,
        strict: None,
        cache_control: None,
        freeform: None,
        namespace: None,
    }
}

#[test]
fn counts_system_and_message_text_at_four_bytes_a_token() {
    let req = Request {
        system: vec![TextBlock::new("12345678")],
        messages: vec![Message::text(Role::User, "abcd")],
        ..Request::default()
    };
    assert_eq!(input_tokens(&req), 3);
    assert_eq!(text_input_tokens(&req), 3);
    assert_eq!(output_tokens(0), 0);
    assert_eq!(output_tokens(5), 2);
}

#[test]
fn counts_tools_by_name_description_and_schema() {
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
    let bare = Request { messages: vec![Message::text(Role::User, "abcd")], ..Request::default() };
    let with_tool =
        Request { tools: vec![tool("weather", "Today's weather", schema.clone())], ..bare.clone() };
    let schema_bytes = schema.to_string().len();
    let expected = ("abcd".len() + "weather".len() + "Today's weather".len() + schema_bytes)
        .div_ceil(4) as u64;
    assert_eq!(input_tokens(&with_tool), expected);
    assert!(input_tokens(&with_tool) > input_tokens(&bare));
    // The schema itself counts, not only the name and description.
    let bigger = Request {
        tools: vec![tool(
            "weather",
            "Today's weather",
            json!({"type": "object", "properties": {"city": {"type": "string", "description": "a city name, in full"}}}),
        )],
        ..bare
    };
    assert!(input_tokens(&bigger) > input_tokens(&with_tool));
}

#[test]
fn images_and_documents_count_a_fixed_estimate_text_documents_their_text() {
    let text = Request { messages: vec![Message::text(Role::User, "abcd")], ..Request::default() };
    let with_image = Request {
        messages: vec![user(vec![Part::Text(TextBlock::new("abcd")), image(), image()])],
        ..Request::default()
    };
    assert_eq!(input_tokens(&with_image), 1 + 2 * IMAGE_TOKENS);
    // Checks that must not refuse what fits leave the fixed estimates out.
    assert_eq!(text_input_tokens(&with_image), input_tokens(&text));

    let pdf = Document::new(DocumentSource::Base64 {
        media_type: "application/pdf".into(),
        data: "JVBERi0xLjQK".into(),
    });
    let notes = Document::new(DocumentSource::Base64 {
        media_type: "text/plain".into(),
        // 24 bytes of base64: 18 bytes of text.
        data: "aGVsbG8gaGVsbG8gaGVsbG8g".into(),
    });
    let req = Request {
        messages: vec![user(vec![Part::Document(pdf), Part::Document(notes)])],
        ..Request::default()
    };
    assert_eq!(input_tokens(&req), DOCUMENT_TOKENS + 18u64.div_ceil(4));
}

#[test]
fn tool_calls_and_results_count_their_text_and_images() {
    let call = Part::ToolCall(ToolCall {
        id: "call_1".into(),
        name: "weather".into(),
        arguments: r#"{"city":"Paris"}"#.into(),
        signature: None,
    });
    let result = Part::ToolResult(ToolResult {
        call_id: "call_1".into(),
        name: None,
        content: vec![Part::Text(TextBlock::new("sunny")), image()],
        is_error: false,
    });
    let req = Request {
        messages: vec![Message { role: Role::Assistant, content: vec![call] }, user(vec![result])],
        ..Request::default()
    };
    let text = "weather".len() + r#"{"city":"Paris"}"#.len() + "sunny".len();
    assert_eq!(input_tokens(&req), text.div_ceil(4) as u64 + IMAGE_TOKENS);
}

#[test]
fn a_structured_output_schema_counts() {
    let bare = Request { messages: vec![Message::text(Role::User, "abcd")], ..Request::default() };
    let schema = Request {
        response_format: Some(ResponseFormat::JsonSchema {
            name: "answer".into(),
            schema: json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            strict: None,
            description: None,
        }),
        ..bare.clone()
    };
    assert!(input_tokens(&schema) > input_tokens(&bare));
}
