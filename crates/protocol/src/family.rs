//! A model's family, read from its id as each platform writes it. The family,
//! not the wire, decides what a model can take (Claude's effort or budget, its
//! sampling refusals): Claude is the same model on Anthropic's API, Bedrock and
//! Vertex AI, under three spellings of its id.

/// A model's family ([`Family::of`]; in configuration by its lowercase name,
/// `claude`, `gpt`, `deepseek`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Family {
    /// Anthropic's Claude: `claude-…`, Bedrock's `anthropic.claude-…` and its
    /// inference profiles (`us.anthropic.claude-…`), Vertex AI's
    /// `claude-…@20250101` and `publishers/anthropic/models/claude-…`.
    Claude,
    /// Google's Gemini: `gemini-…`, `models/gemini-…`,
    /// `publishers/google/models/gemini-…`.
    Gemini,
    /// OpenAI's GPT and reasoning models: `gpt-…`, `o1`, `o3-mini`, `o4-…`,
    /// `chatgpt-…`, Bedrock's `openai.gpt-oss-…`.
    Gpt,
    /// Meta's Llama: `llama-…`, Bedrock's `meta.llama…`.
    Llama,
    /// Amazon Nova: `amazon.nova-…`, `us.amazon.nova-…`.
    Nova,
    /// Mistral AI's models: `mistral-…`, `mixtral-…`, `codestral-…`, Bedrock's
    /// `mistral.…`.
    Mistral,
    /// DeepSeek's models: `deepseek-…`, Bedrock's `deepseek.…`.
    DeepSeek,
    /// Any other model, and ids that name no family (a fine-tune's name, an
    /// application inference profile's ARN).
    Other,
}

/// Bedrock's cross-region inference profiles prefix the model id with where it
/// may run (`us.anthropic.claude-…`).
const GEOGRAPHIES: &[&str] = &["us", "us-gov", "eu", "apac", "jp", "au", "ca", "global"];

/// Bedrock's provider prefixes (`meta.llama3-…`); only these are skipped, as a
/// model's own name may have a dot (`gpt-4.1`, `llama3.3`).
const VENDORS: &[&str] = &["amazon", "meta", "mistral", "deepseek", "openai", "google"];

impl Family {
    /// The configuration's name for it (`claude`, `gpt`, `deepseek`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Claude => "claude",
            Family::Gemini => "gemini",
            Family::Gpt => "gpt",
            Family::Llama => "llama",
            Family::Nova => "nova",
            Family::Mistral => "mistral",
            Family::DeepSeek => "deepseek",
            Family::Other => "other",
        }
    }

    /// The family of `model_id`, case aside. A path (Vertex AI's
    /// `publishers/anthropic/models/…`, Gemini's `models/…`, a Bedrock ARN's
    /// `…/foundation-model/…`) and a routing prefix (`openai/`) are skipped, and so
    /// are Bedrock's geography and provider prefixes (`us.`, `anthropic.`).
    pub fn of(model_id: &str) -> Family {
        let id = model_id.to_ascii_lowercase();
        // Claude anywhere in the id: Bedrock's and Vertex's spellings, and the
        // Anthropic API's own ids with whatever prefix a deployment puts on them.
        if id.contains("claude") || id.contains("anthropic.") || id.contains("/anthropic/") {
            return Family::Claude;
        }
        let name = id.rsplit('/').next().unwrap_or(&id);
        let name = match name.split_once('.') {
            Some((geo, rest)) if GEOGRAPHIES.contains(&geo) => rest,
            _ => name,
        };
        let (vendor, name) = match name.split_once('.') {
            Some((vendor, rest)) if VENDORS.contains(&vendor) => (vendor, rest),
            _ => ("", name),
        };
        let starts = |prefixes: &[&str]| prefixes.iter().any(|p| name.starts_with(p));
        match vendor {
            "amazon" if name.starts_with("nova") => return Family::Nova,
            "meta" => return Family::Llama,
            "mistral" => return Family::Mistral,
            "deepseek" => return Family::DeepSeek,
            _ => {}
        }
        if starts(&["gemini"]) {
            Family::Gemini
        } else if starts(&["gpt-", "chatgpt-"]) || o_series(name) {
            Family::Gpt
        } else if starts(&["llama"]) {
            Family::Llama
        } else if starts(&["mistral", "mixtral", "codestral", "ministral", "pixtral", "magistral"])
            || starts(&["devstral"])
        {
            Family::Mistral
        } else if starts(&["deepseek"]) {
            Family::DeepSeek
        } else {
            Family::Other
        }
    }
}

/// OpenAI's o-series: `o1`, `o3-mini`, `o4-mini-2025-04-16` (not `omni-…`).
pub(crate) fn o_series(name: &str) -> bool {
    name.strip_prefix('o').is_some_and(|rest| {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && rest[digits..].chars().next().is_none_or(|c| c == '-')
    })
}

#[cfg(test)]
#[path = "family_tests.rs"]
mod tests;
