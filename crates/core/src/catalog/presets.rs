//! Presets for OpenAI-compatible vendors (a provider's `preset:`): each one's
//! endpoint, key variable and departures from OpenAI's Chat Completions, in one
//! table, and what naming one does to a provider as the catalog is compiled
//! (checked against its wire, credentials implied). `docs/configuration.md`
//! shows the same table: change both together.

use switchyard_protocol::openai_chat::{Compat, OutputField};

use super::compile::{Problem, first_known};
use crate::config::raw::{self, Credentials, PresetName, WireName};

/// What a preset gives a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    /// Its name as the configuration writes it.
    pub name: &'static str,
    /// The base URL used when the provider writes no `endpoint`.
    pub endpoint: &'static str,
    /// The variable its key is read from when the provider declares no
    /// credentials; `None`: a local server, which needs no key.
    pub key_env: Option<&'static str>,
    /// What the server takes differently from OpenAI.
    pub compat: Compat,
}

/// OpenAI's behaviour, but the output limit in `max_tokens` (the field every
/// compatible server takes; several refuse or ignore the newer one).
const MAX_TOKENS: Compat = Compat { output_field: Some(OutputField::MaxTokens), ..Compat::OPENAI };

/// The preset `name` stands for.
pub fn preset(name: PresetName) -> Preset {
    let cloud = |name, endpoint, key, compat| Preset { name, endpoint, key_env: Some(key), compat };
    let local = |name, endpoint, compat| Preset { name, endpoint, key_env: None, compat };
    match name {
        // Takes `max_completion_tokens`, `max_tokens` only as a deprecated alias.
        PresetName::Groq => cloud(
            "groq",
            "https://api.groq.com/openai/v1",
            "GROQ_API_KEY",
            Compat { output_field: Some(OutputField::MaxCompletionTokens), ..Compat::OPENAI },
        ),
        // Refuses unknown fields (422): `max_completion_tokens`, `stream_options`
        // (its last chunk carries usage unasked); tool ids are exactly 9 letters
        // and digits, so another model's ids in the history are refused (400).
        PresetName::Mistral => cloud(
            "mistral",
            "https://api.mistral.ai/v1",
            "MISTRAL_API_KEY",
            Compat { stream_options: false, tool_id_len: Some(9), ..MAX_TOKENS },
        ),
        // Thinking mode refuses (400) a history whose tool-calling turns lack
        // their `reasoning_content`.
        PresetName::Deepseek => cloud(
            "deepseek",
            "https://api.deepseek.com",
            "DEEPSEEK_API_KEY",
            Compat { reasoning_echo: Some("reasoning_content"), ..MAX_TOKENS },
        ),
        PresetName::Together => {
            cloud("together", "https://api.together.xyz/v1", "TOGETHER_API_KEY", MAX_TOKENS)
        }
        PresetName::Fireworks => cloud(
            "fireworks",
            "https://api.fireworks.ai/inference/v1",
            "FIREWORKS_API_KEY",
            MAX_TOKENS,
        ),
        // Takes both output fields, as OpenAI does.
        PresetName::Xai => cloud("xai", "https://api.x.ai/v1", "XAI_API_KEY", Compat::OPENAI),
        PresetName::Openrouter => {
            cloud("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", MAX_TOKENS)
        }
        PresetName::Ollama => local("ollama", "http://localhost:11434/v1", MAX_TOKENS),
        // Reads a tool-calling turn's reasoning back as `reasoning` (its own
        // answers' name for it), which interleaved-thinking models need.
        PresetName::Vllm => local(
            "vllm",
            "http://localhost:8000/v1",
            Compat { reasoning_echo: Some("reasoning"), ..MAX_TOKENS },
        ),
        PresetName::Lmstudio => local("lmstudio", "http://localhost:1234/v1", MAX_TOKENS),
    }
}

/// The provider's preset, if it names one; one on a wire other than
/// `openai-chat` is a problem at its line (and ignored).
pub(super) fn compile_preset(
    name: &str,
    written: &raw::ProviderName,
    p: &raw::ProviderConfig,
    problems: &mut Vec<Problem>,
) -> Option<Preset> {
    let named = p.preset.as_ref()?;
    if p.wire != WireName::OpenaiChat {
        let at = first_known(&[Some(named.span), Some(written.location())]);
        problems.push(Problem::located(
            at,
            format!(
                "providers.{name}.preset: {} is an OpenAI-compatible vendor: only an openai-chat provider takes a preset",
                preset(named.value).name
            ),
        ));
        return None;
    }
    Some(preset(named.value))
}

/// The credentials a preset implies for a provider that declares none (no
/// variable, no key, neither `none` nor `byok_only`): the vendor's key variable,
/// or no key for a local server. Its other settings (`optional`) are kept.
/// `None`: the provider declares its own.
pub(super) fn implied_credentials(preset: Preset, written: &Credentials) -> Option<Credentials> {
    let declared =
        !written.env.is_empty() || !written.keys.is_empty() || written.none || written.byok_only;
    if declared {
        return None;
    }
    let mut implied = written.clone();
    match preset.key_env {
        Some(var) => implied.env = vec![raw::unlocated(var.to_owned())],
        None => implied.none = true,
    }
    Some(implied)
}

#[cfg(all(test, feature = "yaml"))]
#[path = "presets_tests.rs"]
mod tests;
