use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;

use super::super::testing::{ManualClock, Seen, Server, T0, TempDir, fake, http};
use super::*;

const ROLE_ARN: &str = "arn:aws:iam::123456789012:role/gateway";
const CONTAINER_TOKEN: &str = "container-auth-token-XYZ";
const HOUR: Duration = Duration::from_secs(3600);

/// `t` as RFC 3339 in UTC (the inverse of `parse_utc`, for the fakes).
fn rfc3339(t: UnixMs) -> String {
    let secs = i64::try_from(t.0 / 1000).unwrap();
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (rem / 3600, rem / 60 % 60, rem % 60);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z")
}

/// STS, a container credentials endpoint and IMDSv2, checking what the real
/// ones check and handing out numbered credentials valid for an hour.
struct FakeAws {
    clock: ManualClock,
    sts: AtomicUsize,
    container: AtomicUsize,
    imds: AtomicUsize,
    imds_sessions: AtomicUsize,
    /// The web identity token STS expects (the file's content).
    web_token: Mutex<String>,
    refused: Mutex<Vec<String>>,
}

impl FakeAws {
    async fn start(clock: &ManualClock) -> (Arc<Self>, Server) {
        let aws = Arc::new(FakeAws {
            clock: clock.clone(),
            sts: AtomicUsize::new(0),
            container: AtomicUsize::new(0),
            imds: AtomicUsize::new(0),
            imds_sessions: AtomicUsize::new(0),
            web_token: Mutex::new("oidc-token-1".to_owned()),
            refused: Mutex::new(Vec::new()),
        });
        let state = Arc::clone(&aws);
        let server = fake(move |seen| state.answer(&seen)).await;
        (aws, server)
    }

    fn expiration(&self) -> String {
        rfc3339(self.clock.now() + HOUR)
    }

    fn refuse(&self, status: u16, why: String) -> (u16, String) {
        self.refused.lock().unwrap().push(why.clone());
        (status, why)
    }

    fn answer(&self, seen: &Seen) -> (u16, String) {
        match (seen.method.as_str(), seen.path()) {
            ("POST", "/sts/") => self.sts(seen),
            ("GET", "/creds") => {
                if seen.header("authorization") != Some(CONTAINER_TOKEN) {
                    return self.refuse(401, "container: bad authorization".to_owned());
                }
                let n = self.container.fetch_add(1, Ordering::SeqCst) + 1;
                (200, self.json_credentials("CONTAINER", n))
            }
            ("PUT", "/latest/api/token") => {
                if seen.header("x-aws-ec2-metadata-token-ttl-seconds") != Some("21600") {
                    return self.refuse(400, "imds: no ttl".to_owned());
                }
                let n = self.imds_sessions.fetch_add(1, Ordering::SeqCst) + 1;
                (200, format!("imds-session-{n}"))
            }
            ("GET", path) if path.starts_with("/latest/meta-data/iam/security-credentials/") => {
                let n = self.imds_sessions.load(Ordering::SeqCst);
                if seen.header("x-aws-ec2-metadata-token") != Some(&format!("imds-session-{n}")) {
                    // IMDSv1 (no session) is refused, as on an instance that requires v2.
                    return self.refuse(401, format!("imds: no session for {path}"));
                }
                match path.trim_start_matches("/latest/meta-data/iam/security-credentials/") {
                    "" => (200, "gateway-role\n".to_owned()),
                    "gateway-role" => {
                        let n = self.imds.fetch_add(1, Ordering::SeqCst) + 1;
                        (200, self.json_credentials("IMDS", n))
                    }
                    other => self.refuse(404, format!("imds: no role {other}")),
                }
            }
            _ => self.refuse(404, format!("no route {} {}", seen.method, seen.target)),
        }
    }

    fn json_credentials(&self, kind: &str, n: usize) -> String {
        let mut body = json!({
            "AccessKeyId": format!("ASIA{kind}{n}"),
            "SecretAccessKey": format!("secret-{kind}-{n}"),
            "Token": format!("token-{kind}-{n}"),
            "Expiration": self.expiration(),
        });
        if kind == "IMDS" {
            body["Code"] = json!("Success");
            body["Type"] = json!("AWS-HMAC");
        }
        body.to_string()
    }

