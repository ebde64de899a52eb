//! Where the gateway key is read from: `Authorization: Bearer`, `x-api-key`
//! (Anthropic SDKs) or `x-goog-api-key` (Google SDKs), so every vendor SDK works
//! unchanged. What the key means is [`crate::identity`]'s job.

use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderMap, HeaderName};

/// The key the client presented, from whichever header carries it. Every
/// request path (HTTP, Gemini's, the WebSocket handshake) reads it here.
pub fn presented(headers: &HeaderMap) -> Option<&str> {
    if let Some(v) = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        return Some(bearer_token(v));
    }
    // Names, not strings: a lookup by `&str` parses the name each time.
    const KEY_HEADERS: [HeaderName; 2] =
        [HeaderName::from_static("x-api-key"), HeaderName::from_static("x-goog-api-key")];
    KEY_HEADERS.iter().find_map(|h| headers.get(h).and_then(|v| v.to_str().ok())).map(str::trim)
}

/// The token of an `Authorization` value: after `Bearer` in any case (an
/// auth scheme is case-insensitive, RFC 9110 §11.1) and the whitespace after
/// it; a value with no `Bearer` scheme is taken whole, as it always was.
fn bearer_token(value: &str) -> &str {
    let v = value.trim();
    match v.split_once([' ', '\t']) {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim(),
        _ => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(name: &'static str, v: &'static str) -> HeaderMap {
        let mut m = HeaderMap::new();
        m.insert(name, v.parse().unwrap());
        m
    }

    #[test]
    fn reads_all_three_headers() {
        for (name, v) in [
            ("authorization", "Bearer sk-gw-1234567890abcdef"),
            ("x-api-key", "sk-gw-1234567890abcdef"),
            ("x-goog-api-key", "sk-gw-1234567890abcdef"),
        ] {
            assert_eq!(presented(&h(name, v)), Some("sk-gw-1234567890abcdef"), "{name}");
        }
        assert_eq!(presented(&HeaderMap::new()), None);
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        for v in [
            "Bearer sk-gw-1",
            "bearer sk-gw-1",
            "BEARER sk-gw-1",
            "bEaReR   sk-gw-1 ",
            "Bearer\tsk-gw-1",
            "sk-gw-1",
        ] {
            assert_eq!(presented(&h("authorization", v)), Some("sk-gw-1"), "{v:?}");
        }
        // Not the bearer scheme: the value as it is (and so an unknown key).
        assert_eq!(
            presented(&h("authorization", "Basic c2stZ3ctMQ==")),
            Some("Basic c2stZ3ctMQ==")
        );
        assert_eq!(presented(&h("authorization", "Bearersk-gw-1")), Some("Bearersk-gw-1"));
    }
}
