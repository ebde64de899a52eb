//! Compaction: a long conversation replaced by a summary the next turns carry
//! instead of it (what Codex does to a session that nears its context window).
//!
//! A client asks for it in the OpenAI Responses API: an `input` whose last item is
//! `{"type": "compaction_trigger"}` (Codex 0.171 and later, streamed or not), or
//! `POST /v1/responses/compact` (older Codex). The answer carries exactly one
//! `compaction` item whose `encrypted_content` the client sends back in later
//! requests in place of the turns it summarises.
//!
//! The gateway compacts with the model the request names, whatever its wire: the
//! conversation plus [`INSTRUCTION`] ([`summarisation_request`]) goes through the
//! normal pipeline, and the summary it answers is sealed with the gateway's
//! [`Seal`](crate::Seal) ([`crate::continuity::seal_summary`]). When the item comes
//! back, the parser opens it and puts the summary in the conversation as user text
//! ([`summary_text`]): no upstream ever sees a compaction item of the gateway's, so
//! a session served by Claude or Gemini compacts as it would on OpenAI.
//!
//! A Responses upstream compacts natively: a trigger whose every deployment speaks
//! the Responses API goes to it as the client sent it, and the upstream answers
//! with its own item. An item this gateway did not seal (the upstream's, another
//! gateway's, an altered one) is kept by name ([`crate::Part::Untranslatable`]):
//! the client's own body takes it back to a Responses upstream, which reads its
//! own and refuses the others, and any translation is refused naming it, since
//! silently dropping it would lose everything it stands for.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Message, Part, Request, Role, TextBlock, ToolChoice};

/// The client asked for the conversation to be compacted instead of continued.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Compaction {
    /// `compaction_trigger`, the last input item: the answer is a response (or its
    /// stream) whose one output item is the compaction item.
    Trigger,
    /// `POST /v1/responses/compact`: the answer is a `response.compaction` object
    /// whose `output` is the user messages of the input (`retained`, as sent), then
    /// the compaction item; the client replaces its history with it.
    Endpoint {
        /// The input's user messages, as the client sent them (JSON items).
        retained: Vec<Value>,
    },
}

/// What the model is asked, after the conversation, to compact it: the summary is
/// all the next turns will have, so it must carry what a successor needs to go on
/// (the task, the decisions, the files, the state, the next steps).
pub const INSTRUCTION: &str = "\
Stop here: this conversation is being compacted. Everything above this message will be \
replaced by the summary you write now, and the work will resume from that summary alone. \
Do not call any tools and do not continue the task; answer with the summary only.

Write it for whoever takes over, who will have no other memory of this conversation:
- The task: what the user asked for, in their own terms, with every requirement, \
constraint and preference they stated.
- Decisions made and the reasons for them, including approaches tried and given up.
- Files and other resources read, created or changed, and what changed in each; the \
commands that mattered and what they showed.
- The current state: what is done and checked, what is half done, what is failing \
(with the exact error where it matters).
- What remains: the next steps in order, and any open questions for the user.

Keep names, paths, identifiers, numbers and code the work depends on exactly as they are. \
Be complete but brief: short sections and bullet points, no pleasantries.";

/// The refusal of a [`Part::Compaction`] in a request to `target`. Compaction
/// items a client sends back are opened into their summary as they are parsed, so
/// only a library caller that builds the part itself gets here.
pub fn refused(target: &str) -> crate::ProtocolError {
    crate::cannot_send(
        "a compaction item",
        target,
        "the gateway opens compaction items into their summary; send the summary as text",
    )
}

/// What the conversation gets in place of a compaction item: the summary, said to
/// be one, so the model takes it as the record of the earlier turns.
pub fn summary_text(summary: &str) -> String {
    format!(
        "The earlier part of this conversation was compacted into the summary below. \
         Take it as the record of the work so far and continue from it.\n\n{summary}"
    )
}

