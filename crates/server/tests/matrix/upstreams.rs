//! The matrix's upstream axis: the four vendors' own APIs, and the wires that
//! carry one of their bodies elsewhere (Claude, Gemini and open models on Vertex
//! AI, OpenAI's models on Azure's two APIs, OpenAI's Responses API). Each names the body it
//! speaks ([`Upstream::family`]: its requests are read by that family's view, its
//! answers scripted in that family's shape), its provider, its models, and checks
//! its envelope: path, query, credential, where the model goes.
//!
//! The cloud fakes are started here, for the matrix only ([`Matrix::start`]).

use serde_json::{Value, json};
use switchyard_protocol::ClientFormat;
use switchyard_testkit::{FakeUpstream, Received, Vendor, azure, vertex};

use super::common::*;
use super::{Problems, SECRETS, bedrock_path};

/// One column of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upstream {
    OpenAi,
    Anthropic,
    Gemini,
    Bedrock,
    /// Claude through Bedrock's InvokeModel (`bedrock-anthropic`), on the
    /// Bedrock fake.
    BedrockClaude,
    /// Claude on Vertex AI (`vertex-anthropic`).
    VertexClaude,
    /// Gemini on Vertex AI (`vertex-gemini`).
    VertexGemini,
    /// An open model on Vertex AI's Model-as-a-Service endpoint (`vertex-openai`).
    VertexOpen,
    /// A deployment of Azure OpenAI's dated API (`azure-openai`), by its key.
    Azure,
    /// Azure OpenAI's v1 API (`azure-openai-v1`), by a Microsoft Entra token.
    AzureV1,
    /// OpenAI's Responses API (`openai-responses`), on the OpenAI fake.
    Responses,
    /// Azure OpenAI's Responses API (`azure-openai-responses`), by its key.
    AzureResponses,
}

pub const UPSTREAMS: [Upstream; 12] = [
    Upstream::OpenAi,
    Upstream::Anthropic,
    Upstream::Gemini,
    Upstream::Bedrock,
    Upstream::BedrockClaude,
    Upstream::VertexClaude,
    Upstream::VertexGemini,
    Upstream::VertexOpen,
    Upstream::Azure,
    Upstream::AzureV1,
    Upstream::Responses,
    Upstream::AzureResponses,
];

/// Claude on Vertex: Sonnet 4.5 (a version pinned with `@`, as Vertex names it).
pub const VERTEX_CLAUDE_MODEL: &str = "claude-sonnet-4-5@20250929";
pub const VERTEX_GEMINI_MODEL: &str = "gemini-2.5-pro";
/// Model-as-a-Service names a model `publisher/model`.
pub const VERTEX_OPEN_MODEL: &str = "meta/llama-4-maverick-17b-128e-instruct-maas";
/// The Azure deployment's name (it is the model, in the path).
pub const AZURE_DEPLOYMENT: &str = "up-azure";
/// The Responses deployment's model: no reasoning model by its id, so the gateway
/// asks for encrypted reasoning only where the client asked for reasoning.
pub const RESPONSES_MODEL: &str = "up-responses";

const VERTEX_CLAUDE_REGION: &str = "us-east5";
const VERTEX_GEMINI_REGION: &str = "global";
const VERTEX_OPEN_REGION: &str = "us-central1";

impl Upstream {
    /// The vendor whose body (and rules) this wire speaks. The Responses API is
    /// OpenAI's, on its fake, though its body is its own ([`super::responses_view`]).
    pub fn family(self) -> Vendor {
        match self {
            Upstream::OpenAi
            | Upstream::VertexOpen
            | Upstream::Azure
            | Upstream::AzureV1
            | Upstream::Responses
            | Upstream::AzureResponses => Vendor::OpenAi,
            Upstream::Anthropic | Upstream::BedrockClaude | Upstream::VertexClaude => {
                Vendor::Anthropic
            }
            Upstream::Gemini | Upstream::VertexGemini => Vendor::Gemini,
            Upstream::Bedrock => Vendor::Bedrock,
        }
    }

