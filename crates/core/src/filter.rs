//! Candidate filters applied after resolution and before any attempt: a deployment
//! that cannot serve the request is removed, so the request is never sent somewhere
//! that would silently drop part of it (e.g. images to a text-only model).

use switchyard_protocol::{Part, Request, ResponseFormat};

use crate::catalog::{Capabilities, Plan};
use crate::error::GatewayError;

/// What a request needs of a model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    pub vision: bool,
    pub tools: bool,
    pub structured_output: bool,
}

impl Needs {
    pub fn of(req: &Request) -> Needs {
        let has_image = |parts: &[Part]| {
            parts.iter().any(|p| match p {
                Part::Image(_) => true,
                Part::ToolResult(r) => r.content.iter().any(|c| matches!(c, Part::Image(_))),
                _ => false,
            })
        };
        Needs {
            vision: req.messages.iter().any(|m| has_image(&m.content)),
            tools: !req.tools.is_empty(),
            structured_output: matches!(
                req.response_format,
                Some(ResponseFormat::JsonSchema { .. })
            ),
        }
    }

    /// The first capability `caps` lacks, by name.
    pub fn missing(&self, caps: &Capabilities) -> Option<&'static str> {
        if self.vision && !caps.vision {
            Some("vision (image input)")
        } else if self.tools && !caps.tools {
            Some("tools")
        } else if self.structured_output && !caps.structured_output {
            Some("structured_output (JSON schema response_format)")
        } else {
            None
        }
    }
}

/// Drop candidates whose model cannot serve `req`. Models with no declared
/// capabilities are kept. When nothing remains: 400 naming the missing capability.
pub fn by_capability(plan: &mut Plan, req: &Request) -> Result<(), GatewayError> {
    let needs = Needs::of(req);
    if needs == Needs::default() {
        return Ok(());
    }
    let mut first_missing = None;
    plan.candidates.retain(|c| {
        let Some(caps) = c.model.as_ref().and_then(|m| m.capabilities.as_ref()) else {
            return true;
        };
        match needs.missing(caps) {
            Some(what) => {
                first_missing.get_or_insert((
                    what,
                    c.model.as_ref().map(|m| m.id.clone()).unwrap_or_default(),
                ));
                false
            }
            None => true,
        }
    });
    match (plan.candidates.is_empty(), first_missing) {
        (true, Some((what, model))) => Err(GatewayError::invalid(
            "capability_missing",
            format!(
                "model {model:?} does not support {what}, and no fallback that does is configured"
            ),
        )),
        _ => Ok(()),
    }
}
