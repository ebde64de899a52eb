//! Test harness: the real server on 127.0.0.1:0 in front of one fake upstream per
//! wire (and the built-in mock), with records captured in memory.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use switchyard_core::{Catalog, ConfigSource, Engine};
use switchyard_protocol::{
    ClientFormat, Response, ResponseAccumulator, SseDecoder, StreamDecoder, anthropic, gemini,
    openai_chat, responses,
};
use switchyard_server::AppState;
use switchyard_store::MemorySink;
use switchyard_testkit::{FakeUpstream, Vendor};
use tokio::sync::oneshot;

pub const GATEWAY_KEY: &str = "sk-gw-test-0123456789abcdef";
pub const OPENAI_KEY: &str = "sk-oa-upstream-secret-0001";
pub const ANTHROPIC_KEY: &str = "sk-ant-upstream-secret-0002";
pub const GEMINI_KEY: &str = "gm-upstream-secret-0003";
/// What the Bedrock provider signs with: the key pair its fake accepts.
pub const BEDROCK_ACCESS_KEY_ID: &str = switchyard_testkit::bedrock::ACCESS_KEY_ID;
pub const BEDROCK_SECRET: &str = switchyard_testkit::bedrock::SECRET_ACCESS_KEY;
/// The Bedrock deployment's model: Claude, by an inference profile's id.
pub const BEDROCK_MODEL: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

/// Bound every wait in tests (never sleep to synchronise).
pub const WAIT: Duration = Duration::from_secs(10);

/// A test client carrying its own crypto provider. Nothing in these tests
/// installs one process-wide, so every suite also shows that the gateway needs
/// none (reqwest would panic building a client without one, or a preconfigured
/// TLS setup). The tests speak plain HTTP: no roots are needed.
pub fn client_builder() -> reqwest::ClientBuilder {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    reqwest::Client::builder().tls_backend_preconfigured(tls)
}

/// [`client_builder`], built.
pub fn client() -> reqwest::Client {
    client_builder().build().unwrap()
}

pub struct Harness {
    pub base: String,
    pub client: reqwest::Client,
    pub sink: Arc<MemorySink>,
    pub openai: FakeUpstream,
    pub anthropic: FakeUpstream,
    pub gemini: FakeUpstream,
    pub bedrock: FakeUpstream,
    pub state: Arc<AppState>,
    /// The trace exporter, when the configuration has `telemetry.otlp` (as
    /// the binary starts it).
    pub traces: Option<switchyard_core::otel::ExportTask>,
    shutdown: Option<oneshot::Sender<()>>,
    pub server: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

/// Knobs a test may turn.
#[derive(Debug, Clone)]
pub struct Options {
    pub first_byte_ms: u64,
    pub idle_ms: u64,
    pub request_ms: u64,
    pub keepalive_ms: u64,
    pub max_body_bytes: usize,
    /// More YAML entries under `models:` (each starting with `  - id:`).
    pub extra_models: String,
    /// More YAML lines under `gateway:` (each indented two spaces).
    pub gateway_extra: String,
    /// A whole `routes:` block (or empty).
    pub routes: String,
    /// More YAML entries under `providers:` (each indented two spaces);
    /// `{openai}`, `{anthropic}` and `{gemini}` become the fakes' base URLs,
    /// `{openai_authority}` the OpenAI fake's `host:port`.
    pub providers_extra: String,
    /// A whole `access_rules:` block (or empty).
    pub rules: String,
    /// A whole `limits:` block (users' and projects' rate limits), or empty.
    pub limits: String,
    /// Limits and budgets for the gateway's admission stage.
    pub admission: Option<Arc<dyn switchyard_core::state::Admission>>,
    /// The response cache (default: in this process, as the binary's local backend).
    pub cache: Option<Arc<dyn switchyard_core::state::ResponseCache>>,
    /// No gateway key configured: open mode.
    pub open: bool,
    /// More top-level YAML (`budgets:`, `limits:`, …), at the end of the file.
    pub top_level: String,
    /// [`ADMIN_KEY`] is the bootstrap admin key (the admin API's routes that
    /// need no database answer it).
    pub admin: bool,
    /// Static gateway keys besides [`GATEWAY_KEY`].
    pub extra_keys: Vec<String>,
}

/// The bootstrap admin key where [`Options::admin`] is set.
pub const ADMIN_KEY: &str = "sk-gw-admin-0123456789abcdef";

impl Default for Options {
    fn default() -> Self {
        Self {
            first_byte_ms: 5000,
            idle_ms: 5000,
            request_ms: 20000,
            keepalive_ms: 15000,
            max_body_bytes: 1 << 20,
            extra_models: String::new(),
            gateway_extra: String::new(),
            routes: String::new(),
            providers_extra: String::new(),
            rules: String::new(),
            limits: String::new(),
            admission: None,
            cache: None,
            open: false,
            top_level: String::new(),
            admin: false,
            extra_keys: Vec::new(),
        }
    }
}

/// The fakes' base URLs, as [`config_yaml`] writes them in.
pub struct Upstreams<'a> {
    pub openai: &'a str,
    pub anthropic: &'a str,
    pub gemini: &'a str,
    pub bedrock: &'a str,
}

