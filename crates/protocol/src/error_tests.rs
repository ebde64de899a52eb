use serde_json::json;

use super::*;

/// Each format carries the code as the same plain string it always did.
#[test]
fn every_format_writes_the_code_as_its_wire_string() {
    let mut body = ErrorBody::new(ErrorCode::ModelNotFound, "no such model");
    body.param = Some("model".into());
    assert_eq!(
        body.to_openai(),
        json!({"error": {"message": "no such model", "type": "invalid_request_error",
            "param": "model", "code": "model_not_found"}})
    );
    assert_eq!(
        body.to_anthropic(),
        json!({"type": "error", "error": {"type": "not_found_error",
            "message": "no such model", "code": "model_not_found"}})
    );
    assert_eq!(
        body.to_google(),
        json!({"error": {"code": 404, "message": "no such model", "status": "NOT_FOUND",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "model_not_found", "domain": "switchyard"}]}})
    );
}

#[test]
fn a_new_body_takes_the_codes_usual_status_and_kind() {
    let body = ErrorBody::new(ErrorCode::UpstreamOverloaded, "busy");
    assert_eq!((body.status, body.kind), (503, ErrorKind::Overloaded));
    assert_eq!(body.param, None);
}
