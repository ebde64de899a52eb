//! Batches handed to a provider's own batch API (`batch_api: true`): the
//! stages a batch's line passes through, split over the hours the provider
//! takes.
//!
//! At submission, each line is planned as it would be run
//! ([`Snapshot::native_line`]): where its first candidate's provider has its
//! batch API on, the line's body for that deployment is built exactly as an
//! attempt builds it (tools it does not run dropped, a schema prompted, what
//! the provider refuses left out), and the server submits the bodies in one
//! provider batch ([`Snapshot::batch_call`], with the shapes of
//! `switchyard_protocol::batches::native`). When the provider's batch ends,
//! each line's answer is read back ([`Results`]) and the line is run through
//! the whole pipeline again with that answer in hand ([`Prefetched`]): the
//! plan keeps only the deployment that answered, admission and budgets,
//! translation to the client's format, metering at the batch price and the
//! record are a generation's, and the attempt is the answer read back
//! instead of a call.

use serde_json::Value;
use switchyard_protocol::batches::native::{self, BatchApi};

use super::prepare::Purpose;
use super::*;

/// A batch line's answer from its provider's batch API, carried by the line's
/// [`Inbound`] when it is run again to be delivered and metered.
#[derive(Debug, Clone)]
pub struct Prefetched {
    /// The provider that answered.
    pub provider: String,
    /// The model it ran.
    pub upstream_model: String,
    /// The provider's id for its batch (in the record's descriptor).
    pub upstream_batch: String,
    /// The status the request would have had.
    pub status: u16,
    /// Its body, in the wire's shape (secrets scrubbed).
    pub body: Bytes,
}

/// A batch line as its provider's batch API takes it ([`Snapshot::native_line`]).
#[derive(Debug, Clone)]
pub struct NativeLine {
    /// The provider it goes to.
    pub provider: String,
    /// The model there.
    pub upstream_model: String,
    /// The deployment's label (`provider/model`).
    pub deployment: String,
    /// The provider's batch API.
    pub api: BatchApi,
    /// The fingerprint of the platform key it is submitted with (`None`: the
    /// provider takes none).
    pub credential: Option<String>,
    /// The wire's body for it.
    pub body: Value,
}

impl Snapshot {
    /// Where a batch's line goes first and its body there, when that
    /// deployment's provider has its batch API on; `None`: the gateway runs
    /// it (another provider, a refusal to answer in the client's own words,
    /// a provider unavailable or keyed only by callers' own keys).
    pub fn native_line(&self, inbound: &Inbound, runtime: &Runtime) -> Option<NativeLine> {
        let mut rec = RequestRecord::default();
        let plan = self.plan_for(inbound, runtime, &mut rec, Purpose::Generate).ok()?;
        let cand = plan.candidates.first()?;
        let api = cand.provider.batch_api?;
        let ProviderKind::Wire(wire) = cand.provider.kind else { return None };
        if cand.provider.unavailable.is_some() {
            return None;
        }
        // The batch outlives this request: it is followed with a platform key,
        // found again by its fingerprint. A caller's own key is never kept.
        if inbound.byok.iter().any(|(p, _)| *p == cand.provider.name) {
            return None;
        }
        let credential = cand.provider.keys.first().map(Secret::fingerprint);
        let dropped = plan.tools.dropped(cand, &inbound.request);
        let request = dropped.apply(&inbound.request);
        let structured =
            crate::structured::mode(inbound.hints.structured_output, plan.policy.structured_output);
        let caps = cand.model.as_ref().and_then(|m| m.capabilities.as_ref());
        let prompted = crate::structured::asked(&inbound.request, structured, caps)
            == Some(crate::structured::Asked::Prompted);
        let request = if prompted { crate::structured::prompted(request) } else { request };
        let refused = runtime.refusals.get(&cand.provider.name);
        let mut out = inbound.outgoing(&request, wire);
        if prompted {
            out.raw = None;
        }
        out.dropped = dropped.tools(&inbound.request);
        out.refused = refused.as_deref();
        let cap = cand.model.as_ref().and_then(|m| m.max_output_tokens);
        let body = upstream::build_body(
            &out,
            wire,
            &cand.provider,
            &cand.upstream_model,
            cap,
            cand.traits(wire),
        )
        .ok()?;
        let body: Value = serde_json::from_slice(&body).ok()?;
        Some(NativeLine {
            provider: cand.provider.name.clone(),
            upstream_model: cand.upstream_model.clone(),
            deployment: cand.label(),
            api,
            credential,
            body,
        })
    }

