//! A model's kind against its deployments' wires: what the compile refuses
//! before a request of one kind could reach a provider that serves another.

use crate::catalog::ProviderKind;
use crate::config::raw::ModelKind;

/// Why a provider of `kind` cannot serve a model of `model` kind: a media
/// model needs a wire that runs jobs on a queue, and a wire that runs only
/// jobs (fal) serves no other kind. Other mismatches (an image model on a
/// wire without images) are the attempt's to find: a candidate that cannot
/// take a request is passed over.
pub(super) fn serves(kind: &ProviderKind, model: ModelKind) -> Option<String> {
    let ProviderKind::Wire(wire) = kind else { return None };
    let spec = wire.spec();
    match model {
        ModelKind::Media if spec.jobs.is_none() => Some(format!(
            "the {} wire runs no media jobs (a media model is deployed on a queue: wire: fal)",
            wire.as_str()
        )),
        ModelKind::Media => None,
        _ if !spec.chat => Some(format!(
            "the {} wire runs media jobs only: the model needs kind: media",
            wire.as_str()
        )),
        _ => None,
    }
}
