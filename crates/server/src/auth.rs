//! Where the gateway key is read from: `Authorization: Bearer`, `x-api-key`
//! (Anthropic SDKs) or `x-goog-api-key` (Google SDKs), so every vendor SDK works
//! unchanged. What the key means is [`crate::identity`]'s job.

use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderMap, HeaderName};

/// The key the client presented, from whichever header carries it.
pub fn presented(headers: &HeaderMap) -> Option<&str> {
    if let Some(v) = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        let v = v.trim();
        let token = v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")).unwrap_or(v);
        return Some(token.trim());
    }
    // Names, not strings: a lookup by `&str` parses the name each time.
    const KEY_HEADERS: [HeaderName; 2] =
        [HeaderName::from_static("x-api-key"), HeaderName::from_static("x-goog-api-key")];
    KEY_HEADERS.iter().find_map(|h| headers.get(h).and_then(|v| v.to_str().ok())).map(str::trim)
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
}
