#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

fn hosts() -> Vec<String> {
    vec!["gateway.internal".to_owned()]
}

fn origins() -> Vec<String> {
    vec!["https://app.example.com".to_owned(), "http://localhost:3000".to_owned()]
}

fn verdict(host: Option<&str>, origin: Option<&str>, upgrade: bool) -> Verdict {
    judge(host.map(str::as_bytes), origin.map(str::as_bytes), upgrade, &hosts(), &origins())
}

#[test]
fn host_parts_drop_the_port_brackets_and_a_trailing_dot() {
    for (value, host) in [
        ("127.0.0.1:8080", "127.0.0.1"),
        ("127.0.0.1", "127.0.0.1"),
        ("[::1]:8080", "::1"),
        ("[::1]", "::1"),
        ("localhost.:8080", "localhost"),
        ("Example.COM:80", "Example.COM"),
        ("", ""),
    ] {
        assert_eq!(host_part(value.as_bytes()), host.as_bytes(), "{value}");
    }
}

#[test]
fn ip_addresses_and_localhost_cannot_be_rebound() {
    for host in ["127.0.0.1", "10.1.2.3", "0.0.0.0", "::1", "fe80::1", "LocalHost"] {
        assert!(is_literal_or_localhost(host.as_bytes()), "{host}");
    }
    for host in ["evil.example", "localhost.evil.example", "127.0.0.1.nip.io", "", "1.2.3"] {
        assert!(!is_literal_or_localhost(host.as_bytes()), "{host}");
    }
}

#[test]
fn local_clients_without_an_origin_pass_untouched() {
    for host in [None, Some("127.0.0.1:8080"), Some("localhost:8080"), Some("[::1]:8080")] {
        assert_eq!(verdict(host, None, false), Verdict::Pass, "{host:?}");
        assert_eq!(verdict(host, None, true), Verdict::Pass, "{host:?}");
        assert!(obviously_local(host.map(str::as_bytes), false), "{host:?}");
    }
    assert!(!obviously_local(Some(b"127.0.0.1"), true), "an Origin is looked at");
    assert!(!obviously_local(Some(b"evil.example"), false), "a name is looked at");
}

#[test]
fn a_name_must_be_allowed_while_the_gateway_is_open() {
    assert_eq!(
        verdict(Some("evil.example:8080"), None, false),
        Verdict::RefuseIfOpen(Refusal::Host)
    );
    assert_eq!(verdict(Some("Gateway.Internal:8080"), None, false), Verdict::Pass);
    assert_eq!(verdict(Some("gateway.internal."), None, false), Verdict::Pass);
    assert_eq!(
        verdict(Some("gateway.internal.evil.example"), None, false),
        Verdict::RefuseIfOpen(Refusal::Host)
    );
}

#[test]
fn a_foreign_origin_is_refused_while_open_and_on_every_upgrade() {
    let local = Some("127.0.0.1:8080");
    assert_eq!(
        verdict(local, Some("https://evil.example"), false),
        Verdict::RefuseIfOpen(Refusal::Origin)
    );
    assert_eq!(
        verdict(local, Some("https://evil.example"), true),
        Verdict::Refuse(Refusal::UpgradeOrigin)
    );
    assert_eq!(verdict(local, Some("null"), true), Verdict::Refuse(Refusal::UpgradeOrigin));
    // Rebinding: the page's own (foreign) origin, upgrading, at a rebound name.
    assert_eq!(
        verdict(Some("evil.example:8080"), Some("http://evil.example:8080"), true),
        Verdict::Refuse(Refusal::UpgradeOrigin)
    );
    for allowed in ["https://app.example.com", "HTTP://LOCALHOST:3000"] {
        assert_eq!(verdict(local, Some(allowed), false), Verdict::Pass, "{allowed}");
        assert_eq!(verdict(local, Some(allowed), true), Verdict::Pass, "{allowed}");
    }
    // A prefix or another port is another origin.
    for other in ["https://app.example.com.evil.example", "http://localhost:3001"] {
        assert_eq!(verdict(local, Some(other), true), Verdict::Refuse(Refusal::UpgradeOrigin));
    }
}

#[test]
fn an_allowed_origin_does_not_excuse_an_unknown_host() {
    assert_eq!(
        verdict(Some("evil.example"), Some("https://app.example.com"), false),
        Verdict::RefuseIfOpen(Refusal::Host)
    );
}

#[test]
fn with_nothing_configured_no_browser_origin_is_allowed() {
    let v = judge(Some(b"127.0.0.1"), Some(b"http://localhost:3000"), true, &[], &[]);
    assert_eq!(v, Verdict::Refuse(Refusal::UpgradeOrigin));
    let v = judge(Some(b"localhost"), Some(b"http://localhost:3000"), false, &[], &[]);
    assert_eq!(v, Verdict::RefuseIfOpen(Refusal::Origin));
}
