//! Token estimates from text, for when a provider reports no usage and for checks
//! made before any upstream call. Deliberately simple and low: about four bytes of
//! text per token; images, documents and tool inputs are not counted.

use switchyard_protocol::{Part, Request};

fn text_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// Estimated input tokens of a request (system + message text + tool definitions'
/// names and descriptions).
pub fn input_tokens(req: &Request) -> u64 {
    let mut bytes = 0;
    for s in &req.system {
        bytes += s.text.len();
    }
    for m in &req.messages {
        for p in &m.content {
            bytes += part_bytes(p);
        }
    }
    for t in &req.tools {
        bytes += t.name.len() + t.description.as_ref().map_or(0, String::len);
    }
    text_tokens(bytes)
}

fn part_bytes(p: &Part) -> usize {
    match p {
        Part::Text(t) => t.text.len(),
        Part::Thinking { text, .. } => text.len(),
        Part::ToolResult(r) => r.content.iter().map(part_bytes).sum(),
        Part::Image(_)
        | Part::Document(_)
        | Part::ToolCall(_)
        | Part::RedactedThinking { .. }
        | Part::Untranslatable { .. } => 0,
    }
}

/// Estimated tokens of generated text.
pub fn output_tokens(text_bytes: usize) -> u64 {
    text_tokens(text_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_protocol::{Message, Role, TextBlock};

    #[test]
    fn counts_text_not_images() {
        let req = Request {
            system: vec![TextBlock::new("12345678")],
            messages: vec![Message::text(Role::User, "abcd")],
            ..Request::default()
        };
        assert_eq!(input_tokens(&req), 3);
        assert_eq!(output_tokens(0), 0);
        assert_eq!(output_tokens(5), 2);
    }
}
