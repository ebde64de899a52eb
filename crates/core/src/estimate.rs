//! Token estimates, for when a provider reports no usage, for a token count on a
//! wire without a counting endpoint, and for checks made before any upstream call.
//! Deliberately simple: about four bytes of text per token, which is low for most
//! text (real tokenizers give fewer bytes per token for code, JSON and non-English
//! text), so an estimate rarely overstates.
//!
//! What counts, besides message text:
//! - the system instructions;
//! - tools: each one's name, description and JSON schema (as JSON text), and a
//!   structured-output schema;
//! - tool calls (name and arguments) and tool results, reasoning text;
//! - images: a fixed [`IMAGE_TOKENS`] each, whatever their size (the gateway does
//!   not decode them);
//! - documents: a text document by its text, any other (a PDF) a fixed
//!   [`DOCUMENT_TOKENS`], plus its title and context.
//!
//! Redacted thinking (encrypted) and content the gateway cannot translate count
//! nothing.

use std::io;

use switchyard_protocol::{Document, DocumentSource, Part, Request, ResponseFormat};

/// Tokens an image is estimated at: about what a one-megapixel image costs on each
/// wire (OpenAI 765 at high detail for 1024×1024, Gemini 1,032 in four 258-token
/// tiles, Anthropic about 1,400 at width × height / 750).
pub const IMAGE_TOKENS: u64 = 1_000;

/// Tokens a document that is not text (a PDF) is estimated at: one page, at the low
/// end of what Anthropic counts a PDF page (1,500 to 3,000 tokens: its text and an
/// image of it); the gateway does not read how many pages it has.
pub const DOCUMENT_TOKENS: u64 = 1_500;

fn text_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// Estimated input tokens of a request: its text (system, messages, tools and
/// their schemas) and its images and documents.
pub fn input_tokens(req: &Request) -> u64 {
    let (bytes, media) = tally(req);
    text_tokens(bytes).saturating_add(media)
}

/// [`input_tokens`] without images and documents, whose fixed estimates may be far
/// over what a small image costs: for checks that must not refuse a request that
/// fits (the context window).
pub fn text_input_tokens(req: &Request) -> u64 {
    text_tokens(tally(req).0)
}

/// Estimated tokens of generated text.
pub fn output_tokens(text_bytes: usize) -> u64 {
    text_tokens(text_bytes)
}

/// Text bytes, and the tokens of images and documents.
fn tally(req: &Request) -> (usize, u64) {
    let mut t = Tally::default();
    for s in &req.system {
        t.bytes += s.text.len();
    }
    for m in &req.messages {
        for p in &m.content {
            t.part(p);
        }
    }
    for tool in &req.tools {
        t.bytes += tool.name.len() + tool.description.as_ref().map_or(0, String::len);
        t.bytes += json_len(&tool.parameters);
        if let Some(format) = &tool.freeform {
            t.bytes += json_len(format);
        }
    }
    if let Some(ResponseFormat::JsonSchema { name, schema, description, .. }) = &req.response_format
    {
        t.bytes += name.len() + json_len(schema) + description.as_ref().map_or(0, String::len);
    }
    (t.bytes, t.media)
}

#[derive(Default)]
struct Tally {
    bytes: usize,
    media: u64,
}

impl Tally {
    fn part(&mut self, p: &Part) {
        match p {
            Part::Text(t) => self.bytes += t.text.len(),
            Part::Thinking { text, .. } => self.bytes += text.len(),
            Part::ToolCall(call) => self.bytes += call.name.len() + call.arguments.len(),
            Part::ToolResult(r) => {
                self.bytes += r.name.as_ref().map_or(0, String::len);
                for inner in &r.content {
                    self.part(inner);
                }
            }
            Part::Image(_) => self.media = self.media.saturating_add(IMAGE_TOKENS),
            Part::Document(doc) => self.document(doc),
            Part::RedactedThinking { .. }
            | Part::Untranslatable { .. }
            | Part::Compaction { .. } => {}
        }
    }

    fn document(&mut self, doc: &Document) {
        self.bytes += doc.title.as_ref().map_or(0, String::len);
        self.bytes += doc.context.as_ref().map_or(0, String::len);
        match &doc.source {
            // Text sent as base64: about three bytes of text per four of base64.
            DocumentSource::Base64 { media_type, data } if media_type.starts_with("text/") => {
                self.bytes += data.len() / 4 * 3;
            }
            DocumentSource::Base64 { .. } | DocumentSource::Url { .. } => {
                self.media = self.media.saturating_add(DOCUMENT_TOKENS);
            }
        }
    }
}

/// The length of `v` as compact JSON text, without building the text.
fn json_len(v: &serde_json::Value) -> usize {
    struct Counter(usize);
    impl io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut c = Counter(0);
    // Writing a Value into a counter cannot fail.
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}

#[cfg(test)]
#[path = "estimate_tests.rs"]
mod tests;