    /// Its provider's name in the configuration (the `x-gateway-provider` header).
    pub fn provider(self) -> &'static str {
        match self {
            Upstream::OpenAi => "openai",
            Upstream::Anthropic => "anthropic",
            Upstream::Gemini => "gemini",
            Upstream::Bedrock => "bedrock",
            Upstream::BedrockClaude => "bedrock-claude",
            Upstream::VertexClaude => "vertex-claude",
            Upstream::VertexGemini => "vertex-gemini",
            Upstream::VertexOpen => "vertex-open",
            Upstream::Azure => "azure",
            Upstream::AzureV1 => "azure-v1",
            Upstream::Responses => "oai-responses",
            Upstream::AzureResponses => "azure-responses",
        }
    }

    /// The catalog model the client asks for.
    pub fn catalog_model(self) -> &'static str {
        match self {
            Upstream::OpenAi => catalog_model(Vendor::OpenAi),
            Upstream::Anthropic => catalog_model(Vendor::Anthropic),
            Upstream::Gemini => catalog_model(Vendor::Gemini),
            Upstream::Bedrock => catalog_model(Vendor::Bedrock),
            Upstream::BedrockClaude => "m-bedrock-claude",
            Upstream::VertexClaude => "m-vertex-claude",
            Upstream::VertexGemini => "m-vertex-gemini",
            Upstream::VertexOpen => "m-vertex-open",
            Upstream::Azure => "m-azure",
            Upstream::AzureV1 => "m-azure-v1",
            Upstream::Responses => "m-responses",
            Upstream::AzureResponses => "m-azure-responses",
        }
    }

    /// The upstream's own name for [`Self::catalog_model`].
    pub fn upstream_model(self) -> &'static str {
        match self {
            Upstream::OpenAi => upstream_model(Vendor::OpenAi),
            Upstream::Anthropic => upstream_model(Vendor::Anthropic),
            Upstream::Gemini => upstream_model(Vendor::Gemini),
            Upstream::Bedrock | Upstream::BedrockClaude => upstream_model(Vendor::Bedrock),
            Upstream::VertexClaude => VERTEX_CLAUDE_MODEL,
            Upstream::VertexGemini => VERTEX_GEMINI_MODEL,
            Upstream::VertexOpen => VERTEX_OPEN_MODEL,
            Upstream::Azure | Upstream::AzureV1 | Upstream::AzureResponses => AZURE_DEPLOYMENT,
            Upstream::Responses => RESPONSES_MODEL,
        }
    }

    /// The configured secret that may travel to it (`None`: none may; Vertex and
    /// Azure's v1 API by Entra take only a token their fake granted).
    pub fn key(self) -> Option<&'static str> {
        match self {
            Upstream::OpenAi | Upstream::Responses => Some(OPENAI_KEY),
            Upstream::Anthropic => Some(ANTHROPIC_KEY),
            Upstream::Gemini => Some(GEMINI_KEY),
            Upstream::Bedrock | Upstream::BedrockClaude => Some(BEDROCK_ACCESS_KEY_ID),
            Upstream::Azure | Upstream::AzureResponses => Some(azure::API_KEY),
            Upstream::VertexClaude
            | Upstream::VertexGemini
            | Upstream::VertexOpen
            | Upstream::AzureV1 => None,
        }
    }

    /// The fake that serves it.
    pub fn fake(self, m: &Matrix) -> &FakeUpstream {
        match self {
            Upstream::OpenAi | Upstream::Responses => &m.h.openai,
            Upstream::Anthropic => &m.h.anthropic,
            Upstream::Gemini => &m.h.gemini,
            Upstream::Bedrock | Upstream::BedrockClaude => &m.h.bedrock,
            Upstream::VertexClaude => &m.vertex_claude,
            Upstream::VertexGemini => &m.vertex_gemini,
            Upstream::VertexOpen => &m.vertex_open,
            Upstream::Azure | Upstream::AzureV1 | Upstream::AzureResponses => &m.azure,
        }
    }

    /// Whether `rx`, received by its fake, is a call to this wire: a generation
    /// (or a refused attempt at one), not a token grant, nor the other API that
    /// shares the fake (OpenAI's Chat and Responses; Azure's two APIs).
    pub fn owns(self, rx: &Received) -> bool {
        match self {
            Upstream::OpenAi => rx.path != "/v1/responses",
            Upstream::Responses => rx.path == "/v1/responses",
            Upstream::VertexClaude | Upstream::VertexGemini | Upstream::VertexOpen => {
                rx.path != "/token"
            }
            Upstream::Azure => {
                rx.path != azure::token_path() && !rx.path.starts_with("/openai/v1/")
            }
            Upstream::AzureV1 => rx.path.starts_with("/openai/v1/") && !responds(rx),
            Upstream::AzureResponses => responds(rx),
            Upstream::Bedrock => !invokes(rx),
            Upstream::BedrockClaude => invokes(rx),
            Upstream::Anthropic | Upstream::Gemini => true,
        }
    }

    /// Whether its usage reports cache reads and writes apart from the prompt
    /// (Claude's, wherever it runs: [`CANNED_CACHE_READ_INPUT_TOKENS`] and
    /// [`CANNED_CACHE_CREATION_INPUT_TOKENS`] over the prompt).
    ///
    /// [`CANNED_CACHE_READ_INPUT_TOKENS`]: switchyard_testkit::canned::CANNED_CACHE_READ_INPUT_TOKENS
    /// [`CANNED_CACHE_CREATION_INPUT_TOKENS`]: switchyard_testkit::canned::CANNED_CACHE_CREATION_INPUT_TOKENS
    pub fn reports_cache(self) -> bool {
        matches!(
            self,
            Upstream::Anthropic
                | Upstream::Bedrock
                | Upstream::BedrockClaude
                | Upstream::VertexClaude
        )
    }

    /// Whether its thinking carries Anthropic's signatures (Claude's, wherever it runs).
    pub fn signs_thinking(self) -> bool {
        self.reports_cache()
    }

    /// The id its fake gives the tool call it answers with (`None`: none, the
    /// gateway mints one).
    pub fn answer_call_id(self) -> Option<&'static str> {
        match self {
            Upstream::Responses | Upstream::AzureResponses => {
                Some(switchyard_testkit::responses::CALL_ID)
            }
            other => super::answer_call_id(other.family()),
        }
    }
}

