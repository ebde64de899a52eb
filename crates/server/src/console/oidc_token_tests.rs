use super::*;
use switchyard_testkit::oidc::{FakeIdp, Fault, IdpConfig, IdpUser};

const NONCE: &str = "nonce-0123";

fn user() -> IdpUser {
    IdpUser::new("ada", "ada@example.com", &["ops", "staff"])
}

async fn idp() -> FakeIdp {
    FakeIdp::start(IdpConfig::default()).await.unwrap()
}

fn keys(idp: &FakeIdp) -> Vec<Jwk> {
    parse_jwks(idp.jwks_document().to_string().as_bytes()).unwrap()
}

fn expect(idp: &FakeIdp) -> Expect<'_> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    Expect {
        issuer: idp.issuer(),
        client_id: "switchyard-console",
        nonce: NONCE,
        now_s: i64::try_from(now).unwrap(),
    }
}

use std::time::{SystemTime, UNIX_EPOCH};

#[tokio::test]
async fn a_good_token_verifies_with_rs256_and_es256() {
    let idp = idp().await;
    let token = idp.id_token(&user(), Some(NONCE));
    let claims = verify(&token, &keys(&idp), &expect(&idp)).unwrap();
    assert_eq!(claims["sub"], "ada");
    // Rotated to ES256: the old keys do not know it, the new JWKS does.
    let old = keys(&idp);
    idp.rotate_to_es256().unwrap();
    let token = idp.id_token(&user(), Some(NONCE));
    assert!(token.starts_with(&URL_SAFE_NO_PAD.encode(r#"{"alg":"ES256""#)[..10]));
    assert_eq!(verify(&token, &old, &expect(&idp)), Err(TokenError::UnknownKey));
    let now = keys(&idp);
    assert_eq!(now.len(), 2, "{now:?}");
    assert_eq!(verify(&token, &now, &expect(&idp)).unwrap()["sub"], "ada");
}

#[tokio::test]
async fn every_fault_is_refused() {
    let idp = idp().await;
    let keys = keys(&idp);
    for (fault, why) in [
        (Fault::WrongAudience, "another client (aud)"),
        (Fault::WrongIssuer, "another issuer"),
        (Fault::Expired, "expired"),
        (Fault::IssuedInTheFuture, "in the future"),
        (Fault::BadSignature, "signature does not verify"),
        (Fault::MissingNonce, "nonce"),
        (Fault::WrongNonce, "nonce"),
        (Fault::Unsigned, "only RS256 and ES256"),
        (Fault::SeveralAudiencesNoAzp, "no azp"),
    ] {
        idp.set_fault(Some(fault));
        let token = idp.id_token(&user(), Some(NONCE));
        match verify(&token, &keys, &expect(&idp)) {
            Err(TokenError::Invalid(m)) => assert!(m.contains(why), "{fault:?}: {m}"),
            other => panic!("{fault:?}: {other:?}"),
        }
    }
    idp.set_fault(Some(Fault::UnknownKey));
    let token = idp.id_token(&user(), Some(NONCE));
    assert_eq!(verify(&token, &keys, &expect(&idp)), Err(TokenError::UnknownKey));
}

#[tokio::test]
async fn audiences_and_the_authorized_party_are_checked() {
    let idp = idp().await;
    let keys = keys(&idp);
    let mut u = user();
    // Several audiences with this client as the authorized party: accepted.
    u.extra.insert("aud".into(), serde_json::json!(["switchyard-console", "api"]));
    u.extra.insert("azp".into(), serde_json::json!("switchyard-console"));
    assert!(verify(&idp.id_token(&u, Some(NONCE)), &keys, &expect(&idp)).is_ok());
    // An authorized party that is another client: refused, even with one audience.
    let mut u = user();
    u.extra.insert("azp".into(), serde_json::json!("another"));
    let refused = verify(&idp.id_token(&u, Some(NONCE)), &keys, &expect(&idp));
    assert!(matches!(refused, Err(TokenError::Invalid(m)) if m.contains("azp")));
}

#[tokio::test]
async fn forged_and_malformed_tokens_are_refused() {
    let idp = idp().await;
    let keys = keys(&idp);
    let good = idp.id_token(&user(), Some(NONCE));
    let parts: Vec<&str> = good.split('.').collect();
    // Claims swapped under a valid signature (an admin's groups).
    let mut claims: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    claims["groups"] = serde_json::json!(["admins"]);
    let forged =
        format!("{}.{}.{}", parts[0], URL_SAFE_NO_PAD.encode(claims.to_string()), parts[2]);
    assert!(matches!(verify(&forged, &keys, &expect(&idp)), Err(TokenError::Invalid(_))));
    // HS256 "signed" with the public key's bytes: the classic confusion.
    let hs = format!(
        "{}.{}.{}",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"HS256","kid":"rsa-1"}"#),
        parts[1],
        parts[2]
    );
    assert!(
        matches!(verify(&hs, &keys, &expect(&idp)), Err(TokenError::Invalid(m)) if m.contains("HS256"))
    );
    for bad in ["", "a.b", "a.b.c.d", "!!.!!.!!", &format!("{}..{}", parts[0], parts[2])] {
        assert!(matches!(verify(bad, &keys, &expect(&idp)), Err(TokenError::Invalid(_))), "{bad}");
    }
}

#[test]
fn jwks_keeps_signing_keys_it_can_use() {
    let doc = serde_json::json!({"keys": [
        {"kty": "RSA", "use": "enc", "kid": "enc", "n": "AQAB", "e": "AQAB"},
        {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
        {"kty": "EC", "crv": "P-384", "kid": "p384", "x": "AA", "y": "AA"},
        {"kty": "RSA", "kid": "sig", "n": "AQAB", "e": "AQAB"},
    ]});
    let keys = parse_jwks(doc.to_string().as_bytes()).unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].kid.as_deref(), Some("sig"));
    assert!(parse_jwks(b"{}").is_err());
    assert!(parse_jwks(b"not json").is_err());
}

fn spec(claim: &str) -> OidcSpec {
    OidcSpec {
        issuer: "https://id.example.com".into(),
        client_id: "gw".into(),
        client_secret: None,
        redirect_url: None,
        scope: "openid".into(),
        group_claim: claim.into(),
        admin_groups: vec!["admins".into(), "root@example.com".into()],
        viewer_groups: vec!["staff".into()],
        display_name: "SSO".into(),
    }
}

#[test]
fn groups_map_to_roles_admin_first() {
    let claims = |v: serde_json::Value| v.as_object().unwrap().clone();
    let s = spec("groups");
    let c = claims(serde_json::json!({"groups": ["staff", "admins"]}));
    assert_eq!(role(&groups(&c, "groups"), &s), Some(CallerRole::Admin));
    let c = claims(serde_json::json!({"groups": "staff"}));
    assert_eq!(role(&groups(&c, "groups"), &s), Some(CallerRole::Viewer));
    let c = claims(serde_json::json!({"groups": ["other"], "roles": ["admins"]}));
    assert_eq!(role(&groups(&c, "groups"), &s), None);
    assert_eq!(role(&groups(&c, "roles"), &s), Some(CallerRole::Admin));
    let c = claims(serde_json::json!({"groups": [1, {"x": "admins"}]}));
    assert_eq!(role(&groups(&c, "groups"), &s), None);
    // By email: only a verified address counts.
    let verified = claims(serde_json::json!({"email": "root@example.com", "email_verified": true}));
    assert_eq!(role(&groups(&verified, "email"), &spec("email")), Some(CallerRole::Admin));
    let unverified = claims(serde_json::json!({"email": "root@example.com"}));
    assert_eq!(role(&groups(&unverified, "email"), &spec("email")), None);
    let c = claims(serde_json::json!({"email": "", "preferred_username": "ada", "name": "Ada"}));
    assert_eq!(display_name(&c).as_deref(), Some("ada"));
}
