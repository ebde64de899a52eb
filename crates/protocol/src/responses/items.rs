//! Input items beyond messages, function calls and reasoning: the local shell's
//! calls (translated to a tool call and its result), and the items of tools the
//! provider ran itself (kept by name: only a Responses upstream could take them
//! back, and a translation refuses them naming the item).

use serde_json::{Map, Value};

use crate::{Part, ProtocolError, Role, ServerTool, ToolCall, ToolResult};

use super::request::{Conversation, text_part};

/// The name a local shell call has as a tool call on other wires.
pub const LOCAL_SHELL: &str = "local_shell";

/// Items of tools OpenAI runs (or that only its API defines), with the side of the
/// conversation they belong to and the tool's kind: what each names when a
/// translation refuses it, and which tool the history has used.
const HOSTED_CALLS: [(&str, Role, ServerTool); 16] = [
    ("web_search_call", Role::Assistant, ServerTool::WebSearch),
    ("file_search_call", Role::Assistant, ServerTool::FileSearch),
    ("code_interpreter_call", Role::Assistant, ServerTool::CodeExecution),
    ("image_generation_call", Role::Assistant, ServerTool::ImageGeneration),
    ("computer_call", Role::Assistant, ServerTool::ComputerUse),
    ("computer_call_output", Role::User, ServerTool::ComputerUse),
    ("mcp_call", Role::Assistant, ServerTool::Mcp),
    ("mcp_list_tools", Role::Assistant, ServerTool::Mcp),
    ("mcp_approval_request", Role::Assistant, ServerTool::Mcp),
    ("mcp_approval_response", Role::User, ServerTool::Mcp),
    ("shell_call", Role::Assistant, ServerTool::Shell),
    ("shell_call_output", Role::User, ServerTool::Shell),
    ("apply_patch_call", Role::Assistant, ServerTool::ApplyPatch),
    ("apply_patch_call_output", Role::User, ServerTool::ApplyPatch),
    ("tool_search_call", Role::Assistant, ServerTool::ToolSearch),
    ("tool_search_output", Role::User, ServerTool::ToolSearch),
];

/// The side of the conversation a hosted tool's item belongs to; `None` for an
/// item type that is not one.
pub(super) fn hosted_call(ty: &str) -> Option<Role> {
    HOSTED_CALLS.iter().find(|(t, ..)| *t == ty).map(|(_, role, _)| *role)
}

/// A hosted tool's item, kept by name (see the module docs), its tool noted.
pub(super) fn hosted(conv: &mut Conversation, ty: &str, path: &str) {
    let (role, kind) = HOSTED_CALLS
        .iter()
        .find(|(t, ..)| *t == ty)
        .map_or((Role::Assistant, None), |(_, role, kind)| (*role, Some(*kind)));
    if let Some(kind) = kind {
        conv.history_tools.insert(kind);
    }
    let what = format!("{path}: a `{ty}` item (what a tool OpenAI runs did)");
    conv.push(role, vec![Part::Untranslatable { what }]);
}

fn string<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// The id pairing a local shell call with its output: `call_id`, else `id` (older
/// items, and some clients' outputs, have only that). The error names `path.field`.
fn call_id<'a>(
    obj: &'a Map<String, Value>,
    path: &str,
    field: &str,
) -> Result<&'a str, ProtocolError> {
    string(obj, "call_id")
        .or_else(|| string(obj, "id"))
        .ok_or_else(|| ProtocolError::body(format!("{path}.{field}: expected a string")))
}

/// `local_shell_call`: the model ran a command through the client's shell; on
/// other wires, a call of a tool `local_shell` whose arguments are the action.
pub(super) fn local_shell_call(
    conv: &mut Conversation,
    obj: &Map<String, Value>,
    path: &str,
) -> Result<(), ProtocolError> {
    let id = call_id(obj, path, "call_id")?;
    let action = obj
        .get("action")
        .filter(|a| a.is_object())
        .ok_or_else(|| ProtocolError::body(format!("{path}.action: expected an object")))?;
    conv.push(
        Role::Assistant,
        vec![Part::ToolCall(ToolCall {
            id: id.to_owned(),
            name: LOCAL_SHELL.to_owned(),
            arguments: action.to_string(),
            signature: None,
        })],
    );
    Ok(())
}

/// `local_shell_call_output`: the command's output, for the call whose id it names
/// (`id` in the API's shape, `call_id` in some clients').
pub(super) fn local_shell_call_output(
    conv: &mut Conversation,
    obj: &Map<String, Value>,
    path: &str,
) -> Result<(), ProtocolError> {
    let id = call_id(obj, path, "id")?;
    let content = match obj.get("output") {
        Some(Value::String(text)) => vec![text_part(text)],
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err(ProtocolError::body(format!("{path}.output: expected a string"))),
    };
    conv.push(
        Role::User,
        vec![Part::ToolResult(ToolResult {
            call_id: id.to_owned(),
            name: Some(LOCAL_SHELL.to_owned()),
            content,
            is_error: false,
        })],
    );
    Ok(())
}