impl Upstream {
    /// Whether it is a Responses API (OpenAI's or Azure's), whose bodies the
    /// matrix reads with its own view ([`super::responses_view`]).
    pub fn speaks_responses(self) -> bool {
        matches!(self, Upstream::Responses | Upstream::AzureResponses)
    }
}

/// Whether `rx` is a call to Azure's Responses API, not to its Chat.
fn responds(rx: &Received) -> bool {
    rx.path == "/openai/v1/responses"
}

/// Whether `rx` is a call to Bedrock's InvokeModel, not to Converse.
fn invokes(rx: &Received) -> bool {
    rx.path.ends_with("/invoke") || rx.path.ends_with("/invoke-with-response-stream")
}

/// The harness with the cloud fakes: the server in front of the four vendors'
/// fakes (the common harness) and of Vertex's three publishers and Azure (both
/// its APIs on one resource), each with its provider and catalog model; the
/// Responses wire on the OpenAI fake.
pub struct Matrix {
    pub h: Harness,
    pub vertex_claude: FakeUpstream,
    pub vertex_gemini: FakeUpstream,
    pub vertex_open: FakeUpstream,
    pub azure: FakeUpstream,
    /// The service accounts' key files.
    _files: ConfigFile,
}

impl Matrix {
    pub async fn start() -> Matrix {
        let vertex_claude = FakeUpstream::start_vertex(Vendor::Anthropic).await.unwrap();
        let vertex_gemini = FakeUpstream::start_vertex(Vendor::Gemini).await.unwrap();
        let vertex_open = FakeUpstream::start_vertex(Vendor::OpenAi).await.unwrap();
        let azure = FakeUpstream::start_azure().await.unwrap();
        // One service account per Vertex fake: each grants tokens for its own routes.
        let files = ConfigFile::new("");
        let account = |name: &str, fake: &FakeUpstream| {
            let path = files.dir.join(format!("{name}.json"));
            let token_uri = format!("{}/token", fake.base_url());
            std::fs::write(&path, vertex::service_account_json(&token_uri)).unwrap();
            path.display().to_string()
        };
        let place = "/v1/projects/{project}/locations/{region}";
        let providers_extra = format!(
            r#"  vertex-claude:
    wire: vertex-anthropic
    endpoint: "{claude}{place}"
    region: {VERTEX_CLAUDE_REGION}
    credentials: {{ google: {{ service_account_file: "{claude_sa}" }} }}
  vertex-gemini:
    wire: vertex-gemini
    endpoint: "{gemini}{place}"
    region: {VERTEX_GEMINI_REGION}
    credentials: {{ google: {{ service_account_file: "{gemini_sa}" }} }}
  vertex-open:
    wire: vertex-openai
    endpoint: "{open}{place}"
    region: {VERTEX_OPEN_REGION}
    project: {project}
    credentials: {{ google: {{ service_account_file: "{open_sa}" }} }}
  azure:
    wire: azure-openai
    endpoint: "{azure}"
    credentials: {{ keys: ["{azure_key}"] }}
  azure-v1:
    wire: azure-openai-v1
    endpoint: "{azure}"
    credentials: {{ azure: {{ tenant_id: "{tenant}", client_id: "{client}", client_secret: "{entra_secret}", authority_host: "{azure}" }} }}
  bedrock-claude:
    wire: bedrock-anthropic
    endpoint: "{{bedrock}}"
    region: {bedrock_region}
    credentials: {{ aws: {{ access_key_id: {BEDROCK_ACCESS_KEY_ID}, secret_access_key: "{BEDROCK_SECRET}" }} }}
  azure-responses:
    wire: azure-openai-responses
    endpoint: "{azure}"
    credentials: {{ keys: ["{azure_key}"] }}
  oai-responses: {{ wire: openai-responses, endpoint: "{{openai}}/v1", credentials: {{ keys: ["{OPENAI_KEY}"] }} }}
"#,
            claude = vertex_claude.base_url(),
            gemini = vertex_gemini.base_url(),
            open = vertex_open.base_url(),
            azure = azure.base_url(),
            claude_sa = account("claude", &vertex_claude),
            gemini_sa = account("gemini", &vertex_gemini),
            open_sa = account("open", &vertex_open),
            project = vertex::PROJECT,
            azure_key = azure::API_KEY,
            tenant = azure::TENANT,
            client = azure::CLIENT_ID,
            entra_secret = azure::CLIENT_SECRET,
            bedrock_region = switchyard_testkit::bedrock::REGION,
        );
        let mut extra_models = String::new();
        for u in [
            Upstream::BedrockClaude,
            Upstream::VertexClaude,
            Upstream::VertexGemini,
            Upstream::VertexOpen,
            Upstream::Azure,
            Upstream::AzureV1,
            Upstream::Responses,
            Upstream::AzureResponses,
        ] {
            extra_models.push_str(&format!(
                "  - id: {id}\n    deployments: [{{ provider: {provider}, model: \"{model}\" }}]\n    \
                 capabilities: [vision, tools, structured_output, reasoning]\n",
                id = u.catalog_model(),
                provider = u.provider(),
                model = u.upstream_model(),
            ));
        }
        let options = Options { providers_extra, extra_models, ..Options::default() };
        let h = Harness::start_with(options).await;
        Matrix { h, vertex_claude, vertex_gemini, vertex_open, azure, _files: files }
    }

