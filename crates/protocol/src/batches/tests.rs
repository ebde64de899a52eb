use super::*;

#[test]
fn an_input_file_is_read_line_by_line() {
    let file = concat!(
        r#"{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[]}}"#,
        "\n\n",
        r#"{"custom_id":"b","method":"POST","url":"/v1/embeddings","body":{"model":"e","input":"x"}}"#,
        "\n"
    );
    let lines = parse_input(file.as_bytes()).unwrap();
    assert_eq!(lines.len(), 2);
    assert_eq!((lines[0].custom_id.as_str(), lines[0].endpoint), ("a", Endpoint::ChatCompletions));
    assert_eq!(lines[1].endpoint, Endpoint::Embeddings);
    assert_eq!(lines[1].body["input"], "x");
}

#[test]
fn a_faulty_line_is_named() {
    let ok =
        r#"{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"m"}}"#;
    for (second, says) in [
        ("not json", "line 2: not a JSON object"),
        (ok, "line 2: custom_id \"a\" is not unique"),
        (
            r#"{"custom_id":"b","method":"GET","url":"/v1/chat/completions","body":{"model":"m"}}"#,
            "line 2: method",
        ),
        (
            r#"{"custom_id":"b","method":"POST","url":"/v1/completions","body":{"model":"m"}}"#,
            "line 2: url \"/v1/completions\"",
        ),
        (
            r#"{"custom_id":"b","method":"POST","url":"/v1/chat/completions","body":{}}"#,
            "line 2: body.model",
        ),
        (
            r#"{"custom_id":"b","method":"POST","url":"/v1/chat/completions","body":{"model":"m","stream":true}}"#,
            "line 2: body.stream",
        ),
        (
            r#"{"method":"POST","url":"/v1/chat/completions","body":{"model":"m"}}"#,
            "line 2: custom_id",
        ),
    ] {
        let file = format!("{ok}\n{second}\n");
        let err = parse_input(file.as_bytes()).unwrap_err().to_string();
        assert!(err.contains(says), "{err} / {says}");
    }
    assert!(parse_input(b"\n\n").unwrap_err().to_string().contains("no requests"));
    assert!(parse_input(&[0xff, 0xfe]).unwrap_err().to_string().contains("UTF-8"));
}

#[test]
fn output_and_error_lines_are_openai_s() {
    let out: Value =
        serde_json::from_str(&output_line("batch_req_1", "a", 200, "req-1", &json!({"ok": 1})))
            .unwrap();
    assert_eq!(out["response"]["status_code"], 200);
    assert_eq!(out["response"]["body"]["ok"], 1);
    assert_eq!(out["error"], Value::Null);
    let err: Value =
        serde_json::from_str(&error_line("batch_req_2", "b", "batch_cancelled", "cancelled"))
            .unwrap();
    assert_eq!(
        (err["response"].clone(), err["error"]["code"].clone()),
        (Value::Null, json!("batch_cancelled"))
    );
}
