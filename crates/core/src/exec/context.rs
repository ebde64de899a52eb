//! The request context, decided once where a request enters (the HTTP edge or a
//! library call) and read by every stage after: the body parsed once, the default
//! model applied, the routing hints read, the client's bytes kept for the fast
//! path with what they hold, the project the request is attributed to, and the
//! input token estimate, computed on first use and kept.

use std::sync::LazyLock;

use super::*;
use crate::catalog::{self, ResolveError, normalize_model};
use crate::intent;

pub use crate::catalog::MAX_MODEL_ID;

/// A client body, parsed once.
#[derive(Debug)]
pub struct Parsed {
    /// The canonical request, its model the default one where it named none.
    pub request: Request,
    /// The client's own bytes, kept where the format has a native upstream wire
    /// (the same-format fast path).
    pub raw: Option<RawBody>,
    /// Routing hints from the body's `switchyard` field.
    pub hints: Hints,
    /// The intent decided as the body entered (for reasoning effort `auto`),
    /// which an `auto` model then routes by.
    pub intent: Option<intent::Decision>,
}

impl Snapshot {
    /// Parse a client body of `format`: its nesting depth bounded, the canonical
    /// request, the model id checked (the default model where it names none), the
    /// routing hints read from their own field without a second parse of the body.
    /// `seal` opens what this gateway sealed into an earlier answer.
    pub fn parse_body(
        &self,
        format: ClientFormat,
        bytes: Bytes,
        seal: Option<&dyn switchyard_protocol::Seal>,
    ) -> Result<Parsed, GatewayError> {
        self.check_json_bounds(&bytes)?;
        let mut request = format
            .parse_request(&bytes, seal)
            .map_err(|e| GatewayError::new(ErrorCode::InvalidRequest, e.to_string()))?;
        self.apply_default_model(&mut request);
        let intent = intent::settle_reasoning(&mut request);
        if !request.model.is_empty() {
            check_model_id(&request.model)?;
        }
        // Most bodies carry no hints: a byte search rules the field out; where the
        // name appears, a scan of the top level finds the field, and only its value
        // is parsed.
        static EXTENSION: LazyLock<util::RareKey> =
            LazyLock::new(|| util::RareKey::new(upstream::EXTENSION_FIELD));
        let extension = EXTENSION.value(&bytes);
        let hints = match extension.clone().and_then(|range| bytes.get(range)) {
            Some(value) => serde_json::from_slice::<Option<Hints>>(value)
                .map_err(|e| {
                    GatewayError::new(ErrorCode::InvalidRequest, format!("switchyard: {e}"))
                })?
                .unwrap_or_default(),
            None => Hints::default(),
        };
        // Effort `auto` is no upstream's word: such a body is written anew from
        // the settled request, never forwarded as the client's bytes.
        let raw = format
            .native_wire()
            .filter(|_| !request.extras.reasoning_auto)
            .map(|_| RawBody::new(bytes, extension.is_some()));
        Ok(Parsed { request, raw, hints, intent })
    }

    /// Refuse a body that nests too deep or holds too many values, on its bytes,
    /// before anything parses it (a parse's recursion and memory both follow
    /// from these, not from the body's size).
    pub fn check_json_bounds(&self, bytes: &[u8]) -> Result<(), GatewayError> {
        let settings = &self.catalog.settings;
        let (depth, elements) = (settings.max_json_depth, settings.max_json_elements);
        match util::exceeds_json_bounds(bytes, depth, elements) {
            None => Ok(()),
            Some(util::JsonBound::Depth) => Err(GatewayError::new(
                ErrorCode::JsonTooDeep,
                format!("request JSON is nested deeper than {depth} levels"),
            )),
            Some(util::JsonBound::Elements) => Err(GatewayError::new(
                ErrorCode::RequestTooLarge,
                format!("request JSON holds more than {elements} values (max_json_elements)"),
            )),
        }
    }

    /// The configured default model for a request that names none; the only
    /// place it is applied.
    pub fn apply_default_model(&self, request: &mut Request) {
        if request.model.is_empty()
            && let Some(default) = &self.catalog.settings.default_model
        {
            request.model.clone_from(default);
        }
    }
}

/// A client's model id: at most [`MAX_MODEL_ID`] bytes, and as the catalog reads
/// it ([`normalize_model`]: clients write `Claude Sonnet 4`, Claude Code's
/// `claude-sonnet-4[1m]`) within [`catalog::model_name_ok`]'s rule. Invalid ids
/// are a typed error (`invalid_model`, quoting at most 100 characters of the id),
/// never a panic.
pub fn check_model_id(model: &str) -> Result<(), GatewayError> {
    if model.len() > MAX_MODEL_ID || !catalog::model_name_ok(&normalize_model(model)) {
        return Err(ResolveError::InvalidName(catalog::quote_model(model)).into());
    }
    Ok(())
}

/// The request's input token estimate, computed on first use and kept: limits,
/// strategies and metering all read the same figure.
#[derive(Debug, Clone, Default)]
pub(crate) struct Estimate(OnceLock<u64>);

impl Estimate {
    /// An estimate known already (an embeddings request's, counted per input).
    pub fn known(n: u64) -> Self {
        Self(OnceLock::from(n))
    }

    pub fn get(&self, request: &Request) -> u64 {
        *self.0.get_or_init(|| estimate::input_tokens(request))
    }
}

