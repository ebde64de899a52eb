//! Catalog models as written: deployments, prices, capabilities.

use super::*;

/// Prices, in USD per million tokens. Without `input`, or without `output`
/// for an answer that wrote any (an embedding writes none), a cost is unknown
/// (`None`, never zero); cache prices fall back to the input price.
///
/// ```
/// use switchyard_core::embed::Pricing;
///
/// let sonnet = Pricing::per_million(3.0, 15.0).cache_read(0.3).cache_write(3.75);
/// assert_eq!((sonnet.input, sonnet.output, sonnet.cache_read), (Some(3.0), Some(15.0), Some(0.3)));
/// assert_eq!(Pricing::default().input, None, "unpriced until said otherwise");
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Pricing {
    /// USD per million input tokens (uncached).
    #[serde(default)]
    pub input: Option<f64>,
    /// USD per million output tokens.
    #[serde(default)]
    pub output: Option<f64>,
    /// USD per million input tokens read from the cache (absent: the input price).
    #[serde(default)]
    pub cache_read: Option<f64>,
    /// USD per million input tokens written to the cache (absent: the input price).
    #[serde(default)]
    pub cache_write: Option<f64>,
    /// Higher prices for a request whose prompt is over a size, as Anthropic
    /// and Google charge past 200K input tokens: the whole request, output
    /// included, is billed at them.
    #[serde(default)]
    pub long_context: Option<LongContext>,
    /// USD per generated image (an image model), whatever its size unless
    /// `per_image_size` names it.
    #[serde(default)]
    pub per_image: Option<f64>,
    /// USD per generated image of a size (`1024x1024`), over `per_image`.
    #[serde(default)]
    pub per_image_size: std::collections::BTreeMap<String, f64>,
    /// USD per second of media a job made (a video or audio model): its
    /// output's duration, else the duration it was asked for.
    #[serde(default)]
    pub per_second: Option<f64>,
    /// USD per finished job, whatever it made (added to `per_second`).
    #[serde(default)]
    pub per_job: Option<f64>,
    /// The fraction of these prices a batch's request is billed at (`0.5`:
    /// half, as OpenAI, Anthropic, Google and Bedrock bill their batch APIs);
    /// absent: the same prices.
    #[serde(default)]
    pub batch: Option<f64>,
}

/// `pricing.long_context`: the prices of a request whose prompt (its input
/// tokens, cached ones included) is over `threshold` tokens. A price left out
/// is the base one; cache prices fall back to this tier's input price.
///
/// ```
/// use switchyard_core::embed::Pricing;
///
/// let pro = Pricing::per_million(1.25, 10.0).long_context(200_000, 2.5, 15.0);
/// let long = pro.long_context.unwrap();
/// assert_eq!((long.threshold, long.input, long.output), (200_000, Some(2.5), Some(15.0)));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct LongContext {
    /// Prompt tokens above which the tier applies.
    pub threshold: u64,
    /// USD per million input tokens (uncached).
    #[serde(default)]
    pub input: Option<f64>,
    /// USD per million output tokens.
    #[serde(default)]
    pub output: Option<f64>,
    /// USD per million input tokens read from the cache (absent: this tier's input price).
    #[serde(default)]
    pub cache_read: Option<f64>,
    /// USD per million input tokens written to the cache (absent: this tier's input price).
    #[serde(default)]
    pub cache_write: Option<f64>,
}

impl Pricing {
    /// `input` and `output` USD per million tokens; cache prices fall back to
    /// the input price.
    pub fn per_million(input: f64, output: f64) -> Self {
        Self { input: Some(input), output: Some(output), ..Self::default() }
    }

    /// USD per million input tokens (uncached).
    #[must_use]
    pub fn input(mut self, usd: f64) -> Self {
        self.input = Some(usd);
        self
    }

    /// USD per million output tokens.
    #[must_use]
    pub fn output(mut self, usd: f64) -> Self {
        self.output = Some(usd);
        self
    }

