use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

// The one independent SigV4 verifier, shared with the Bedrock fake.
use switchyard_testkit::sigv4::verify;

use super::super::super::testing::{Seen, fake, http};
use super::*;
use crate::util::Secret;

// AWS's SigV4 test suite's credentials and time (aws-sig-v4-test-suite).
const AKID: &str = "AKIDEXAMPLE";
const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
const SUITE_TOKEN: &str = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267";

fn suite_time() -> SystemTime {
    // 2015-08-30T12:36:00Z
    UNIX_EPOCH + Duration::from_secs(1_440_938_160)
}

fn creds(token: Option<&str>) -> AwsCredentials {
    AwsCredentials::new(AKID, SECRET, token.map(Secret::new))
}

fn signed_headers(out: &[(String, String)]) -> Vec<(&str, &str)> {
    out.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// A case from AWS's SigV4 test suite: its name, method, URL, session token,
/// and the expected signed headers and signature.
type Case =
    (&'static str, &'static str, &'static str, Option<&'static str>, &'static str, &'static str);

const SUITE: &[Case] = &[
    (
        "get-vanilla",
        "GET",
        "https://example.amazonaws.com/",
        None,
        "host;x-amz-date",
        "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
    ),
    (
        "post-vanilla",
        "POST",
        "https://example.amazonaws.com/",
        None,
        "host;x-amz-date",
        "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
    ),
    (
        "get-vanilla-query-order-key-case",
        "GET",
        "https://example.amazonaws.com/?Param2=value2&Param1=value1",
        None,
        "host;x-amz-date",
        "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
    ),
    (
        "get-vanilla-with-session-token",
        "GET",
        "https://example.amazonaws.com/",
        Some(SUITE_TOKEN),
        "host;x-amz-date;x-amz-security-token",
        "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8",
    ),
];

#[test]
fn the_aws_test_suite_signatures_are_reproduced() {
    for (name, method, url, token, signed, signature) in SUITE {
        let out = sign(method, url, &[], b"", &creds(*token), "us-east-1", "service", suite_time())
            .unwrap();
        let got = |h: &str| out.iter().find(|(k, _)| k == h).map(|(_, v)| v.as_str());
        let want = format!(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders={signed}, Signature={signature}"
        );
        assert_eq!(got("authorization"), Some(want.as_str()), "{name}");
        assert_eq!(got("x-amz-date"), Some("20150830T123600Z"), "{name}");
        assert_eq!(got("x-amz-security-token"), *token, "{name}");
        assert_eq!(got("x-amz-content-sha256"), None, "{name}");
        // The verifier agrees with the suite too (so it can judge the rest).
        let mut received = vec![("host".to_owned(), "example.amazonaws.com".to_owned())];
        received.extend(out.iter().cloned());
        let target = url.trim_start_matches("https://example.amazonaws.com");
        assert_eq!(
            verify(method, target, &received, b"", SECRET, "us-east-1", "service"),
            Ok(AKID.to_owned()),
            "{name}"
        );
    }
}

/// A fake Bedrock that verifies each request's SigV4 with [`verify`].
async fn verifying_fake(secret: &'static str) -> super::super::super::testing::Server {
    fake(move |seen: Seen| {
        match verify(
            &seen.method,
            &seen.target,
            &seen.headers,
            &seen.body,
            secret,
            "us-east-1",
            "bedrock",
        ) {
            Ok(akid) => (200, akid),
            Err(why) => (403, why),
        }
    })
    .await
}

async fn send(
    url: &str,
    extra: &[(&str, &str)],
    signed: &[(String, String)],
    body: &[u8],
) -> (u16, String) {
    let mut request = http().client.post(url).body(body.to_vec());
    for (k, v) in extra.iter().map(|(k, v)| (*k, *v)).chain(signed_headers(signed)) {
        request = request.header(k, v);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
async fn a_bedrock_request_signed_here_verifies_at_an_independent_fake() {
    let server = verifying_fake(SECRET).await;
    let creds = creds(Some("FwoGZXIvYXdzEXAMPLE+token/=="));
    let body = br#"{"anthropic_version":"bedrock-2023-05-31","messages":[{"role":"user","content":"h\u00e9"}]}"#;
    let extra = [("content-type", "application/json"), ("accept", "application/json")];
    for path in [
        "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/invoke",
        "/model/us.amazon.nova-pro-v1%3A0/converse-stream?b=2&a=1&c=x%20y",
    ] {
        let url = format!("{}{path}", server.base);
        let out =
            sign("POST", &url, &extra, body, &creds, "us-east-1", "bedrock", SystemTime::now())
                .unwrap();
        assert_eq!(send(&url, &extra, &out, body).await, (200, AKID.to_owned()), "{path}");
    }
}

#[tokio::test]
async fn a_byte_changed_after_signing_fails_verification() {
    let server = verifying_fake(SECRET).await;
    let url = format!("{}/model/m/invoke", server.base);
    let creds = creds(None);
    let out =
        sign("POST", &url, &[], b"{\"a\":1}", &creds, "us-east-1", "bedrock", SystemTime::now())
            .unwrap();
    assert_eq!(send(&url, &[], &out, b"{\"a\":2}").await, (403, "signature mismatch".to_owned()));
    // A signed header changed after signing fails too.
    let extra = [("content-type", "application/json")];
    let out = sign("POST", &url, &extra, b"{}", &creds, "us-east-1", "bedrock", SystemTime::now())
        .unwrap();
    let sent = [("content-type", "text/plain")];
    assert_eq!(send(&url, &sent, &out, b"{}").await, (403, "signature mismatch".to_owned()));
    // And the wrong secret.
    let wrong = AwsCredentials::new(AKID, "not-the-secret", None);
    let out =
        sign("POST", &url, &[], b"{}", &wrong, "us-east-1", "bedrock", SystemTime::now()).unwrap();
    assert_eq!(send(&url, &[], &out, b"{}").await, (403, "signature mismatch".to_owned()));
}

#[test]
fn an_unsignable_request_is_refused_without_showing_the_keys() {
    let creds = creds(Some(SUITE_TOKEN));
    for (url, headers, want) in [
        ("not a url", &[][..], "is not a URL"),
        ("unix:/run/socket", &[][..], "not an http(s) URL with a host"),
        ("https://example.amazonaws.com/", &[("bad header", "x")][..], "cannot sign"),
        ("https://example.amazonaws.com/", &[("x-h", "line\nbreak")][..], "cannot sign"),
    ] {
        let err = sign("GET", url, headers, b"", &creds, "us-east-1", "bedrock", suite_time())
            .unwrap_err();
        let CredentialError::Config { source_name, message } = &err else { panic!("{err:?}") };
        assert_eq!(source_name, "SigV4 signing");
        assert!(message.contains(want), "{message}");
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains(SECRET) && !shown.contains(SUITE_TOKEN), "{shown}");
    }
}

#[test]
fn credentials_debug_shows_the_key_id_only() {
    let shown = format!("{:?}", creds(Some(SUITE_TOKEN)));
    assert!(shown.contains(AKID), "{shown}");
    assert!(!shown.contains(SECRET) && !shown.contains(SUITE_TOKEN), "{shown}");
}

/// Every event and span field logged while it is the default, as text.
#[derive(Default, Clone)]
struct Capture(Arc<std::sync::Mutex<String>>);

impl tracing::field::Visit for Capture {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let mut out = self.0.lock().unwrap();
        out.push_str(&format!("{}={value:?}\n", field.name()));
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        span.record(&mut self.clone());
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        values.record(&mut self.clone());
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        event.record(&mut self.clone());
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn signing_logs_nothing_even_at_trace() {
    let capture = Capture::default();
    let out = tracing::subscriber::with_default(capture.clone(), || {
        tracing::trace!(probe = "before");
        let out = sign(
            "GET",
            "https://example.amazonaws.com/",
            &[],
            b"",
            &creds(Some(SUITE_TOKEN)),
            "us-east-1",
            "service",
            suite_time(),
        );
        tracing::trace!(probe = "after");
        out
    });
    assert!(out.is_ok());
    let logged = capture.0.lock().unwrap().clone();
    assert_eq!(
        logged, "probe=\"before\"\nprobe=\"after\"\n",
        "the capture works, and sees only the probes"
    );
}

#[test]
fn s3_is_signed_with_the_bodys_hash_in_a_header_and_its_path_as_sent() {
    use sha2::Digest;
    let creds = creds(None);
    let body = b"{\"recordId\":\"L0000000001\"}\n";
    let url = "https://s3.us-east-1.amazonaws.com/sy-batches/runs/batch%3A1/input.jsonl";
    let out = sign("PUT", url, &[], body, &creds, "us-east-1", "s3", SystemTime::now()).unwrap();
    let hash = out.iter().find(|(k, _)| k == "x-amz-content-sha256").map(|(_, v)| v.clone());
    let expected: String = sha2::Sha256::digest(body).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hash, Some(expected));
    let auth = out.iter().find(|(k, _)| k == "authorization").map(|(_, v)| v.as_str());
    assert!(auth.is_some_and(|a| a.contains("/us-east-1/s3/aws4_request")), "{auth:?}");
    assert!(auth.is_some_and(|a| a.contains("x-amz-content-sha256")), "signed: {auth:?}");
    // Bedrock's requests carry no such header.
    let out =
        sign("POST", url, &[], body, &creds, "us-east-1", "bedrock", SystemTime::now()).unwrap();
    assert!(out.iter().all(|(k, _)| k != "x-amz-content-sha256"));
}
