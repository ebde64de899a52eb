//! Provider adapters: how a candidate is called. Builds the wire request (fast path
//! or translated), sends it with the provider's pooled client, and turns the answer
//! into either a whole canonical response or a `Source` of stream events.
//!
//! How a wire is called (URL, auth, required headers, stream framing) comes from
//! its [`WireSpec`](switchyard_protocol::WireSpec); only the fast path's edits
//! (usage asked for on an OpenAI stream) know a wire by name.

use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use http_body_util::{BodyExt, Full};
use serde_json::{Map, Value};
use switchyard_protocol::{
    ClientFormat, HostedTool, ModelPlacement, ModelTraits, OutputLimit, ProtocolError, Request,
    Wire, openai_chat, util,
};

use crate::catalog::{ProviderSpec, Settings};
use crate::client::{HttpClient, Response};
use crate::util::{Redactor, Secret};

/// Largest upstream error body read (the rest is ignored).
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A provider's long-lived runtime: its HTTP client pool and key rotation. Kept
/// across reloads for as long as the provider's name, wire, endpoint and client
/// options are unchanged.
#[derive(Debug)]
pub(crate) struct ProviderRuntime {
    pub client: HttpClient,
    next_key: AtomicUsize,
    /// The request URL, with the provider's query parameters, made once for
    /// wires whose URL is the same for every request (`WireSpec::fixed_url`:
    /// OpenAI chat, Anthropic).
    fixed_url: Option<http::Uri>,
    /// Basic credentials from the endpoint's userinfo, sent as `Authorization`
    /// where the key does not take that header (the userinfo itself never
    /// leaves: it is taken off every URL).
    basic: Option<HeaderValue>,
    meters: std::sync::OnceLock<ProviderMeters>,
}

/// The provider-labelled histograms the attempt loop records into. Registered on
/// first use (the server installs the recorder before it serves), then kept: a
/// `histogram!` call per request would hash its labels and allocate each time.
#[derive(Debug)]
pub(crate) struct ProviderMeters {
    pub attempt_seconds: crate::telemetry::Histogram,
    pub ttft_seconds: crate::telemetry::Histogram,
}

impl ProviderMeters {
    pub fn new(provider: &str) -> Self {
        Self {
            attempt_seconds: crate::telemetry::histogram!("gateway_attempt_duration_seconds", "provider" => provider.to_owned()),
            ttft_seconds: crate::telemetry::histogram!("gateway_time_to_first_token_seconds", "provider" => provider.to_owned()),
        }
    }
}

impl ProviderRuntime {
    /// The provider's client, shaped by its [`ClientOptions`](crate::client::ClientOptions).
    /// Fails on a TLS setup the compiler could not check (the platform's trust
    /// store unreadable, say).
    pub fn new(settings: &Settings, spec: &ProviderSpec) -> Result<Self, String> {
        // Redirects are never followed (the client has no notion of them): a
        // redirect would carry the prompt, and every key header, to whatever
        // host the upstream names. A 3xx is the attempt's failure instead
        // (`Failure::Redirect`).
        let client = HttpClient::new(&spec.client, settings.connect_timeout)?;
        let fixed_url = spec
            .wire()
            .map(Wire::spec)
            .filter(|api| api.fixed_url())
            .and_then(|api| reqwest::Url::parse(&api.url(&spec.endpoint, "", false)).ok())
            .and_then(|mut url| {
                with_query(&mut url, &spec.query);
                uri(&url).ok()
            });
        let basic = reqwest::Url::parse(&spec.endpoint).ok().and_then(|url| basic_auth(&url));
        Ok(Self {
            client,
            basic,
            next_key: AtomicUsize::new(0),
            fixed_url,
            meters: std::sync::OnceLock::new(),
        })
    }

    pub fn meters(&self, provider: &str) -> &ProviderMeters {
        self.meters.get_or_init(|| ProviderMeters::new(provider))
    }

    /// Where to start looking for a key, rotating so load spreads over the
    /// provider's keys.
    pub fn next_index(&self, len: usize) -> usize {
        self.next_key.fetch_add(1, Ordering::Relaxed) % len.max(1)
    }
}