    /// USD per million input tokens read from the cache.
    #[must_use]
    pub fn cache_read(mut self, usd: f64) -> Self {
        self.cache_read = Some(usd);
        self
    }

    /// USD per million input tokens written to the cache.
    #[must_use]
    pub fn cache_write(mut self, usd: f64) -> Self {
        self.cache_write = Some(usd);
        self
    }

    /// `usd` per generated image, whatever its size.
    #[must_use]
    pub fn per_image(mut self, usd: f64) -> Self {
        self.per_image = Some(usd);
        self
    }

    /// `usd` per second of media a job makes.
    #[must_use]
    pub fn per_second(mut self, usd: f64) -> Self {
        self.per_second = Some(usd);
        self
    }

    /// `usd` per finished job.
    #[must_use]
    pub fn per_job(mut self, usd: f64) -> Self {
        self.per_job = Some(usd);
        self
    }

    /// A batch's line is billed at `fraction` of these prices.
    #[must_use]
    pub fn batch(mut self, fraction: f64) -> Self {
        self.batch = Some(fraction);
        self
    }

    /// These prices as a batch's request is billed: each times `batch` (none
    /// left to apply).
    pub fn batched(&self) -> Pricing {
        let Some(f) = self.batch else { return self.clone() };
        let times = |v: Option<f64>| v.map(|v| v * f);
        Pricing {
            input: times(self.input),
            output: times(self.output),
            cache_read: times(self.cache_read),
            cache_write: times(self.cache_write),
            long_context: self.long_context.map(|l| LongContext {
                input: times(l.input),
                output: times(l.output),
                cache_read: times(l.cache_read),
                cache_write: times(l.cache_write),
                ..l
            }),
            per_image: times(self.per_image),
            per_image_size: self.per_image_size.iter().map(|(k, v)| (k.clone(), v * f)).collect(),
            per_second: times(self.per_second),
            per_job: times(self.per_job),
            batch: None,
        }
    }

    /// The price of one image of `size` (`per_image_size`, else `per_image`).
    pub fn image(&self, size: Option<&str>) -> Option<f64> {
        size.and_then(|s| self.per_image_size.get(s).copied()).or(self.per_image)
    }

    /// A request whose prompt is over `threshold` tokens is billed `input` and
    /// `output` USD per million tokens instead (cache prices: this tier's input).
    #[must_use]
    pub fn long_context(mut self, threshold: u64, input: f64, output: f64) -> Self {
        self.long_context = Some(LongContext {
            threshold,
            input: Some(input),
            output: Some(output),
            ..LongContext::default()
        });
        self
    }

    /// The prices a request with `prompt` input tokens is billed at: these,
    /// or the long-context tier's where the prompt is over its threshold
    /// (what it leaves out being the base price), and whether the tier
    /// applied.
    pub fn for_prompt(&self, prompt: u64) -> (std::borrow::Cow<'_, Pricing>, bool) {
        use std::borrow::Cow;
        let Some(l) = self.long_context.filter(|l| prompt > l.threshold) else {
            return (Cow::Borrowed(self), false);
        };
        let input = l.input.or(self.input);
        // The tier's cache prices fall back to its own input price.
        let (read, write) = match l.input {
            Some(_) => (input, input),
            None => (self.cache_read, self.cache_write),
        };
        let tier = Pricing {
            input,
            output: l.output.or(self.output),
            cache_read: l.cache_read.or(read),
            cache_write: l.cache_write.or(write),
            long_context: None,
            per_image: self.per_image,
            per_image_size: self.per_image_size.clone(),
            per_second: self.per_second,
            per_job: self.per_job,
            batch: self.batch,
        };
        (Cow::Owned(tier), true)
    }
}

