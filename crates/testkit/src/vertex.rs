//! Vertex AI, as a fake upstream checks it: a Google token endpoint that grants
//! access tokens for a service account's RS256 JWT (its signature, issuer,
//! audience, scope and lifetime checked as Google checks them), and the
//! publishers' routes under `/v1/projects/{project}/locations/{location}/`,
//! which take only a token it granted and has not expired.
//!
//! A fake started with [`crate::FakeUpstream::start_vertex`] serves both: the
//! service account's `token_uri` is the fake's `/token`
//! ([`service_account_json`]).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use base64::Engine as _;
use ring::signature::{RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey};
use serde_json::{Value, json};

use crate::Vendor;

/// The test-only RSA private key a fake's service account holds (PKCS#8 PEM;
/// `data/gen.sh`). Public test material: it belongs to no account.
pub const PRIVATE_KEY_PEM: &str = include_str!("../data/rsa-test.key");
/// Its public key (PKCS#1 DER), with which the token endpoint checks JWTs.
pub const PUBLIC_KEY_DER: &[u8] = include_bytes!("../data/rsa-test.pub.der");
/// The service account's email, the JWT's issuer.
pub const CLIENT_EMAIL: &str = "gateway@test-project.iam.gserviceaccount.com";
/// The project the fake serves, the service account's `project_id`.
pub const PROJECT: &str = "test-project";
/// How long a granted token lives.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(3600);
/// The Claude body's version on Vertex.
pub const ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// A service account's JSON key whose tokens come from `token_uri`.
pub fn service_account_json(token_uri: &str) -> String {
    json!({
        "type": "service_account",
        "project_id": PROJECT,
        "private_key_id": "0123456789abcdef",
        "private_key": PRIVATE_KEY_PEM,
        "client_email": CLIENT_EMAIL,
        "client_id": "100000000000000000001",
        "token_uri": token_uri,
    })
    .to_string()
}

/// The tokens a fake granted, and when each expires.
#[derive(Debug, Default)]
pub(crate) struct Tokens {
    granted: HashMap<String, Instant>,
    count: usize,
}

impl Tokens {
    /// Answer a token request (`POST /token`, a form): a JWT bearer grant
    /// whose assertion `token_url` (its audience) accepts.
    pub(crate) fn grant(&mut self, form: &[u8], token_url: &str) -> (u16, Value) {
        match check_grant(form, token_url) {
            Ok(()) => {
                self.count += 1;
                let token = format!("ya29.fake-vertex-{}", self.count);
                self.granted.insert(token.clone(), Instant::now() + TOKEN_LIFETIME);
                let secs = TOKEN_LIFETIME.as_secs() - 1;
                (200, json!({"access_token": token, "expires_in": secs, "token_type": "Bearer"}))
            }
            Err(why) => (400, json!({"error": "invalid_grant", "error_description": why})),
        }
    }

    /// Whether `authorization` carries a token granted here and not expired.
    pub(crate) fn authorized(&self, authorization: Option<&str>) -> bool {
        let token = authorization.and_then(|a| a.strip_prefix("Bearer "));
        token.and_then(|t| self.granted.get(t)).is_some_and(|until| Instant::now() < *until)
    }

    /// How many tokens were granted.
    pub(crate) fn count(&self) -> usize {
        self.count
    }
}

fn check_grant(form: &[u8], token_url: &str) -> Result<(), String> {
    let form = String::from_utf8_lossy(form);
    let field = |name: &str| {
        form.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            (k == name).then(|| crate::sigv4::percent_decode(&v.replace('+', " ")))
        })
    };
    if field("grant_type").as_deref() != Some("urn:ietf:params:oauth:grant-type:jwt-bearer") {
        return Err("grant_type must be the JWT bearer grant".into());
    }
    let jwt = field("assertion").ok_or("no assertion")?;
    let parts: Vec<&str> = jwt.split('.').collect();
    let [header, claims, signature] = parts[..] else {
        return Err("the assertion is not a JWT".into());
    };
    let decode = |s: &str| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).map_err(|e| e.to_string())
    };
    UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, PUBLIC_KEY_DER)
        .verify(format!("{header}.{claims}").as_bytes(), &decode(signature)?)
        .map_err(|_| "Invalid JWT Signature.".to_owned())?;
    let header: Value = serde_json::from_slice(&decode(header)?).map_err(|e| e.to_string())?;
    let claims: Value = serde_json::from_slice(&decode(claims)?).map_err(|e| e.to_string())?;
    if header["alg"] != "RS256" {
        return Err(format!("alg {}", header["alg"]));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (iat, exp) =
        (claims["iat"].as_u64().ok_or("no iat")?, claims["exp"].as_u64().ok_or("no exp")?);
    let checks = [
        (claims["iss"] == CLIENT_EMAIL, "iss"),
        (claims["aud"] == token_url, "aud"),
        (claims["scope"] == "https://www.googleapis.com/auth/cloud-platform", "scope"),
        (exp > iat && exp - iat <= 3600, "exp - iat over an hour"),
        (iat <= now + 60, "iat in the future"),
        (exp > now, "expired"),
    ];
    match checks.iter().find(|(ok, _)| !ok) {
        Some((_, what)) => Err(format!("Invalid JWT: {what}")),
        None => Ok(()),
    }
}

/// A routed Vertex request: the model (empty where the body names it),
/// whether it streams, whether it is a token count.
pub(crate) struct Routed {
    pub model: String,
    pub stream: bool,
    pub count: bool,
}