    /// Every fake, once each (the OpenAI fake serves two wires).
    pub fn fakes(&self) -> [&FakeUpstream; 8] {
        [
            &self.h.openai,
            &self.h.anthropic,
            &self.h.gemini,
            &self.h.bedrock,
            &self.vertex_claude,
            &self.vertex_gemini,
            &self.vertex_open,
            &self.azure,
        ]
    }
}

/// Send `body` from a client of `format`; return the status, the answer and the
/// last call `u` got (none for a refusal that stopped before it).
pub async fn exchange(
    m: &Matrix,
    format: ClientFormat,
    u: Upstream,
    body: &Value,
) -> (u16, Vec<u8>, Option<Received>) {
    let fake = u.fake(m);
    fake.clear_received();
    let before = fake.request_count();
    let resp = m.h.post(path(format), body).await;
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.map(|b| b.to_vec()).unwrap_or_default();
    if status == 200 {
        // Recorded before it was answered; bounded all the same.
        let _ = tokio::time::timeout(WAIT, fake.wait_for_requests(before + 1)).await;
    }
    let received = fake.received().into_iter().rfind(|rx| u.owns(rx));
    (status, bytes, received)
}

/// Every secret the gateway holds: none but [`Upstream::key`] may reach an upstream.
pub fn secrets() -> Vec<&'static str> {
    let mut all = SECRETS.to_vec();
    all.extend([azure::API_KEY, azure::CLIENT_SECRET]);
    all
}

