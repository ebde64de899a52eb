//! Parsing and encoding requests.

use serde_json::json;

use crate::{
    Document, DocumentSource, Effort, Image, ImageSource, Message, Part, ProtocolError, Request,
    ResponseFormat, Role, TextBlock, ToolChoice, ToolResult,
};

use super::*;

#[test]
fn parses_system_developer_tools_and_tool_results() {
    let body = br#"{
      "model": "gpt-5",
      "messages": [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type":"text","text":"Weather in Paris?"},
           {"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"low"}}]},
        {"role": "assistant", "content": null, "tool_calls": [
           {"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},
           {"id":"call_2","type":"function","function":{"name":"time","arguments":"{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_2", "content": "noon"},
        {"role": "system", "content": "mid-conversation note"}
      ],
      "tools": [{"type":"function","function":{"name":"weather","parameters":{"type":"object"}}}],
      "tool_choice": {"type":"function","function":{"name":"weather"}},
      "max_completion_tokens": 100, "stop": "END", "reasoning_effort": "high",
      "response_format": {"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object"},"strict":true}},
      "stream": true, "user": "u1"
    }"#;
    let req = parse_request(body).unwrap();
    assert_eq!(req.system, vec![TextBlock::new("Be brief.")]);
    assert_eq!(req.messages.len(), 4);
    assert!(matches!(&req.messages[1].content[1], Part::ToolCall(c) if c.name == "time"));
    // the two tool messages merge into one canonical user turn
    assert_eq!(req.messages[2].role, Role::User);
    assert_eq!(req.messages[2].content.len(), 2);
    assert_eq!(req.messages[3].role, Role::System);
    assert!(
        matches!(&req.messages[0].content[1], Part::Image(Image { source: ImageSource::Base64 { media_type, .. }, .. }) if media_type == "image/png")
    );
    assert_eq!(req.tool_choice, Some(ToolChoice::Tool { name: "weather".into() }));
    assert_eq!(req.max_tokens, Some(100));
    assert_eq!(req.stop, vec!["END"]);
    assert_eq!(req.reasoning.as_ref().map(|r| r.effort()), Some(Effort::High));
    assert!(
        matches!(req.response_format, Some(ResponseFormat::JsonSchema { ref name, .. }) if name == "w")
    );
    assert!(req.stream);
    assert_eq!(req.user.as_deref(), Some("u1"));
}

#[test]
fn rejects_unknown_roles_naming_the_field() {
    let err = parse_request(br#"{"model":"m","messages":[{"role":"wizard","content":"x"}]}"#)
        .unwrap_err();
    assert!(err.to_string().contains("messages[0].role"), "{err}");
}

#[test]
fn encodes_tool_results_as_tool_messages_before_user_text() {
    let req = Request {
        model: "m".into(),
        messages: vec![Message {
            role: Role::User,
            content: vec![
                Part::Text(TextBlock::new("and now?")),
                Part::ToolResult(ToolResult {
                    call_id: "c1".into(),
                    name: None,
                    content: vec![Part::Text(TextBlock::new("boom"))],
                    is_error: true,
                }),
            ],
        }],
        stream: true,
        ..Request::default()
    };
    let v = encode_request(&req).unwrap();
    assert_eq!(v["messages"][0]["role"], "tool");
    assert_eq!(v["messages"][0]["content"], "[tool error] boom");
    assert_eq!(v["messages"][1]["content"], "and now?");
    assert_eq!(v["stream_options"]["include_usage"], true);
}

#[test]
fn file_parts_are_documents_and_file_ids_are_kept_by_name() {
    let body = br#"{"model":"m","messages":[{"role":"user","content":[
        {"type":"text","text":"read these"},
        {"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0=","filename":"a.pdf"}},
        {"type":"file","file":{"file_data":"SGVsbG8=","filename":"notes.txt"}},
        {"type":"file","file":{"file_id":"file-123"}},
        {"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}}
    ]}]}"#;
    let req = parse_request(body).unwrap();
    let content = &req.messages[0].content;
    let pdf =
        DocumentSource::Base64 { media_type: "application/pdf".into(), data: "JVBERi0=".into() };
    assert_eq!(
        content[1],
        Part::Document(Document { filename: Some("a.pdf".into()), ..Document::new(pdf) })
    );
    // Bare base64: the name's extension tells the type.
    assert!(matches!(&content[2], Part::Document(d) if d.media_type() == Some("text/plain")));
    assert_eq!(
        content[3],
        Part::Untranslatable {
            what: "messages[0].content[3]: a file by file_id (file-123)".into()
        }
    );
    assert_eq!(
        content[4],
        Part::Untranslatable {
            what: "messages[0].content[4]: a `input_audio` content part".into()
        }
    );
    // Refused by name on the way out, never dropped.
    let err = encode_request(&req).unwrap_err();
    assert!(err.to_string().contains("file_id (file-123)"), "{err}");
}

#[test]
fn documents_go_inline_as_file_parts_and_never_by_url() {
    let doc = |source| Part::Document(Document { filename: None, ..Document::new(source) });
    let req = |part: Part| Request {
        model: "m".into(),
        messages: vec![Message {
            role: Role::User,
            content: vec![Part::Text(TextBlock::new("summarize")), part],
        }],
        ..Request::default()
    };
    let inline = doc(DocumentSource::Base64 {
        media_type: "application/pdf".into(),
        data: "JVBERi0=".into(),
    });
    let v = encode_request(&req(inline)).unwrap();
    assert_eq!(
        v["messages"][0]["content"][1],
        json!({"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "document.pdf"}})
    );
    let url = doc(DocumentSource::Url { url: "https://x.test/a.pdf".into(), media_type: None });
    match encode_request(&req(url)) {
        Err(ProtocolError::Unsupported(m)) => {
            assert!(m.contains("https://x.test/a.pdf") && m.contains("OpenAI Chat"), "{m}")
        }
        other => panic!("want a refusal, got {other:?}"),
    }
    // A document inside a tool result goes to the user message after the tool's.
    let result = Part::ToolResult(ToolResult {
        call_id: "c1".into(),
        name: None,
        content: vec![
            Part::Text(TextBlock::new("attached")),
            doc(DocumentSource::Base64 {
                media_type: "application/pdf".into(),
                data: "JVBERi0=".into(),
            }),
        ],
        is_error: false,
    });
    let v = encode_request(&req(result)).unwrap();
    assert_eq!(v["messages"][0]["role"], "tool");
    assert_eq!(v["messages"][1]["content"][0]["type"], "file");
}

#[test]
fn non_text_in_system_messages_and_assistant_turns_is_refused_by_name() {
    let body = br#"{"model":"m","messages":[{"role":"system","content":[
        {"type":"text","text":"rules"},{"type":"image_url","image_url":{"url":"https://x.test/i.png"}}]},
        {"role":"user","content":"hi"}]}"#;
    let err = parse_request(body).unwrap_err();
    assert!(
        err.to_string().contains("messages[0]: an image by URL (https://x.test/i.png)"),
        "{err}"
    );
    let req = Request {
        model: "m".into(),
        messages: vec![Message {
            role: Role::Assistant,
            content: vec![Part::Image(Image {
                source: ImageSource::Url { url: "https://x.test/i.png".into() },
                detail: None,
                cache_control: None,
            })],
        }],
        ..Request::default()
    };
    assert!(matches!(encode_request(&req), Err(ProtocolError::Unsupported(_))));
}
