#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::{listed_id, parse_models};

#[test]
fn reads_the_text_models_callable_on_demand() {
    let body = br#"{"modelSummaries":[
        {"modelArn":"arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0","modelId":"anthropic.claude-3-haiku-20240307-v1:0","modelName":"Claude 3 Haiku","providerName":"Anthropic","inputModalities":["TEXT","IMAGE"],"outputModalities":["TEXT"],"responseStreamingSupported":true,"inferenceTypesSupported":["ON_DEMAND"],"modelLifecycle":{"status":"LEGACY"}},
        {"modelId":"anthropic.claude-sonnet-4-5-20250929-v1:0","modelName":"Claude Sonnet 4.5","outputModalities":["TEXT"],"inferenceTypesSupported":["INFERENCE_PROFILE"],"modelLifecycle":{"status":"ACTIVE"}},
        {"modelId":"amazon.titan-embed-text-v2:0","outputModalities":["EMBEDDING"],"inferenceTypesSupported":["ON_DEMAND"],"modelLifecycle":{"status":"ACTIVE"}},
        {"modelId":"anthropic.claude-3-sonnet-20240229-v1:0:28k","outputModalities":["TEXT"],"inferenceTypesSupported":["PROVISIONED"],"modelLifecycle":{"status":"ACTIVE"}}
    ]}"#;
    let page = parse_models(body).unwrap();
    let ids: Vec<&str> = page.models.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(
        ids,
        ["anthropic.claude-3-haiku-20240307-v1:0", "anthropic.claude-sonnet-4-5-20250929-v1:0"]
    );
    assert_eq!(page.models[0].retiring.as_deref(), Some("LEGACY"));
    assert_eq!(page.models[0].display_name.as_deref(), Some("Claude 3 Haiku"));
    assert_eq!(page.models[1].retiring, None);
    assert_eq!(page.next, None);
    assert!(
        parse_models(br#"{"message":"The security token included in the request is invalid."}"#)
            .is_err()
    );
}

#[test]
fn an_inference_profile_is_listed_as_its_model() {
    assert_eq!(
        listed_id("us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        "anthropic.claude-sonnet-4-5-20250929-v1:0"
    );
    assert_eq!(
        listed_id("global.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        "anthropic.claude-sonnet-4-5-20250929-v1:0"
    );
    assert_eq!(listed_id("amazon.nova-pro-v1:0"), "amazon.nova-pro-v1:0");
    let arn = "arn:aws:bedrock:us-east-1:1:inference-profile/us.x-v1:0";
    assert_eq!(listed_id(arn), arn);
}
