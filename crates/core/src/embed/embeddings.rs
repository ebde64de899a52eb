//! [`Gateway::embed`]: vectors through the same catalog, routes, access rules,
//! limits, failover, metering and records as a generation.

use std::sync::Arc;

use switchyard_protocol::embeddings::EmbedRequest;

use super::{Capture, Failed, Gateway, Generate, checked_id, request_id};
use crate::embed::{AttemptRecord, Principal, RequestRouting, Usage};
use crate::exec::planned_request;
use crate::record::SharedSink;

/// An embeddings request, and who asks.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use switchyard_core::embed::{Embed, Gateway, Model, ModelKind, Provider};
/// use switchyard_core::protocol::embeddings::{EmbedInput, EmbedRequest};
///
/// let gateway = Gateway::builder()
///     .provider("local", Provider::mock())
///     .model(Model::new("vectors").kind(ModelKind::Embedding).deployment("local", "embed-1"))
///     .build()?;
/// let request = EmbedRequest {
///     model: "vectors".into(),
///     inputs: vec![EmbedInput::Text("one".into()), EmbedInput::Text("two".into())],
///     dimensions: Some(4),
///     ..EmbedRequest::default()
/// };
/// let answer = gateway.embed(Embed::new(request)).await?;
/// assert_eq!(answer.vectors.len(), 2, "one vector per input, in order");
/// assert!(answer.vectors.iter().all(|v| v.len() == 4));
/// assert_eq!((answer.provider.as_str(), answer.upstream_model.as_str()), ("local", "embed-1"));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Embed {
    /// The inputs and how to embed them.
    pub request: EmbedRequest,
    /// Fallbacks, deadlines and attempt bounds for this request.
    pub routing: RequestRouting,
    /// Who asks (default: anonymous).
    pub caller: Principal,
    /// The project the request is attributed to, by id or name.
    pub project: Option<String>,
    /// The request's id (default: a fresh `lib_…` id); see [`Generate::id`].
    pub id: Option<String>,
}

impl Embed {
    /// `request` from an anonymous caller, with the configuration's routing.
    pub fn new(request: EmbedRequest) -> Self {
        Self { request, ..Self::default() }
    }

    /// This request's own fallbacks, deadline and attempt bounds.
    #[must_use]
    pub fn routing(mut self, routing: RequestRouting) -> Self {
        self.routing = routing;
        self
    }

    /// Who asks.
    #[must_use]
    pub fn caller(mut self, caller: Principal) -> Self {
        self.caller = caller;
        self
    }
}

/// Vectors and how they were served.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Embeddings {
    /// One vector per input, in input order.
    pub vectors: Vec<Vec<f32>>,
    /// The request's id, as its record has it.
    pub request_id: String,
    /// The provider that answered.
    pub provider: String,
    /// The catalog model the request resolved to.
    pub model: String,
    /// The provider's own id for it.
    pub upstream_model: String,
    /// The route-match descriptor.
    pub descriptor: String,
    /// Every attempt, in order, the answering one last.
    pub attempts: Vec<AttemptRecord>,
    /// Input tokens: the upstream's count, or estimated where it gave none.
    pub usage: Usage,
    /// USD; `None` when a price is unknown.
    pub cost_usd: Option<f64>,
}

impl Gateway {
    /// Embed `embed`'s inputs on the catalog's embedding models
    /// (`kind: embedding`): one vector per input, in input order, whatever
    /// served them; inputs split into as many calls as the provider needs.
    pub async fn embed(&self, embed: Embed) -> Result<Embeddings, Failed> {
        let Embed { request, routing, caller, project, id } = embed;
        let id = match &id {
            Some(id) => checked_id(id).map_err(|e| Failed::new(e, id.clone(), None))?,
            None => request_id(),
        };
        if request.inputs.is_empty() {
            let err = crate::GatewayError::new(
                switchyard_protocol::ErrorCode::InvalidRequest,
                "no input to embed",
            );
            return Err(Failed::new(err, id, None));
        }
        let generate =
            Generate { request: planned_request(&request), routing, caller, project, id: None };
        let inbound = self
            .inbound(generate, id.clone())
            .await
            .map_err(|e| Failed::new(e, id.clone(), None))?;
        // What `inbound` defaulted (the configuration's default model) is the
        // model asked for.
        let mut request = request;
        request.model.clone_from(&inbound.request.model);
        let capture =
            Arc::new(Capture { sink: self.inner.sink.clone(), failed: Default::default() });
        let sink: SharedSink = capture.clone();
        let snapshot = self.inner.snapshot();
        let runtime = Arc::clone(&self.inner.runtime);
        match snapshot.embed(inbound, request, runtime, sink).await {
            Ok(done) => {
                let (attempts, usage, cost_usd) = match done.record {
                    Some(r) => (r.attempts, r.usage, r.cost_usd),
                    None => (Vec::new(), Usage::default(), None),
                };
                Ok(Embeddings {
                    vectors: done.response.vectors,
                    request_id: id,
                    provider: done.served.provider,
                    model: done.served.model,
                    upstream_model: done.served.upstream_model,
                    descriptor: done.descriptor,
                    attempts,
                    usage,
                    cost_usd,
                })
            }
            Err(e) => Err(Failed::new(e, id, capture.take())),
        }
    }
}
