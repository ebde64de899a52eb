#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use switchyard_protocol::Auth;

use super::{AwsSource, CloudAuth, CloudSource, GoogleSource};
use crate::client::ClientOptions;
use crate::credentials::{CredentialError, Env};

const SIGV4: Auth = Auth::SigV4 { service: "bedrock" };

fn build(
    auth: Auth,
    source: &CloudSource,
    region: Option<&str>,
    env: &Env,
) -> Result<CloudAuth, CredentialError> {
    CloudAuth::build(auth, source, region, env, &ClientOptions::default())
}

#[test]
fn the_source_must_fit_the_wire() {
    let env = Env::from_pairs([("SA", "{}")]);
    let aws = CloudSource::Aws(AwsSource::DefaultChain);
    let google = CloudSource::Google(GoogleSource::Env("SA".into()));
    let cases = [
        (Auth::Bearer, &aws, "credentials.aws: the wire takes an API key"),
        (Auth::Header("x-api-key"), &google, "credentials.google: the wire takes an API key"),
        (SIGV4, &google, "credentials.google: the wire is signed with AWS SigV4"),
        (Auth::OAuthToken, &aws, "credentials.aws: the wire takes a Google access token"),
    ];
    for (auth, source, want) in cases {
        let err = build(auth, source, None, &env).unwrap_err().to_string();
        assert!(err.starts_with(want), "{auth:?}: {err}");
    }
}

#[tokio::test]
async fn aws_keys_from_the_environment_sign_in_the_providers_region() {
    let env = Env::from_pairs([
        ("AWS_ACCESS_KEY_ID", "AKIDPROVIDER"),
        ("AWS_SECRET_ACCESS_KEY", "provider-secret"),
        ("AWS_REGION", "us-west-2"),
    ]);
    let aws = CloudSource::Aws(AwsSource::DefaultChain);
    let auth = build(SIGV4, &aws, Some("eu-west-3"), &env).unwrap();
    assert_eq!(auth.region(), Some("eu-west-3"), "the provider's region wins");
    assert_eq!(auth.describe(), "AWS SigV4 (environment variables, eu-west-3)");
    let url = "https://bedrock-runtime.eu-west-3.amazonaws.com/model/m/converse";
    let headers =
        auth.headers("POST", url, &[("content-type", "application/json")], b"{}").await.unwrap();
    let authorization = &headers.iter().find(|(k, _)| k == "authorization").unwrap().1;
    assert!(
        authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDPROVIDER/")
            && authorization.contains("/eu-west-3/bedrock/aws4_request"),
        "{authorization}"
    );
    assert!(!format!("{auth:?}").contains("provider-secret"));
    // Without a region of its own, the chain's.
    let auth = build(SIGV4, &aws, None, &env).unwrap();
    assert_eq!(auth.region(), Some("us-west-2"));
}

#[tokio::test]
async fn a_bedrock_api_key_in_the_environment_is_a_bearer_token() {
    let env = Env::from_pairs([
        ("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key"),
        ("AWS_DEFAULT_REGION", "ap-south-1"),
    ]);
    let auth = build(SIGV4, &CloudSource::Aws(AwsSource::DefaultChain), None, &env).unwrap();
    assert_eq!(auth.region(), Some("ap-south-1"));
    let headers = auth.headers("POST", "https://h/model/m/converse", &[], b"{}").await.unwrap();
    assert_eq!(headers, [("authorization".to_owned(), "Bearer bedrock-api-key".to_owned())]);
    assert!(!auth.describe().contains("bedrock-api-key"));
}

#[test]
fn a_missing_profile_or_service_account_names_what_was_read() {
    let dir = crate::credentials::testing::TempDir::new();
    let env = Env::from_pairs([
        ("HOME", dir.path().to_str().unwrap()),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ]);
    let err = build(SIGV4, &CloudSource::Aws(AwsSource::Profile("prod".into())), None, &env)
        .unwrap_err()
        .to_string();
    assert!(err.contains("AWS profile \"prod\""), "{err}");
    let missing = dir.path().join("nope.json");
    let source = CloudSource::Google(GoogleSource::File(missing.clone()));
    let err = build(Auth::OAuthToken, &source, None, &env).unwrap_err().to_string();
    assert!(
        err.starts_with(&missing.display().to_string()) && err.contains("cannot read it"),
        "{err}"
    );
    let source = CloudSource::Google(GoogleSource::Env("UNSET".into()));
    let err = build(Auth::OAuthToken, &source, None, &env).unwrap_err().to_string();
    assert_eq!(err, "environment variable UNSET: not set");
}

#[test]
fn capture_keeps_only_what_the_sources_read() {
    let env = Env::capture(&|name| Some(format!("value of {name}")), &["MY_SA_JSON"]);
    assert_eq!(env.get("AWS_PROFILE").as_deref(), Some("value of AWS_PROFILE"));
    assert_eq!(env.get("MY_SA_JSON").as_deref(), Some("value of MY_SA_JSON"));
    assert_eq!(env.get("OPENAI_API_KEY"), None);
}

#[tokio::test]
async fn keys_in_the_configuration_sign_and_need_a_region() {
    let keys =
        crate::credentials::aws::AwsCredentials::new("AKIDCONFIGURED", "configured-secret", None);
    let source = CloudSource::Aws(AwsSource::Keys(keys));
    let none = Env::from_pairs([("UNRELATED", "x")]);
    let err = build(SIGV4, &source, None, &none).unwrap_err().to_string();
    assert!(err.starts_with("credentials.aws: no region"), "{err}");
    let auth = build(SIGV4, &source, Some("us-east-2"), &none).unwrap();
    let headers = auth.headers("POST", "https://h/model/m/converse", &[], b"{}").await.unwrap();
    let authorization = &headers.iter().find(|(k, _)| k == "authorization").unwrap().1;
    assert!(authorization.contains("Credential=AKIDCONFIGURED/"), "{authorization}");
    assert!(authorization.contains("/us-east-2/bedrock/aws4_request"), "{authorization}");
}