/// A Vertex route: `…/projects/{project}/locations/{region}/{rest}`, with `@` and
/// `:` as sent percent-encoded read back.
fn vertex_path(region: &str, rest: &str) -> String {
    format!("/v1/projects/{}/locations/{region}/{rest}", vertex::PROJECT)
}

fn decoded(path: &str) -> String {
    path.replace("%3A", ":").replace("%3a", ":").replace("%40", "@")
}

/// The path (decoded) each wire's call goes to.
pub fn expected_path(u: Upstream, stream: bool) -> String {
    match u {
        Upstream::OpenAi => "/v1/chat/completions".into(),
        Upstream::Responses => "/v1/responses".into(),
        Upstream::Anthropic => "/v1/messages".into(),
        Upstream::Gemini => {
            let action = if stream { "streamGenerateContent" } else { "generateContent" };
            format!("/v1beta/models/{}:{action}", u.upstream_model())
        }
        Upstream::Bedrock => bedrock_path(stream),
        Upstream::BedrockClaude => {
            let action = if stream { "invoke-with-response-stream" } else { "invoke" };
            format!("/model/{}/{action}", u.upstream_model())
        }
        Upstream::VertexClaude => {
            let action = if stream { "streamRawPredict" } else { "rawPredict" };
            vertex_path(
                VERTEX_CLAUDE_REGION,
                &format!("publishers/anthropic/models/{}:{action}", u.upstream_model()),
            )
        }
        Upstream::VertexGemini => {
            let action = if stream { "streamGenerateContent" } else { "generateContent" };
            vertex_path(
                VERTEX_GEMINI_REGION,
                &format!("publishers/google/models/{}:{action}", u.upstream_model()),
            )
        }
        Upstream::VertexOpen => {
            vertex_path(VERTEX_OPEN_REGION, "endpoints/openapi/chat/completions")
        }
        Upstream::Azure => format!("/openai/deployments/{AZURE_DEPLOYMENT}/chat/completions"),
        Upstream::AzureV1 => "/openai/v1/chat/completions".into(),
        Upstream::AzureResponses => "/openai/v1/responses".into(),
    }
}

