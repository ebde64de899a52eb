#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

//! The presets table.

use super::*;

const ALL: [PresetName; 10] = [
    PresetName::Groq,
    PresetName::Mistral,
    PresetName::Deepseek,
    PresetName::Together,
    PresetName::Fireworks,
    PresetName::Xai,
    PresetName::Openrouter,
    PresetName::Ollama,
    PresetName::Vllm,
    PresetName::Lmstudio,
];

#[test]
fn every_preset_has_a_usable_endpoint_and_a_key_unless_local() {
    for name in ALL {
        let p = preset(name);
        let local = p.endpoint.starts_with("http://localhost:");
        assert!(local || p.endpoint.starts_with("https://"), "{}", p.name);
        assert!(!p.endpoint.ends_with('/'), "{}", p.name);
        assert_eq!(p.key_env.is_none(), local, "{}: only a local server needs no key", p.name);
        if let Some(var) = p.key_env {
            assert_eq!(var, format!("{}_API_KEY", p.name.to_uppercase()));
        }
    }
}

#[test]
fn the_known_departures_are_in_the_table() {
    let mistral = preset(PresetName::Mistral).compat;
    assert_eq!(mistral.tool_id_len, Some(9));
    assert!(!mistral.stream_options);
    assert_eq!(mistral.output_field, Some(OutputField::MaxTokens));
    assert_eq!(preset(PresetName::Deepseek).compat.reasoning_echo, Some("reasoning_content"));
    assert_eq!(preset(PresetName::Vllm).compat.reasoning_echo, Some("reasoning"));
    assert_eq!(
        preset(PresetName::Groq).compat.output_field,
        Some(OutputField::MaxCompletionTokens)
    );
}

// ---------------------------------------------------------------------------
// A preset in a configuration

fn compile(yaml: &str) -> Result<crate::catalog::Catalog, crate::catalog::InvalidRegistry> {
    let env = |k: &str| (k == "MISTRAL_API_KEY" || k == "KEY").then(|| "sk-test-123456".to_owned());
    let raw = crate::config::ConfigSource::from_text("t.yaml", yaml).parse_with(&env).unwrap();
    crate::catalog::Catalog::compile(&raw, "t.yaml", &env)
}

#[test]
fn a_preset_gives_the_endpoint_key_variable_and_rewrites() {
    let c = compile(
        r#"
providers:
  mistral: { wire: openai-chat, preset: mistral }
  local: { wire: openai-chat, preset: ollama }
  mine: { wire: openai-chat, preset: vllm, endpoint: "http://gpu-box:9000/v1/", credentials: { env: [KEY] } }
  groq: { wire: openai-chat, preset: groq, credentials: { env: [GROQ_API_KEY], optional: true } }
  plain: { wire: openai-chat, credentials: { none: true } }
"#,
    )
    .unwrap();
    let mistral = c.provider("mistral").unwrap();
    assert_eq!(mistral.endpoint, "https://api.mistral.ai/v1");
    assert_eq!(mistral.keys.len(), 1, "MISTRAL_API_KEY is read without a credentials block");
    assert_eq!(mistral.openai, preset(PresetName::Mistral).compat);
    let local = c.provider("local").unwrap();
    assert_eq!(local.endpoint, "http://localhost:11434/v1");
    assert!(local.unavailable.is_none() && local.keys.is_empty(), "a local server needs no key");
    // What is written wins over the preset's defaults.
    let mine = c.provider("mine").unwrap();
    assert_eq!(mine.endpoint, "http://gpu-box:9000/v1");
    assert_eq!(mine.keys.len(), 1);
    assert_eq!(mine.openai.reasoning_echo, Some("reasoning"));
    assert!(c.provider("groq").unwrap().unavailable.as_deref().unwrap().contains("GROQ_API_KEY"));
    assert!(c.provider("plain").unwrap().openai.is_openai());
}

#[test]
fn a_cloud_presets_unset_key_variable_is_a_problem_like_any_other() {
    let text =
        compile("providers:\n  g: { wire: openai-chat, preset: groq }\n").unwrap_err().to_string();
    assert!(
        text.contains("providers.g.credentials: provider g is disabled: GROQ_API_KEY is not set"),
        "{text}"
    );
    // `optional` still says a missing key only disables it.
    let c = compile(
        "providers:\n  g: { wire: openai-chat, preset: groq, credentials: { optional: true } }\n",
    )
    .unwrap();
    assert!(c.provider("g").unwrap().unavailable.is_some());
}

#[test]
fn a_preset_on_another_wire_is_a_problem_at_its_line() {
    let yaml = "providers:\n  a:\n    wire: anthropic\n    preset: deepseek\n    credentials: { env: [KEY] }\n";
    let text = compile(yaml).unwrap_err().to_string();
    assert!(
        text.contains("t.yaml:4: providers.a.preset: deepseek is an OpenAI-compatible vendor: only an openai-chat provider takes a preset"),
        "{text}"
    );
    // An unknown vendor is refused as the file is read, naming the known ones.
    let env = |_: &str| None;
    let source = "providers:\n  a: { wire: openai-chat, preset: acme }\n";
    let err = crate::config::ConfigSource::from_text("t.yaml", source).parse_with(&env);
    let text = format!("{:?}", err.unwrap_err());
    assert!(text.contains("acme") && text.contains("lmstudio"), "{text}");
}
