use serde_json::{Value, json};

use super::*;

fn requests() -> Vec<Request> {
    vec![
        Request { custom_id: custom_id(0), body: json!({"model": "m", "messages": []}) },
        Request { custom_id: custom_id(7), body: json!({"model": "m", "messages": [1]}) },
    ]
}

#[test]
fn custom_ids_name_their_lines_and_fit_anthropics_pattern() {
    let id = custom_id(49_999);
    assert_eq!(id, "line-49999");
    assert!(id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    assert_eq!(line_of(&id), Some(49_999));
    assert_eq!(line_of("line-x"), None);
    assert_eq!(line_of("7"), None);
}

#[test]
fn openai_uploads_a_jsonl_form_then_creates_a_batch_of_it() {
    let api = BatchApi::OpenAi;
    let Some(up) = api.upload("https://api.example/v1", &requests()) else {
        panic!("OpenAI uploads a file")
    };
    assert_eq!((up.method, up.url.as_str()), ("POST", "https://api.example/v1/files"));
    let Some((form, ct)) = up.body else { panic!("a form") };
    let boundary = ct.strip_prefix("multipart/form-data; boundary=").unwrap_or_default();
    assert!(!boundary.is_empty());
    let form = String::from_utf8(form).unwrap_or_default();
    assert!(form.contains("name=\"purpose\"\r\n\r\nbatch\r\n"));
    assert!(form.ends_with(&format!("\r\n--{boundary}--\r\n")));
    let file = openai::jsonl(&requests());
    assert!(form.contains(&file));
    let lines: Vec<Value> =
        file.lines().map(|l| serde_json::from_str(l).unwrap_or(Value::Null)).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["custom_id"], "line-7");
    assert_eq!(lines[1]["method"], "POST");
    assert_eq!(lines[1]["url"], "/v1/chat/completions");
    assert_eq!(lines[1]["body"]["messages"], json!([1]));

    let id = api.parse_uploaded(br#"{"id":"file-abc","object":"file"}"#);
    assert_eq!(id.as_deref().ok(), Some("file-abc"));
    assert!(api.parse_uploaded(br#"{"id":"../x"}"#).is_err());

    let create = api.create("https://api.example/v1", &requests(), Some("file-abc"));
    assert_eq!(create.url, "https://api.example/v1/batches");
    let body: Value =
        serde_json::from_slice(&create.body.unwrap_or_default().0).unwrap_or_default();
    assert_eq!(
        body,
        json!({"input_file_id": "file-abc", "endpoint": "/v1/chat/completions", "completion_window": "24h"})
    );
}

#[test]
fn openai_progress_reads_each_status_and_its_files() {
    let api = BatchApi::OpenAi;
    let read = |v: Value| api.parse_progress(v.to_string().as_bytes());
    let p = read(json!({"id": "batch_1", "status": "in_progress"})).ok();
    assert_eq!(p.map(|p| p.state), Some(State::Running));
    let p = read(json!({"id": "batch_1", "status": "completed", "output_file_id": "file-o", "error_file_id": "file-e"}))
        .ok();
    let Some(p) = p else { panic!("completed reads") };
    assert_eq!(p.state, State::Ended(End::Completed));
    assert_eq!(p.files, ["file-o", "file-e"]);
    let calls = api.results("https://h/v1", &p);
    assert_eq!(calls[0].url, "https://h/v1/files/file-o/content");
    assert_eq!(calls[1].url, "https://h/v1/files/file-e/content");
    let failed = read(
        json!({"id": "batch_1", "status": "failed", "errors": {"data": [{"code": "x", "message": "mixed models", "line": 2}]}}),
    );
    assert_eq!(
        failed.ok().map(|p| p.state),
        Some(State::Ended(End::Failed("line 2: mixed models".into())))
    );
    assert!(read(json!({"id": "batch_1", "status": "nonsense"})).is_err());
    // A file id is put in a URL: a path is refused.
    assert!(
        read(json!({"id": "batch_1", "status": "completed", "output_file_id": "a/../b"})).is_err()
    );
    assert_eq!(api.cancel("https://h/v1", "batch_1").url, "https://h/v1/batches/batch_1/cancel");
}

#[test]
fn openai_result_lines_are_answers_or_unrun() {
    let file = concat!(
        r#"{"id":"r1","custom_id":"line-1","response":{"status_code":200,"request_id":"q","body":{"id":"c"}},"error":null}"#,
        "\n",
        r#"{"id":"r2","custom_id":"line-0","response":{"status_code":400,"body":{"error":{"message":"bad"}}},"error":null}"#,
        "\n",
        r#"{"id":"r3","custom_id":"line-2","response":null,"error":{"code":"batch_expired","message":"x"}}"#,
        "\n"
    );
    let answers = BatchApi::OpenAi.parse_results(file.as_bytes()).unwrap_or_default();
    assert_eq!(answers.len(), 3);
    assert_eq!(answers[0].custom_id, "line-1");
    assert_eq!(
        answers[0].outcome,
        Outcome::Answered { status: 200, body: br#"{"id":"c"}"#.to_vec() }
    );
    assert!(matches!(answers[1].outcome, Outcome::Answered { status: 400, .. }));
    assert_eq!(answers[2].outcome, Outcome::Unrun);
    assert!(BatchApi::OpenAi.parse_results(b"{\"no\":1}\n").is_err());
}

#[test]
fn anthropic_creates_with_its_requests_and_reads_results_by_type() {
    let api = BatchApi::Anthropic;
    assert!(api.upload("https://api.anthropic.com", &requests()).is_none());
    let create = api.create("https://api.anthropic.com", &requests(), None);
    assert_eq!(create.url, "https://api.anthropic.com/v1/messages/batches");
    let body: Value =
        serde_json::from_slice(&create.body.unwrap_or_default().0).unwrap_or_default();
    assert_eq!(
        body["requests"][1],
        json!({"custom_id": "line-7", "params": {"model": "m", "messages": [1]}})
    );

    let read = |v: Value| api.parse_progress(v.to_string().as_bytes());
    let ended = json!({"id": "msgbatch_1", "processing_status": "ended", "cancel_initiated_at": null,
        "request_counts": {"succeeded": 2, "errored": 0, "canceled": 0, "expired": 0, "processing": 0},
        "results_url": "https://elsewhere.example/steal"});
    let Ok(p) = read(ended) else { panic!("ended reads") };
    assert_eq!(p.state, State::Ended(End::Completed));
    // The results are read where the endpoint says, never at results_url.
    let calls = api.results("https://api.anthropic.com", &p);
    assert_eq!(calls[0].url, "https://api.anthropic.com/v1/messages/batches/msgbatch_1/results");
    let expired =
        json!({"id": "msgbatch_1", "processing_status": "ended", "request_counts": {"expired": 1}});
    assert_eq!(read(expired).ok().map(|p| p.state), Some(State::Ended(End::Expired)));
    let cancelled = json!({"id": "msgbatch_1", "processing_status": "ended", "cancel_initiated_at": "2026-01-01T00:00:00Z"});
    assert_eq!(read(cancelled).ok().map(|p| p.state), Some(State::Ended(End::Cancelled)));
    let canceling = json!({"id": "msgbatch_1", "processing_status": "canceling"});
    assert_eq!(read(canceling).ok().map(|p| p.state), Some(State::Cancelling));

    let results = concat!(
        r#"{"custom_id":"line-3","result":{"type":"succeeded","message":{"id":"msg_1","type":"message"}}}"#,
        "\n",
        r#"{"custom_id":"line-0","result":{"type":"errored","error":{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}}}"#,
        "\n",
        r#"{"custom_id":"line-1","result":{"type":"canceled"}}"#,
        "\n",
        r#"{"custom_id":"line-2","result":{"type":"expired"}}"#,
    );
    let answers = api.parse_results(results.as_bytes()).unwrap_or_default();
    assert_eq!(answers.len(), 4);
    assert_eq!(
        answers[0].outcome,
        Outcome::Answered { status: 200, body: br#"{"id":"msg_1","type":"message"}"#.to_vec() }
    );
    let Outcome::Answered { status: 400, body } = &answers[1].outcome else {
        panic!("an errored request is its error: {:?}", answers[1])
    };
    let body: Value = serde_json::from_slice(body).unwrap_or_default();
    assert_eq!(body["error"]["message"], "bad");
    assert_eq!(answers[2].outcome, Outcome::Unrun);
    assert_eq!(answers[3].outcome, Outcome::Unrun);
    assert_eq!(
        api.cancel("https://api.anthropic.com", "msgbatch_1").url,
        "https://api.anthropic.com/v1/messages/batches/msgbatch_1/cancel"
    );
}
