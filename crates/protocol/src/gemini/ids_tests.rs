//! Call ids and thought signatures, from an answer into the next request.

use serde_json::json;

use crate::gemini::parse_response;
use crate::gemini::test_support::{
    GEMINI3_RESPONSE, SIGNED_CALL_ID, TRANSCRIPT, accumulate, call, decode_sse, msg, result,
};
use crate::model::{Message, Part, Request, Role};

use super::*;

#[test]
fn call_ids_carry_gemini_ids_and_fit_clients() {
    assert_eq!(
        split_call_id("gcall_ab-1__sig_CiQB-_x"),
        CallIdInfo { gemini_id: Some("ab-1"), signature: Some("CiQB+/x=".into()) }
    );
    assert_eq!(
        split_call_id("call_resp_0__sig_AbCd"),
        CallIdInfo { gemini_id: None, signature: Some("AbCd".into()) }
    );
    assert_eq!(split_call_id("toolu_01XYZ"), CallIdInfo { gemini_id: None, signature: None });
    assert_eq!(split_call_id("gcall_"), CallIdInfo { gemini_id: None, signature: None });
    assert_eq!(split_call_id("x__sig_"), CallIdInfo { gemini_id: None, signature: None });
    assert_eq!(split_call_id("x__sig_a.b"), CallIdInfo { gemini_id: None, signature: None });

    assert_eq!(call_base(Some("abc"), || "m".into()), "gcall_abc");
    assert_eq!(call_base(Some("a__b"), || "m".into()), "m");
    assert_eq!(call_base(Some("a.b"), || "m".into()), "m");
    assert_eq!(minted_call_id("a_b/c-d", 3), "call_abc-d_3");
    assert_eq!(minted_call_id("", 0), "call_gemini_0");

    // Ids the gateway gives clients fit every provider's limit.
    let long = "r".repeat(60);
    assert!(minted_call_id(&long, 12).len() <= MAX_CALL_ID);
    assert_eq!(call_base(Some(&"g".repeat(40)), || "m".into()), "m", "too long to carry");
}

#[test]
fn signature_from_a_stream_survives_into_the_next_request() {
    let answer = accumulate(&decode_sse(TRANSCRIPT.as_bytes()).unwrap());
    let signed = parse_response(GEMINI3_RESPONSE.as_bytes()).unwrap();
    let ids: Vec<String> = signed
        .content
        .iter()
        .filter_map(|p| match p {
            Part::ToolCall(c) => Some(c.id.clone()),
            _ => None,
        })
        .collect();
    let req = Request {
        messages: vec![
            Message::text(Role::User, "Weather in Paris?"),
            msg(Role::Assistant, answer.content.clone()),
            msg(Role::User, vec![result(SIGNED_CALL_ID, None, "18C", false)]),
            msg(Role::Assistant, signed.content.clone()),
            msg(
                Role::User,
                vec![result(&ids[0], None, "19C", false), result(&ids[1], None, "20C", false)],
            ),
            msg(
                Role::Assistant,
                vec![call("toolu_01Foreign", "get_weather", r#"{"city":"Nice"}"#)],
            ),
            msg(Role::User, vec![result("toolu_01Foreign", None, "21C", false)]),
        ],
        ..Request::default()
    };
    let body = crate::Wire::Gemini.encode_request(&req).unwrap();
    let contents = body["contents"].as_array().unwrap();
    // Streamed answer: thoughts dropped, the signature restored byte for byte.
    assert_eq!(
        contents[1]["parts"],
        json!([
            {"text": "Let me check."},
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "Cm8BcsjafP+x/yz="}
        ])
    );
    assert_eq!(
        contents[2]["parts"],
        json!([{"functionResponse": {"name": "get_weather", "response": {"content": "18C"}}}])
    );
    // Gemini 3 parallel calls: the id and signature of the first come back, the
    // second stays unsigned as Gemini sent it.
    assert_eq!(
        contents[3]["parts"][1],
        json!({"functionCall": {"id": "8f2kq1", "name": "get_weather", "args": {"city": "Paris"}},
               "thoughtSignature": "CiQBVKhc7+abc/defg=="})
    );
    assert_eq!(
        contents[3]["parts"][2],
        json!({"functionCall": {"name": "get_weather", "args": {"city": "Lyon"}}})
    );
    assert_eq!(
        contents[4]["parts"],
        json!([
            {"functionResponse": {"id": "8f2kq1", "name": "get_weather", "response": {"content": "19C"}}},
            {"functionResponse": {"name": "get_weather", "response": {"content": "20C"}}}
        ])
    );
    // A call from another provider gets the documented placeholder.
    assert_eq!(
        contents[5]["parts"],
        json!([{"functionCall": {"name": "get_weather", "args": {"city": "Nice"}}, "thoughtSignature": SKIP_SIGNATURE}])
    );
    // Every id a client sees is acceptable to Anthropic and OpenAI.
    for id in ids.iter().map(String::as_str).chain([SIGNED_CALL_ID]) {
        assert!(id.chars().all(is_id_char), "{id}");
    }
}
