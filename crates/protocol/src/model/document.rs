//! Documents: a PDF (usually) inline or by URL, as the wires carry them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ImageSource;
/// A document, inline or by URL, with what the wires say about it beside the data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// The document's bytes or where to fetch them.
    pub source: DocumentSource,
    /// The file's name (OpenAI `filename`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Anthropic `title`: text about the document the model reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Anthropic `context`: more text about the document the model reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Anthropic `citations` setting, carried opaquely (no other wire has one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citations: Option<Value>,
    /// Anthropic prompt-caching marker, carried opaquely.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Value>,
}

/// The media type a document is taken to have when its wire does not say: the
/// wires take documents as PDFs (OpenAI Chat and Anthropic's inline and URL forms
/// take nothing else).
pub const DEFAULT_DOCUMENT_TYPE: &str = "application/pdf";

/// Where a document's bytes are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DocumentSource {
    /// Inline.
    Base64 {
        /// `application/pdf` (see [`DEFAULT_DOCUMENT_TYPE`]), `text/plain`, …
        media_type: String,
        /// The bytes, base64 (no `data:` prefix).
        data: String,
    },
    /// By URL, for the provider to fetch.
    Url {
        /// The URL, as the client sent it.
        url: String,
        /// The media type, when the wire says (Gemini `fileData.mimeType`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
    },
}

impl DocumentSource {
    /// An OpenAI `file_data` (Chat `file.file_data`, Responses `input_file`): a
    /// `data:` URI, or bare base64, whose type the file name's extension tells
    /// (PDF when it tells nothing).
    pub fn from_openai_file_data(file_data: &str, filename: Option<&str>) -> Self {
        if let ImageSource::Base64 { media_type, data } = ImageSource::from_openai_url(file_data) {
            return DocumentSource::Base64 { media_type, data };
        }
        let media_type = filename.and_then(media_type_of_name).unwrap_or(DEFAULT_DOCUMENT_TYPE);
        DocumentSource::Base64 { media_type: media_type.to_owned(), data: file_data.to_owned() }
    }
}

/// The media type a file name's extension suggests, for the few document types
/// the wires take.
fn media_type_of_name(name: &str) -> Option<&'static str> {
    let (_, ext) = name.rsplit_once('.')?;
    Some(match ext.to_ascii_lowercase().as_str() {
        "pdf" => "application/pdf",
        "txt" => "text/plain",
        "md" => "text/markdown",
        "html" | "htm" => "text/html",
        "csv" => "text/csv",
        _ => return None,
    })
}

impl Document {
    /// A document with nothing but its source: no name, title, context, citations
    /// setting or cache marker.
    pub fn new(source: DocumentSource) -> Self {
        Self {
            source,
            filename: None,
            title: None,
            context: None,
            citations: None,
            cache_control: None,
        }
    }

    /// The media type, when it is known.
    pub fn media_type(&self) -> Option<&str> {
        match &self.source {
            DocumentSource::Base64 { media_type, .. } => Some(media_type),
            DocumentSource::Url { media_type, .. } => media_type.as_deref(),
        }
    }

    /// A name for a wire that wants one (OpenAI's `filename`): the client's, else
    /// `document` with the extension of its type.
    pub fn filename_or_default(&self) -> String {
        if let Some(name) = &self.filename {
            return name.clone();
        }
        let ext = match self.media_type() {
            Some("text/plain") => "txt",
            Some("text/markdown") => "md",
            Some("text/html") => "html",
            Some("text/csv") => "csv",
            _ => "pdf",
        };
        format!("document.{ext}")
    }
}

/// The refusal of a part that `target` cannot take: names the part and the
/// target, and says why (the gateway never drops content without a word).
pub fn cannot_send(what: &str, target: &str, why: &str) -> crate::ProtocolError {
    crate::ProtocolError::Unsupported(format!("{what} cannot be sent to {target}: {why}"))
}

/// How a refusal names a document: by its URL or its type and name.
pub fn describe_document(doc: &Document) -> String {
    match &doc.source {
        DocumentSource::Url { url, .. } => format!("a document by URL ({url})"),
        DocumentSource::Base64 { media_type, .. } => match &doc.filename {
            Some(name) => format!("a {media_type} document ({name})"),
            None => format!("a {media_type} document"),
        },
    }
}