    /// The provider's batch API as configured now, and the key its batch was
    /// submitted with.
    fn batch_dest<'a>(
        &'a self,
        provider: &str,
        credential: Option<&str>,
    ) -> Result<(upstream::Dest<'a>, BatchApi), String> {
        let spec = self
            .catalog
            .provider(provider)
            .ok_or_else(|| format!("provider {provider} is no longer configured"))?;
        let (ProviderKind::Wire(wire), Some(api)) = (&spec.kind, spec.batch_api) else {
            return Err(format!("provider {provider}'s batch API is no longer on"));
        };
        let runtime = self
            .runtimes
            .get(provider)
            .ok_or_else(|| format!("provider {provider} has no client"))?;
        let key = match credential {
            Some(fp) => Some(spec.keys.iter().find(|k| k.fingerprint() == fp).ok_or_else(
                || format!("the key provider {provider}'s batch was submitted with is no longer configured"),
            )?),
            None => None,
        };
        let dest = upstream::Dest { runtime, spec, wire: *wire, key, upstream_model: "" };
        Ok((dest, api))
    }

    /// One call of a provider's batch API (an upload, a creation, a status, a
    /// cancel): its status and whole body, the provider's secrets scrubbed;
    /// `Err`: no answer.
    pub async fn batch_call(
        &self,
        provider: &str,
        credential: Option<&str>,
        call: native::Call,
    ) -> Result<(u16, Bytes), String> {
        let (resp, dest, minted) = self.batch_send(provider, credential, call).await?;
        let redactor = Redactor { platform: &dest.spec.secrets, used: dest.key, minted: &minted };
        let status = resp.status().as_u16();
        let deadline = Instant::now() + BATCH_CALL_TIMEOUT;
        if resp.status().is_success() {
            let bytes = upstream::read_body(resp, MAX_BATCH_ANSWER, deadline)
                .await
                .map_err(|f| f.redacted(&redactor).into_message())?;
            Ok((status, Bytes::from(redactor.forwarded(&bytes).into_owned())))
        } else {
            let f = upstream::read_failure(resp, dest.wire, &redactor, deadline).await;
            Ok((status, Bytes::from(f.into_message())))
        }
    }

    async fn batch_send<'a>(
        &'a self,
        provider: &str,
        credential: Option<&str>,
        call: native::Call,
    ) -> Result<(crate::client::Response, upstream::Dest<'a>, Vec<Secret>), String> {
        let (dest, _) = self.batch_dest(provider, credential)?;
        let url =
            reqwest::Url::parse(&call.url).map_err(|e| format!("the URL is not valid: {e}"))?;
        let method = match call.method {
            "POST" => http::Method::POST,
            "PUT" => http::Method::PUT,
            _ => http::Method::GET,
        };
        let (bytes, content_type) = match call.body {
            Some((b, t)) => (Some(b), t),
            None => (None, String::new()),
        };
        let body = bytes.map(|b| (b, content_type.as_str()));
        let sending = upstream::request(dest, method, url, body, call.service);
        let (resp, minted) = tokio::time::timeout(BATCH_CALL_TIMEOUT, sending)
            .await
            .map_err(|_| format!("no answer within {} s", BATCH_CALL_TIMEOUT.as_secs()))?
            .map_err(Failure::into_message)?;
        Ok((resp, dest, minted))
    }

    /// An ended provider batch's answers in one of its results files, read a
    /// line at a time as they arrive (a batch's results may be far larger than
    /// anything kept in memory at once).
    pub async fn batch_results(
        &self,
        provider: &str,
        credential: Option<&str>,
        call: native::Call,
    ) -> Result<Results, String> {
        let (resp, dest, minted) = self.batch_send(provider, credential, call).await?;
        let (_, api) = self.batch_dest(provider, credential)?;
        let mut secrets: Vec<Secret> = dest.spec.secrets.clone();
        secrets.extend(dest.key.cloned());
        secrets.extend(minted);
        if !resp.status().is_success() {
            let redactor = Redactor { platform: &secrets, used: None, minted: &[] };
            let deadline = Instant::now() + BATCH_CALL_TIMEOUT;
            let f = upstream::read_failure(resp, dest.wire, &redactor, deadline).await;
            return Err(f.into_message());
        }
        Ok(Results { api, body: resp.into_body(), pending: Vec::new(), done: false, secrets })
    }
}