/// A client's JSON body, kept for the same-format fast path. Most fast-path
/// requests only need the model replaced, which is done on the bytes; the parsed
/// object is built on first use, by the rarer edits that need it.
#[derive(Debug)]
pub struct RawBody {
    bytes: Bytes,
    /// The body has a top-level `switchyard` field (routing hints), which never
    /// goes upstream: found once, where the body is parsed.
    extension: bool,
    object: std::sync::OnceLock<Option<Map<String, Value>>>,
}

impl RawBody {
    /// `bytes`, a client's JSON body; `extension`: it has a top-level `switchyard`
    /// field (the caller found it while parsing).
    pub fn new(bytes: Bytes, extension: bool) -> Self {
        Self { bytes, extension, object: std::sync::OnceLock::new() }
    }

    /// The body as the client sent it.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether the body has the `switchyard` field (which never goes upstream).
    pub fn has_extension(&self) -> bool {
        self.extension
    }

    /// The body as a JSON object; `None` if it is not one.
    pub fn object(&self) -> Option<&Map<String, Value>> {
        self.object
            .get_or_init(|| switchyard_protocol::util::parse_object(&self.bytes).ok())
            .as_ref()
    }
}

/// What the attempt loop hands an adapter: the request in both forms.
#[derive(Debug)]
pub(crate) struct Outgoing<'a> {
    pub format: ClientFormat,
    pub request: &'a Request,
    /// The client's own body where it goes to this wire (the same-format fast
    /// path, decided by [`crate::exec::Inbound::fast_path`]).
    pub raw: Option<&'a RawBody>,
    /// Client headers forwarded to a same-vendor upstream (`anthropic-beta`, …).
    pub forward_headers: &'a [(String, String)],
    /// Offered hosted tools the target does not run, as the client declared
    /// them: `request` is without them already; on the fast path they are taken
    /// out of the client's body too ([`Wire::drop_hosted`]).
    pub dropped: Vec<&'a HostedTool>,
    /// What the provider was learned to refuse (flags, fields), left out.
    pub refused: Option<&'a crate::refusals::Learned>,
    /// The W3C `traceparent` the upstream is sent: the attempt's span as the
    /// parent (traces exported), or the client's own (passed on); `None`: none.
    pub traceparent: Option<&'a str>,
    /// The client's `tracestate`, sent with a `traceparent`.
    pub tracestate: Option<&'a str>,
}

/// Serialize `map` with some keys replaced and some removed, without cloning it.
fn write_object(map: &Map<String, Value>, overrides: &[(&str, Value)], drop: &[&str]) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.push(b'{');
    let mut first = true;
    let mut push = |out: &mut Vec<u8>, k: &str, v: &Value| {
        if !first {
            out.push(b',');
        }
        first = false;
        // Writing a String/Value into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, k);
        out.push(b':');
        let _ = serde_json::to_writer(&mut *out, v);
    };
    for (k, v) in map {
        if k == EXTENSION_FIELD
            || drop.contains(&k.as_str())
            || overrides.iter().any(|(o, _)| o == k)
        {
            continue;
        }
        push(&mut out, k, v);
    }
    for (k, v) in overrides {
        push(&mut out, k, v);
    }
    out.push(b'}');
    out
}

/// The common fast-path cases, edited on the client's bytes: the model replaced
/// and, for an OpenAI stream that did not ask for usage, `stream_options` added.
/// `None` when an edit needs the parsed object (a clamp, dropped fields, the
/// `switchyard` extension, an existing `stream_options`, reasoning or sampling
/// settings the target model may take in another form).
fn splice(
    raw: &RawBody,
    request: &Request,
    wire: Wire,
    spec: &ProviderSpec,
    upstream_model: &str,
    clamp: Option<u64>,
    traits: ModelTraits,
) -> Option<Vec<u8>> {
    if clamp.is_some()
        || wire.may_adapt(request, raw.bytes(), traits)
        || !spec.drop_fields.is_empty()
        || raw.extension
        || openai_chat::may_edit(&spec.openai, raw.bytes(), request)
    {
        return None;
    }
    // One scan and one copy for both edits (a stream that did not ask for usage
    // gets `stream_options` asking).
    let asked = (request.stream && spec.openai.stream_options)
        .then(|| wire.behaviour().stream_usage_option())
        .flatten()
        .map(|(field, key)| (field, serde_json::json!({ key: true }).to_string()));
    let insert = asked.as_ref().map(|(field, value)| (*field, value.as_bytes()));
    util::replace_and_insert(raw.bytes(), "model", upstream_model, insert)
}

