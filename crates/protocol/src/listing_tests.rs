#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::{ModelListing, Paging};
use crate::Wire;

const ALL: [Wire; 13] = [
    Wire::OpenAiChat,
    Wire::Anthropic,
    Wire::Gemini,
    Wire::Bedrock,
    Wire::BedrockAnthropic,
    Wire::VertexAnthropic,
    Wire::VertexGemini,
    Wire::VertexOpenAi,
    Wire::AzureOpenAi,
    Wire::AzureOpenAiV1,
    Wire::Responses,
    Wire::AzureOpenAiResponses,
    Wire::Fal,
];

#[test]
fn each_wire_lists_where_its_api_does() {
    let url = |wire: Wire| {
        let spec = wire.spec();
        let endpoint = spec
            .default_endpoint
            .replace("{region_prefix}", "us-east5-")
            .replace("{region}", "us-east5")
            .replace("{project}", "p")
            .replace("{resource}", "r");
        wire.behaviour().model_listing().url(&endpoint)
    };
    assert_eq!(url(Wire::OpenAiChat).unwrap(), "https://api.openai.com/v1/models");
    assert_eq!(url(Wire::Responses).unwrap(), "https://api.openai.com/v1/models");
    assert_eq!(url(Wire::Anthropic).unwrap(), "https://api.anthropic.com/v1/models");
    assert_eq!(
        url(Wire::Gemini).unwrap(),
        "https://generativelanguage.googleapis.com/v1beta/models"
    );
    assert_eq!(
        url(Wire::Bedrock).unwrap(),
        "https://bedrock.us-east5.amazonaws.com/foundation-models"
    );
    assert_eq!(
        url(Wire::BedrockAnthropic).unwrap(),
        "https://bedrock.us-east5.amazonaws.com/foundation-models?byProvider=Anthropic"
    );
    assert_eq!(
        url(Wire::VertexAnthropic).unwrap(),
        "https://us-east5-aiplatform.googleapis.com/v1beta1/publishers/anthropic/models"
    );
    assert_eq!(
        url(Wire::VertexGemini).unwrap(),
        "https://us-east5-aiplatform.googleapis.com/v1beta1/publishers/google/models"
    );
    assert_eq!(url(Wire::AzureOpenAiV1).unwrap(), "https://r.openai.azure.com/openai/v1/models");
    // Said, not guessed.
    assert!(url(Wire::AzureOpenAi).unwrap_err().contains("Azure Resource Manager"));
    assert!(url(Wire::VertexOpenAi).unwrap_err().contains("publishers"));
    assert!(url(Wire::Fal).unwrap_err().contains("fal.ai"));
    for wire in ALL {
        let paging = wire.behaviour().model_listing().paging();
        let expected = match wire {
            Wire::Anthropic => Paging::Cursor { param: "after_id" },
            Wire::Gemini | Wire::VertexAnthropic | Wire::VertexGemini => {
                Paging::Cursor { param: "pageToken" }
            }
            Wire::OpenAiChat
            | Wire::Bedrock
            | Wire::BedrockAnthropic
            | Wire::VertexOpenAi
            | Wire::AzureOpenAi
            | Wire::AzureOpenAiV1
            | Wire::Responses
            | Wire::AzureOpenAiResponses
            | Wire::Fal => Paging::None,
        };
        assert_eq!(paging, expected, "{wire:?}");
    }
}

#[test]
fn a_control_plane_is_the_runtime_host_renamed() {
    let bedrock = Wire::Bedrock.behaviour().model_listing();
    // A proxy or a fake that serves both is asked as it is.
    assert_eq!(
        bedrock.url("http://127.0.0.1:9000").unwrap(),
        "http://127.0.0.1:9000/foundation-models"
    );
    assert_eq!(
        bedrock.url("https://user:pw@bedrock-runtime.us-west-2.amazonaws.com").unwrap(),
        "https://user:pw@bedrock.us-west-2.amazonaws.com/foundation-models"
    );
    assert!(bedrock.url("not a url").is_err());
    let host = ModelListing::Host { path: "/x", paging: Paging::None };
    assert_eq!(host.url("http://127.0.0.1:1/v1/projects/p").unwrap(), "http://127.0.0.1:1/x");
    assert!(host.url("http:///nohost").is_err());
}

#[test]
fn each_wire_reads_its_own_list() {
    assert_eq!(
        Wire::Anthropic
            .behaviour()
            .parse_models(br#"{"data":[{"id":"c"}],"has_more":false}"#)
            .unwrap()
            .models[0]
            .id,
        "c"
    );
    assert_eq!(Wire::VertexGemini.behaviour().listed_id("gemini-2.5-pro@001"), "gemini-2.5-pro");
    assert_eq!(
        Wire::Bedrock.behaviour().listed_id("eu.amazon.nova-pro-v1:0"),
        "amazon.nova-pro-v1:0"
    );
    assert_eq!(Wire::OpenAiChat.behaviour().listed_id("us.x.y"), "us.x.y");
    assert_eq!(
        Wire::AzureOpenAiV1
            .behaviour()
            .parse_models(br#"{"data":[{"id":"gpt-4.1"}]}"#)
            .unwrap()
            .models[0]
            .id,
        "gpt-4.1"
    );
}
