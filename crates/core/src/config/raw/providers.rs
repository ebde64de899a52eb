//! Providers as written: the wire, the endpoint, credentials and options.

use super::*;

/// A provider's `wire:`, as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WireName {
    /// `openai-chat`: OpenAI Chat Completions and compatible servers.
    OpenaiChat,
    /// `anthropic`: Anthropic Messages.
    Anthropic,
    /// `gemini`: Google Gemini.
    Gemini,
    /// `bedrock`: Amazon Bedrock's Converse.
    Bedrock,
    /// `bedrock-anthropic`: Claude on Amazon Bedrock's InvokeModel, in
    /// Anthropic's own body.
    BedrockAnthropic,
    /// `vertex-anthropic`: Claude on Google Vertex AI.
    VertexAnthropic,
    /// `vertex-gemini`: Gemini on Google Vertex AI.
    VertexGemini,
    /// `vertex-openai`: open models on Vertex AI's OpenAI-compatible endpoint.
    VertexOpenai,
    /// `azure-openai`: Chat Completions on an Azure OpenAI deployment.
    AzureOpenai,
    /// `azure-openai-v1`: Chat Completions on Azure OpenAI's v1 API.
    AzureOpenaiV1,
    /// `azure-openai-responses`: the Responses API on Azure OpenAI's v1 API.
    AzureOpenaiResponses,
    /// `openai-responses`: OpenAI's Responses API.
    OpenaiResponses,
    /// `fal`: fal's queue, for media jobs.
    Fal,
    /// `mock`: the built-in deterministic echo, no network.
    Mock,
}

impl WireName {
    /// The wire it names; `None` for the mock, which calls nothing.
    pub fn wire(self) -> Option<switchyard_protocol::Wire> {
        use switchyard_protocol::Wire;
        match self {
            WireName::OpenaiChat => Some(Wire::OpenAiChat),
            WireName::Anthropic => Some(Wire::Anthropic),
            WireName::Gemini => Some(Wire::Gemini),
            WireName::Bedrock => Some(Wire::Bedrock),
            WireName::BedrockAnthropic => Some(Wire::BedrockAnthropic),
            WireName::VertexAnthropic => Some(Wire::VertexAnthropic),
            WireName::VertexGemini => Some(Wire::VertexGemini),
            WireName::VertexOpenai => Some(Wire::VertexOpenAi),
            WireName::AzureOpenai => Some(Wire::AzureOpenAi),
            WireName::AzureOpenaiV1 => Some(Wire::AzureOpenAiV1),
            WireName::AzureOpenaiResponses => Some(Wire::AzureOpenAiResponses),
            WireName::OpenaiResponses => Some(Wire::Responses),
            WireName::Fal => Some(Wire::Fal),
            WireName::Mock => None,
        }
    }
}

/// A provider's `preset:`: an OpenAI-compatible vendor whose endpoint, key
/// variable and departures from OpenAI the gateway knows
/// ([`crate::catalog::presets`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PresetName {
    /// Groq.
    Groq,
    /// Mistral AI (La Plateforme).
    Mistral,
    /// DeepSeek.
    Deepseek,
    /// Together AI.
    Together,
    /// Fireworks AI.
    Fireworks,
    /// xAI (Grok).
    Xai,
    /// OpenRouter.
    Openrouter,
    /// A local Ollama server.
    Ollama,
    /// A vLLM server.
    Vllm,
    /// A local LM Studio server.
    Lmstudio,
}

/// A provider's name as written under `providers:`, with where it was written (a
/// problem with the provider names this line when nothing closer has one). Compared,
/// ordered and looked up by the name alone, so the map reads like one keyed by
/// `String`.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct ProviderName(pub Spanned<String>);

