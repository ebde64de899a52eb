//! What a request's body and headers change of what the client sent, beyond
//! the translation itself: `anthropic-beta` flags a target does not take (and
//! the body fields they gate), and the record's account of every edit
//! ([`field_edits`]).

use switchyard_protocol::{ModelTraits, Wire, carry};

use super::{Outgoing, RawBody, forwarded};
use crate::catalog::ProviderSpec;

/// The header a client's Anthropic beta flags come in.
pub(super) const ANTHROPIC_BETA: &str = "anthropic-beta";

/// What the body (and headers) [`build_body`](super::build_body) and [`send`](super::send) make for this provider
/// change of the request's settings, for the record: the wire's mapping
/// ([`carry::carriage`]) when the request is translated, the provider's
/// `drop_fields` where they remove something, the sampling parameters the target
/// model (`traits`) refuses, and `anthropic-beta` flags the target does not take.
pub(crate) fn field_edits(
    out: &Outgoing<'_>,
    wire: Wire,
    spec: &ProviderSpec,
    traits: ModelTraits,
) -> Vec<String> {
    let dropped = |field: &str| format!("{field}: dropped (the provider's drop_fields)");
    let mut edits = Vec::new();
    if out.raw.is_some() {
        if let Some(body) =
            out.raw.filter(|_| !spec.drop_fields.is_empty()).and_then(RawBody::object)
        {
            edits.extend(
                spec.drop_fields.iter().filter(|f| body.contains_key(*f)).map(|f| dropped(f)),
            );
        }
    } else {
        let carriage = carry::carriage(wire, out.request);
        edits = carriage.edits;
        for field in &spec.drop_fields {
            if carriage.sent.contains(&field.as_str()) {
                edits.push(dropped(field));
            }
        }
    }
    edits.extend(wire.sampling_edits(out.request, traits, out.raw.is_some()));
    if let Some(refused) = out.refused {
        let sent = |f: &str| match out.raw.and_then(RawBody::object) {
            Some(body) => body.contains_key(f),
            None => carry::carriage(wire, out.request).sent.contains(&f),
        };
        edits.extend(
            refused
                .fields()
                .filter(|f| sent(f))
                .map(|f| format!("{f}: dropped (the provider refused it)")),
        );
    }
    if let Some(betas) = forwarded(out, ANTHROPIC_BETA) {
        match beta_header(out, wire, spec) {
            Passthrough::All => {}
            Passthrough::None => edits.push(format!("{ANTHROPIC_BETA}: dropped {betas}")),
            only => edits.extend(flags(betas).filter(|f| !only.keeps(f)).map(|f| {
                let refused = out.refused.is_some_and(|r| r.refuses_beta(f));
                let why = if refused { " (the provider refused it)" } else { "" };
                format!("{ANTHROPIC_BETA}: dropped {f}{why}")
            })),
        }
        if let Some(body) = out.raw.and_then(RawBody::object) {
            edits.extend(
                ungated(out, wire, spec)
                    .into_iter()
                    .filter(|f| body.contains_key(*f))
                    .map(|f| format!("{f}: dropped (its anthropic-beta flag was left out)")),
            );
        }
    }
    edits
}

/// Which of a client's `anthropic-beta` flags go upstream.
pub(super) enum Passthrough<'a> {
    /// All, as the client sent them (Anthropic itself).
    All,
    /// None: the target is not an Anthropic wire.
    None,
    /// The flags the catalog says the provider accepts, or the wire's own
    /// list when it names none ([`switchyard_protocol::WireBehaviour::default_betas`]).
    Only(Vec<&'a str>),
    /// All but those the provider was learned to refuse.
    AllBut(&'a crate::refusals::Learned),
}

impl Passthrough<'_> {
    /// Whether `flag` goes upstream.
    pub(super) fn keeps(&self, flag: &str) -> bool {
        match self {
            Passthrough::All => true,
            Passthrough::None => false,
            Passthrough::Only(allowed) => allowed.contains(&flag),
            Passthrough::AllBut(refused) => !refused.refuses_beta(flag),
        }
    }
}

pub(super) fn beta_header<'a>(
    out: &Outgoing<'a>,
    wire: Wire,
    spec: &'a ProviderSpec,
) -> Passthrough<'a> {
    if out.format.native_wire() != Some(wire.dialect())
        || !wire.spec().passthrough_headers.contains(&ANTHROPIC_BETA)
    {
        return Passthrough::None;
    }
    let refused = |flag: &&str| out.refused.is_some_and(|r| r.refuses_beta(flag));
    match (&spec.anthropic_betas, wire.behaviour().default_betas()) {
        (Some(allowed), _) => {
            Passthrough::Only(allowed.iter().map(String::as_str).filter(|f| !refused(f)).collect())
        }
        (None, Some(list)) => {
            Passthrough::Only(list.iter().copied().filter(|f| !refused(f)).collect())
        }
        (None, None) => match out.refused {
            Some(learned) => Passthrough::AllBut(learned),
            None => Passthrough::All,
        },
    }
}

/// A passed-through `header` the wire takes in its body: its values that go
/// upstream (the `anthropic-beta` flags the provider takes), as the list the
/// body carries. `None` when the client sent none of them.
pub(super) fn in_body(
    out: &Outgoing<'_>,
    wire: Wire,
    spec: &ProviderSpec,
    header: &str,
) -> Option<serde_json::Value> {
    let value = forwarded(out, header)?;
    let passing = (header == ANTHROPIC_BETA).then(|| beta_header(out, wire, spec));
    let kept: Vec<serde_json::Value> = flags(value)
        .filter(|f| passing.as_ref().is_none_or(|p| p.keeps(f)))
        .map(serde_json::Value::from)
        .collect();
    (!kept.is_empty()).then_some(serde_json::Value::Array(kept))
}

/// The fields of a client's own body that go with the `anthropic-beta` flags
/// left out of its request ([`switchyard_protocol::anthropic::gated_fields`]).
pub(super) fn ungated(out: &Outgoing<'_>, wire: Wire, spec: &ProviderSpec) -> Vec<&'static str> {
    let Some(betas) = forwarded(out, ANTHROPIC_BETA) else { return Vec::new() };
    let passing = beta_header(out, wire, spec);
    flags(betas)
        .filter(|f| !passing.keeps(f))
        .flat_map(switchyard_protocol::anthropic::gated_fields)
        .copied()
        .collect()
}

pub(super) fn flags(header: &str) -> impl Iterator<Item = &str> {
    header.split(',').map(str::trim).filter(|f| !f.is_empty())
}