pub fn config_yaml(urls: &Upstreams<'_>, o: &Options) -> String {
    let Upstreams { openai, anthropic, gemini, bedrock } = *urls;
    let Options {
        first_byte_ms,
        idle_ms,
        request_ms,
        keepalive_ms,
        max_body_bytes,
        extra_models,
        gateway_extra,
        routes,
        providers_extra,
        rules,
        limits,
        admission: _,
        cache: _,
        open,
        top_level,
        admin: _,
        extra_keys,
    } = o;
    let api_keys = if *open {
        String::new()
    } else {
        std::iter::once(GATEWAY_KEY)
            .chain(extra_keys.iter().map(String::as_str))
            .map(|k| format!("\"{k}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let providers_extra = providers_extra
        .replace("{anthropic}", anthropic)
        .replace("{openai_authority}", openai.trim_start_matches("http://"))
        .replace("{openai}", openai)
        .replace("{gemini}", gemini)
        .replace("{bedrock}", bedrock);
    let region = switchyard_testkit::bedrock::REGION;
    format!(
        r#"
storage: {{ url: none }}
gateway:
  api_keys: [{api_keys}]
  shutdown_grace_secs: 10
  max_body_bytes: {max_body_bytes}
  max_json_depth: 32
  timeouts: {{ first_byte_ms: {first_byte_ms}, idle_ms: {idle_ms}, request_ms: {request_ms}, keepalive_ms: {keepalive_ms} }}
{gateway_extra}
providers:
  openai: {{ wire: openai-chat, endpoint: "{openai}/v1", credentials: {{ keys: ["{OPENAI_KEY}"] }} }}
  anthropic: {{ wire: anthropic, endpoint: "{anthropic}", credentials: {{ keys: ["{ANTHROPIC_KEY}"] }} }}
  gemini: {{ wire: gemini, endpoint: "{gemini}", credentials: {{ keys: ["{GEMINI_KEY}"] }} }}
  bedrock:
    wire: bedrock
    endpoint: "{bedrock}"
    region: {region}
    credentials: {{ aws: {{ access_key_id: {BEDROCK_ACCESS_KEY_ID}, secret_access_key: "{BEDROCK_SECRET}" }} }}
  mock: {{ wire: mock }}
  # Nothing listens on port 1: connections are refused.
  dead: {{ wire: openai-chat, endpoint: "http://127.0.0.1:1/v1", credentials: {{ none: true }} }}
{providers_extra}
models:
  - id: m-openai
    deployments: [{{ provider: openai, model: up-openai }}]
    pricing: {{ input: 1.0, output: 2.0 }}
    capabilities: [vision, tools, structured_output, reasoning]
  - id: m-anthropic
    deployments: [{{ provider: anthropic, model: up-anthropic }}]
    pricing: {{ input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75 }}
    capabilities: [vision, tools, structured_output, reasoning]
  - id: m-gemini
    deployments: [{{ provider: gemini, model: up-gemini }}]
    pricing: {{ input: 0.5, output: 1.5 }}
    capabilities: [vision, tools, structured_output, reasoning]
  - id: m-bedrock
    deployments: [{{ provider: bedrock, model: "{BEDROCK_MODEL}" }}]
    pricing: {{ input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75 }}
    capabilities: [vision, tools, structured_output, reasoning]
  - id: m-chain
    deployments: [{{ provider: openai, model: up-primary }}, {{ provider: anthropic, model: up-fallback }}]
    pricing: {{ input: 1.0, output: 1.0 }}
  - id: m-dead-chain
    deployments: [{{ provider: dead, model: up-dead }}, {{ provider: gemini, model: up-gemini }}]
  - id: m-hidden
    hidden: true
    deployments: [{{ provider: mock }}]
  - id: mock-echo
    aliases: [mock]
    deployments: [{{ provider: mock }}]
{extra_models}
{routes}
{rules}
{limits}
{top_level}
"#
    )
}

impl Harness {
    pub async fn start() -> Harness {
        Self::start_with(Options::default()).await
    }

    /// Start from a configuration file (returned), with a reloader that polls never:
    /// tests rewrite the file and call `reloader.reload_now()`.
    pub async fn start_from_file(
        options: Options,
    ) -> (Harness, ConfigFile, switchyard_server::reload::Reloader) {
        let h = Self::start_with(options.clone()).await;
        let file = ConfigFile::new(&h.yaml(&options));
        let reloader = switchyard_server::reload::Reloader::spawn(
            h.state.gateway.clone(),
            file.path.clone(),
            Duration::ZERO,
            None,
        );
        (h, file, reloader)
    }

    pub async fn start_with(options: Options) -> Harness {
        let openai = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
        let anthropic = FakeUpstream::start(Vendor::Anthropic).await.unwrap();
        let gemini = FakeUpstream::start(Vendor::Gemini).await.unwrap();
        let bedrock = FakeUpstream::start(Vendor::Bedrock).await.unwrap();
        let urls = Upstreams {
            openai: &openai.base_url(),
            anthropic: &anthropic.base_url(),
            gemini: &gemini.base_url(),
            bedrock: &bedrock.base_url(),
        };
        let yaml = config_yaml(&urls, &options);
        let raw = ConfigSource::from_text("test.yaml", &yaml).parse_with(&|_| None).unwrap();
        let catalog = Catalog::compile(&raw, "test.yaml", &|_| None).unwrap();
        let sink = Arc::new(MemorySink::new(10_000));
        // As the binary does without a gateway secret.
        let seal: Arc<dyn switchyard_protocol::Seal> =
            Arc::new(switchyard_store::seal::ContinuitySeal::ephemeral().unwrap());
        let mut runtime = switchyard_core::runtime::Runtime {
            seal: Some(seal),
            // As the binary does on the local backend, unless the test brings its own.
            admission: Some(options.admission.clone().unwrap_or_else(|| {
                Arc::new(switchyard_core::limits::Limiter::local())
                    as Arc<dyn switchyard_core::state::Admission>
            })),
            cache: options.cache.clone().unwrap_or_else(|| {
                Arc::new(switchyard_core::cache::LocalCache::new(catalog.state.cache))
            }),
            ..Default::default()
        };
        let traces = catalog.telemetry.as_deref().map(|config| {
            let (handle, task) = switchyard_core::otel::start(config).unwrap();
            runtime.traces = Some(handle);
            task
        });
        let gateway = Arc::new(Engine::with_runtime(catalog, sink.clone(), runtime).unwrap());
        let state = if options.admin {
            let keys = gateway.snapshot().catalog.settings.api_keys.clone();
            let admin = Some(switchyard_core::util::Secret::new(ADMIN_KEY));
            let ttl = Duration::from_secs(60);
            let identity = switchyard_server::identity::Identity::new(keys, admin, None, None, ttl);
            AppState::with_identity(gateway, identity)
        } else {
            AppState::new(gateway)
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = oneshot::channel::<()>();
        let server = tokio::spawn(switchyard_server::serve(listener, state.clone(), async move {
            let _ = rx.await;
        }));
        Harness {
            base,
            client: client(),
            sink,
            openai,
            anthropic,
            gemini,
            bedrock,
            state,
            traces,
            shutdown: Some(tx),
            server: Some(server),
        }
    }

    /// The configuration this harness would write for `options` (fakes' URLs filled in).
    pub fn yaml(&self, options: &Options) -> String {
        let urls = Upstreams {
            openai: &self.openai.base_url(),
            anthropic: &self.anthropic.base_url(),
            gemini: &self.gemini.base_url(),
            bedrock: &self.bedrock.base_url(),
        };
        config_yaml(&urls, options)
    }

    pub fn fake(&self, vendor: Vendor) -> &FakeUpstream {
        match vendor {
            Vendor::OpenAi => &self.openai,
            Vendor::Anthropic => &self.anthropic,
            Vendor::Gemini => &self.gemini,
            Vendor::Bedrock => &self.bedrock,
        }
    }

    /// POST a JSON body with the gateway key as a bearer token.
    pub async fn post(&self, path: &str, body: &Value) -> reqwest::Response {
        self.post_raw(path, body.to_string()).await
    }

    /// POST a JSON body with the gateway key as a bearer token and extra headers.
    pub async fn post_with(
        &self,
        path: &str,
        body: &Value,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut req = self
            .client
            .post(format!("{}{path}", self.base))
            .bearer_auth(GATEWAY_KEY)
            .header("content-type", "application/json");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.body(body.to_string()).send().await.unwrap()
    }

    /// POST bytes exactly as given, with the gateway key as a bearer token.
    pub async fn post_raw(&self, path: &str, body: impl Into<reqwest::Body>) -> reqwest::Response {
        self.client
            .post(format!("{}{path}", self.base))
            .bearer_auth(GATEWAY_KEY)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap()
    }

    /// Begin graceful shutdown.
    pub fn shutdown(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }

    /// Total requests all fakes received.
    pub fn upstream_requests(&self) -> usize {
        [&self.openai, &self.anthropic, &self.gemini, &self.bedrock]
            .iter()
            .map(|f| f.request_count())
            .sum()
    }
}

/// The endpoint path of a client format.
pub fn path(format: ClientFormat) -> &'static str {
    match format {
        ClientFormat::OpenAiChat => "/v1/chat/completions",
        ClientFormat::OpenAiResponses => "/v1/responses",
        ClientFormat::Anthropic => "/v1/messages",
        ClientFormat::Gemini => panic!("a Gemini path names the model: see gemini_client.rs"),
    }
}

/// Decode a whole (non-stream) response body in a client format.
pub fn decode_whole(format: ClientFormat, body: &[u8]) -> Response {
    match format {
        ClientFormat::OpenAiChat => openai_chat::parse_response(body),
        ClientFormat::OpenAiResponses => responses::parse_response(body),
        ClientFormat::Anthropic => anthropic::parse_response(body),
        ClientFormat::Gemini => gemini::parse_response(body),
    }
    .unwrap_or_else(|e| {
        panic!("{format:?} body does not parse: {e}\n{}", String::from_utf8_lossy(body))
    })
}

/// Decode a streamed body in a client format (the client's view).
pub fn decode_stream(format: ClientFormat, body: &[u8]) -> Response {
    let mut decoder: Box<dyn StreamDecoder> = match format {
        ClientFormat::OpenAiChat => Box::new(openai_chat::Decoder::new()),
        ClientFormat::OpenAiResponses => Box::new(responses::Decoder::new()),
        ClientFormat::Anthropic => Box::new(anthropic::Decoder::new()),
        ClientFormat::Gemini => Box::new(gemini::Decoder::new()),
    };
    let mut sse = SseDecoder::new();
    let mut raw = Vec::new();
    sse.push(body, &mut raw).unwrap();
    sse.finish(&mut raw);
    let mut events = Vec::new();
    for e in &raw {
        decoder
            .push(e, &mut events)
            .unwrap_or_else(|err| panic!("{format:?} stream event {e:?} does not decode: {err}"));
    }
    decoder.finish(&mut events).unwrap_or_else(|e| {
        panic!("{format:?} stream incomplete: {e}\n{}", String::from_utf8_lossy(body))
    });
    let mut acc = ResponseAccumulator::default();
    for e in &events {
        acc.push(e);
    }
    acc.finish()
}

/// Raw SSE events of a body.
pub fn sse_events(body: &[u8]) -> Vec<switchyard_protocol::SseEvent> {
    let mut sse = SseDecoder::new();
    let mut out = Vec::new();
    sse.push(body, &mut out).unwrap();
    sse.finish(&mut out);
    out
}

/// A configuration file in a private temporary directory, removed on drop.
pub struct ConfigFile {
    pub dir: std::path::PathBuf,
    pub path: std::path::PathBuf,
}

impl ConfigFile {
    pub fn new(text: &str) -> ConfigFile {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("switchyard-test-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("switchyard.yaml");
        std::fs::write(&path, text).unwrap();
        ConfigFile { dir, path }
    }

    /// Replace the file atomically (write a temporary file, rename it over).
    pub fn write(&self, text: &str) {
        let tmp = self.dir.join("switchyard.yaml.tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &self.path).unwrap();
    }
}

impl Drop for ConfigFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub mod batches;
pub mod console;
pub mod ws;

/// The catalog model each vendor's fake serves in [`config_yaml`].
pub fn catalog_model(v: Vendor) -> &'static str {
    match v {
        Vendor::OpenAi => "m-openai",
        Vendor::Anthropic => "m-anthropic",
        Vendor::Gemini => "m-gemini",
        Vendor::Bedrock => "m-bedrock",
    }
}

/// The upstream's own name for [`catalog_model`] (what its fake is asked for).
pub fn upstream_model(v: Vendor) -> &'static str {
    match v {
        Vendor::OpenAi => "up-openai",
        Vendor::Anthropic => "up-anthropic",
        Vendor::Gemini => "up-gemini",
        Vendor::Bedrock => BEDROCK_MODEL,
    }
}

/// Claude on Vertex AI from `fake` (a `FakeUpstream::start_vertex` fake) as a
/// provider named `name`, and a model `m-{name}` deploying `model` there:
/// [`Options`] that add both, and the file that holds the service account
/// (keep it as long as the harness). `extra`: more lines of the provider's
/// YAML, each indented four spaces.
pub fn vertex_claude(
    name: &str,
    fake: &FakeUpstream,
    model: &str,
    extra: &str,
) -> (Options, ConfigFile) {
    let files = ConfigFile::new("");
    let sa = files.dir.join(format!("{name}-sa.json"));
    let token_uri = format!("{}/token", fake.base_url());
    std::fs::write(&sa, switchyard_testkit::vertex::service_account_json(&token_uri)).unwrap();
    let options = Options {
        providers_extra: format!(
            "  {name}:\n    wire: vertex-anthropic\n    \
             endpoint: \"{}/v1/projects/{{project}}/locations/{{region}}\"\n    \
             region: us-east5\n{extra}    \
             credentials: {{ google: {{ service_account_file: \"{}\" }} }}\n",
            fake.base_url(),
            sa.display()
        ),
        extra_models: format!(
            "  - id: m-{name}\n    deployments: [{{ provider: {name}, model: \"{model}\" }}]\n"
        ),
        ..Options::default()
    };
    (options, files)
}