/// The client's body for a wire that takes the model in the URL (Gemini): nothing
/// names the model, so it goes as the client sent it, unless the deployment's
/// output ceiling (where the wire's [`OutputLimit`] says, Gemini's
/// `generationConfig.maxOutputTokens`), its dropped fields or the `switchyard`
/// extension need the parsed object. `None`: not a JSON object.
fn path_model_body(
    raw: &RawBody,
    wire: Wire,
    spec: &ProviderSpec,
    clamp: Option<u64>,
) -> Option<Vec<u8>> {
    if clamp.is_none() && spec.drop_fields.is_empty() && !raw.extension {
        return Some(raw.bytes().to_vec());
    }
    let object = raw.object()?;
    let mut overrides: Vec<(&str, Value)> = Vec::new();
    if let Some(cap) = clamp {
        overrides.extend(ceiling(wire.behaviour().output_limit(), object, cap));
    }
    let drop: Vec<&str> = spec.drop_fields.iter().map(String::as_str).collect();
    Some(write_object(object, &overrides, &drop))
}

/// The overrides that write the deployment's output ceiling `cap` where `limit`
/// says a client's body states its output limit.
fn ceiling(limit: OutputLimit, body: &Map<String, Value>, cap: u64) -> Vec<(&'static str, Value)> {
    match limit {
        OutputLimit::TopLevel(fields) => fields
            .iter()
            .filter(|field| body.contains_key(**field))
            .map(|field| (*field, Value::from(cap)))
            .collect(),
        OutputLimit::Nested { object, field } => {
            let mut inner =
                body.get(object).and_then(Value::as_object).cloned().unwrap_or_default();
            inner.insert(field.into(), Value::from(cap));
            vec![(object, Value::Object(inner))]
        }
    }
}

/// The request extension field (routing hints); never forwarded upstream.
pub(crate) const EXTENSION_FIELD: &str = "switchyard";