/// The envelope of a cloud wire's call: path, query, credential, where the model
/// goes (the body's own streaming flags are its family's, checked by the caller).
pub fn check_cloud_envelope(p: &mut Problems, rx: &Received, u: Upstream, stream: bool) {
    let body = &rx.body;
    let path = decoded(&rx.path);
    p.eq("upstream path", path.as_str(), expected_path(u, stream).as_str());
    let query = rx.query.as_deref().unwrap_or("");
    match u {
        Upstream::VertexClaude | Upstream::VertexGemini | Upstream::VertexOpen => {
            // A token the fake granted (it refuses any other with a 401).
            let auth = rx.header("authorization").unwrap_or_default();
            p.check(auth.starts_with("Bearer ya29.fake-vertex-"), || {
                format!("upstream authorization is not a granted Vertex token: {auth:?}")
            });
            for header in ["x-api-key", "x-goog-api-key", "api-key", "anthropic-version"] {
                p.check(rx.header(header).is_none(), || format!("upstream {header} header sent"));
            }
            p.check(!query.split('&').any(|kv| kv.starts_with("key=")), || {
                format!("a key is in the Vertex query: {query:?}")
            });
        }
        Upstream::BedrockClaude => {
            // SigV4 for the provider's key pair and region (the fake recomputes
            // the signature), the flags in the body, never as a header.
            let auth = rx.header("authorization").unwrap_or_default();
            let scope = format!("{BEDROCK_ACCESS_KEY_ID}/");
            p.check(
                auth.starts_with("AWS4-HMAC-SHA256 Credential=") && auth.contains(&scope),
                || format!("upstream authorization is not SigV4 for the provider's key: {auth:?}"),
            );
            for header in ["x-api-key", "anthropic-version", "anthropic-beta"] {
                p.check(rx.header(header).is_none(), || format!("upstream {header} header sent"));
            }
        }
        Upstream::Azure | Upstream::AzureResponses => {
            p.eq("upstream api-key", rx.header("api-key"), Some(azure::API_KEY));
            p.check(rx.header("authorization").is_none(), || {
                "upstream authorization sent beside the api-key".into()
            });
            // The dated API takes its version; the v1 API none.
            let version = format!("api-version={}", switchyard_protocol::azure::API_VERSION);
            let want = if u == Upstream::Azure { version.as_str() } else { "" };
            p.eq("upstream query", query, want);
        }
        Upstream::AzureV1 => {
            // A token the fake's Entra endpoint granted (it refuses any other).
            let auth = rx.header("authorization").unwrap_or_default();
            p.check(auth.starts_with("Bearer eyJ0eXAiOiJKV1Qi.fake-entra-"), || {
                format!("upstream authorization is not a granted Entra token: {auth:?}")
            });
            p.check(rx.header("api-key").is_none(), || "upstream api-key header sent".into());
            // Versionless.
            p.check(query.is_empty(), || format!("upstream query {query:?}"));
        }
        _ => unreachable!("{u:?} is no cloud wire"),
    }
    match u {
        // The model in the path: none in the body; the version in the body.
        Upstream::VertexClaude => {
            p.eq(
                "upstream body.anthropic_version",
                &body["anthropic_version"],
                &json!(vertex::ANTHROPIC_VERSION),
            );
            p.check(body.get("model").is_none(), || "upstream body names a model".into());
        }
        // The model in the path, the stream by the action, the version in the body.
        Upstream::BedrockClaude => {
            p.eq(
                "upstream body.anthropic_version",
                &body["anthropic_version"],
                &json!(switchyard_testkit::bedrock::invoke::ANTHROPIC_VERSION),
            );
            p.check(body.get("model").is_none(), || "upstream body names a model".into());
            p.check(body.get("stream").is_none(), || "upstream body has a stream flag".into());
        }
        Upstream::VertexGemini => {
            p.eq("upstream query has alt=sse", query.split('&').any(|kv| kv == "alt=sse"), stream);
        }
        Upstream::VertexOpen => {
            p.eq("upstream body.model", &body["model"], &json!(VERTEX_OPEN_MODEL));
            p.check(query.is_empty(), || format!("upstream query {query:?}"));
        }
        Upstream::Azure => {
            p.check(body.get("model").is_none(), || "upstream body names a model".into());
        }
        // The deployment in the body.
        Upstream::AzureV1 | Upstream::AzureResponses => {
            p.eq("upstream body.model", &body["model"], &json!(AZURE_DEPLOYMENT));
        }
        _ => {}
    }
}
