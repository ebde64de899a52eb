use serde_json::{Value, json};

use super::*;

fn place(endpoint: &str) -> Place<'_> {
    Place { endpoint, staging: None, model: "m", name: "batch_1-0" }
}

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
    let Some(up) = api.upload(place("https://api.example/v1"), &requests()) else {
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

    let id = api
        .parse_uploaded(place("https://api.example/v1"), br#"{"id":"file-abc","object":"file"}"#);
    assert_eq!(id.as_deref().ok(), Some("file-abc"));
    assert!(api.parse_uploaded(place("https://api.example/v1"), br#"{"id":"../x"}"#).is_err());

    let create = api.create(place("https://api.example/v1"), &requests(), Some("file-abc"));
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
    let calls = api.results("https://h/v1", None, &p).unwrap_or_default();
    assert_eq!(calls[0], Fetch::File(Call::get("https://h/v1/files/file-o/content".into())));
    assert_eq!(calls[1], Fetch::File(Call::get("https://h/v1/files/file-e/content".into())));
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
    assert_eq!(
        api.cancel("https://h/v1", None, "batch_1").url,
        "https://h/v1/batches/batch_1/cancel"
    );
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
    assert!(api.upload(place("https://api.anthropic.com"), &requests()).is_none());
    let create = api.create(place("https://api.anthropic.com"), &requests(), None);
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
    let calls = api.results("https://api.anthropic.com", None, &p).unwrap_or_default();
    let results = "https://api.anthropic.com/v1/messages/batches/msgbatch_1/results";
    assert_eq!(calls, [Fetch::File(Call::get(results.into()))]);
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
        api.cancel("https://api.anthropic.com", None, "msgbatch_1").url,
        "https://api.anthropic.com/v1/messages/batches/msgbatch_1/cancel"
    );
}

fn staging() -> Staging {
    Staging::parse_gcs("gs://my-bucket/sy/batches/", "https://storage.example")
        .unwrap_or_else(|| panic!("a gs:// URI parses"))
}

#[test]
fn a_staging_bucket_is_a_gs_uri() {
    let s = staging();
    assert_eq!((s.bucket.as_str(), s.prefix.as_str()), ("my-bucket", "sy/batches"));
    assert_eq!(s.object("x/input.jsonl"), "sy/batches/x/input.jsonl");
    assert_eq!(Staging::parse_gcs("gs://b0b", "e").map(|s| s.prefix), Some(String::new()));
    for bad in ["s3://bucket/x", "gs://Upper/x", "gs://a", "my-bucket"] {
        assert!(Staging::parse_gcs(bad, "e").is_none(), "{bad}");
    }
}

#[test]
fn vertex_stages_its_requests_labelled_and_reads_its_answers_by_label() {
    let api = BatchApi::Vertex;
    let s = staging();
    let endpoint =
        "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1";
    let place = Place { endpoint, staging: Some(&s), model: "gemini-2.5-flash", name: "batch_1-0" };
    let Some(up) = api.upload(place, &requests()) else { panic!("Vertex uploads its input") };
    assert_eq!(
        up.url,
        "https://storage.example/upload/storage/v1/b/my-bucket/o?uploadType=media&name=sy%2Fbatches%2Fbatch_1-0%2Finput.jsonl"
    );
    let (body, _) = up.body.unwrap_or_default();
    let first: Value =
        serde_json::from_slice(body.split(|b| *b == b'\n').next().unwrap_or_default())
            .unwrap_or_default();
    assert_eq!(first["request"]["labels"]["switchyard_line"], "line-0");
    assert_eq!(first["request"]["model"], "m", "the body goes as it was built");
    let uploaded = api.parse_uploaded(
        place,
        br#"{"name":"sy/batches/batch_1-0/input.jsonl","bucket":"my-bucket"}"#,
    );
    assert_eq!(uploaded.as_deref().ok(), Some("gs://my-bucket/sy/batches/batch_1-0/input.jsonl"));
    assert!(api.parse_uploaded(place, br#"{"name":"elsewhere"}"#).is_err());
    let create =
        api.create(place, &requests(), Some("gs://my-bucket/sy/batches/batch_1-0/input.jsonl"));
    assert_eq!(create.url, format!("{endpoint}/batchPredictionJobs"));
    let job: Value = serde_json::from_slice(&create.body.unwrap_or_default().0).unwrap_or_default();
    assert_eq!(job["model"], "publishers/google/models/gemini-2.5-flash");
    assert_eq!(
        job["inputConfig"]["gcsSource"]["uris"][0],
        "gs://my-bucket/sy/batches/batch_1-0/input.jsonl"
    );
    assert_eq!(
        job["outputConfig"]["gcsDestination"]["outputUriPrefix"],
        "gs://my-bucket/sy/batches/batch_1-0/output"
    );

    let read = |v: Value| api.parse_progress(v.to_string().as_bytes());
    let name = "projects/p/locations/us-central1/batchPredictionJobs/123";
    assert_eq!(
        read(json!({"name": name, "state": "JOB_STATE_RUNNING"})).ok().map(|p| p.state),
        Some(State::Running)
    );
    let done = read(json!({"name": name, "state": "JOB_STATE_SUCCEEDED",
        "outputInfo": {"gcsOutputDirectory": "gs://my-bucket/sy/batches/batch_1-0/output/prediction-model-1"}}));
    let Ok(done) = done else { panic!("succeeded reads") };
    assert_eq!((done.id.as_str(), &done.state), ("123", &State::Ended(End::Completed)));
    assert_eq!(
        api.status(endpoint, None, "123").url,
        format!("{endpoint}/batchPredictionJobs/123")
    );
    assert_eq!(
        api.cancel(endpoint, None, "123").url,
        format!("{endpoint}/batchPredictionJobs/123:cancel")
    );
    let fetch = api.results(endpoint, Some(&s), &done).unwrap_or_default();
    assert_eq!(
        fetch,
        [Fetch::Listing(Call::get(
            "https://storage.example/storage/v1/b/my-bucket/o?prefix=sy%2Fbatches%2Fbatch_1-0%2Foutput%2Fprediction-model-1%2F".into()
        ))]
    );
    // A job that says it wrote elsewhere is not followed there.
    let elsewhere = Progress { files: vec!["gs://other-bucket/x".into()], ..done.clone() };
    assert!(api.results(endpoint, Some(&s), &elsewhere).is_err());
    let failed = read(
        json!({"name": name, "state": "JOB_STATE_FAILED", "error": {"code": 5, "message": "no input"}}),
    );
    assert_eq!(failed.ok().map(|p| p.state), Some(State::Ended(End::Failed("no input".into()))));

    let listing = br#"{"kind":"storage#objects","items":[{"name":"sy/batches/batch_1-0/output/prediction-model-1/predictions.jsonl"},{"name":"sy/batches/batch_1-0/output/prediction-model-1/_SUCCESS"}]}"#;
    let files = api.parse_listing(Some(&s), listing).unwrap_or_default();
    assert_eq!(files.len(), 1);
    assert!(
        files[0].url.ends_with(
            "o/sy%2Fbatches%2Fbatch_1-0%2Foutput%2Fprediction-model-1%2Fpredictions.jsonl?alt=media"
        ),
        "{}",
        files[0].url
    );
    assert_eq!(
        api.parse_listing(Some(&s), br#"{"kind":"storage#objects"}"#).map(|f| f.len()).ok(),
        Some(0)
    );

    let results = concat!(
        r#"{"status":"","request":{"labels":{"switchyard_line":"line-7"},"contents":[]},"response":{"candidates":[]}}"#,
        "\n",
        r#"{"status":"Bad Request: INVALID_ARGUMENT contents","request":{"labels":{"switchyard_line":"line-0"}}}"#,
        "\n",
    );
    let answers = api.parse_results(results.as_bytes()).unwrap_or_default();
    assert_eq!(answers[0].custom_id, "line-7");
    assert_eq!(
        answers[0].outcome,
        Outcome::Answered { status: 200, body: br#"{"candidates":[]}"#.to_vec() }
    );
    assert!(matches!(answers[1].outcome, Outcome::Answered { status: 400, .. }));
    assert!(
        api.parse_results(br#"{"status":"","request":{}}"#).is_err(),
        "a line naming no request"
    );
}

#[test]
fn bedrock_stages_records_in_s3_and_runs_them_as_a_role_on_the_control_plane() {
    let api = BatchApi::Bedrock;
    let s = Staging::parse_s3(
        "s3://sy-batches/runs",
        "https://s3.us-east-1.amazonaws.com",
        "arn:aws:iam::123456789012:role/BedrockBatch",
        "https://bedrock.us-east-1.amazonaws.com",
    )
    .unwrap_or_else(|| panic!("an s3:// URI parses"));
    assert!(Staging::parse_s3("gs://x/y", "e", "r", "j").is_none());
    let runtime = "https://bedrock-runtime.us-east-1.amazonaws.com";
    let place = Place {
        endpoint: runtime,
        staging: Some(&s),
        model: "anthropic.claude-x-v1:0",
        name: "batch_ab1-0",
    };
    assert_eq!(api.custom_id(7), "L0000000007");
    assert_eq!(api.line_of("L0000000007"), Some(7));
    assert_eq!(api.line_of("line-7"), None);
    assert_eq!(api.min_requests(), 100);
    let requests = vec![Request {
        custom_id: api.custom_id(0),
        body: json!({"anthropic_version": "bedrock-2023-05-31"}),
    }];
    let Some(up) = api.upload(place, &requests) else { panic!("Bedrock uploads its input") };
    assert_eq!((up.method, up.service), ("PUT", Some("s3")));
    assert_eq!(
        up.url,
        "https://s3.us-east-1.amazonaws.com/sy-batches/runs/batch_ab1-0/input.jsonl"
    );
    let line: Value =
        serde_json::from_slice(up.body.unwrap_or_default().0.trim_ascii_end()).unwrap_or_default();
    assert_eq!(
        line,
        json!({"recordId": "L0000000000", "modelInput": {"anthropic_version": "bedrock-2023-05-31"}})
    );
    let input = api.parse_uploaded(place, b"").unwrap_or_default();
    assert_eq!(input, "s3://sy-batches/runs/batch_ab1-0/input.jsonl");
    let create = api.create(place, &requests, Some(&input));
    assert_eq!(
        (create.url.as_str(), create.service),
        ("https://bedrock.us-east-1.amazonaws.com/model-invocation-job", None)
    );
    let job: Value = serde_json::from_slice(&create.body.unwrap_or_default().0).unwrap_or_default();
    assert_eq!(job["jobName"], "switchyard-batch-ab1-0");
    assert_eq!(job["clientRequestToken"], job["jobName"]);
    assert_eq!(job["roleArn"], "arn:aws:iam::123456789012:role/BedrockBatch");
    assert_eq!(job["modelId"], "anthropic.claude-x-v1:0");
    assert_eq!(job["inputDataConfig"]["s3InputDataConfig"]["s3Uri"], input);
    assert_eq!(
        job["outputDataConfig"]["s3OutputDataConfig"]["s3Uri"],
        "s3://sy-batches/runs/batch_ab1-0/output/"
    );

    let arn = "arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/abc123def456";
    let read = |v: Value| api.parse_progress(v.to_string().as_bytes());
    let created = read(json!({"jobArn": arn})).ok();
    assert_eq!(created.map(|p| (p.id, p.state)), Some(("abc123def456".into(), State::Running)));
    let done = read(json!({"jobArn": arn, "status": "PartiallyCompleted",
        "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": "s3://sy-batches/runs/batch_ab1-0/output/"}}}));
    let Ok(done) = done else { panic!("a finished job reads") };
    assert_eq!(done.state, State::Ended(End::Completed));
    let fetch = api.results(runtime, Some(&s), &done).unwrap_or_default();
    let Some(Fetch::File(file)) = fetch.first() else { panic!("one file: {fetch:?}") };
    assert_eq!(
        file.url,
        "https://s3.us-east-1.amazonaws.com/sy-batches/runs/batch_ab1-0/output/abc123def456/input.jsonl.out"
    );
    assert_eq!(file.service, Some("s3"));
    let outside = Progress { files: vec!["s3://elsewhere/x/".into()], ..done.clone() };
    assert!(api.results(runtime, Some(&s), &outside).is_err());
    assert_eq!(
        read(json!({"jobArn": arn, "status": "Failed", "message": "too few records"}))
            .ok()
            .map(|p| p.state),
        Some(State::Ended(End::Failed("too few records".into())))
    );
    assert_eq!(
        read(json!({"jobArn": arn, "status": "Stopped"})).ok().map(|p| p.state),
        Some(State::Ended(End::Cancelled))
    );
    assert!(read(json!({"jobArn": "arn:aws:bedrock:x:1:model-invocation-job/a%2F..", "status": "Completed"})).is_err());
    assert_eq!(
        api.status(runtime, Some(&s), "abc").url,
        "https://bedrock.us-east-1.amazonaws.com/model-invocation-job/abc"
    );
    assert_eq!(
        api.cancel(runtime, Some(&s), "abc").url,
        "https://bedrock.us-east-1.amazonaws.com/model-invocation-job/abc/stop"
    );

    let out = concat!(
        r#"{"recordId":"L0000000002","modelInput":{},"modelOutput":{"id":"msg_1","type":"message"}}"#,
        "\n",
        r#"{"recordId":"L0000000001","modelInput":{},"error":{"errorCode":400,"errorMessage":"messages: bad"}}"#,
    );
    let answers = api.parse_results(out.as_bytes()).unwrap_or_default();
    assert_eq!(answers[0].custom_id, "L0000000002");
    assert_eq!(
        answers[0].outcome,
        Outcome::Answered { status: 200, body: br#"{"id":"msg_1","type":"message"}"#.to_vec() }
    );
    let Outcome::Answered { status: 400, body } = &answers[1].outcome else {
        panic!("{:?}", answers[1])
    };
    assert!(String::from_utf8_lossy(body).contains("messages: bad"));
}