/// The request that compacts `req`: the same model, instructions, conversation and
/// tools (so a provider's prompt cache still matches), the instruction as the last
/// user text, and no tool calls allowed. The tools stay declared because the
/// history calls them; `tool_choice: none` keeps the model to writing.
pub fn summarisation_request(req: &Request) -> Request {
    let mut out = Request { compaction: None, ..req.clone() };
    let instruction = Part::Text(TextBlock::new(INSTRUCTION));
    match out.messages.last_mut() {
        Some(last) if last.role == Role::User => last.content.push(instruction),
        _ => out.messages.push(Message { role: Role::User, content: vec![instruction] }),
    }
    out.tool_choice = (!out.tools.is_empty()).then_some(ToolChoice::None);
    if matches!(req.compaction, Some(Compaction::Endpoint { .. })) {
        // The compact endpoint answers whole.
        out.stream = false;
    }
    out
}

/// The summary in a summarisation answer: its text, parts joined by blank lines.
/// Reasoning and any tool call the model made anyway are not part of it.
pub fn summary_of(content: &[Part]) -> String {
    let texts: Vec<&str> = content
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) if !t.text.trim().is_empty() => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Tool, ToolCall, ToolResult};

    fn tool_history() -> Request {
        Request {
            model: "m".into(),
            system: vec![TextBlock::new("be brief")],
            messages: vec![
                Message::text(Role::User, "fix the bug"),
                Message {
                    role: Role::Assistant,
                    content: vec![Part::ToolCall(ToolCall {
                        id: "c1".into(),
                        name: "shell".into(),
                        arguments: "{}".into(),
                        signature: None,
                    })],
                },
                Message {
                    role: Role::User,
                    content: vec![Part::ToolResult(ToolResult {
                        call_id: "c1".into(),
                        name: None,
                        content: vec![Part::Text(TextBlock::new("ok"))],
                        is_error: false,
                    })],
                },
            ],
            tools: vec![Tool {
                name: "shell".into(),
                description: None,
                parameters: serde_json::json!({"type": "object"}),
                strict: None,
                cache_control: None,
                freeform: None,
                namespace: None,
            }],
            stream: true,
            compaction: Some(Compaction::Trigger),
            ..Request::default()
        }
    }

    #[test]
    fn the_summarisation_request_is_the_conversation_and_the_instruction() {
        let req = tool_history();
        let out = summarisation_request(&req);
        assert_eq!(out.compaction, None, "never compacts again");
        assert_eq!((out.model.as_str(), &out.system, out.stream), ("m", &req.system, true));
        assert_eq!(out.tools, req.tools, "declared as before, for the history and the cache");
        assert_eq!(out.tool_choice, Some(ToolChoice::None));
        assert_eq!(&out.messages[..2], &req.messages[..2]);
        // The instruction joins the last user turn (after its tool result).
        let last = &out.messages[2].content;
        assert_eq!(last.len(), 2);
        assert_eq!(last[1], Part::Text(TextBlock::new(INSTRUCTION)));

        let mut ends_with_answer = req.clone();
        ends_with_answer.messages.truncate(2);
        ends_with_answer.tools.clear();
        ends_with_answer.compaction = Some(Compaction::Endpoint { retained: Vec::new() });
        let out = summarisation_request(&ends_with_answer);
        assert_eq!(out.messages.len(), 3);
        assert_eq!(out.messages[2], Message::text(Role::User, INSTRUCTION));
        assert_eq!(out.tool_choice, None, "no tools: nothing to choose");
        assert!(!out.stream, "the compact endpoint answers whole");
    }

    #[test]
    fn the_summary_is_the_answer_text_only() {
        let content = vec![
            Part::Thinking { text: "hmm".into(), signature: None },
            Part::Text(TextBlock::new("## Task\nfix it")),
            Part::Text(TextBlock::new("  ")),
            Part::ToolCall(ToolCall {
                id: "c".into(),
                name: "shell".into(),
                arguments: "{}".into(),
                signature: None,
            }),
            Part::Text(TextBlock::new("## Next\ntest")),
        ];
        assert_eq!(summary_of(&content), "## Task\nfix it\n\n## Next\ntest");
        assert_eq!(summary_of(&[]), "");
        assert!(summary_text("S").ends_with("\n\nS"));
    }
}