/// The body to send to `wire` for this candidate.
///
/// `max_tokens_cap`: the deployment's output ceiling; a request asking for more is
/// clamped to it (not refused). `traits`: how the target model takes reasoning and
/// sampling settings (used when the request is translated).
pub(crate) fn build_body(
    out: &Outgoing<'_>,
    wire: Wire,
    spec: &ProviderSpec,
    upstream_model: &str,
    max_tokens_cap: Option<u64>,
    traits: ModelTraits,
) -> Result<Vec<u8>, ProtocolError> {
    let clamp = max_tokens_cap.filter(|cap| out.request.max_tokens.is_some_and(|m| m > *cap));
    // Same format: the client's own body, edited (on the bytes when possible;
    // taking dropped tools out needs the parsed object).
    let fast = out.raw;
    // Body fields whose beta flags do not go upstream go with them, and those
    // the provider was learned to refuse.
    let mut ungated: Vec<&str> = Vec::new();
    if fast.is_some() {
        ungated.extend(ungated_fields(out, wire, spec));
        ungated.extend(out.refused.into_iter().flat_map(crate::refusals::Learned::fields));
    }
    let on_bytes = fast.filter(|_| {
        out.dropped.is_empty() && ungated.is_empty() && wire.spec().headers_in_body.is_empty()
    });
    if let Some(raw) = on_bytes
        && wire.spec().model == ModelPlacement::Path
        && !wire.may_adapt(out.request, raw.bytes(), traits)
        && let Some(body) = path_model_body(raw, wire, spec, clamp)
    {
        return Ok(body);
    }
    if let Some(body) =
        on_bytes.and_then(|raw| splice(raw, out.request, wire, spec, upstream_model, clamp, traits))
    {
        return Ok(body);
    }
    if let Some(raw) = fast.and_then(RawBody::object) {
        let mut overrides: Vec<(&str, Value)> = Vec::new();
        // A wire that takes the model in its URL refuses it in the body (Gemini
        // refuses unknown fields).
        if wire.spec().model == ModelPlacement::Body {
            overrides.push(("model", Value::String(upstream_model.to_owned())));
        }
        let behaviour = wire.behaviour();
        let limit = behaviour.output_limit();
        if let Some(cap) = clamp {
            overrides.extend(ceiling(limit, raw, cap));
        }
        if let Some((field, key)) = behaviour.stream_usage_option()
            && spec.openai.stream_options
            && raw.get("stream").and_then(Value::as_bool) == Some(true)
        {
            let mut opts = raw.get(field).and_then(Value::as_object).cloned().unwrap_or_default();
            opts.insert(key.into(), Value::Bool(true));
            overrides.push((field, Value::Object(opts)));
        }
        for (header, field) in wire.spec().headers_in_body {
            if let Some(values) = in_body(out, wire, spec, header) {
                overrides.push((field, values));
            }
        }
        let mut drop: Vec<&str> = spec.drop_fields.iter().map(String::as_str).collect();
        drop.extend(ungated);
        let mut edits = wire.adapt_native(raw, out.request, traits);
        if !spec.openai.is_openai() {
            // What this OpenAI-compatible server takes differently (its preset).
            edits.extend(openai_chat::compat_edits(raw, &spec.openai));
        }
        if !out.dropped.is_empty() {
            // After the model's edits: what the target does not run goes last.
            edits.extend(wire.drop_hosted(raw, out.request, &out.dropped));
        }
        for (field, edit) in edits {
            match edit {
                None => {
                    drop.push(field);
                    overrides.retain(|(k, _)| *k != field);
                }
                Some(v) => {
                    // The deployment's output ceiling stays the ceiling.
                    let v = match clamp {
                        Some(cap) if limit.is_top_level(field) => Value::from(cap),
                        _ => v,
                    };
                    match overrides.iter_mut().find(|(k, _)| *k == field) {
                        Some(slot) => slot.1 = v,
                        None => overrides.push((field, v)),
                    }
                }
            }
        }
        return Ok(write_object(raw, &overrides, &drop));
    }
    // Translated.
    let clamped;
    let req = match clamp {
        Some(cap) => {
            clamped = Request { max_tokens: Some(cap), ..out.request.clone() };
            &clamped
        }
        None => out.request,
    };
    // An OpenAI-compatible server with a preset gets its own form of the body.
    let preset = wire == Wire::OpenAiChat && !spec.openai.is_openai();
    let refused: Vec<&str> =
        out.refused.into_iter().flat_map(crate::refusals::Learned::fields).collect();
    let model = (wire.spec().model == ModelPlacement::Body).then_some(upstream_model);
    if !preset && spec.drop_fields.is_empty() && refused.is_empty() {
        // Nothing to take out: written straight from the canonical request (with
        // no `Value` in between where the wire's bodies are typed).
        let mut body = Vec::with_capacity(1024);
        wire.write_request_for(req, traits, model, &mut body)?;
        return Ok(body);
    }
    let mut v = if preset {
        openai_chat::encode_request_as(req, &spec.openai)?
    } else {
        wire.encode_request_for(req, traits)?
    };
    if let Value::Object(m) = &mut v {
        if let Some(model) = model {
            m.insert("model".into(), Value::String(model.to_owned()));
        }
        // What the provider is known to refuse goes from translations too.
        for field in spec.drop_fields.iter().map(String::as_str).chain(refused) {
            m.remove(field);
        }
    }
    serde_json::to_vec(&v).map_err(|e| ProtocolError::body(e.to_string()))
}

/// The deployment a request goes to, with the credential chosen for it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dest<'a> {
    pub runtime: &'a ProviderRuntime,
    pub spec: &'a ProviderSpec,
    pub wire: Wire,
    pub key: Option<&'a Secret>,
    pub upstream_model: &'a str,
}

