//! The same-format fast path: what a Responses client's own body needs before it
//! goes to a Responses upstream (see [`crate::Wire::adapt_native`]).
//!
//! Codex writes its body for this API (`store`, `include`, reasoning, its tools
//! and items), so it goes as it came, the model aside. What this gateway added to
//! the client's history cannot: a reasoning item whose `encrypted_content` the
//! gateway sealed (a turn another family answered, or one of this wire's own
//! tokens sealed when the answer was translated) and a `compaction` item the
//! gateway sealed are tokens the upstream cannot read. The parser has opened them
//! into the request, so such a body's `input` (and `instructions`) are written
//! from the request instead, which gives the upstream its own tokens back and
//! leaves other families' reasoning out ([`super::encode_request_for`]).

use serde_json::{Map, Value};

use crate::{FieldEdit, ModelTraits, Part, Request};

/// What the parser can only have opened from a token this gateway sealed: signed
/// or redacted thinking (a Responses client's reasoning items have no signature
/// otherwise).
fn has_opened_tokens(req: &Request) -> bool {
    req.messages.iter().flat_map(|m| &m.content).any(|p| {
        matches!(p, Part::Thinking { signature: Some(_), .. } | Part::RedactedThinking { .. })
    })
}

/// Whether [`adapt_native`] might edit the body: it holds opened tokens, or
/// names a compaction item or a field only Codex's backend takes (decided on
/// the bytes, so a body with none keeps the byte-level fast path).
pub(super) fn may_adapt(req: &Request, body: &[u8]) -> bool {
    let names = |word: &[u8]| body.windows(word.len()).any(|w| w == word);
    has_opened_tokens(req)
        || names(b"compaction")
        || CLIENT_ONLY.iter().any(|f| names(f.as_bytes()))
}

/// Top-level fields Codex writes for OpenAI's own backend that the public
/// Responses API does not define, and refuses (`Unknown parameter`):
/// `client_metadata`, Codex's installation, window and turn ids.
const CLIENT_ONLY: &[&str] = &["client_metadata"];

/// See [`crate::Wire::adapt_native`]: [`CLIENT_ONLY`] fields left out, and the
/// history rewritten where it holds what this gateway sealed; nothing else. A
/// history that cannot be written from the request (an item the canonical model
/// does not keep) goes as it came, and the upstream's refusal reaches the
/// client.
pub(super) fn adapt_native(
    body: &Map<String, Value>,
    req: &Request,
    traits: ModelTraits,
    family: &str,
) -> Vec<FieldEdit> {
    let compacted = body.get("input").and_then(Value::as_array).into_iter().flatten().any(|i| {
        matches!(i.get("type").and_then(Value::as_str), Some("compaction" | "compaction_summary"))
    });
    let mut edits: Vec<FieldEdit> =
        CLIENT_ONLY.iter().filter(|f| body.contains_key(**f)).map(|f| (*f, None)).collect();
    if !compacted && !has_opened_tokens(req) {
        return edits;
    }
    let Ok(Value::Object(mut encoded)) = super::encode_request_for(req, traits, family) else {
        return edits;
    };
    edits.push(("input", encoded.remove("input")));
    edits.push(("instructions", encoded.remove("instructions")));
    edits
}

#[cfg(test)]
#[path = "native_tests.rs"]
mod tests;