/// A Vertex route of `vendor`'s publisher (`path` as sent, `query` its query):
/// `None` for any other path, or another project.
pub(crate) fn route(vendor: Vendor, path: &str, query: Option<&str>) -> Option<Routed> {
    let generation = |(model, stream)| Routed { model, stream, count: false };
    generation_route(vendor, path, query).map(generation).or_else(|| {
        // Claude's one counting route: the body names the model.
        let rest = path.strip_prefix(&format!("/v1/projects/{PROJECT}/locations/"))?;
        let (_, rest) = rest.split_once('/')?;
        let counting =
            rest.replace("%3A", ":") == "publishers/anthropic/models/count-tokens:rawPredict";
        (vendor == Vendor::Anthropic && counting).then(|| Routed {
            model: String::new(),
            stream: false,
            count: true,
        })
    })
}

fn generation_route(vendor: Vendor, path: &str, query: Option<&str>) -> Option<(String, bool)> {
    let rest = path.strip_prefix(&format!("/v1/projects/{PROJECT}/locations/"))?;
    let (location, rest) = rest.split_once('/')?;
    if location.is_empty() {
        return None;
    }
    let rest = rest.replace("%3A", ":").replace("%40", "@");
    let model_action = |publisher: &str| -> Option<(String, String)> {
        let (model, action) =
            rest.strip_prefix(&format!("publishers/{publisher}/models/"))?.rsplit_once(':')?;
        (!model.is_empty() && !model.contains('/')).then(|| (model.to_owned(), action.to_owned()))
    };
    match vendor {
        Vendor::Anthropic => match model_action("anthropic")? {
            (model, _) if model == "count-tokens" => None,
            (model, a) if a == "rawPredict" => Some((model, false)),
            (model, a) if a == "streamRawPredict" => Some((model, true)),
            _ => None,
        },
        Vendor::Gemini => match model_action("google")? {
            (model, a) if a == "generateContent" => Some((model, false)),
            (model, a) if a == "streamGenerateContent" => {
                // As Gemini: SSE only when asked; the fake serves that form alone.
                query
                    .is_some_and(|q| q.split('&').any(|kv| kv == "alt=sse"))
                    .then_some((model, true))
            }
            _ => None,
        },
        Vendor::OpenAi => {
            (rest == "endpoints/openapi/chat/completions").then(String::new).map(|m| (m, false))
        }
        Vendor::Bedrock => None,
    }
}

/// What Vertex refuses in a Claude body beyond what Anthropic does: a missing
/// or wrong `anthropic_version`, and (but in a `count`, whose route names no
/// model) a `model`: it is in the URL. The body without its version field is
/// what Anthropic's rules are checked on.
pub(crate) fn claude_body(body: &Value, count: bool) -> Result<Value, String> {
    match body.get("anthropic_version").and_then(Value::as_str) {
        Some(ANTHROPIC_VERSION) => {}
        Some(other) => return Err(format!("anthropic_version: {other:?} is not supported")),
        None => return Err("anthropic_version: Field required".into()),
    }
    if !count && body.get("model").is_some() {
        return Err("model: Extra inputs are not permitted".into());
    }
    let mut anthropic = body.clone();
    if let Some(map) = anthropic.as_object_mut() {
        map.remove("anthropic_version");
    }
    Ok(anthropic)
}

/// What a Vertex region takes of Claude's `anthropic-beta` flags and body
/// fields ([`crate::FakeUpstream::set_vertex_claude`]). Vertex checks flags
/// against a set of its own, which lags Anthropic's API and differs by region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeRules {
    /// The flags it takes on a generation (a count takes none).
    pub betas: Vec<String>,
    /// Top-level fields it refuses outright.
    pub refused_fields: Vec<String>,
}

impl Default for ClaudeRules {
    /// The flags Vertex documents for Claude: interleaved thinking, the 1M
    /// context, fine-grained tool streaming, token-efficient tools, 128k output
    /// and context management.
    fn default() -> Self {
        let betas = [
            "interleaved-thinking-2025-05-14",
            "context-1m-2025-08-07",
            "fine-grained-tool-streaming-2025-05-14",
            "token-efficient-tools-2025-02-19",
            "output-128k-2025-02-19",
            "context-management-2025-06-27",
        ];
        ClaudeRules { betas: betas.map(str::to_owned).to_vec(), refused_fields: Vec::new() }
    }
}

/// Vertex's checks of a Claude request's flags (`beta`, its `anthropic-beta`
/// header) and fields, worded as Vertex words them: an unknown flag, a field
/// the region refuses, a field whose flag is missing (Anthropic's rule).
pub(crate) fn check_claude(
    rules: &ClaudeRules,
    beta: Option<&str>,
    body: &Value,
    count: bool,
) -> Result<(), String> {
    let flags: Vec<&str> = beta
        .into_iter()
        .flat_map(|b| b.split(','))
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .collect();
    let unknown: Vec<String> = flags
        .iter()
        .filter(|f| count || !rules.betas.iter().any(|b| b == *f))
        .map(|f| format!("`{f}`"))
        .collect();
    if !unknown.is_empty() {
        return Err(format!(
            "Unexpected value(s) {} for the `anthropic-beta` header. Please consult our \
             documentation at docs.anthropic.com or try again without the header.",
            unknown.join(", ")
        ));
    }
    let gates = [("context_management", "context-management-"), ("mcp_servers", "mcp-client-")];
    for field in body.as_object().into_iter().flat_map(|m| m.keys()) {
        let ungated =
            gates.iter().any(|(f, flag)| f == field && !flags.iter().any(|x| x.starts_with(flag)));
        if ungated || rules.refused_fields.iter().any(|f| f == field) {
            return Err(format!("{field}: Extra inputs are not permitted"));
        }
    }
    Ok(())
}

/// Google's error body.
pub fn error_body(status: u16, message: &str) -> Value {
    let code = match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        _ => "INTERNAL",
    };
    json!({"error": {"code": status, "message": message, "status": code}})
}