    fn sts(&self, seen: &Seen) -> (u16, String) {
        let expected = [
            ("Action", "AssumeRoleWithWebIdentity"),
            ("Version", "2011-06-15"),
            ("RoleArn", ROLE_ARN),
            ("RoleSessionName", "gateway-session"),
        ];
        for (field, want) in expected {
            if seen.field(field).as_deref() != Some(want) {
                return self.refuse(400, format!("sts: {field} is {:?}", seen.field(field)));
            }
        }
        if seen.header("authorization").is_some() {
            return self.refuse(400, "sts: the call is not to be signed".to_owned());
        }
        let token = self.web_token.lock().unwrap().clone();
        if seen.field("WebIdentityToken").as_deref() != Some(token.as_str()) {
            let error = "<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>\
                         <Message>Token is not valid</Message></Error></ErrorResponse>";
            self.refused.lock().unwrap().push("sts: bad token".to_owned());
            return (400, error.to_owned());
        }
        let n = self.sts.fetch_add(1, Ordering::SeqCst) + 1;
        let xml = format!(
            "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\
             <AssumeRoleWithWebIdentityResult><Credentials>\
             <SessionToken>token-STS-{n}/+=</SessionToken>\
             <SecretAccessKey>secret-STS-{n}</SecretAccessKey>\
             <Expiration>{}</Expiration>\
             <AccessKeyId>ASIASTS{n}</AccessKeyId>\
             </Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>",
            self.expiration()
        );
        (200, xml)
    }

    fn refused(&self) -> Vec<String> {
        self.refused.lock().unwrap().clone()
    }
}

/// Every source configured, each pointing at the fake.
struct World {
    dir: TempDir,
    vars: Vec<(String, String)>,
}

impl World {
    fn new(server: &Server) -> Self {
        let dir = TempDir::new();
        let token_file = dir.write("web-token", "oidc-token-1\n");
        let auth_file = dir.write("container-token", &format!("{CONTAINER_TOKEN}\n"));
        dir.write("home/.aws/config", "[default]\nregion = eu-central-1\n");
        dir.write(
            "home/.aws/credentials",
            "[default]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profile-secret\n",
        );
        let vars = [
            ("HOME", dir.path().join("home").display().to_string()),
            ("AWS_ACCESS_KEY_ID", "AKIDENV".to_owned()),
            ("AWS_SECRET_ACCESS_KEY", "env-secret".to_owned()),
            ("AWS_WEB_IDENTITY_TOKEN_FILE", token_file.display().to_string()),
            ("AWS_ROLE_ARN", ROLE_ARN.to_owned()),
            ("AWS_ROLE_SESSION_NAME", "gateway-session".to_owned()),
            ("AWS_ENDPOINT_URL_STS", format!("{}/sts/", server.base)),
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", format!("{}/creds", server.base)),
            ("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", auth_file.display().to_string()),
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", server.base.clone()),
        ];
        let vars = vars.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        Self { dir, vars }
    }

    fn without(&mut self, names: &[&str]) {
        self.vars.retain(|(k, _)| !names.contains(&k.as_str()));
    }

    fn set(&mut self, name: &str, value: &str) {
        self.without(&[name]);
        self.vars.push((name.to_owned(), value.to_owned()));
    }

    fn env(&self) -> Env {
        Env::from_pairs(self.vars.clone())
    }

    fn chain(&self, clock: &ManualClock) -> Result<AwsChain, CredentialError> {
        AwsChain::default_chain(&self.env(), http(), clock.clock())
    }
}

