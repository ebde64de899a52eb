//! Gateway API key check. The key is accepted as `Authorization: Bearer`,
//! `x-api-key` (Anthropic SDKs) or `x-goog-api-key` (Google SDKs), so every vendor
//! SDK works unchanged. Comparison is constant-time. An empty key list leaves the
//! gateway open (logged as a warning at start).

use axum::http::HeaderMap;
use switchyard_core::GatewayError;
use switchyard_core::util::Secret;
use switchyard_protocol::ErrorKind;

/// The key the client presented, from whichever header carries it.
pub fn presented(headers: &HeaderMap) -> Option<&str> {
    if let Some(v) = headers.get("authorization").and_then(|v| v.to_str().ok()) {
        let v = v.trim();
        let token = v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")).unwrap_or(v);
        return Some(token.trim());
    }
    ["x-api-key", "x-goog-api-key"]
        .iter()
        .find_map(|h| headers.get(*h).and_then(|v| v.to_str().ok()))
        .map(str::trim)
}

/// Check the presented key. Returns the key's visible prefix for the record.
pub fn check(headers: &HeaderMap, keys: &[Secret]) -> Result<Option<String>, GatewayError> {
    let presented = presented(headers);
    let prefix = presented.filter(|k| k.len() >= 16).map(|k| k.chars().take(8).collect());
    if keys.is_empty() {
        return Ok(prefix);
    }
    let Some(key) = presented.filter(|k| !k.is_empty()) else {
        return Err(GatewayError::new(
            401,
            ErrorKind::Authentication,
            "missing_api_key",
            "no API key: send Authorization: Bearer <key>, x-api-key or x-goog-api-key",
        ));
    };
    // Check every key (no early exit) so timing does not reveal which one matched.
    let mut ok = false;
    for k in keys {
        ok |= k.matches(key.as_bytes());
    }
    if ok {
        Ok(prefix)
    } else {
        Err(GatewayError::new(401, ErrorKind::Authentication, "invalid_api_key", "invalid API key"))
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
    fn accepts_all_three_headers_and_refuses_others() {
        let keys = vec![Secret::new("sk-gw-1234567890abcdef")];
        for (name, v) in [
            ("authorization", "Bearer sk-gw-1234567890abcdef"),
            ("x-api-key", "sk-gw-1234567890abcdef"),
            ("x-goog-api-key", "sk-gw-1234567890abcdef"),
        ] {
            assert_eq!(check(&h(name, v), &keys).unwrap().as_deref(), Some("sk-gw-12"), "{name}");
        }
        assert_eq!(check(&h("x-api-key", "wrong"), &keys).unwrap_err().status(), 401);
        assert_eq!(check(&HeaderMap::new(), &keys).unwrap_err().code(), "missing_api_key");
        assert!(check(&HeaderMap::new(), &[]).is_ok(), "no keys configured: open");
    }
}
