//! A provider's own batch API (`batch_api`, `batch_bucket`,
//! `storage_endpoint`): on only where its wire has one, and for an API that
//! reads its input from a bucket (Vertex AI's), only with that bucket named.

use switchyard_protocol::batches::native::{BatchApi, Staging};

use super::ProviderKind;
use super::compile::Problem;
use crate::config::Span;
use crate::config::raw::ProviderConfig;

/// Google's Cloud Storage JSON API, where `storage_endpoint` names no other.
const STORAGE: &str = "https://storage.googleapis.com";

/// Provider `name`'s batch API and its staging bucket, as configured.
pub(super) fn batch_api(
    name: &str,
    p: &ProviderConfig,
    kind: &ProviderKind,
    written: Span,
    problems: &mut Vec<Problem>,
) -> (Option<BatchApi>, Option<Staging>) {
    let api = match kind {
        ProviderKind::Wire(wire) => wire.spec().batches,
        ProviderKind::Mock { .. } => None,
    };
    let mut problem = |message: String| problems.push(Problem::located(written, message));
    if p.batch_api && api.is_none() {
        problem(format!(
            "providers.{name}.batch_api: only the openai-chat, anthropic and vertex-gemini wires have a batch API of their own"
        ));
    }
    let storage = p.storage_endpoint.as_deref().unwrap_or(STORAGE);
    let staging = match (&p.batch_bucket, api) {
        (Some(uri), Some(api)) if api.staged() => {
            let staging = Staging::parse_gcs(uri, storage);
            if staging.is_none() {
                problem(format!(
                    "providers.{name}.batch_bucket: expected gs://bucket/prefix, got {uri:?}"
                ));
            }
            staging
        }
        (Some(_), _) => {
            problem(format!(
                "providers.{name}.batch_bucket: only a vertex-gemini provider's batch API reads from a bucket"
            ));
            None
        }
        (None, Some(api)) if api.staged() && p.batch_api => {
            problem(format!(
                "providers.{name}.batch_api: Vertex AI's batch prediction reads its input from Cloud Storage: name the bucket it may stage in (batch_bucket: gs://bucket/prefix)"
            ));
            None
        }
        (None, _) => None,
    };
    (api.filter(|_| p.batch_api), staging)
}