/// What a model can take. A request needing vision, tools or structured output
/// skips models that declare capabilities without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// Image input.
    Vision,
    /// Function tools.
    Tools,
    /// A JSON-schema `response_format`.
    StructuredOutput,
    /// Reasoning (thinking): shown in model lists, never filtered on.
    Reasoning,
}

/// What a request offering a hosted tool (web search, code execution, …) gets on
/// a deployment that cannot run it: `unrunnable_server_tools` of a model or route.
/// A tool the request requires (forces with `tool_choice`) is refused either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnrunnableServerTools {
    /// Served without it, after the deployments that run it, and said so
    /// (`x-switchyard-dropped-tools`, the record, a metric, a log line).
    #[default]
    Drop,
    /// Refused (400 `unsupported_tool`) where no deployment runs it, as if the
    /// request required every tool it offers.
    Refuse,
}

/// What a model does: which endpoints serve it. A request of one kind never
/// reaches a model of another (a chat request to an embedding model is refused
/// by name, before anything is sent), and fallbacks stay within a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    /// Generation: chat, messages, responses, `generateContent`.
    #[default]
    Chat,
    /// Vectors: `/v1/embeddings`, `:embedContent`, `:batchEmbedContents`.
    Embedding,
    /// Pictures: `/v1/images/generations`.
    Image,
    /// Media made by a queue (video, audio, images): `/v1/jobs`.
    Media,
}

impl ModelKind {
    /// The configuration's name (`chat`, `embedding`).
    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::Chat => "chat",
            ModelKind::Embedding => "embedding",
            ModelKind::Image => "image",
            ModelKind::Media => "media",
        }
    }
}

/// One entry of `models:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The id clients ask for (normalised: lowercase, `_` and spaces to `-`).
    pub id: Spanned<String>,
    /// Other names for it (ids and aliases share one namespace).
    #[serde(default)]
    pub aliases: Vec<Spanned<String>>,
    /// What it does (absent: `chat`).
    #[serde(default)]
    pub kind: ModelKind,
    /// Where the model runs: provider + that provider's model id.
    #[serde(default)]
    pub deployments: Vec<DeploymentConfig>,
    /// Its prices (a deployment may have its own); absent: costs are unknown.
    #[serde(default)]
    pub pricing: Option<Pricing>,
    /// Its context window, in tokens: a request estimated larger skips it (absent:
    /// never refused).
    #[serde(default)]
    pub context_window: Option<u64>,
    /// The most tokens it writes in one answer: a request asking for more is
    /// clamped to it.
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    /// What the model can take. Absent: unknown, nothing is filtered. Present: a
    /// request needing a capability not listed skips this model.
    #[serde(default)]
    pub capabilities: Option<Vec<Capability>>,
    /// Whose model it is (`claude`, `gemini`, `gpt`, `llama`, `nova`, `mistral`,
    /// `deepseek`, `other`): the family's rules apply on every wire that carries
    /// it. Absent: read from each deployment's model id (an application
    /// inference profile's ARN names none).
    #[serde(default)]
    pub family: Option<switchyard_protocol::Family>,
    /// How the model takes its reasoning setting (`budget` or `effort`). Absent:
    /// inferred from each deployment's model id (Claude 4.6+ and Gemini 3+: effort).
    #[serde(default)]
    pub reasoning_control: Option<switchyard_protocol::ReasoningControl>,
    /// Whether the model takes temperature/top_p/top_k. Absent: inferred (Claude
    /// Opus 4.7 and later refuse them; everything else takes them).
    #[serde(default)]
    pub sampling: Option<bool>,
    /// Whether the model takes `temperature` or `top_p` but not both (given both,
    /// `top_p` is left out). Absent: inferred (Claude Opus 4.1 and later).
    #[serde(default)]
    pub one_sampler: Option<bool>,
    /// OpenAI-chat: whether the model takes the older `max_tokens`. Absent:
    /// inferred (OpenAI's reasoning models, o1+ and GPT-5+ by id, do not).
    #[serde(default)]
    pub takes_max_tokens: Option<bool>,
    /// Served but never listed.
    #[serde(default)]
    pub hidden: bool,
    /// `YYYY-MM-DD`; from that day the model is refused and unlisted.
    #[serde(default)]
    pub retires: Option<Spanned<String>>,
    /// Catalog ids tried after this model's own deployments.
    #[serde(default)]
    pub fallbacks: Vec<Spanned<String>>,
    /// Shown in model lists (absent: `switchyard`).
    #[serde(default)]
    pub owned_by: Option<String>,
    /// Narrows the providers' governance flags for this model.
    #[serde(default)]
    pub governance: Governance,
    /// What a request offering a hosted tool that a deployment cannot run gets
    /// (absent: `drop`; a route serving the model may say otherwise).
    #[serde(default)]
    pub unrunnable_server_tools: Option<UnrunnableServerTools>,
    /// Keep its answers in the response cache (absent: not cached; a route
    /// serving the model may say otherwise).
    #[serde(default)]
    pub cache: Option<CacheConfig>,
    /// Send later turns of a conversation to the deployment that served the
    /// earlier ones (absent: no affinity).
    #[serde(default)]
    pub affinity: Option<AffinityConfig>,
}