/// Send one request; the future resolves when the response headers arrive,
/// with the credentials the provider's cloud credential minted for it
/// ([`minted`]), for the attempt to scrub from what comes back.
pub(crate) async fn send(
    dest: Dest<'_>,
    out: &Outgoing<'_>,
    stream: bool,
    body: Vec<u8>,
) -> Result<(Response, Vec<Secret>), Failure> {
    let Dest { runtime: rt, spec, wire, upstream_model, .. } = dest;
    // A compact request goes to the wire's own compaction endpoint (it reaches
    // an attempt only where there is one: `Snapshot::compacts_natively`).
    let compact = match (&out.request.compaction, wire.spec().compact) {
        (Some(switchyard_protocol::Compaction::Endpoint { .. }), Some(path)) => Some(path),
        _ => None,
    };
    let url = match (&rt.fixed_url, compact) {
        (Some(u), None) => u.clone(),
        (_, Some(path)) => {
            let mut url =
                reqwest::Url::parse(&format!("{}{path}", spec.endpoint)).map_err(|e| {
                    Failure::Unavailable(format!(
                        "{}: the compact URL is not valid: {e}",
                        spec.name
                    ))
                })?;
            with_query(&mut url, &spec.query);
            uri(&url)?
        }
        (None, None) => {
            let url = wire.spec().url(&spec.endpoint, upstream_model, stream);
            let mut url = reqwest::Url::parse(&url).map_err(|e| {
                Failure::Unavailable(format!(
                    "{}: the request URL is not valid: {e}",
                    crate::util::redact_userinfo(&url)
                ))
            })?;
            with_query(&mut url, &spec.query);
            uri(&url)?
        }
    };
    let signed = cloud_headers(dest, "POST", &url, &JSON, &body).await?;
    let minted = minted(&signed);
    let req = with_headers(post(url), dest, out, stream, true)?;
    let resp = finish(dest, req, signed, body).await?;
    Ok((resp, minted))
}

/// A `POST` of `url`.
fn post(url: http::Uri) -> http::request::Builder {
    http::Request::post(url)
}

/// `url` as the client takes it, without userinfo (sent as [`basic_auth`]).
fn uri(url: &reqwest::Url) -> Result<http::Uri, Failure> {
    let parsed = if url.username().is_empty() && url.password().is_none() {
        url.as_str().parse()
    } else {
        let mut bare = url.clone();
        let _ = bare.set_username("");
        let _ = bare.set_password(None);
        bare.as_str().parse()
    };
    parsed.map_err(|e| {
        Failure::Unavailable(format!(
            "{}: the request URL is not valid: {e}",
            crate::util::redact_userinfo(url.as_str())
        ))
    })
}

