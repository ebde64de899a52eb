use super::*;

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(*k, HeaderValue::from_str(v).unwrap());
    }
    h
}

#[test]
fn the_session_cookie_is_found_among_others() {
    let h = headers(&[("cookie", "a=1; switchyard_console=sys_abc ; b=2")]);
    assert_eq!(cookie(&h).as_deref(), Some("sys_abc"));
    let h = headers(&[("cookie", "a=1"), ("cookie", "switchyard_console=sys_x")]);
    assert_eq!(cookie(&h).as_deref(), Some("sys_x"));
    assert_eq!(cookie(&headers(&[("cookie", "switchyard_console_other=x")])), None);
    assert_eq!(cookie(&headers(&[("cookie", "switchyard_console=")])), None);
}

#[test]
fn the_cookie_is_http_only_strict_and_secure_behind_tls() {
    let plain = set_cookie(&HeaderMap::new(), "sys_t", 60);
    let plain = plain.to_str().unwrap();
    assert!(plain.starts_with("switchyard_console=sys_t;"), "{plain}");
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/console", "Max-Age=60"] {
        assert!(plain.contains(flag), "{plain} lacks {flag}");
    }
    assert!(!plain.contains("Secure"), "{plain}");
    let tls = set_cookie(&headers(&[("x-forwarded-proto", "https")]), "sys_t", 60);
    assert!(tls.to_str().unwrap().ends_with("; Secure"));
    let cleared = clear_cookie(&headers(&[("x-forwarded-proto", "HTTPS, http")]));
    assert!(cleared.to_str().unwrap().contains("Max-Age=0"));
    assert!(cleared.to_str().unwrap().ends_with("; Secure"));
}

#[test]
fn writes_come_from_the_consoles_own_origin() {
    let ok = headers(&[("host", "gw.example:8080"), ("origin", "https://gw.example:8080")]);
    assert!(same_origin(&ok).is_ok());
    assert!(
        same_origin(&headers(&[("host", "gw.example")])).is_ok(),
        "no Origin: not a browser's cross-site form"
    );
    for origin in
        ["https://evil.example", "null", "https://gw.example:8080.evil", "gw.example:8080"]
    {
        let h = headers(&[("host", "gw.example:8080"), ("origin", origin)]);
        assert!(same_origin(&h).is_err(), "{origin}");
    }
}
