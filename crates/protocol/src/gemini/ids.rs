//! Call ids and thought signatures: what a canonical call id carries for Gemini,
//! the ids the gateway gives clients, and the signatures Gemini 3 wants back (see
//! the wire's docs in [`super`]).

use crate::util;

/// The documented `thoughtSignature` for a function call Gemini did not produce.
pub const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";
/// Placeholders Gemini documents; never treated as real signatures.
const DUMMY_SIGNATURES: [&str; 2] = [SKIP_SIGNATURE, "context_engineering_is_the_way_to_go"];
/// Prefix of a canonical call id that carries a Gemini-issued `functionCall.id`.
const GEMINI_ID_PREFIX: &str = "gcall_";
/// Separates a canonical call id from the signature it carries, in ids of earlier
/// versions (still read; no longer written: the signature is
/// [`ToolCall::signature`](crate::ToolCall::signature)).
const SIGNATURE_SEPARATOR: &str = "__sig_";
/// The longest call id the gateway gives clients (OpenAI's limit, the strictest).
const MAX_CALL_ID: usize = 40;

fn is_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// A Gemini `functionCall.id` we can carry in a canonical id and split off again.
pub(super) fn valid_gemini_id(id: &str) -> bool {
    !id.is_empty() && id.chars().all(is_id_char) && !id.contains("__")
}

/// A call id a Gemini client sent that every upstream takes as it is (at most 40
/// characters of `[A-Za-z0-9_-]`): the gateway keeps it, so the call is known by
/// the same id on every turn (see [`super::parse_client_request`]).
pub(super) fn client_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_CALL_ID && id.chars().all(is_id_char)
}

fn is_dummy_signature(sig: &str) -> bool {
    DUMMY_SIGNATURES.contains(&sig)
}

/// A signature worth keeping: not empty, not one of the documented placeholders.
pub(super) fn real_signature(sig: Option<&str>) -> Option<String> {
    sig.filter(|s| !s.is_empty() && !is_dummy_signature(s)).map(str::to_owned)
}

/// The id form back to standard padded base64 (what Gemini sends and expects).
fn signature_from_id(s: &str) -> Option<String> {
    if s.is_empty() || !s.chars().all(is_id_char) {
        return None;
    }
    let mut out: String = s
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    while !out.len().is_multiple_of(4) {
        out.push('=');
    }
    Some(out)
}

/// What a canonical call id carries for Gemini.
#[derive(Debug, PartialEq)]
pub(super) struct CallIdInfo<'a> {
    /// The `functionCall.id` Gemini issued, if the call came from Gemini with one.
    pub(super) gemini_id: Option<&'a str>,
    /// The thought signature, standard base64.
    pub(super) signature: Option<String>,
}

pub(super) fn split_call_id(id: &str) -> CallIdInfo<'_> {
    let (base, signature) = match id.split_once(SIGNATURE_SEPARATOR) {
        Some((base, sig)) => (base, signature_from_id(sig)),
        None => (id, None),
    };
    let gemini_id = base.strip_prefix(GEMINI_ID_PREFIX).filter(|g| valid_gemini_id(g));
    CallIdInfo { gemini_id, signature }
}

/// `gcall_<id>` when Gemini gave a usable id (one that fits in a client's id),
/// else the fallback.
pub(super) fn call_base(gemini_id: Option<&str>, fallback: impl FnOnce() -> String) -> String {
    let fits = |g: &&str| valid_gemini_id(g) && GEMINI_ID_PREFIX.len() + g.len() <= MAX_CALL_ID;
    match gemini_id.filter(fits) {
        Some(g) => format!("{GEMINI_ID_PREFIX}{g}"),
        None => fallback(),
    }
}

/// `call_<responseId>_<n>`: deterministic and unique within one response.
pub(super) fn minted_call_id(response_id: &str, ordinal: usize) -> String {
    let mut clean: String =
        response_id.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
    if clean.is_empty() {
        clean.push_str("gemini");
    }
    let id = format!("call_{clean}_{ordinal}");
    if id.len() <= MAX_CALL_ID {
        return id;
    }
    format!("call_{:016x}_{ordinal}", util::fnv1a(response_id.as_bytes()))
}

#[cfg(test)]
#[path = "ids_tests.rs"]
mod tests;
