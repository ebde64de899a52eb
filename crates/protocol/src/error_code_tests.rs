use std::collections::HashSet;

use super::*;

#[test]
fn every_code_has_a_distinct_wire_string_that_reads_back() {
    let mut seen = HashSet::new();
    for &code in ErrorCode::ALL {
        let s = code.as_str();
        assert!(seen.insert(s), "{code:?}: {s:?} is another code's string too");
        assert!(
            !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
            "{code:?}: {s:?} is not snake_case"
        );
        assert_eq!(ErrorCode::from_wire(s), Some(code));
        assert_eq!(code.to_string(), s);
        assert_eq!(serde_json::to_value(code).unwrap(), serde_json::Value::from(s));
    }
    assert_eq!(ErrorCode::from_wire("upstream_unavailable"), None, "not one of ours");
}

/// The statuses and kinds the call sites answered with before the codes were an
/// enum: a change here changes what clients see.
#[test]
fn default_statuses_and_kinds_are_what_the_call_sites_used() {
    use ErrorKind as K;
    let expected: &[(&str, u16, ErrorKind)] = &[
        ("invalid_request", 400, K::InvalidRequest),
        ("json_too_deep", 400, K::InvalidRequest),
        ("invalid_model", 400, K::InvalidRequest),
        ("model_required", 400, K::InvalidRequest),
        ("capability_missing", 400, K::InvalidRequest),
        ("context_window_exceeded", 400, K::InvalidRequest),
        ("no_candidate", 400, K::InvalidRequest),
        ("unsupported_tool", 400, K::InvalidRequest),
        ("invalid_project", 400, K::InvalidRequest),
        ("stream_form_unsupported", 400, K::InvalidRequest),
        ("unsupported_request", 400, K::InvalidRequest),
        ("wrong_model_kind", 400, K::InvalidRequest),
        ("unsupported_compaction", 400, K::InvalidRequest),
        ("unsupported_event", 400, K::InvalidRequest),
        ("previous_response_not_found", 400, K::InvalidRequest),
        ("upstream_invalid_request", 400, K::InvalidRequest),
        ("missing_api_key", 401, K::Authentication),
        ("invalid_api_key", 401, K::Authentication),
        ("scope_not_routed", 403, K::Permission),
        ("project_forbidden", 403, K::Permission),
        ("authz_denied", 403, K::Permission),
        ("governance_denied", 403, K::Permission),
        ("admin_required", 403, K::Permission),
        ("metrics_forbidden", 403, K::Permission),
        ("host_not_allowed", 403, K::Permission),
        ("origin_not_allowed", 403, K::Permission),
        ("model_not_found", 404, K::NotFound),
        ("model_retired", 404, K::NotFound),
        ("no_route", 404, K::NotFound),
        ("not_found", 404, K::NotFound),
        ("conflict", 409, K::InvalidRequest),
        ("request_too_large", 413, K::RequestTooLarge),
        ("websocket_required", 426, K::InvalidRequest),
        ("rate_limited", 429, K::RateLimit),
        ("budget_exceeded", 402, K::RateLimit),
        ("upstream_rate_limited", 429, K::RateLimit),
        ("client_closed_request", 499, K::InvalidRequest),
        ("internal_error", 500, K::Internal),
        ("seal_failed", 500, K::Upstream),
        ("compaction_unavailable", 501, K::InvalidRequest),
        ("upstream_error", 502, K::Upstream),
        ("upstream_unreachable", 502, K::Upstream),
        ("upstream_malformed", 502, K::Upstream),
        ("upstream_auth_failed", 502, K::Upstream),
        ("compaction_failed", 502, K::Upstream),
        ("invalid_structured_output", 502, K::Upstream),
        ("upstream_overloaded", 503, K::Overloaded),
        ("provider_unavailable", 503, K::Overloaded),
        ("circuit_open", 503, K::Overloaded),
        ("auth_unavailable", 503, K::Overloaded),
        ("storage_unavailable", 503, K::Overloaded),
        ("limits_unavailable", 503, K::Overloaded),
        ("storage_disabled", 503, K::Overloaded),
        ("byok_disabled", 503, K::Overloaded),
        ("upstream_timeout", 504, K::Timeout),
        ("deadline_exceeded", 504, K::Timeout),
        ("stream_idle_timeout", 504, K::Timeout),
    ];
    assert_eq!(expected.len(), ErrorCode::ALL.len(), "a code without a pinned status");
    for &(wire, status, kind) in expected {
        let code = ErrorCode::from_wire(wire).unwrap_or_else(|| panic!("no code {wire:?}"));
        assert_eq!((code.default_status(), code.kind()), (status, kind), "{wire}");
    }
}
