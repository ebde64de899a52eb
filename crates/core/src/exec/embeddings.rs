//! Embeddings: vectors for a list of inputs, through the same stages as a
//! generation.
//!
//! The request is planned as one (resolution, access rules, governance, hints,
//! circuit filter, strategy order) among the catalog's embedding models only
//! (`kind: embedding`; a chat model asked for vectors is refused by name),
//! admitted against the caller's limits and budgets with its inputs' tokens,
//! then each candidate is tried in order with the route's retries and
//! failover (the loop every whole-answer request shares, `whole.rs`). There
//! is no stream: an attempt is whole or failed.
//!
//! One attempt is every call the candidate needs: its wire's
//! [`EmbedSpec`] says how many inputs one call takes
//! ([`EmbedSpec::max_inputs`]), the inputs are sent in batches of that many
//! (a few at a time), and the answers are joined in input order. A batch that
//! fails fails the attempt (what the batches before it reported is metered);
//! the next attempt sends every batch again. What a wire cannot express
//! (token ids to Gemini, a size Titan does not make) fails the candidate as
//! unsupported, and the next one may take it; a request no candidate can
//! express is refused with the last one's reason.
//!
//! Metered from the upstream's token counts where it reports them (OpenAI,
//! Vertex AI, Titan), else estimated (Gemini, Cohere) and marked so; one
//! record per request.

use futures_util::StreamExt as _;
use switchyard_protocol::embeddings::{self, EmbedInput, EmbedRequest, EmbedResponse, EmbedSpec};

use super::whole::{Answered, Target, WholeCall};
use super::*;

/// Batches of one attempt in flight at once: a provider that takes one input a
/// call (Titan) is not called once per input in turn, nor flooded.
const BATCHES_AT_ONCE: usize = 4;

/// An embeddings answer: one vector per input, in input order.
#[derive(Debug)]
pub struct Embedded {
    /// The vectors, and the input tokens as metered (the upstream's count, or
    /// the gateway's estimate).
    pub response: EmbedResponse,
    /// The deployment that answered.
    pub served: Served,
    /// The route-match descriptor.
    pub descriptor: String,
    /// The caller's rate limits after this request; `None`: none apply.
    pub rate: Option<crate::limits::RateStatus>,
    /// The request's record, for a library caller ([`Output::Canonical`]).
    pub record: Option<Box<RequestRecord>>,
}

/// The canonical request an embeddings request is planned and admitted as:
/// its inputs' text as one user message, asking for no output. Access rules,
/// hints and governance read it as they read a generation's.
pub fn planned_request(req: &EmbedRequest) -> Request {
    let text: Vec<&str> = req
        .inputs
        .iter()
        .filter_map(|i| match i {
            EmbedInput::Text(t) => Some(t.as_str()),
            EmbedInput::Tokens(_) => None,
        })
        .collect();
    Request {
        model: req.model.clone(),
        messages: vec![switchyard_protocol::Message::text(
            switchyard_protocol::Role::User,
            text.join("\n"),
        )],
        max_tokens: Some(0),
        user: req.user.clone(),
        ..Request::default()
    }
}

/// The inputs' tokens as the gateway estimates them: text by its bytes, token
/// ids one each.
fn input_estimate(req: &EmbedRequest) -> u64 {
    req.inputs
        .iter()
        .map(|i| match i {
            EmbedInput::Text(t) => estimate::output_tokens(t.len()),
            EmbedInput::Tokens(ids) => ids.len() as u64,
        })
        .sum()
}

impl Snapshot {
    /// Embed `embed`'s inputs, `inbound` being the request as planned
    /// ([`planned_request`]): plan, admit, attempt with retries and failover,
    /// meter and record. The entry point of every client format's embeddings
    /// endpoint ([`crate::Engine::embed`]).
    pub async fn embed(
        self: Arc<Self>,
        mut inbound: Inbound,
        embed: EmbedRequest,
        runtime: Arc<Runtime>,
        sink: SharedSink,
    ) -> Result<Embedded, GatewayError> {
        let estimate = input_estimate(&embed);
        let (mut guard, mut plan) = self
            .open_whole(&mut inbound, &runtime, sink, Purpose::Embed, OPERATION, estimate)
            .await?;
        let call = Embedding { req: &embed };
        let Answered { index, answer, tried } =
            self.whole_loop(&inbound, &call, &mut plan, &runtime, &mut guard).await?;
        let Some(cand) = plan.candidates.get(index) else {
            // Unreachable: the index is the plan's.
            return Err(guard.fail(inbound.format, wrong_form()));
        };
        Ok(self.embedded(&inbound, &plan, &tried, cand, answer, &mut guard))
    }

