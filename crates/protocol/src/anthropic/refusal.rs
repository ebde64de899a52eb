//! What Claude's API says it refused of a request, read from its error's
//! message: `anthropic-beta` flags it does not know ("Unexpected value(s)
//! `a`, `b` for the `anthropic-beta` header") and top-level body fields it
//! does not take ("context_management: Extra inputs are not permitted").
//! A platform that serves Claude with its own set of flags and fields (Vertex
//! AI) answers this way when it lags Anthropic's API; the gateway learns what
//! it names and sends the request again without it
//! ([`crate::WireBehaviour::refused`]).

use crate::behaviour::Refused;

/// The most flags or fields one message may name: a message is the
/// upstream's text, and what it names is kept per provider.
const MOST: usize = 8;

/// The fields no request goes without: a message that names one is not a
/// refusal the request can be sent again without.
const REQUIRED: &[&str] =
    &["model", "messages", "max_tokens", "anthropic_version", "system", "tools", "stream"];

/// What `message` (an error's message, as [`super::parse_error`] reads it)
/// says was refused; `None` when it names nothing that can be left out.
pub fn refused(message: &str) -> Option<Refused> {
    let mut found = Refused::default();
    if let Some(head) = message.split("for the `anthropic-beta` header").next().filter(|h| {
        // The split found the phrase: the head is shorter than the message.
        h.len() < message.len()
    }) && let Some((_, values)) = head.rsplit_once("Unexpected value")
    {
        found.betas = values
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|flag| is_flag(flag))
            .take(MOST)
            .map(str::to_owned)
            .collect();
    }
    found.fields = message
        .split(['\n', ';'])
        .filter_map(|part| part.trim().strip_suffix(": Extra inputs are not permitted"))
        .map(str::trim)
        .filter(|field| is_field(field) && !REQUIRED.contains(field))
        .take(MOST)
        .map(str::to_owned)
        .collect();
    (!found.betas.is_empty() || !found.fields.is_empty()).then_some(found)
}

/// A beta flag's shape: `name-2025-01-01`, lower case, digits and dashes.
fn is_flag(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A top-level field's name (a nested one, `tools.3.custom.input_examples`,
/// is the client's content, not a field the request can go without).
fn is_field(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

#[cfg(test)]
#[path = "refusal_tests.rs"]
mod tests;
