use super::Family::{self, *};

#[test]
fn families_are_read_as_each_platform_writes_the_id() {
    let cases: &[(&str, Family)] = &[
        // Anthropic's API.
        ("claude-opus-4-7", Claude),
        ("claude-3-7-sonnet-latest", Claude),
        ("Claude-Sonnet-4-5", Claude),
        // Bedrock: the model, its inference profiles, an ARN.
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", Claude),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", Claude),
        ("eu.anthropic.claude-3-7-sonnet-20250219-v1:0", Claude),
        ("apac.anthropic.claude-sonnet-4-20250514-v1:0", Claude),
        ("global.anthropic.claude-opus-4-6-v1", Claude),
        (
            "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-opus-4-1-20250805-v1:0",
            Claude,
        ),
        // Vertex AI.
        ("claude-opus-4-1@20250805", Claude),
        ("publishers/anthropic/models/claude-sonnet-4-5@20250929", Claude),
        // Gemini.
        ("gemini-2.5-flash", Gemini),
        ("models/gemini-3.1-pro-preview", Gemini),
        ("publishers/google/models/gemini-2.5-pro", Gemini),
        ("projects/p/locations/global/publishers/google/models/gemini-3-pro-preview", Gemini),
        // OpenAI.
        ("gpt-4o-mini", Gpt),
        ("gpt-4.1-mini", Gpt),
        ("gpt-5", Gpt),
        ("openai/gpt-5-mini", Gpt),
        ("o1", Gpt),
        ("o3-mini", Gpt),
        ("o4-mini-2025-04-16", Gpt),
        ("chatgpt-4o-latest", Gpt),
        ("openai.gpt-oss-120b-1:0", Gpt),
        ("omni-moderation-latest", Other),
        // Llama.
        ("meta.llama3-3-70b-instruct-v1:0", Llama),
        ("us.meta.llama4-maverick-17b-instruct-v1:0", Llama),
        ("llama-3.3-70b-versatile", Llama),
        ("meta-llama/Llama-3.1-8B-Instruct", Llama),
        // Nova.
        ("amazon.nova-pro-v1:0", Nova),
        ("us.amazon.nova-pro-v1:0", Nova),
        ("amazon.nova-2-lite-v1:0", Nova),
        ("amazon.titan-text-express-v1", Other),
        // Mistral.
        ("mistral.mistral-large-2407-v1:0", Mistral),
        ("mistral-large-latest", Mistral),
        ("codestral-2501", Mistral),
        ("mixtral-8x7b-32768", Mistral),
        // DeepSeek.
        ("us.deepseek.r1-v1:0", DeepSeek),
        ("deepseek-chat", DeepSeek),
        ("deepseek-ai/DeepSeek-R1", DeepSeek),
        // No family.
        ("my-finetune", Other),
        ("arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3", Other),
        ("", Other),
    ];
    for (id, family) in cases {
        assert_eq!(Family::of(id), *family, "{id}");
    }
}

#[test]
fn claude_traits_read_the_version_however_the_platform_writes_it() {
    use crate::ReasoningControl::{Budget, Effort};
    use crate::{ModelTraits, Wire};
    // (id, reasoning, sampling, one_sampler)
    let cases = [
        // Bedrock: the model, its inference profiles, an ARN.
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", Budget, true, true),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", Budget, true, true),
        ("eu.anthropic.claude-sonnet-4-6-v1:0", Effort, true, true),
        ("global.anthropic.claude-opus-4-6-v1", Effort, true, true),
        ("apac.anthropic.claude-opus-4-7-v1", Effort, false, true),
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", Budget, true, false),
        ("anthropic.claude-3-haiku-20240307-v1:0", Budget, true, false),
        (
            "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-opus-4-1-20250805-v1:0",
            Budget,
            true,
            true,
        ),
        // Vertex AI.
        ("claude-sonnet-4-5@20250929", Budget, true, true),
        ("claude-opus-4-7@20260101", Effort, false, true),
        ("publishers/anthropic/models/claude-opus-4-6@20260101", Effort, true, true),
        ("publishers/anthropic/models/claude-3-7-sonnet@20250219", Budget, true, false),
    ];
    for (id, reasoning, sampling, one_sampler) in cases {
        assert_eq!(Family::of(id), Claude, "{id}");
        let want = ModelTraits {
            family: Family::Claude,
            reasoning,
            sampling,
            one_sampler,
            takes_max_tokens: true,
        };
        assert_eq!(ModelTraits::claude(id), want, "{id}");
        // Anthropic's wire applies Claude's rules to every spelling.
        assert_eq!(ModelTraits::infer(Wire::Anthropic, id), want, "{id}");
    }
    // An OpenAI-compatible server takes its own fields whatever it serves.
    let chat = ModelTraits::infer(Wire::OpenAiChat, "us.anthropic.claude-opus-4-7-v1");
    assert_eq!(chat, ModelTraits::openai_chat("us.anthropic.claude-opus-4-7-v1"));
    assert!(chat.sampling && !chat.one_sampler && chat.reasoning == Effort);
    // An id of no known family on Anthropic's wire: a budget, as before.
    assert_eq!(ModelTraits::infer(Wire::Anthropic, "my-finetune"), ModelTraits::BUDGET);
}