#[tokio::test]
async fn the_default_chain_takes_the_first_source_in_the_sdks_order() {
    let clock = ManualClock::at(T0);
    let (aws, server) = FakeAws::start(&clock).await;
    let mut world = World::new(&server);
    let key = |chain: AwsChain| async move {
        let creds = chain.credentials().await.unwrap();
        (chain.origin().to_owned(), creds.access_key_id, chain.region().map(str::to_owned))
    };
    let eu = Some("eu-central-1".to_owned());

    let (origin, id, region) = key(world.chain(&clock).unwrap()).await;
    assert_eq!(
        (origin.as_str(), id.as_str(), region),
        ("environment variables", "AKIDENV", eu.clone())
    );

    world.without(&["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]);
    let (origin, id, _) = key(world.chain(&clock).unwrap()).await;
    assert!(origin.starts_with("AWS profile \"default\""), "{origin}");
    assert_eq!(id, "AKIDPROFILE");

    // A profile with only a region is no source: on to web identity.
    world.dir.write("home/.aws/credentials", "");
    let (origin, id, region) = key(world.chain(&clock).unwrap()).await;
    assert_eq!(
        (origin.as_str(), id.as_str()),
        ("web identity (arn:aws:iam::123456789012:role/gateway)", "ASIASTS1")
    );
    assert_eq!(region, eu);

    world.without(&["AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"]);
    let (origin, id, _) = key(world.chain(&clock).unwrap()).await;
    assert_eq!((origin.as_str(), id.as_str()), ("container credentials", "ASIACONTAINER1"));

    world.without(&["AWS_CONTAINER_CREDENTIALS_FULL_URI"]);
    let (origin, id, _) = key(world.chain(&clock).unwrap()).await;
    assert_eq!((origin.as_str(), id.as_str()), ("EC2 instance metadata", "ASIAIMDS1"));

    world.set("AWS_EC2_METADATA_DISABLED", "true");
    let err = world.chain(&clock).unwrap_err();
    assert!(err.to_string().starts_with("AWS credentials: none found"), "{err}");
    assert!(aws.refused().is_empty(), "{:?}", aws.refused());
}

#[tokio::test]
async fn web_identity_rereads_its_token_file_and_refreshes_before_expiry() {
    let clock = ManualClock::at(T0);
    let (aws, server) = FakeAws::start(&clock).await;
    let mut world = World::new(&server);
    world.without(&["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "HOME"]);
    let chain = world.chain(&clock).unwrap();
    let first = chain.credentials().await.unwrap();
    assert_eq!(first.access_key_id, "ASIASTS1");
    assert_eq!(first.session_token.as_ref().map(Secret::expose), Some("token-STS-1/+="));
    assert_eq!(first.expires_at, Some(T0 + HOUR));
    assert_eq!(chain.credentials().await.unwrap(), first);
    // The token is rotated in its file; at the refresh the new one is sent.
    world.dir.write("web-token", "oidc-token-2");
    *aws.web_token.lock().unwrap() = "oidc-token-2".to_owned();
    clock.advance(HOUR - Duration::from_secs(300));
    assert_eq!(chain.credentials().await.unwrap(), first, "valid: served during the refresh");
    clock.advance(Duration::from_secs(300));
    assert_eq!(chain.credentials().await.unwrap().access_key_id, "ASIASTS2");
    assert_eq!(aws.sts.load(Ordering::SeqCst), 2);
    assert!(aws.refused().is_empty(), "{:?}", aws.refused());
}

#[tokio::test]
async fn an_sts_refusal_is_a_fetch_error_with_its_code_and_no_token() {
    let clock = ManualClock::at(T0);
    let (aws, server) = FakeAws::start(&clock).await;
    let mut world = World::new(&server);
    world.without(&["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "HOME"]);
    *aws.web_token.lock().unwrap() = "another-token".to_owned();
    let err = world.chain(&clock).unwrap().credentials().await.unwrap_err();
    assert_eq!(
        err,
        CredentialError::Fetch(
            "STS AssumeRoleWithWebIdentity: HTTP 400: InvalidIdentityToken: Token is not valid"
                .to_owned()
        )
    );
}

#[test]
fn web_identity_needs_both_variables_a_readable_file_and_finds_its_endpoint() {
    let clock = ManualClock::at(T0);
    let dir = TempDir::new();
    let file = dir.write("t", "x").display().to_string();
    let from = |pairs: Vec<(&str, &str)>, region| {
        WebIdentity::from_env(&Env::from_pairs(pairs), region, &clock.clock())
    };
    let err = from(vec![("AWS_WEB_IDENTITY_TOKEN_FILE", &file)], None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "environment variable AWS_ROLE_ARN: not set, while AWS_WEB_IDENTITY_TOKEN_FILE is"
    );
    let missing =
        vec![("AWS_WEB_IDENTITY_TOKEN_FILE", "/nonexistent/token"), ("AWS_ROLE_ARN", ROLE_ARN)];
    let err = from(missing, None).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("/nonexistent/token (AWS_WEB_IDENTITY_TOKEN_FILE): cannot read it"),
        "{err}"
    );
    let both = vec![("AWS_WEB_IDENTITY_TOKEN_FILE", file.as_str()), ("AWS_ROLE_ARN", ROLE_ARN)];
    let web = from(both.clone(), Some("us-west-2")).unwrap().unwrap();
    assert_eq!(web.endpoint, "https://sts.us-west-2.amazonaws.com/");
    assert_eq!(web.session_name, format!("switchyard-{}", T0.0));
    assert_eq!(from(both, None).unwrap().unwrap().endpoint, "https://sts.amazonaws.com/");
    assert!(from(vec![], None).unwrap().is_none());
}

#[tokio::test]
async fn imds_v2_takes_a_session_then_the_roles_credentials_and_refreshes_them() {
    let clock = ManualClock::at(T0);
    let (aws, server) = FakeAws::start(&clock).await;
    let env = Env::from_pairs([("AWS_EC2_METADATA_SERVICE_ENDPOINT", format!("{}/", server.base))]);
    let chain = AwsChain::default_chain(&env, http(), clock.clock()).unwrap();
    let creds = chain.credentials().await.unwrap();
    assert_eq!(creds.access_key_id, "ASIAIMDS1");
    assert_eq!(creds.secret_access_key.expose(), "secret-IMDS-1");
    assert_eq!(creds.expires_at, Some(T0 + HOUR));
    let burst = futures_util::future::join_all((0..20).map(|_| chain.credentials())).await;
    assert!(burst.iter().all(|c| c.as_ref() == Ok(&creds)));
    assert_eq!((aws.imds_sessions.load(Ordering::SeqCst), aws.imds.load(Ordering::SeqCst)), (1, 1));
    clock.advance(HOUR);
    assert_eq!(chain.credentials().await.unwrap().access_key_id, "ASIAIMDS2");
    assert_eq!((aws.imds_sessions.load(Ordering::SeqCst), aws.imds.load(Ordering::SeqCst)), (2, 2));
    assert!(aws.refused().is_empty(), "{:?}", aws.refused());
    // Not configured away unless disabled.
    let off = Env::from_pairs([("AWS_EC2_METADATA_DISABLED", "TRUE")]);
    assert!(Imds::from_env(&off).is_none());
    assert_eq!(
        Imds::from_env(&Env::from_pairs::<&str, &str>([])).unwrap().endpoint,
        "http://169.254.169.254"
    );
}

#[tokio::test]
async fn container_credentials_send_the_authorization_token() {
    let clock = ManualClock::at(T0);
    let (aws, server) = FakeAws::start(&clock).await;
    let url = format!("{}/creds", server.base);
    for auth in [
        ("AWS_CONTAINER_AUTHORIZATION_TOKEN", CONTAINER_TOKEN),
        ("AWS_CONTAINER_AUTHORIZATION_TOKEN", "wrong"),
    ] {
        let env = Env::from_pairs([("AWS_CONTAINER_CREDENTIALS_FULL_URI", url.as_str()), auth]);
        let result =
            AwsChain::default_chain(&env, http(), clock.clock()).unwrap().credentials().await;
        match auth.1 {
            CONTAINER_TOKEN => assert_eq!(result.unwrap().access_key_id, "ASIACONTAINER1"),
            _ => {
                let err = result.unwrap_err().to_string();
                assert_eq!(err, "container credentials endpoint: HTTP 401");
            }
        }
    }
    assert_eq!(aws.refused(), ["container: bad authorization"]);
    let relative =
        Env::from_pairs([("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/abc")]);
    assert_eq!(
        Container::from_env(&relative).unwrap().unwrap().url,
        "http://169.254.170.2/v2/credentials/abc"
    );
}

#[test]
fn a_full_container_uri_over_plain_http_must_be_local_or_the_ecs_and_eks_addresses() {
    let check = |uri: &str| {
        Container::from_env(&Env::from_pairs([("AWS_CONTAINER_CREDENTIALS_FULL_URI", uri)]))
            .map(|c| c.is_some())
    };
    for ok in [
        "https://creds.example.com/x",
        "http://127.0.0.1:8080/creds",
        "http://localhost/creds",
        "http://169.254.170.2/v2",
        "http://169.254.170.23/v1/credentials",
        "http://[fd00:ec2::23]/v1/credentials",
        "http://[::1]:9/x",
    ] {
        assert_eq!(check(ok), Ok(true), "{ok}");
    }
    for bad in
        ["http://example.com/creds", "http://10.0.0.1/creds", "ftp://127.0.0.1/x", "not a url"]
    {
        let err = check(bad).unwrap_err();
        let CredentialError::Config { source_name, .. } = &err else { panic!("{err:?}") };
        assert_eq!(source_name, "environment variable AWS_CONTAINER_CREDENTIALS_FULL_URI", "{bad}");
    }
}

#[test]
fn half_a_key_or_an_unsupported_profile_is_refused_not_skipped() {
    let clock = ManualClock::at(T0);
    let chain = |pairs: Vec<(&str, String)>| {
        AwsChain::default_chain(&Env::from_pairs(pairs), http(), clock.clock())
            .map(|c| c.origin().to_owned())
    };
    let err = chain(vec![("AWS_ACCESS_KEY_ID", "AKID".to_owned())]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "environment variable AWS_SECRET_ACCESS_KEY: not set, while AWS_ACCESS_KEY_ID is"
    );
    let dir = TempDir::new();
    let config = dir.write(
        "config",
        "[profile ops]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = base\n",
    );
    let vars =
        vec![("AWS_CONFIG_FILE", config.display().to_string()), ("AWS_PROFILE", "ops".to_owned())];
    let err = chain(vars).unwrap_err();
    let CredentialError::Config { source_name, message } = &err else { panic!("{err:?}") };
    assert_eq!(source_name, &format!("AWS profile \"ops\" ({})", config.display()));
    assert!(message.starts_with("field `role_arn`: not supported"), "{message}");
    let typo =
        vec![("AWS_CONFIG_FILE", config.display().to_string()), ("AWS_PROFILE", "opz".to_owned())];
    let err = chain(typo).unwrap_err();
    assert_eq!(
        err.to_string(),
        "AWS profile \"opz\" (AWS_PROFILE): not found in the shared config or credentials file"
    );
    let half = dir.write("half", "[default]\naws_access_key_id = AKID\n");
    let err = chain(vec![("AWS_SHARED_CREDENTIALS_FILE", half.display().to_string())]).unwrap_err();
    assert!(err.to_string().ends_with("field `aws_secret_access_key`: missing"), "{err}");
}

#[tokio::test]
async fn explicit_keys_and_a_named_profile() {
    let creds = AwsCredentials::new("AKIDCONF", "conf-secret", None);
    let chain = AwsChain::from_static(creds.clone()).with_region("us-west-2");
    assert_eq!(chain.credentials().await.unwrap(), creds);
    assert_eq!((chain.origin(), chain.region()), ("configuration", Some("us-west-2")));

    let dir = TempDir::new();
    let file = dir.write(
        "credentials",
        "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = d\n\
         [bedrock]\naws_access_key_id = AKIDBEDROCK\naws_secret_access_key = b\naws_session_token = t\n",
    );
    let config = dir.write("config", "[profile bedrock]\nregion = us-east-2\n");
    let env = Env::from_pairs([
        ("AWS_SHARED_CREDENTIALS_FILE", file.display().to_string()),
        ("AWS_CONFIG_FILE", config.display().to_string()),
        ("AWS_PROFILE", "default".to_owned()),
    ]);
    let chain = AwsChain::from_profile(&env, "bedrock").unwrap();
    let got = chain.credentials().await.unwrap();
    assert_eq!(got.access_key_id, "AKIDBEDROCK");
    assert_eq!(got.session_token, Some(Secret::new("t")));
    assert_eq!(chain.region(), Some("us-east-2"));
    let err = AwsChain::from_profile(&env, "absent").unwrap_err();
    assert_eq!(
        err.to_string(),
        "AWS profile \"absent\": not found in the shared config or credentials file"
    );
}

#[tokio::test]
async fn bedrock_auth_prefers_an_api_key_and_else_signs_in_a_region() {
    let clock = ManualClock::at(T0);
    let bearer = Env::from_pairs([
        ("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-XYZ"),
        ("AWS_ACCESS_KEY_ID", "AKID"),
    ]);
    let auth = AwsAuth::from_env(&bearer, http(), clock.clock(), None).unwrap();
    assert!(!format!("{auth:?}").contains("bedrock-api-key-XYZ"));
    let headers = auth
        .headers(
            "POST",
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/invoke",
            &[],
            b"{}",
            "bedrock",
        )
        .await
        .unwrap();
    assert_eq!(headers, [("authorization".to_owned(), "Bearer bedrock-api-key-XYZ".to_owned())]);

    let keys = [("AWS_ACCESS_KEY_ID", "AKIDSIGN"), ("AWS_SECRET_ACCESS_KEY", "sign-secret")];
    let err = AwsAuth::from_env(&Env::from_pairs(keys), http(), clock.clock(), None).unwrap_err();
    assert!(err.to_string().starts_with("AWS region: none configured"), "{err}");
    let auth = AwsAuth::from_env(&Env::from_pairs(keys), http(), clock.clock(), Some("us-east-1"))
        .unwrap();
    let url =
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-v2%3A1/invoke";
    let body = br#"{"prompt":"hi"}"#;
    let extra = [("content-type", "application/json")];
    let signed = auth.headers("POST", url, &extra, body, "bedrock").await.unwrap();
    let amz_date = signed.iter().find(|(k, _)| k == "x-amz-date").map(|(_, v)| v.as_str());
    assert_eq!(amz_date, Some("20250101T000000Z"), "signed at the chain's clock");
    let mut received = vec![
        ("host".to_owned(), "bedrock-runtime.us-east-1.amazonaws.com".to_owned()),
        ("content-type".to_owned(), "application/json".to_owned()),
    ];
    received.extend(signed);
    let target = url.trim_start_matches("https://bedrock-runtime.us-east-1.amazonaws.com");
    let verified = switchyard_testkit::sigv4::verify(
        "POST",
        target,
        &received,
        body,
        "sign-secret",
        "us-east-1",
        "bedrock",
    );
    assert_eq!(verified, Ok("AKIDSIGN".to_owned()));
}

#[test]
fn the_futures_can_be_spawned() {
    fn send<T: Send>(_: &T) {}
    let chain = AwsChain::from_static(AwsCredentials::new("A", "s", None));
    send(&chain.credentials());
    let auth = AwsAuth::SigV4 { chain, region: "us-east-1".to_owned() };
    send(&auth.headers("GET", "https://x/", &[], b"", "bedrock"));
}

#[test]
fn rfc3339_round_trips_with_the_parser() {
    for t in [T0, T0 + HOUR, UnixMs(1_709_251_199_000), UnixMs(951_782_400_000)] {
        assert_eq!(super::super::parse_utc(&rfc3339(t)), Some(t), "{}", rfc3339(t));
    }
}
