//! Presets for OpenAI-compatible vendors (a provider's `preset:`): each one's
//! endpoint, key variable and departures from OpenAI's Chat Completions, in one
//! table. `docs/configuration.md` shows the same table: change both together.

use switchyard_protocol::openai_chat::{Compat, OutputField};

use crate::config::raw::PresetName;

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

#[cfg(test)]
#[path = "presets_tests.rs"]
mod tests;