impl Inbound {
    /// The routing policies the caller pins (`crate::app_policy`): its key's,
    /// then the attributed project's. Where both pin a setting, the key's wins.
    pub(crate) fn pinned(&self) -> [Option<&crate::app_policy::Pinned>; 2] {
        let p = &self.principal;
        let project = self.project.as_deref().and_then(|id| {
            p.project_policies.iter().find(|(x, _)| x == id).map(|(_, pinned)| &**pinned)
        });
        [p.key_policy.as_deref(), project]
    }

    /// A request from `principal`, arriving now, with the rest of its context at
    /// the defaults: no client bytes (so no fast path), no hints, no project, no
    /// caller keys, the configuration's routing bounds, pass-through answers.
    pub fn new(id: String, format: ClientFormat, request: Request, principal: Principal) -> Self {
        Self::from_body(
            id,
            format,
            Parsed { request, raw: None, hints: Hints::default(), intent: None },
            principal,
        )
    }

    /// [`Inbound::new`] for a parsed body: its request, bytes and hints.
    pub fn from_body(
        id: String,
        format: ClientFormat,
        parsed: Parsed,
        principal: Principal,
    ) -> Self {
        Self {
            id,
            received: Instant::now(),
            time_ms: UnixMs::now().0,
            format,
            request: Arc::new(parsed.request),
            raw: parsed.raw,
            forward_headers: Vec::new(),
            principal,
            project: None,
            project_name: None,
            byok: Vec::new(),
            hints: parsed.hints,
            intent: parsed.intent,
            content_cap: None,
            output: Output::Client,
            limits: RequestRouting::default(),
            cache: CacheMode::default(),
            affinity: None,
            trace: crate::otel::Incoming::default(),
            batch: None,
            prefetched: None,
            trace_answer: false,
            estimate: Estimate::default(),
        }
    }

    /// The input token estimate (computed once).
    pub fn input_estimate(&self) -> u64 {
        self.estimate.get(&self.request)
    }

    /// What an adapter of `wire` is handed for `request` (this one, or a version
    /// of it): the client's bytes only where they go as they are.
    pub(crate) fn outgoing<'a>(&'a self, request: &'a Request, wire: Wire) -> Outgoing<'a> {
        Outgoing {
            format: self.format,
            request,
            raw: self.raw.as_ref().filter(|_| self.fast_path(wire)),
            forward_headers: &self.forward_headers,
            dropped: Vec::new(),
            refused: None,
            traceparent: None,
            tracestate: self.trace.state.as_deref(),
        }
    }

    /// Whether the client's own bytes go to an upstream of `wire`, edited rather
    /// than re-encoded: the client's format is that wire's (or its dialect's:
    /// Claude on Vertex AI takes Anthropic's bodies) and the bytes were kept.
    pub fn fast_path(&self, wire: Wire) -> bool {
        self.raw.is_some() && self.format.native_wire() == Some(wire.dialect())
    }
}

/// Finds a project by id or name for [`attribute`]: an admin may attribute a
/// request to a project they are not a member of. The HTTP edge's is the
/// database; without one, [`NoDirectory`].
pub trait ProjectDirectory: Send + Sync {
    /// `(id, name)` of the project with this id or name, if there is one.
    fn project<'a>(
        &'a self,
        id_or_name: &'a str,
    ) -> continuity::BoxFuture<'a, Result<Option<(String, String)>, GatewayError>>;
}

/// No directory: projects are known only from the caller's own memberships.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoDirectory;

impl ProjectDirectory for NoDirectory {
    fn project<'a>(
        &'a self,
        _: &'a str,
    ) -> continuity::BoxFuture<'a, Result<Option<(String, String)>, GatewayError>> {
        Box::pin(std::future::ready(Ok(None)))
    }
}

/// The longest project id or name a caller may name.
const MAX_PROJECT: usize = 128;

/// The project a request is attributed to, as `(id, name)`: the one the caller
/// names (by id or name), else the key's bound project, else the user's primary
/// project. A signed-in user may only name projects they belong to; an admin may
/// name any (looked up in `directory`); a static key's choice is taken as written
/// (there is no directory of its projects).
pub async fn attribute(
    principal: &Principal,
    named: Option<&str>,
    directory: &dyn ProjectDirectory,
) -> Result<(Option<String>, Option<String>), GatewayError> {
    let Some(named) = named else {
        let id = principal.project.clone();
        let name = id.as_deref().and_then(|id| principal.project_name(id)).map(str::to_owned);
        return Ok((id, name));
    };
    if named.is_empty() || named.len() > MAX_PROJECT || named.chars().any(char::is_control) {
        return Err(GatewayError::new(
            ErrorCode::InvalidProject,
            format!("project: expected 1-{MAX_PROJECT} printable characters"),
        ));
    }
    if principal.user_id.is_none() {
        return Ok((Some(named.to_owned()), None));
    }
    if let Some(id) = principal.project_id(named) {
        let name = principal.project_name(id).map(str::to_owned);
        return Ok((Some(id.to_owned()), name));
    }
    if principal.role == Some(access::CallerRole::Admin) {
        return Ok(match directory.project(named).await? {
            Some((id, name)) => (Some(id), Some(name)),
            None => (Some(named.to_owned()), None),
        });
    }
    Err(GatewayError::new(
        ErrorCode::ProjectForbidden,
        format!("you are not a member of project {named:?}"),
    ))
}

// Its tests read YAML.
#[cfg(test)]
#[cfg(feature = "yaml")]
#[path = "context_tests.rs"]
mod tests;