impl ProviderName {
    /// A name from no file (built in code).
    pub fn new(name: impl Into<String>) -> Self {
        Self(unlocated(name.into()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0.value
    }

    /// Where it was written (unknown for a name built in code).
    pub fn location(&self) -> Span {
        self.0.span
    }
}

impl PartialEq for ProviderName {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for ProviderName {}

impl PartialOrd for ProviderName {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ProviderName {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Borrow<str> for ProviderName {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for ProviderName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of `providers:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// How it is called.
    pub wire: WireName,
    /// `openai-chat` wire only: an OpenAI-compatible vendor it is. Gives the
    /// endpoint when none is written, the key's variable (none for a local
    /// server) when no credentials are, and the rewrites the vendor needs.
    #[serde(default)]
    pub preset: Option<Spanned<PresetName>>,
    /// Base URL. Defaults per wire: `https://api.openai.com/v1`,
    /// `https://api.anthropic.com`, `https://generativelanguage.googleapis.com`;
    /// with a `preset`, the vendor's.
    #[serde(default)]
    pub endpoint: Option<Spanned<String>>,
    /// Spanned so that a missing key is reported at the block that declares it.
    #[serde(default = "unwritten_credentials")]
    pub credentials: Spanned<Credentials>,
    /// Extra headers sent on every upstream request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Query parameters set on every upstream request's URL, replacing the
    /// wire's own of the same name (Azure OpenAI's `api-version`).
    #[serde(default)]
    pub query: BTreeMap<String, String>,
    /// Mock wire only: latency before the answer (and between streamed chunks).
    #[serde(default)]
    pub latency_ms: u64,
    /// Request fields this provider is known to refuse; removed on the fast path.
    #[serde(default)]
    pub drop_fields: Vec<String>,
    /// `backend`: serves routes, but the models deployed only here never appear in
    /// model lists.
    #[serde(default)]
    pub surface: Surface,
    /// What it declares about the data it is sent.
    #[serde(default)]
    pub governance: Governance,
    /// Multiplies the metered cost of this provider's answers (e.g. 1.1 for a 10%
    /// platform fee). Default 1.
    #[serde(default)]
    pub markup: Option<Spanned<f64>>,
    /// The server tools (hosted tools: web search, code execution, MCP, …) its
    /// deployments run, unless a deployment says otherwise. Absent: an `anthropic`
    /// provider runs Anthropic's, any other none. A request needing one goes only
    /// to deployments that run it.
    #[serde(default)]
    pub server_tools: Option<Vec<Spanned<switchyard_protocol::ServerTool>>>,
    /// A wire of Claude's own body (`anthropic`, `vertex-anthropic`,
    /// `bedrock-anthropic`): the `anthropic-beta` flags it accepts (an
    /// Anthropic-compatible server that refuses others). Absent: a client's flags
    /// go as they came to `anthropic`, none to Vertex, and those Bedrock
    /// documents to Bedrock.
    #[serde(default)]
    pub anthropic_betas: Option<Vec<String>>,
    /// A request may name `<provider>/<model>` for a model the catalog does not
    /// list, and is sent here with `<model>` as the upstream id (as LiteLLM's
    /// `openai/gpt-4o`). Default false: only catalog models reach this provider.
    #[serde(default)]
    pub allow_unlisted_models: bool,
    /// Batches (`/v1/batches`) whose lines all go to one of its deployments
    /// are handed to its own batch API (OpenAI's `/v1/batches`, Anthropic's
    /// Message Batches) instead of being run by the gateway. Default false: a
    /// server compatible with the wire need not serve its batch API.
    #[serde(default)]
    pub batch_api: bool,
    /// Where a batch API that reads its input from a bucket stages it
    /// (`vertex-gemini`: `gs://bucket/prefix`; `bedrock-anthropic`:
    /// `s3://bucket/prefix`; the job writes its answers there too). The
    /// provider's credential must be allowed to write and read it.
    #[serde(default)]
    pub batch_bucket: Option<String>,
    /// `bedrock-anthropic`: the IAM role Bedrock's batch jobs assume to read
    /// and write `batch_bucket` (required there).
    #[serde(default)]
    pub batch_role_arn: Option<String>,
    /// The storage API `batch_bucket` is reached at. Absent:
    /// `https://storage.googleapis.com`, or S3 in the endpoint's region (an
    /// emulator's, for tests).
    #[serde(default)]
    pub storage_endpoint: Option<String>,
    /// `client:`: how its HTTP client is shaped (extra roots, a client
    /// certificate, a proxy, the connection pool). Absent: the defaults.
    #[serde(default)]
    pub client: Option<Spanned<ClientConfig>>,
    /// The cloud region it is called in, where its wire's endpoint names one
    /// (Bedrock: the AWS region, `us-east-1`; Vertex AI: the location,
    /// `global` or `us-east5`). Absent: the credentials' own (`AWS_REGION`, the
    /// profile's `region`).
    #[serde(default)]
    pub region: Option<Spanned<String>>,
    /// The cloud project, where its wire's endpoint names one (Vertex AI).
    /// Absent: the service account's `project_id`.
    #[serde(default)]
    pub project: Option<Spanned<String>>,
}

/// No `credentials` block was written: defaults, at no position in the file.
fn unwritten_credentials() -> Spanned<Credentials> {
    unlocated(Credentials::default())
}

/// A value that comes from no file (built in code): a problem with it is reported
/// without a line, as one with a defaulted value is.
pub fn unlocated<T>(value: T) -> Spanned<T> {
    Spanned::unlocated(value)
}

impl ProviderConfig {
    /// A provider on `wire` with every other field as an empty YAML block leaves it
    /// (so `{ wire: … }` and this compile alike).
    pub fn new(wire: WireName) -> Self {
        Self {
            wire,
            preset: None,
            endpoint: None,
            credentials: unwritten_credentials(),
            headers: BTreeMap::new(),
            query: BTreeMap::new(),
            latency_ms: 0,
            drop_fields: Vec::new(),
            surface: Surface::default(),
            governance: Governance::default(),
            markup: None,
            server_tools: None,
            anthropic_betas: None,
            allow_unlisted_models: false,
            batch_api: false,
            batch_bucket: None,
            batch_role_arn: None,
            storage_endpoint: None,
            client: None,
            region: None,
            project: None,
        }
    }
}

/// A provider's `client:` block: how its HTTP client is shaped. Paths are
/// relative to the configuration file (to the working directory for text with
/// no file); the files are read when the configuration is compiled, so a
/// rotated certificate takes effect on the next reload.
#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientConfig {
    /// PEM file of extra root certificates, trusted besides the platform's (an
    /// internal CA).
    #[serde(default)]
    pub ca_file: Option<Spanned<String>>,
    /// PEM file of the client certificate chain (leaf first), presented when the
    /// upstream asks for one (mTLS). Needs `client_key_file`.
    #[serde(default)]
    pub client_cert_file: Option<Spanned<String>>,
    /// PEM file of the client certificate's private key.
    #[serde(default)]
    pub client_key_file: Option<Spanned<String>>,
    /// Every request goes through this proxy: `http://` or `https://`,
    /// `user:password@` for Basic proxy authentication. Absent: the
    /// environment's `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`.
    #[serde(default)]
    pub proxy: Option<Spanned<String>>,
    /// The most idle connections kept per upstream host (default 256; 0 keeps none).
    #[serde(default)]
    pub pool_max_idle_per_host: Option<usize>,
    /// How long an idle connection is kept, in milliseconds (default 90000).
    #[serde(default)]
    pub pool_idle_timeout_ms: Option<Spanned<u64>>,
    /// Not in the file: extra roots given as PEM in code
    /// ([`crate::embed::Provider::client`]), instead of `ca_file`.
    #[serde(skip)]
    pub ca_pem: Option<Vec<u8>>,
    /// Not in the file: a client identity given as PEM in code, instead of
    /// `client_cert_file` and `client_key_file`.
    #[serde(skip)]
    pub identity: Option<crate::client::ClientIdentity>,
}

/// Whether a provider's models are listed (`surface:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Surface {
    /// Its models are listed (the default).
    #[default]
    Public,
    /// It serves routes, but models deployed only here are never listed.
    Backend,
}

/// Where a provider's platform key(s) come from.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    /// Environment variable(s) holding a key each (spanned: an unset one is
    /// reported at its own line).
    #[serde(default)]
    pub env: Vec<Spanned<String>>,
    /// Literal keys (use `${ENV}` interpolation rather than writing secrets here).
    #[serde(default)]
    pub keys: Vec<String>,
    /// The provider needs no key (a local vLLM or Ollama server).
    #[serde(default)]
    pub none: bool,
    /// Keys come only from users (BYOK); no platform key is expected.
    #[serde(default)]
    pub byok_only: bool,
    /// A missing key disables the provider (with a warning) instead of refusing the
    /// configuration. The embedded default uses this.
    #[serde(default)]
    pub optional: bool,
    /// AWS credentials, for a wire signed with SigV4 (Bedrock): `{}` for the
    /// AWS SDKs' default chain, `{ profile: NAME }` for a profile of the
    /// shared files. Instead of keys (a Bedrock API key is a key).
    #[serde(default)]
    pub aws: Option<Spanned<AwsCredentialsConfig>>,
    /// Google credentials, for a wire that takes an OAuth access token
    /// (Vertex AI): a service account's JSON from a file or a variable, or
    /// `{}` for Application Default Credentials. Instead of keys.
    #[serde(default)]
    pub google: Option<Spanned<GoogleCredentialsConfig>>,
    /// Microsoft Entra ID credentials, for a wire that takes an Entra token
    /// (Azure OpenAI): an app registration's client secret, or (no secret)
    /// the machine's managed identity. Instead of keys.
    #[serde(default)]
    pub azure: Option<Spanned<AzureCredentialsConfig>>,
}

/// `credentials.azure`: where Microsoft Entra ID access tokens come from.
/// `tenant_id`, `client_id` and `client_secret`: the client-credentials grant
/// of an app registration (a service principal). No `client_secret`: the
/// managed identity of the Azure machine the gateway runs on (the instance
/// metadata service), `client_id` naming a user-assigned one.
#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AzureCredentialsConfig {
    /// The directory (tenant) the app is registered in.
    #[serde(default)]
    pub tenant_id: Option<Spanned<String>>,
    /// The app's (or the user-assigned managed identity's) client ID.
    #[serde(default)]
    pub client_id: Option<Spanned<String>>,
    /// The app's client secret (write it as `${VAR}`).
    #[serde(default)]
    pub client_secret: Option<Spanned<String>>,
    /// The Entra authority for a client secret (default
    /// `https://login.microsoftonline.com`; a national cloud's otherwise).
    #[serde(default)]
    pub authority_host: Option<Spanned<String>>,
    /// The scope asked for (default
    /// `https://cognitiveservices.azure.com/.default`).
    #[serde(default)]
    pub scope: Option<Spanned<String>>,
}

impl std::fmt::Debug for AzureCredentialsConfig {
    // The secret never.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let value = |v: &Option<Spanned<String>>| v.as_ref().map(|v| v.value.clone());
        f.debug_struct("AzureCredentialsConfig")
            .field("tenant_id", &value(&self.tenant_id))
            .field("client_id", &value(&self.client_id))
            .field("authority_host", &value(&self.authority_host))
            .field("scope", &value(&self.scope))
            .finish_non_exhaustive()
    }
}

