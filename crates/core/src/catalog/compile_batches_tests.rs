//! `batch_api`, `batch_bucket`, `batch_role_arn` and `storage_endpoint`
//! (`compile_batches.rs`), compiled from the catalog tests' configuration.

use crate::catalog::tests::{BASE, compile, problems};

#[test]
fn vertex_batches_name_the_bucket_they_stage_in() {
    let vertex = |extra: &str| {
        BASE.replace(
            "providers:\n",
            &format!(
                "providers:\n  vx: {{ wire: vertex-gemini, endpoint: \"http://127.0.0.1:3/v1\", credentials: {{ env: [KEY] }}, batch_api: true{extra} }}\n"
            ),
        )
    };
    assert!(
        problems(&vertex(""))
            .contains("providers.vx.batch_api: its batch API reads its input from a bucket")
    );
    assert!(
        problems(&vertex(", batch_bucket: \"s3://b/x\""))
            .contains("providers.vx.batch_bucket: expected gs://bucket/prefix")
    );
    let c = compile(&vertex(
        ", batch_bucket: \"gs://sy-batches/in\", storage_endpoint: \"http://127.0.0.1:9/\"",
    ))
    .unwrap();
    let staging = c.provider("vx").and_then(|p| p.batch_staging.clone()).unwrap();
    assert_eq!((staging.bucket.as_str(), staging.prefix.as_str()), ("sy-batches", "in"));
    assert_eq!(staging.storage_endpoint, "http://127.0.0.1:9");
    let elsewhere = BASE.replace(
        "credentials: { env: [KEY] } }\n  b:",
        "credentials: { env: [KEY] }, batch_api: true, batch_bucket: \"gs://b0b/x\" }\n  b:",
    );
    assert!(
        problems(&elsewhere).contains(
            "providers.a.batch_bucket: only a vertex-gemini or bedrock-anthropic provider"
        )
    );
}

#[test]
fn bedrock_batches_name_their_bucket_and_role_and_find_s3_and_the_control_plane() {
    let bedrock = |extra: &str| {
        BASE.replace(
            "providers:\n",
            &format!(
                "providers:\n  br: {{ wire: bedrock-anthropic, region: us-west-2, credentials: {{ aws: {{ access_key_id: AKIDEXAMPLE, secret_access_key: \"s3cr3t-s3cr3t\" }} }}, batch_api: true{extra} }}\n"
            ),
        )
    };
    let bucket = ", batch_bucket: \"s3://sy-batches/in\"";
    assert!(problems(&bedrock(bucket)).contains(
        "providers.br.batch_role_arn: Bedrock's batch jobs read and write the bucket as an IAM role"
    ));
    let role = ", batch_role_arn: \"arn:aws:iam::123456789012:role/Batch\"";
    let c = compile(&bedrock(&format!("{bucket}{role}"))).unwrap();
    let p = c.provider("br").unwrap();
    assert_eq!(p.batch_api, Some(switchyard_protocol::batches::native::BatchApi::Bedrock));
    let s = p.batch_staging.clone().unwrap();
    assert_eq!(s.storage_endpoint, "https://s3.us-west-2.amazonaws.com");
    assert_eq!(s.jobs_endpoint.as_deref(), Some("https://bedrock.us-west-2.amazonaws.com"));
    assert_eq!(s.role_arn.as_deref(), Some("arn:aws:iam::123456789012:role/Batch"));
    assert!(
        problems(&bedrock(&format!("{bucket}, batch_role_arn: \"admin\"")))
            .contains("expected an IAM role's ARN")
    );
    let role_elsewhere = BASE.replace(
        "credentials: { env: [KEY] } }\n  b:",
        "credentials: { env: [KEY] }, batch_role_arn: \"arn:aws:iam::1:role/x\" }\n  b:",
    );
    assert!(
        problems(&role_elsewhere)
            .contains("providers.a.batch_role_arn: only a bedrock-anthropic provider")
    );
}

#[test]
fn a_batch_api_is_turned_on_only_where_the_wire_has_one() {
    let on = BASE.replace(
        "credentials: { env: [KEY] } }\n  b:",
        "credentials: { env: [KEY] }, batch_api: true }\n  b:",
    );
    let c = compile(&on).unwrap();
    let api = |name: &str| c.provider(name).and_then(|p| p.batch_api);
    assert_eq!(api("a"), Some(switchyard_protocol::batches::native::BatchApi::OpenAi));
    // The wire has one, but the provider did not turn it on.
    assert_eq!(api("b"), None);
    let gemini = BASE.replace(
        "credentials: { env: [UNSET_VAR], optional: true } }",
        "credentials: { env: [UNSET_VAR], optional: true }, batch_api: true }",
    );
    assert!(problems(&gemini).contains(
        "providers.off.batch_api: only the openai-chat, anthropic, vertex-gemini and bedrock-anthropic wires"
    ));
}
