//! Image generation: pictures from a prompt, through the same stages as a
//! generation.
//!
//! Planned among the catalog's image models (`kind: image`), admitted with its
//! prompt's tokens, then tried on each candidate in order with the route's
//! retries and failover (the loop every whole-answer request shares,
//! `whole.rs`). One attempt is every call the candidate needs: its wire's
//! [`ImageSpec`] says how many images one call makes
//! ([`ImageSpec::max_images`]: DALL·E 3 one, Imagen four), and the answers are
//! joined in order. What a wire cannot make (a size Imagen has no aspect
//! ratio for, a style) fails the candidate as unsupported, so the next may
//! take it; a request none can take is refused with the reason.
//!
//! Upstreams are asked for the images themselves; links, where the client
//! wants them, are the edge's to make. Metered per image at the catalog's
//! price for the size (`pricing.per_image`, `per_image_size`), else at its
//! token prices where the upstream counts tokens (GPT image models); one
//! record per request.

use switchyard_protocol::images::{self, ImageRequest, ImageResponse, ImageSpec};

use super::whole::{Answered, Target, WholeCall};
use super::*;

/// A generation's images, in order.
#[derive(Debug)]
pub struct Imaged {
    /// The images, and the tokens the upstream counted.
    pub response: ImageResponse,
    /// The deployment that answered.
    pub served: Served,
    /// The route-match descriptor.
    pub descriptor: String,
    /// The caller's rate limits after this request; `None`: none apply.
    pub rate: Option<crate::limits::RateStatus>,
    /// The request's record, for a library caller ([`Output::Canonical`]).
    pub record: Option<Box<RequestRecord>>,
}

/// The canonical request an image request is planned and admitted as: its
/// prompt as a user message, asking for no text.
pub fn planned_image_request(req: &ImageRequest) -> Request {
    Request {
        model: req.model.clone(),
        messages: vec![switchyard_protocol::Message::text(
            switchyard_protocol::Role::User,
            req.prompt.clone(),
        )],
        max_tokens: Some(0),
        user: req.user.clone(),
        ..Request::default()
    }
}

/// The record's operation for an image request.
pub const OPERATION: &str = "images";

impl Snapshot {
    /// Generate `req`'s images, `inbound` being the request as planned
    /// ([`planned_image_request`]): plan, admit, attempt with retries and
    /// failover, meter and record ([`crate::Engine::generate_images`]).
    pub async fn generate_images(
        self: Arc<Self>,
        mut inbound: Inbound,
        req: ImageRequest,
        runtime: Arc<Runtime>,
        sink: SharedSink,
    ) -> Result<Imaged, GatewayError> {
        let estimate = estimate::output_tokens(req.prompt.len());
        let (mut guard, mut plan) = self
            .open_whole(&mut inbound, &runtime, sink, Purpose::Image, OPERATION, estimate)
            .await?;
        let call = Imaging { req: &req };
        let Answered { index, answer, tried } =
            self.whole_loop(&inbound, &call, &mut plan, &runtime, &mut guard).await?;
        let Some(cand) = plan.candidates.get(index) else {
            // Unreachable: the index is the plan's.
            return Err(guard.fail(inbound.format, wrong_form()));
        };
        let descriptor = descriptor(&plan, &tried);
        let served = Served {
            provider: cand.provider.name.clone(),
            model: plan.public_model.clone(),
            upstream_model: cand.upstream_model.clone(),
            dropped_tools: Vec::new(),
        };
        let rec = &mut guard.rec;
        let usage = Usage {
            input_tokens: Some(answer.input_tokens.unwrap_or_else(|| inbound.input_estimate())),
            output_tokens: Some(answer.output_tokens.unwrap_or(0)),
            ..Usage::default()
        };
        rec.estimated = answer.input_tokens.is_none();
        let made = answer.images.len();
        rec.cost_usd =
            crate::record::image_cost(made, req.size.as_deref(), &usage, cand.pricing.as_ref())
                .map(|c| c * cand.provider.markup);
        rec.usage = usage;
        rec.served_provider = Some(served.provider.clone());
        rec.upstream_model = Some(served.upstream_model.clone());
        // What the images were priced by: how many, and their size.
        let size = req.size.as_deref().map(|s| format!(" size:{s}")).unwrap_or_default();
        let edit = if req.edit.is_some() { " edit" } else { "" };
        rec.descriptor = format!("{descriptor} images:{made}{size}{edit}").trim_start().to_owned();
        guard.record_metrics();
        let record = (inbound.output == Output::Canonical).then(|| guard.copy(200, None));
        guard.write(200, None);
        let rate = guard.reservation.as_ref().and_then(|(_, r)| r.status);
        Ok(Imaged { response: answer, served, descriptor, rate, record })
    }
}