/// `credentials.aws`: where AWS credentials come from. Nothing given: the
/// default chain (the environment's keys, `AWS_PROFILE` or `default`, web
/// identity, container, instance metadata).
#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwsCredentialsConfig {
    /// A profile of the shared config and credentials files, holding keys.
    #[serde(default)]
    pub profile: Option<Spanned<String>>,
    /// An access key ID, with `secret_access_key` (write the secret as
    /// `${VAR}`): keys of the provider's own, as Vector's `auth` takes them.
    #[serde(default)]
    pub access_key_id: Option<Spanned<String>>,
    /// The secret of `access_key_id`.
    #[serde(default)]
    pub secret_access_key: Option<Spanned<String>>,
    /// A session token, for temporary keys.
    #[serde(default)]
    pub session_token: Option<String>,
}

impl std::fmt::Debug for AwsCredentialsConfig {
    // The secret and the token never.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsCredentialsConfig")
            .field("profile", &self.profile.as_ref().map(|p| &p.value))
            .field("access_key_id", &self.access_key_id.as_ref().map(|k| &k.value))
            .finish_non_exhaustive()
    }
}

/// `credentials.google`: where Google access tokens come from. At most one
/// field; none: Application Default Credentials.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoogleCredentialsConfig {
    /// A service account's (or a user's) credential JSON file, relative to the
    /// configuration file.
    #[serde(default)]
    pub service_account_file: Option<Spanned<String>>,
    /// The environment variable that holds the credential JSON itself.
    #[serde(default)]
    pub service_account_env: Option<Spanned<String>>,
}

impl std::fmt::Debug for ClientConfig {
    // The proxy's password never; PEM given in code as its size.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = |p: &Option<Spanned<String>>| p.as_ref().map(|p| p.value.clone());
        f.debug_struct("ClientConfig")
            .field("ca_file", &path(&self.ca_file))
            .field("client_cert_file", &path(&self.client_cert_file))
            .field("client_key_file", &path(&self.client_key_file))
            .field(
                "proxy",
                &self.proxy.as_ref().map(|p| crate::util::redact_userinfo(&p.value).into_owned()),
            )
            .field("pool_max_idle_per_host", &self.pool_max_idle_per_host)
            .field("pool_idle_timeout_ms", &self.pool_idle_timeout_ms.as_ref().map(|t| t.value))
            .field("ca_pem", &self.ca_pem.as_ref().map(|p| format!("{} bytes", p.len())))
            .field("identity", &self.identity)
            .finish()
    }
}