/// The `Authorization: Basic` value of `url`'s userinfo (decoded, as a client
/// sends it), marked sensitive; `None` without one.
fn basic_auth(url: &reqwest::Url) -> Option<HeaderValue> {
    use base64::Engine as _;
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    let user = crate::util::percent_decode(url.username());
    let password = crate::util::percent_decode(url.password().unwrap_or(""));
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    let mut value = HeaderValue::from_str(&format!("Basic {token}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// The request with the cloud credential's `signed` headers and `body`, sent
/// with the provider's client; resolves with the answer's head.
async fn finish(
    dest: Dest<'_>,
    mut req: http::request::Builder,
    signed: Vec<(String, String)>,
    body: Vec<u8>,
) -> Result<Response, Failure> {
    if let Some(basic) = &dest.runtime.basic
        && req.headers_ref().is_some_and(|h| !h.contains_key(AUTHORIZATION))
        && !signed.iter().any(|(name, _)| name.eq_ignore_ascii_case("authorization"))
    {
        req = req.header(AUTHORIZATION, basic.clone());
    }
    let req = signed.into_iter().fold(req, |req, (name, value)| req.header(name, value));
    // Names only: a value that fails may be a key.
    let req = req.body(Full::new(Bytes::from(body))).map_err(|e| {
        Failure::Unavailable(format!("{}: a request header is not valid: {e}", dest.spec.name))
    })?;
    dest.runtime.client.send(req).await.map_err(|e| Failure::from_client(&e))
}

/// The secrets in a cloud credential's headers: a bearer token (Google's,
/// Entra's), an AWS session token, a SigV4 signature. Fetched at run time,
/// they are not among the provider's configured secrets.
fn minted(signed: &[(String, String)]) -> Vec<Secret> {
    let mut found = Vec::new();
    for (name, value) in signed {
        if name.eq_ignore_ascii_case("authorization") {
            if let Some(token) = value.strip_prefix("Bearer ") {
                found.push(Secret::new(token));
            } else if let Some((_, signature)) = value.rsplit_once("Signature=") {
                found.push(Secret::new(signature.trim()));
            }
        } else if name.eq_ignore_ascii_case("x-amz-security-token") {
            found.push(Secret::new(value));
        }
    }
    found
}

/// What a request with a JSON body sets, and a SigV4 signature covers.
const JSON: [(&str, &str); 1] = [("content-type", "application/json")];

/// The provider's query parameters (`query:`) set on `url`, each replacing
/// the wire's own of the same name (Azure's `api-version`); the others kept
/// as they are.
fn with_query(url: &mut reqwest::Url, query: &[(String, String)]) {
    if query.is_empty() {
        return;
    }
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| !query.iter().any(|(q, _)| q == k))
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    url.query_pairs_mut().clear().extend_pairs(kept).extend_pairs(query);
}

/// The headers the provider's cloud credential gives a request that carries no
/// key: a SigV4 signature over the exact URL, content type and body, or a
/// Google or Microsoft Entra access token. A credential that cannot be had fails the attempt
/// ([`Failure::Credential`]).
async fn cloud_headers(
    dest: Dest<'_>,
    method: &str,
    url: &http::Uri,
    signed: &[(&str, &str)],
    body: &[u8],
) -> Result<Vec<(String, String)>, Failure> {
    cloud_headers_for(dest, None, method, url, signed, body).await
}

/// [`cloud_headers`] signed for another of the cloud's services (`s3`);
/// `None`: the provider's own.
async fn cloud_headers_for(
    dest: Dest<'_>,
    service: Option<&str>,
    method: &str,
    url: &http::Uri,
    signed: &[(&str, &str)],
    body: &[u8],
) -> Result<Vec<(String, String)>, Failure> {
    let (Some(cloud), None) = (&dest.spec.cloud, dest.key) else {
        return Ok(Vec::new());
    };
    cloud
        .headers_for(service, method, &url.to_string(), signed, body)
        .await
        .map_err(|e| Failure::Credential(format!("{}: {e}", dest.spec.name)))
}

/// The headers of a request to the wire: content type, what a stream accepts,
/// the key where the wire takes it, the wire's required and (`passthrough`)
/// passed-through headers, the provider's own.
fn with_headers(
    mut req: http::request::Builder,
    dest: Dest<'_>,
    out: &Outgoing<'_>,
    stream: bool,
    passthrough: bool,
) -> Result<http::request::Builder, Failure> {
    let Dest { spec, wire, key, .. } = dest;
    let api = wire.spec();
    req = req.header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if stream {
        req = req.header(ACCEPT, api.framing.media_type());
    }
    req = with_key(req, api.auth, key)?;
    if let Some(parent) = out.traceparent {
        req = req.header("traceparent", parent);
        if let Some(state) = out.tracestate {
            req = req.header("tracestate", state);
        }
    }
    for header in api.headers {
        req = req.header(header.name, forwarded(out, header.name).unwrap_or(header.default));
    }
    if passthrough && out.format.native_wire() == Some(wire.dialect()) {
        for name in api.passthrough_headers {
            // Written into the body instead (`build_body`).
            if api.headers_in_body.iter().any(|(header, _)| header == name) {
                continue;
            }
            let Some(value) = forwarded(out, name) else { continue };
            match (*name, beta_header(out, wire, spec)) {
                (ANTHROPIC_BETA, Passthrough::All) => req = req.header(*name, value),
                // An Anthropic-compatible server that refuses flags it does not know.
                (ANTHROPIC_BETA, only) => {
                    let kept: Vec<&str> = flags(value).filter(|f| only.keeps(f)).collect();
                    if !kept.is_empty() {
                        req = req.header(*name, kept.join(","));
                    }
                }
                _ => req = req.header(*name, value),
            }
        }
    }
    for (k, v) in &spec.headers {
        req = req.header(k.as_str(), v.as_str());
    }
    Ok(req)
}

fn forwarded<'a>(out: &'a Outgoing<'_>, name: &str) -> Option<&'a str> {
    out.forward_headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

/// Read a failed response into a [`Failure::Status`] (a redirect into
/// [`Failure::Redirect`], its body unread). The attempt's credentials are scrubbed
/// from the body before anything is taken from it, so no cut below can leave part
/// of a key behind. The body is read until `deadline` at the latest: an upstream
/// that trickles its error holds the request no longer than a good answer could.
pub(crate) async fn read_failure(
    resp: Response,
    wire: Wire,
    redactor: &Redactor<'_>,
    deadline: std::time::Instant,
) -> Failure {
    let deadline = tokio::time::Instant::from_std(deadline);
    let status = resp.status().as_u16();
    if resp.status().is_redirection() {
        return Failure::Redirect {
            status,
            message: format!(
                "upstream answered {status} (a redirect, which the gateway never follows)"
            ),
        };
    }
    let retry_after = retry_after(resp.headers());
    let mut body = Vec::new();
    let mut truncated = false;
    let mut stream = resp.into_body();
    loop {
        match tokio::time::timeout_at(deadline, next_data(&mut stream)).await {
            Ok(Some(Ok(chunk))) => {
                body.extend_from_slice(&chunk);
                if body.len() >= MAX_ERROR_BODY {
                    body.truncate(MAX_ERROR_BODY);
                    truncated = true;
                    break;
                }
            }
            Ok(None | Some(Err(_))) => break,
            // Cut short: what arrived is still the best account of the failure.
            Err(_) => {
                truncated = true;
                break;
            }
        }
    }
    let body = redactor.bytes(&body, truncated);
    let message = wire.parse_error(&body).unwrap_or_else(|| {
        let text = String::from_utf8_lossy(&body);
        let text = text.trim();
        if text.is_empty() {
            format!("upstream answered {status}")
        } else {
            text.chars().take(500).collect()
        }
    });
    Failure::Status { status, message, retry_after }
}

/// Read a whole successful answer, at most `cap` bytes of it and until `deadline`:
/// an upstream cannot make the gateway buffer more than a legitimate answer needs,
/// nor hold the request past its deadline by trickling it.
pub(crate) async fn read_body(
    resp: Response,
    cap: usize,
    deadline: std::time::Instant,
) -> Result<Bytes, Failure> {
    let deadline = tokio::time::Instant::from_std(deadline);
    if http_body::Body::size_hint(resp.body()).lower() > cap as u64 {
        return Err(too_large(cap));
    }
    let mut stream = resp.into_body();
    let mut first: Option<Bytes> = None;
    let mut rest: Vec<u8> = Vec::new();
    loop {
        let chunk = match tokio::time::timeout_at(deadline, next_data(&mut stream)).await {
            Err(_) => {
                return Err(Failure::Transport {
                    class: TransportClass::Timeout,
                    message: "response body timed out".into(),
                });
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => return Err(Failure::from_body(&e)),
            Ok(Some(Ok(chunk))) => chunk,
        };
        // Most answers arrive in one chunk: kept as it is, never copied.
        match &first {
            None if rest.is_empty() => first = Some(chunk),
            _ => {
                if let Some(f) = first.take() {
                    rest.extend_from_slice(&f);
                }
                rest.extend_from_slice(&chunk);
            }
        }
        let len = first.as_ref().map_or(rest.len(), Bytes::len);
        if len > cap {
            return Err(too_large(cap));
        }
    }
    Ok(first.unwrap_or_else(|| Bytes::from(rest)))
}

/// The next data of a body (trailers skipped); `None` at its end.
pub(crate) async fn next_data(
    body: &mut crate::client::Body,
) -> Option<Result<Bytes, hyper::Error>> {
    loop {
        match body.frame().await? {
            Ok(frame) => match frame.into_data() {
                Ok(data) => return Some(Ok(data)),
                Err(_trailers) => continue,
            },
            Err(e) => return Some(Err(e)),
        }
    }
}

fn too_large(cap: usize) -> Failure {
    Failure::Malformed(format!("upstream answer larger than {cap} bytes (max_response_bytes)"))
}

mod edits;
mod failure;
mod list;
mod source;
mod whole;
pub(crate) use edits::field_edits;
use edits::{ANTHROPIC_BETA, Passthrough, beta_header, flags, in_body, ungated as ungated_fields};
pub(crate) use failure::{Failure, TransportClass, retry_after};
use list::with_key;
pub(crate) use list::{bodiless, get, request};
pub(crate) use source::Source;
pub(crate) use whole::{send_as, send_to};

#[cfg(test)]
#[path = "upstream_tests.rs"]
mod tests;
