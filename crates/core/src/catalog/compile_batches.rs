//! A provider's own batch API (`batch_api`, `batch_bucket`,
//! `batch_role_arn`, `storage_endpoint`): on only where its wire has one,
//! and for an API that reads its input from a bucket (Vertex AI's, Bedrock's),
//! only with that bucket named (and for Bedrock the role its jobs assume).

use switchyard_protocol::batches::native::{BatchApi, Staging};

use super::ProviderKind;
use super::compile::Problem;
use crate::config::Span;
use crate::config::raw::ProviderConfig;

/// Google's Cloud Storage JSON API, where `storage_endpoint` names no other.
const STORAGE: &str = "https://storage.googleapis.com";

/// Provider `name`'s batch API and its staging bucket, as configured;
/// `endpoint`: its own, resolved.
pub(super) fn batch_api(
    name: &str,
    p: &ProviderConfig,
    kind: &ProviderKind,
    endpoint: &str,
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
            "providers.{name}.batch_api: only the openai-chat, anthropic, vertex-gemini and bedrock-anthropic wires have a batch API of their own"
        ));
    }
    if p.batch_role_arn.is_some() && api != Some(BatchApi::Bedrock) {
        problem(format!(
            "providers.{name}.batch_role_arn: only a bedrock-anthropic provider's batch jobs assume a role"
        ));
    }
    let staging = match (&p.batch_bucket, api) {
        (Some(uri), Some(BatchApi::Vertex)) => {
            let storage = p.storage_endpoint.as_deref().unwrap_or(STORAGE);
            let staging = Staging::parse_gcs(uri, storage);
            if staging.is_none() {
                problem(format!(
                    "providers.{name}.batch_bucket: expected gs://bucket/prefix, got {uri:?}"
                ));
            }
            staging
        }
        (Some(uri), Some(BatchApi::Bedrock)) => {
            // Bedrock's control plane and S3 are beside its runtime
            // (`bedrock-runtime.{region}…`); an endpoint elsewhere (a proxy,
            // a test's) serves all three unless `storage_endpoint` says.
            let (jobs, s3) = match endpoint.split_once("://bedrock-runtime.") {
                Some((scheme, rest)) => {
                    (format!("{scheme}://bedrock.{rest}"), format!("{scheme}://s3.{rest}"))
                }
                None => (endpoint.to_owned(), endpoint.to_owned()),
            };
            let storage = p.storage_endpoint.clone().unwrap_or(s3);
            let Some(role) = p.batch_role_arn.as_deref() else {
                problem(format!(
                    "providers.{name}.batch_role_arn: Bedrock's batch jobs read and write the bucket as an IAM role: name it (arn:aws:iam::<account>:role/<name>)"
                ));
                return (None, None);
            };
            if !(role.starts_with("arn:aws") && role.contains(":iam::") && role.contains(":role/"))
            {
                problem(format!(
                    "providers.{name}.batch_role_arn: expected an IAM role's ARN, got {role:?}"
                ));
            }
            let staging = Staging::parse_s3(uri, &storage, role, &jobs);
            if staging.is_none() {
                problem(format!(
                    "providers.{name}.batch_bucket: expected s3://bucket/prefix, got {uri:?}"
                ));
            }
            staging
        }
        (Some(_), _) => {
            problem(format!(
                "providers.{name}.batch_bucket: only a vertex-gemini or bedrock-anthropic provider's batch API reads from a bucket"
            ));
            None
        }
        (None, Some(api)) if api.staged() && p.batch_api => {
            problem(format!(
                "providers.{name}.batch_api: its batch API reads its input from a bucket: name the one it may stage in (batch_bucket: gs://bucket/prefix for Vertex AI, s3://bucket/prefix for Bedrock)"
            ));
            None
        }
        (None, _) => None,
    };
    (api.filter(|_| p.batch_api), staging)
}

// The catalog tests compile YAML.
#[cfg(all(test, feature = "yaml"))]
#[path = "compile_batches_tests.rs"]
mod tests;