    /// The answer of the candidate `cand`: named as the client asked, metered
    /// and recorded.
    fn embedded(
        &self,
        inbound: &Inbound,
        plan: &Plan,
        tried: &[String],
        cand: &Candidate,
        mut response: EmbedResponse,
        guard: &mut RecordGuard,
    ) -> Embedded {
        let descriptor = descriptor(plan, tried);
        let served = Served {
            provider: cand.provider.name.clone(),
            model: plan.public_model.clone(),
            upstream_model: cand.upstream_model.clone(),
            dropped_tools: Vec::new(),
        };
        inbound.request.model.clone_into(&mut response.model);
        let input = match response.input_tokens {
            Some(n) => n,
            None => {
                guard.rec.estimated = true;
                inbound.input_estimate()
            }
        };
        response.input_tokens = Some(input);
        let usage = Usage { input_tokens: Some(input), output_tokens: Some(0), ..Usage::default() };
        guard.rec.cost_usd = cost(&usage, cand.pricing.as_ref()).map(|c| c * cand.provider.markup);
        guard.rec.usage = usage;
        guard.rec.served_provider = Some(served.provider.clone());
        guard.rec.upstream_model = Some(served.upstream_model.clone());
        guard.rec.descriptor.clone_from(&descriptor);
        guard.record_metrics();
        let record = (inbound.output == Output::Canonical).then(|| guard.copy(200, None));
        guard.write(200, None);
        let rate = guard.reservation.as_ref().and_then(|(_, r)| r.status);
        Embedded { response, served, descriptor, rate, record }
    }
}

/// An embeddings request as the attempt loop sends it ([`WholeCall`]).
struct Embedding<'r> {
    req: &'r EmbedRequest,
}

impl WholeCall for Embedding<'_> {
    type Answer = EmbedResponse;

    fn check(&self, wire: Wire, upstream_model: &str) -> Result<(), Failure> {
        embed_spec(wire, upstream_model).map(drop)
    }

    fn mock(&self, upstream_model: &str) -> EmbedResponse {
        crate::mock::embeddings(self.req, upstream_model)
    }

    fn send<'a>(
        &'a self,
        snapshot: &'a Snapshot,
        to: Target<'a>,
        reported: &'a mut Usage,
    ) -> impl Future<Output = Result<EmbedResponse, Failure>> + Send + 'a {
        snapshot.embed_http(self.req, to, reported)
    }
}

impl Snapshot {
    /// Every batch of one attempt over HTTP, a few at a time, joined in input
    /// order. `reported`: the tokens the batches that answered counted, when
    /// one fails.
    async fn embed_http(
        &self,
        embed: &EmbedRequest,
        to: Target<'_>,
        reported: &mut Usage,
    ) -> Result<EmbedResponse, Failure> {
        let Target { inbound, cand, wire, key, deadline } = to;
        let spec = embed_spec(wire, &cand.upstream_model)?;
        let (dest, out) = to.dest(self)?;
        let cap = spec.max_inputs(&cand.upstream_model).map_err(Failure::from_protocol)?;
        let url = spec.url(wire.spec(), &cand.provider.endpoint, &cand.upstream_model);
        let mut bodies = Vec::new();
        for range in embeddings::batches(embed.inputs.len(), cap) {
            let inputs = embed.inputs.get(range.clone()).unwrap_or_default();
            let body =
                spec.encode(embed, inputs, &cand.upstream_model).map_err(Failure::from_protocol)?;
            bodies.push((body, range.len()));
        }
        let timeout = inbound
            .limits
            .attempt_timeout
            .unwrap_or(self.catalog.settings.first_byte_timeout)
            .min(deadline.saturating_duration_since(Instant::now()));
        let max_bytes = self.catalog.settings.max_response_bytes;
        let one = |(body, n): (Vec<u8>, usize)| {
            let (url, out) = (&url, &out);
            async move {
                let timed_out = || Failure::Transport {
                    class: TransportClass::Timeout,
                    message: format!("no embeddings within {} ms", timeout.as_millis()),
                };
                let until = Instant::now() + timeout;
                let (resp, minted) =
                    tokio::time::timeout(timeout, upstream::send_to(dest, out, url, body, false))
                        .await
                        .map_err(|_| timed_out())??;
                let redactor =
                    Redactor { platform: &cand.provider.secrets, used: key, minted: &minted };
                if !resp.status().is_success() {
                    return Err(upstream::read_failure(resp, wire, &redactor, until).await);
                }
                let bytes = upstream::read_body(resp, max_bytes, until).await?;
                spec.parse(&bytes, &cand.upstream_model)
                    .and_then(|r| r.expect(n))
                    .map_err(|e| Failure::from_protocol(e).redacted(&redactor))
            }
        };
        let mut answers = futures_util::stream::iter(bodies).map(one).buffered(BATCHES_AT_ONCE);
        let mut parts = Vec::new();
        while let Some(answer) = answers.next().await {
            match answer {
                Ok(part) => parts.push(part),
                Err(f) => {
                    let counted: u64 = parts.iter().filter_map(|p| p.input_tokens).sum();
                    if counted > 0 {
                        reported.input_tokens = Some(counted);
                        reported.output_tokens = Some(0);
                    }
                    return Err(f);
                }
            }
        }
        Ok(EmbedResponse::join(parts))
    }
}

/// How `wire` embeds with `upstream_model`, or why it cannot.
fn embed_spec(wire: Wire, upstream_model: &str) -> Result<EmbedSpec, Failure> {
    let Some(spec) = wire.spec().embeddings else {
        return Err(Failure::Unsupported(format!(
            "the {} wire serves no embeddings",
            wire.as_str()
        )));
    };
    spec.max_inputs(upstream_model).map_err(Failure::from_protocol)?;
    Ok(spec)
}

/// The record's operation for an embeddings request.
pub const OPERATION: &str = "embeddings";
