use super::testing::{fake, http};
use super::*;

#[test]
fn rfc3339_times_parse_in_utc() {
    assert_eq!(parse_utc("1970-01-01T00:00:00Z"), Some(UnixMs(0)));
    assert_eq!(parse_utc("2025-01-01T00:00:00Z"), Some(testing::T0));
    assert_eq!(parse_utc("2015-08-30T12:36:00Z"), Some(UnixMs(1_440_938_160_000)));
    assert_eq!(parse_utc("2024-02-29T23:59:59.250Z"), Some(UnixMs(1_709_251_199_250)));
    assert_eq!(parse_utc("2024-02-29T23:59:59+00:00"), Some(UnixMs(1_709_251_199_000)));
    for bad in ["", "2024-02-29", "2024-13-01T00:00:00Z", "2024-01-01T00:00:00+02:00", "soon"] {
        assert_eq!(parse_utc(bad), None, "{bad}");
    }
}

#[test]
fn forms_are_encoded_and_xml_tags_found() {
    assert_eq!(form(&[("a b", "x+y/z=&"), ("k", "-._*~")]), b"a+b=x%2By%2Fz%3D%26&k=-._*%7E");
    let xml = "<R><Code>Denied</Code><Message>a &amp; b &lt;c&gt;</Message></R>";
    assert_eq!(xml_tag(xml, "Code").as_deref(), Some("Denied"));
    assert_eq!(xml_tag(xml, "Message").as_deref(), Some("a & b <c>"));
    assert_eq!(xml_tag(xml, "Absent"), None);
}

#[test]
fn an_env_treats_empty_as_unset() {
    let env = Env::from_pairs([("A", "1"), ("EMPTY", ""), ("HOME", "/home/u")]);
    assert_eq!(env.get("A").as_deref(), Some("1"));
    assert_eq!(env.get("EMPTY"), None);
    assert_eq!(env.get("B"), None);
    assert_eq!(env.home(), Some(PathBuf::from("/home/u")));
}

#[test]
fn an_error_answer_shows_its_code_and_message_but_not_the_rest_of_the_body() {
    let json = Answer {
        status: 400,
        body: Bytes::from(
            r#"{"error":"invalid_grant","error_description":"Bad JWT","echo":"eyJhbGciOiJSUzI1NiJ9.secret"}"#,
        ),
    };
    let shown = describe_error("token endpoint", &json).to_string();
    assert_eq!(shown, "token endpoint: HTTP 400: invalid_grant: Bad JWT");
    let xml = Answer {
        status: 403,
        body: Bytes::from(
            "<ErrorResponse><Error><Code>AccessDenied</Code><Message>Not authorized</Message><Token>SECRET</Token></Error></ErrorResponse>",
        ),
    };
    let shown = describe_error("STS", &xml).to_string();
    assert_eq!(shown, "STS: HTTP 403: AccessDenied: Not authorized");
    let html = Answer { status: 502, body: Bytes::from("<html>SECRET</html>") };
    assert_eq!(describe_error("IMDS", &html).to_string(), "IMDS: HTTP 502");
}

#[tokio::test]
async fn a_request_past_its_deadline_fails_as_a_fetch() {
    // A server that accepts and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/token", listener.local_addr().unwrap());
    let hold = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    let http = http().with_timeout(Duration::from_millis(200));
    let call = Call {
        method: reqwest::Method::GET,
        url: &url,
        headers: vec![("authorization", "Bearer SECRET-TOKEN".to_owned())],
        body: None,
        metadata: true,
        what: "slow endpoint",
    };
    let err = http.call(call).await.unwrap_err();
    let CredentialError::Fetch(message) = &err else { panic!("{err:?}") };
    assert!(message.starts_with("slow endpoint: the request timed out"), "{message}");
    assert!(!message.contains("SECRET") && !message.contains(&url), "{message}");
    hold.abort();
}

#[tokio::test]
async fn an_answer_over_the_limit_is_refused() {
    let server = fake(|_| (200, "x".repeat(MAX_ANSWER + 1))).await;
    let url = format!("{}/big", server.base);
    let call = Call {
        method: reqwest::Method::GET,
        url: &url,
        headers: vec![],
        body: None,
        metadata: false,
        what: "big endpoint",
    };
    let err = http().call(call).await.unwrap_err();
    assert!(err.to_string().contains("over 65536 bytes"), "{err}");
}
