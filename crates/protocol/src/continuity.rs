//! What an upstream needs to continue from one of its own turns, carried by the
//! client between requests: Anthropic thinking signatures and redacted thinking.
//!
//! Client formats with a field for opaque reasoning state (the Responses API's
//! `encrypted_content`) get it sealed by the gateway, with the [`Seal`] the caller
//! provides (no keys live here: sealing is the caller's), bound to the family that
//! issued it; the parser opens it when the item comes back. A token that does not
//! open (another gateway's, or a provider's own) is left to the format's usual
//! rules.
//!
//! A compaction summary ([`crate::compaction`]) is sealed the same way, under a kind
//! of its own: a reasoning token never opens as a summary, nor a summary as reasoning.

use serde::{Deserialize, Serialize};

use crate::Part;

/// Authenticated encryption of continuation data, provided by the embedding
/// gateway (keyed by its secret). `open` returns `None` for anything it did not
/// seal or that was altered.
pub trait Seal: Send + Sync {
    /// `plain`, encrypted and authenticated, as text that can go in a JSON string.
    /// `None` when sealing fails: the answer then carries no token for it.
    fn seal(&self, plain: &[u8]) -> Option<String>;
    /// The plaintext of a token this seal made; `None` for any other token.
    fn open(&self, token: &str) -> Option<Vec<u8>>;
}

impl std::fmt::Debug for dyn Seal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Seal")
    }
}

/// The family of upstreams a continuation belongs to.
const ANTHROPIC: &str = "anthropic";

/// Separates a family's name from its reasoning token in a tagged signature.
/// Anthropic's signatures are base64 and OpenAI's `encrypted_content` is too,
/// so neither can contain it: an untagged signature is Anthropic's.
const TAG: char = ':';

/// A thinking signature standing for another family's encrypted reasoning: the
/// canonical [`Part::Thinking`] has one signature field, which every encoder
/// before the Responses wire read as Anthropic's. Rather than a new field that
/// every wire would have to learn about, the issuing wire's name is put in front
/// of the token (`openai-responses:gAAAA…`), so the provenance travels with the
/// signature through every client format (an Anthropic client's `signature`, a
/// sealed `encrypted_content`, the gateway's continuity store) and a wire gives
/// it back only to the family that wrote it ([`tagged_reasoning`]).
pub fn tag_reasoning(family: &str, token: &str) -> String {
    format!("{family}{TAG}{token}")
}

/// The token of a signature [`tag_reasoning`] tagged with `family`; `None` for
/// another family's (an Anthropic signature included).
pub fn tagged_reasoning<'a>(signature: &'a str, family: &str) -> Option<&'a str> {
    signature.strip_prefix(family)?.strip_prefix(TAG).filter(|t| !t.is_empty())
}

/// Whether a signature is Anthropic's own (untagged and not empty): what
/// Anthropic's API (and Claude on Bedrock and Vertex AI) takes back.
pub fn is_anthropic_signature(signature: &str) -> bool {
    !signature.is_empty() && !signature.contains(TAG)
}