/// `cache:` of a model or route: identical requests answered from the exact
/// response cache (see `docs/controls.md`, "Response cache").
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    /// How long an answer is kept, in milliseconds (0 is refused).
    pub ttl_ms: Spanned<u64>,
}

/// A model's or route's `affinity:`: later turns of a conversation go back to
/// the deployment that served the earlier ones (its prompt cache is warm), see
/// `docs/controls.md`, "Prompt-cache affinity".
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AffinityConfig {
    /// How long a conversation stays pinned after its last turn, in
    /// milliseconds (0 is refused).
    pub ttl_ms: Spanned<u64>,
    /// How much slower (by latency estimate) than the best candidate the pinned
    /// deployment may be and stay pinned: 0.5 is half again as slow.
    #[serde(default = "default_score_loss")]
    pub max_score_loss: f64,
}

fn default_score_loss() -> f64 {
    0.5
}

impl ModelConfig {
    /// A model with every field but its id as YAML's defaults leave it.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: unlocated(id.into()),
            aliases: Vec::new(),
            kind: ModelKind::Chat,
            deployments: Vec::new(),
            pricing: None,
            context_window: None,
            max_output_tokens: None,
            capabilities: None,
            family: None,
            reasoning_control: None,
            sampling: None,
            one_sampler: None,
            takes_max_tokens: None,
            hidden: false,
            retires: None,
            fallbacks: Vec::new(),
            owned_by: None,
            governance: Governance::default(),
            unrunnable_server_tools: None,
            cache: None,
            affinity: None,
        }
    }
}

/// One of a model's `deployments:`: where it runs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeploymentConfig {
    /// The provider's name under `providers:`.
    pub provider: Spanned<String>,
    /// The provider's own id for the model; defaults to the catalog id.
    #[serde(default)]
    pub model: Option<String>,
    /// Overrides the model's prices for this deployment (e.g. a regional premium).
    #[serde(default)]
    pub pricing: Option<Pricing>,
    /// The server tools this deployment runs (replaces its provider's list).
    #[serde(default)]
    pub server_tools: Option<Vec<Spanned<switchyard_protocol::ServerTool>>>,
    /// Its capacity, per credential: a request over it moves on to the next
    /// candidate without marking this one unhealthy.
    #[serde(default)]
    pub limits: Option<crate::limits::Limits>,
}

impl DeploymentConfig {
    /// A deployment on `provider` with every other field as YAML's defaults leave it
    /// (the upstream id is then the catalog id).
    pub fn new(provider: impl Into<String>) -> Self {
        Self {
            provider: unlocated(provider.into()),
            model: None,
            pricing: None,
            server_tools: None,
            limits: None,
        }
    }
}