/// How long one call of a provider's batch API may take (a results file's
/// every read, and the whole of any other call).
const BATCH_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The most a batch API's answer other than results may hold.
const MAX_BATCH_ANSWER: usize = 16 << 20;

/// The longest one results line may be.
const MAX_RESULT_LINE: usize = 64 << 20;

/// A provider batch's results file, read a line at a time
/// ([`Snapshot::batch_results`]).
pub struct Results {
    api: BatchApi,
    body: crate::client::Body,
    pending: Vec<u8>,
    done: bool,
    secrets: Vec<Secret>,
}

impl std::fmt::Debug for Results {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Results").field("api", &self.api).field("done", &self.done).finish()
    }
}

impl Results {
    /// The next answer; `None` at the file's end; `Err`: the file broke off
    /// or a line is not an answer.
    pub async fn next(&mut self) -> Result<Option<native::Answer>, String> {
        loop {
            if let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                if let Some(answer) = self.parse(&line)? {
                    return Ok(Some(answer));
                }
                continue;
            }
            if self.done {
                let line = std::mem::take(&mut self.pending);
                return self.parse(&line);
            }
            let read =
                tokio::time::timeout(BATCH_CALL_TIMEOUT, upstream::next_data(&mut self.body))
                    .await
                    .map_err(|_| "the results stopped arriving".to_owned())?;
            match read {
                Some(Ok(chunk)) => {
                    self.pending.extend_from_slice(&chunk);
                    if self.pending.len() > MAX_RESULT_LINE {
                        return Err(format!("a results line is over {MAX_RESULT_LINE} bytes"));
                    }
                }
                Some(Err(e)) => return Err(format!("the results broke off: {e}")),
                None => self.done = true,
            }
        }
    }

    /// One line, scrubbed of the provider's secrets; `None`: a blank one.
    fn parse(&self, line: &[u8]) -> Result<Option<native::Answer>, String> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        let redactor = Redactor { platform: &self.secrets, used: None, minted: &[] };
        let clean = redactor.forwarded(line);
        let mut answers = self.api.parse_results(&clean).map_err(|e| e.to_string())?;
        Ok(answers.pop())
    }
}

impl Snapshot {
    /// The attempt of a line answered by its provider's batch API: the answer
    /// read back, as an attempt over HTTP would have had it.
    /// `prompted`: the line's schema went in its system prompt, so the
    /// answer is parsed, to be checked.
    pub(super) fn replay(
        &self,
        inbound: &Inbound,
        cand: &Candidate,
        p: &Prefetched,
        prompted: bool,
    ) -> Result<super::attempt::Answer, Failure> {
        let ProviderKind::Wire(wire) = cand.provider.kind else {
            return Err(Failure::Unsupported("the batch's provider calls no wire".to_owned()));
        };
        if !(200..300).contains(&p.status) {
            let message = wire
                .parse_error(&p.body)
                .unwrap_or_else(|| String::from_utf8_lossy(&p.body).chars().take(500).collect());
            return Err(Failure::Status { status: p.status, message, retry_after: None });
        }
        let fast = inbound.fast_path(wire) && !prompted;
        super::attempt::whole_answer(inbound, wire, p.body.clone(), fast)
    }
}