/// The family a signature belongs to: its tag, else Anthropic.
fn signature_family(signature: &str) -> &str {
    match signature.split_once(TAG) {
        Some((family, _)) => family,
        None => ANTHROPIC,
    }
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Payload {
    Thinking {
        family: String,
        text: String,
        signature: String,
    },
    Redacted {
        family: String,
        data: String,
    },
    /// A compaction summary: plain text any family can continue from.
    Compaction {
        summary: String,
    },
}

/// The sealed token for a part that carries continuation data (a signed thinking
/// block, redacted thinking); `None` for any other part, or when sealing failed.
pub fn seal_part(seal: &dyn Seal, part: &Part) -> Option<String> {
    let payload = match part {
        Part::Thinking { text, signature: Some(signature) } => Payload::Thinking {
            family: signature_family(signature).to_owned(),
            text: text.clone(),
            signature: signature.clone(),
        },
        Part::RedactedThinking { data } => {
            Payload::Redacted { family: ANTHROPIC.to_owned(), data: data.clone() }
        }
        _ => return None,
    };
    seal.seal(&serde_json::to_vec(&payload).ok()?)
}

/// The part a token sealed by [`seal_part`] stands for; `None` if it does not
/// open, or names a family this build does not know.
pub fn open_part(seal: &dyn Seal, token: &str) -> Option<Part> {
    let plain = seal.open(token)?;
    match serde_json::from_slice::<Payload>(&plain).ok()? {
        // The tag is the family, and the signature keeps it.
        Payload::Thinking { family, text, signature } if family == signature_family(&signature) => {
            Some(Part::Thinking { text, signature: Some(signature) })
        }
        Payload::Redacted { family, data } if family == ANTHROPIC => {
            Some(Part::RedactedThinking { data })
        }
        _ => None,
    }
}

/// The sealed token for a compaction summary (a `compaction` item's
/// `encrypted_content`); `None` when sealing failed.
pub fn seal_summary(seal: &dyn Seal, summary: &str) -> Option<String> {
    let payload = Payload::Compaction { summary: summary.to_owned() };
    seal.seal(&serde_json::to_vec(&payload).ok()?)
}

/// The summary a token sealed by [`seal_summary`] stands for; `None` for anything
/// else (another seal's token, a provider's, an altered one, sealed reasoning).
pub fn open_summary(seal: &dyn Seal, token: &str) -> Option<String> {
    match serde_json::from_slice::<Payload>(&seal.open(token)?).ok()? {
        Payload::Compaction { summary } => Some(summary),
        _ => None,
    }
}

/// A [`Seal`] for tests: reversible, recognisable, not secret.
#[cfg(test)]
pub(crate) struct TestSeal;

#[cfg(test)]
impl Seal for TestSeal {
    fn seal(&self, plain: &[u8]) -> Option<String> {
        Some(format!("test-seal:{}", String::from_utf8_lossy(plain)))
    }
    fn open(&self, token: &str) -> Option<Vec<u8>> {
        token.strip_prefix("test-seal:").map(|s| s.as_bytes().to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_thinking_and_redacted_thinking_round_trip() {
        let parts = [
            Part::Thinking { text: "step by step".into(), signature: Some("sig==".into()) },
            Part::RedactedThinking { data: "opaque".into() },
        ];
        for part in parts {
            let token = seal_part(&TestSeal, &part).unwrap();
            assert_eq!(open_part(&TestSeal, &token), Some(part));
        }
        let unsigned = Part::Thinking { text: "t".into(), signature: None };
        assert_eq!(seal_part(&TestSeal, &unsigned), None, "nothing to continue from");
        assert_eq!(open_part(&TestSeal, "gAAAAB-an-openai-token"), None);
        assert_eq!(
            open_part(
                &TestSeal,
                r#"test-seal:{"kind":"thinking","family":"other","text":"t","signature":"s"}"#
            ),
            None
        );
    }

    #[test]
    fn tagged_reasoning_goes_back_only_to_its_family() {
        let sig = tag_reasoning("openai-responses", "gAAAAB==");
        assert_eq!(tagged_reasoning(&sig, "openai-responses"), Some("gAAAAB=="));
        assert_eq!(tagged_reasoning(&sig, "azure-responses"), None);
        assert_eq!(tagged_reasoning("EqQBCkYIBxgCKkD+/=", "openai-responses"), None);
        assert!(!is_anthropic_signature(&sig));
        assert!(is_anthropic_signature("EqQBCkYIBxgCKkD+/="));
        assert!(!is_anthropic_signature(""));
        // Sealed for a Responses client and opened, it keeps its family.
        let part = Part::Thinking { text: "t".into(), signature: Some(sig.clone()) };
        let token = seal_part(&TestSeal, &part).unwrap();
        assert!(token.contains(r#""family":"openai-responses""#));
        assert_eq!(open_part(&TestSeal, &token), Some(part));
        // A payload whose family does not match its signature's tag is refused.
        let forged = r#"test-seal:{"kind":"thinking","family":"anthropic","text":"t","signature":"openai-responses:x"}"#;
        assert_eq!(open_part(&TestSeal, forged), None);
    }

    #[test]
    fn summaries_round_trip_and_never_pass_for_reasoning() {
        let token = seal_summary(&TestSeal, "the task, the state").unwrap();
        assert_eq!(open_summary(&TestSeal, &token).as_deref(), Some("the task, the state"));
        assert_eq!(open_part(&TestSeal, &token), None, "a summary is not reasoning");
        let thinking = Part::Thinking { text: "t".into(), signature: Some("s".into()) };
        let reasoning = seal_part(&TestSeal, &thinking).unwrap();
        assert_eq!(open_summary(&TestSeal, &reasoning), None, "reasoning is not a summary");
        assert_eq!(open_summary(&TestSeal, "gAAAAB-an-openai-compaction"), None);
    }
}
