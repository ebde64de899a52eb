//! The one place answers are put into the client's format: the pipeline answers
//! with canonical responses and events, or with an upstream's own bytes already
//! in the client's format (the fast path), and the edge writes them out here.
//! The HTTP endpoints and the WebSocket sessions both go through it.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use switchyard_core::exec::{Chunk, ChunkStream};
use switchyard_protocol::{
    ClientFormat, Compaction, Part, Request, Response, Seal, StreamEncoder, StreamEvent, responses,
};

/// A whole canonical answer as the client's format writes it. A compaction asked
/// for at `/v1/responses/compact` is answered with that endpoint's object, which
/// keeps the user messages the client sent ([`Compaction::Endpoint`]).
pub fn whole(
    format: ClientFormat,
    response: &Response,
    request: &Request,
    seal: Option<&dyn Seal>,
) -> Bytes {
    if let (Some(Compaction::Endpoint { retained }), [Part::Compaction { sealed }]) =
        (&request.compaction, response.content.as_slice())
    {
        let body = responses::encode_compacted(&response.id, sealed, retained, &response.usage);
        return Bytes::from(body.to_string());
    }
    Bytes::from(format.encode_response(response, &request.tools, seal))
}

/// Writes one stream's chunks in its client's format.
pub struct StreamWriter {
    format: ClientFormat,
    request: Arc<Request>,
    seal: Option<Arc<dyn Seal>>,
    /// Made when first needed: a passed-through stream needs one only to end with
    /// an error the gateway writes, so the fast path never builds one.
    encoder: Option<Box<dyn StreamEncoder>>,
    passthrough: bool,
    /// The id the answer is given in place of the upstream's ([`response_id`]).
    id: Option<String>,
}

/// The id a Responses client's answer gets where the gateway writes it: its
/// request's (`resp_<request id>`), unique whatever the upstream's ids are
/// (some OpenAI-compatible servers repeat theirs), so stored responses and
/// continuations never mistake one answer for another. A Responses
/// upstream's own answer, passed through, keeps its id.
pub fn response_id(format: ClientFormat, request_id: &str) -> Option<String> {
    (format == ClientFormat::OpenAiResponses)
        .then(|| format!("resp_{}", request_id.strip_prefix("req_").unwrap_or(request_id)))
}

impl StreamWriter {
    pub fn new(
        format: ClientFormat,
        request: &Arc<Request>,
        seal: Option<Arc<dyn Seal>>,
        stream: &ChunkStream,
    ) -> Self {
        Self {
            format,
            request: Arc::clone(request),
            seal,
            encoder: None,
            passthrough: stream.passthrough.is_some(),
            id: None,
        }
    }

    /// With the answer named `id` ([`response_id`]), not as the upstream did.
    #[must_use]
    pub fn named(mut self, id: Option<String>) -> Self {
        self.id = id;
        self
    }

    fn encoder(&mut self) -> &mut dyn StreamEncoder {
        let (format, request, seal) = (self.format, &self.request, &self.seal);
        self.encoder.get_or_insert_with(|| format.stream_encoder(request, seal.clone())).as_mut()
    }

    /// The bytes for `chunk` (empty when it adds none).
    pub fn write(&mut self, chunk: Chunk) -> Bytes {
        match chunk {
            Chunk::Raw(bytes) => bytes,
            Chunk::Events(mut events) => {
                if let Some(id) = &self.id {
                    for ev in &mut events {
                        if let StreamEvent::Start { id: named, .. } = ev {
                            named.clone_from(id);
                        }
                    }
                }
                let mut out = Vec::new();
                let encoder = self.encoder();
                for ev in &events {
                    encoder.push(ev, &mut out);
                }
                Bytes::from(out)
            }
            Chunk::KeepAlive => keepalive(self.format),
            Chunk::End { error, .. } => {
                let mut out = Vec::new();
                match error {
                    Some(err) => self.encoder().error(err.body(), &mut out),
                    // A passed-through stream carried its own ending.
                    None if self.passthrough => {}
                    None => self.encoder().finish(&mut out),
                }
                Bytes::from(out)
            }
        }
    }
}

/// A keep-alive the format's readers skip ([`ClientFormat::keepalive`]).
fn keepalive(format: ClientFormat) -> Bytes {
    Bytes::from_static(format.keepalive())
}

/// An SSE response body: the stream's chunks as the client's format writes them.
/// Dropping the body (the client went away) drops the stream, which cancels the
/// upstream call.
pub fn sse_body(stream: ChunkStream, writer: StreamWriter) -> Body {
    Body::from_stream(futures_util::stream::unfold(
        (stream, writer),
        |(mut stream, mut writer)| async move {
            loop {
                let chunk = stream.next().await?;
                let bytes = writer.write(chunk);
                if !bytes.is_empty() {
                    return Some((Ok::<Bytes, std::convert::Infallible>(bytes), (stream, writer)));
                }
            }
        },
    ))
}