/// An image request as the attempt loop sends it ([`WholeCall`]).
struct Imaging<'r> {
    req: &'r ImageRequest,
}

/// How `wire` generates images for `upstream_model`, or why it cannot make
/// `req`.
fn image_spec(wire: Wire, req: &ImageRequest, upstream_model: &str) -> Result<ImageSpec, Failure> {
    let Some(spec) = wire.spec().images else {
        return Err(Failure::Unsupported(format!(
            "the {} wire generates no images",
            wire.as_str()
        )));
    };
    let spec = spec.for_model(wire.spec(), upstream_model);
    spec.check(req, upstream_model).map_err(Failure::from_protocol)?;
    Ok(spec)
}

impl WholeCall for Imaging<'_> {
    type Answer = ImageResponse;

    fn check(&self, wire: Wire, upstream_model: &str) -> Result<(), Failure> {
        image_spec(wire, self.req, upstream_model).map(drop)
    }

    fn mock(&self, _upstream_model: &str) -> ImageResponse {
        crate::mock::images(self.req)
    }

    fn send<'a>(
        &'a self,
        snapshot: &'a Snapshot,
        to: Target<'a>,
        reported: &'a mut Usage,
    ) -> impl Future<Output = Result<ImageResponse, Failure>> + Send + 'a {
        snapshot.images_http(self.req, to, reported)
    }
}

impl Snapshot {
    /// Every call of one attempt over HTTP, in turn, joined in order.
    async fn images_http(
        &self,
        req: &ImageRequest,
        to: Target<'_>,
        reported: &mut Usage,
    ) -> Result<ImageResponse, Failure> {
        let Target { cand, wire, key, deadline, .. } = to;
        let spec = image_spec(wire, req, &cand.upstream_model)?;
        let (dest, out) = to.dest(self)?;
        let url = spec.url(wire.spec(), &cand.provider.endpoint, &cand.upstream_model, req);
        // Pictures take longer than a first token: the whole deadline is theirs.
        let max_bytes = self.catalog.settings.max_response_bytes;
        let mut parts = Vec::new();
        for n in images::calls(req.n, spec.max_images(&cand.upstream_model)) {
            let (body, content_type) =
                spec.encode(req, n, &cand.upstream_model).map_err(Failure::from_protocol)?;
            let remaining = deadline.saturating_duration_since(Instant::now());
            let timed_out = || Failure::Transport {
                class: TransportClass::Timeout,
                message: format!("no images within {} ms", remaining.as_millis()),
            };
            let sent = tokio::time::timeout(
                remaining,
                upstream::send_as(dest, &out, &url, (body, &content_type), false),
            )
            .await
            .map_err(|_| timed_out())?;
            let answered = match sent {
                Ok((resp, minted)) => {
                    let redactor =
                        Redactor { platform: &cand.provider.secrets, used: key, minted: &minted };
                    if resp.status().is_success() {
                        upstream::read_body(resp, max_bytes, deadline).await.and_then(|bytes| {
                            spec.parse(&bytes)
                                .map_err(|e| Failure::from_protocol(e).redacted(&redactor))
                        })
                    } else {
                        Err(upstream::read_failure(resp, wire, &redactor, deadline).await)
                    }
                }
                Err(f) => Err(f),
            };
            match answered {
                Ok(part) => parts.push(part),
                Err(f) => {
                    let joined = ImageResponse::join(parts);
                    if let Some(n) = joined.output_tokens.filter(|n| *n > 0) {
                        reported.input_tokens = joined.input_tokens;
                        reported.output_tokens = Some(n);
                    }
                    return Err(f);
                }
            }
        }
        Ok(ImageResponse::join(parts))
    }
}
