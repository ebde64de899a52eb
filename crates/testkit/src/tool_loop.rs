//! The scripted tool loop of [`ReplyBody::Auto`](crate::ReplyBody::Auto): what lets a
//! real agent (Codex, Claude Code, OpenCode) go through one whole tool round trip
//! against a fake upstream, so a smoke test can see that the client really ran its
//! tool and sent the result back through the gateway.
//!
//! It applies when the conversation's latest prompt (the last user turn with text
//! that is not a tool result) contains [`TRIGGER`] and the request declares tools
//! (in any vendor's body, and in the Responses API's):
//!
//! 1. No tool result since that prompt: the answer calls one of the declared tools.
//!    A shell tool (by name: Codex's `exec_command` / `shell`, Claude Code's `Bash`,
//!    OpenCode's `bash`, …) runs [`COMMAND`]; without one, a read tool (`Read`,
//!    `read`, `read_file`, …) reads the first absolute path named in the prompt.
//!    The arguments satisfy the tool's JSON schema: the command (or path) property,
//!    and a placeholder of the declared type for every other required property.
//!    With thinking on in the request, the call comes after reasoning, as the real
//!    API sends it: Anthropic a signed `thinking` block (`thinking.type` enabled or
//!    adaptive), OpenAI-compatible `reasoning_content` (`reasoning_effort` other than
//!    `none`), Gemini a thought part (`thinkingConfig.includeThoughts`). Gemini signs
//!    the call (`thoughtSignature`, [`GEMINI_THOUGHT_SIGNATURE`]) unless thinking is
//!    off (`thinkingBudget: 0`), as its thinking models do.
//! 2. A tool result since that prompt: the answer is text, [`RESULT_PREFIX`] and the
//!    results quoted, so the client's final answer holds the tool's output
//!    ([`MARKER`] for the shell command).
//!
//! Without a usable tool the answer says so in text, naming the tools declared, so a
//! failing smoke run reads plainly. The request is validated first like any other
//! (see [`validate`](crate::validate)): a history the real API would refuse is
//! refused here too.

use serde_json::{Map, Value, json};

use crate::Vendor;

/// The word in the prompt that asks for a tool round trip.
pub const TRIGGER: &str = "TOOL_LOOP";
/// What [`COMMAND`] prints: the final answer quotes it when the loop went through.
pub const MARKER: &str = "switchyard-tool-ok";
/// The harmless command a shell tool is asked to run.
pub const COMMAND: &str = "echo switchyard-tool-ok";
/// The reasoning sent before the call when the request turns thinking on.
pub const THINKING: &str = "The user asked for a tool round trip: run the command, then quote it.";
/// The `thoughtSignature` a Gemini call carries (standard base64, as Gemini sends).
pub const GEMINI_THOUGHT_SIGNATURE: &str = "ZmFrZS10aG91Z2h0LXNpZ25hdHVyZS0wMDAx";
/// What the closing answer puts before the quoted tool results.
pub const RESULT_PREFIX: &str = "tool result: ";

/// Tool names taken as a shell, in order of preference; then any name containing
/// `shell`, `bash` or `exec`.
const SHELL_TOOLS: [&str; 8] = [
    "exec_command",
    "shell_command",
    "shell",
    "Bash",
    "bash",
    "run_shell_command",
    "execute_command",
    "run_command",
];
/// The properties a shell tool takes its command in.
const COMMAND_PROPS: [&str; 4] = ["cmd", "command", "script", "commands"];
/// Tool names taken as a file reader, in order of preference.
const READ_TOOLS: [&str; 6] = ["Read", "read", "read_file", "view", "open_file", "cat"];
/// The properties a read tool takes its path in.
const PATH_PROPS: [&str; 5] = ["file_path", "filePath", "absolute_path", "path", "file"];
/// A quoted tool result is cut to this many characters.
const QUOTE_LIMIT: usize = 2000;

/// One step of the loop, vendor-neutral.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Step {
    pub(crate) thinking: Option<&'static str>,
    pub(crate) text: Option<String>,
    /// (tool name, arguments as JSON text)
    pub(crate) tool: Option<(String, String)>,
    pub(crate) signature: Option<&'static str>,
}

/// The loop's answer to `request`, or `None` when the mode does not apply (no
/// trigger in the latest prompt, or no tools declared).
pub(crate) fn step(vendor: Vendor, request: &Value) -> Option<Step> {
    let signature =
        (vendor == Vendor::Gemini && gemini_signs(request)).then_some(GEMINI_THOUGHT_SIGNATURE);
    let thinking = || thinking_on(vendor, request);
    decide(scan(vendor, request), || declared_tools(vendor, request), thinking, signature)
}

/// The loop's answer to a body of OpenAI's Responses API (the Responses fake's
/// default answer, [`crate::responses::auto`]): its reasoning is the turn's own,
/// so the step carries none.
pub(crate) fn responses_step(request: &Value) -> Option<Step> {
    decide(scan_responses(request), || responses_tools(request), || false, None)
}

fn decide<'a>(
    history: History,
    tools: impl FnOnce() -> Vec<(&'a str, &'a Value)>,
    thinking: impl FnOnce() -> bool,
    signature: Option<&'static str>,
) -> Option<Step> {
    if !history.prompt.as_deref().is_some_and(|p| p.contains(TRIGGER)) {
        return None;
    }
    let tools = tools();
    if tools.is_empty() {
        return None;
    }
    if !history.results.is_empty() {
        return Some(Step {
            thinking: None,
            text: Some(quote(&history.results)),
            tool: None,
            signature: None,
        });
    }
    let prompt = history.prompt.unwrap_or_default();
    let Some((name, arguments)) = choose_call(&tools, &prompt) else {
        let names: Vec<&str> = tools.iter().map(|(n, _)| *n).collect();
        let text = format!(
            "{TRIGGER}: no shell tool, and no read tool with an absolute path in the prompt, among: {}",
            names.join(", ")
        );
        return Some(Step { thinking: None, text: Some(text), tool: None, signature: None });
    };
    Some(Step {
        thinking: thinking().then_some(THINKING),
        text: None,
        tool: Some((name.to_owned(), arguments.to_string())),
        signature,
    })
}

fn quote(results: &[String]) -> String {
    let joined = results.join("\n");
    let trimmed = joined.trim();
    if trimmed.is_empty() {
        return format!("{RESULT_PREFIX}(empty)");
    }
    let cut: String = trimmed.chars().take(QUOTE_LIMIT).collect();
    format!("{RESULT_PREFIX}{cut}")
}

// ---------------------------------------------------------------------------
// Reading the request

/// The latest prompt, and the tool results that came after it.
#[derive(Default)]
struct History {
    prompt: Option<String>,
    results: Vec<String>,
}

impl History {
    fn prompt(&mut self, text: String) {
        if !text.trim().is_empty() {
            self.prompt = Some(text);
            self.results.clear();
        }
    }
}

fn scan(vendor: Vendor, request: &Value) -> History {
    let mut h = History::default();
    match vendor {
        Vendor::OpenAi => {
            for m in request["messages"].as_array().into_iter().flatten() {
                match m["role"].as_str() {
                    Some("user") => h.prompt(text_of(&m["content"])),
                    Some("tool") => h.results.push(text_of(&m["content"])),
                    _ => {}
                }
            }
        }
        Vendor::Anthropic => {
            for m in request["messages"].as_array().into_iter().flatten() {
                if m["role"] != "user" {
                    continue;
                }
                let blocks = m["content"].as_array().map_or(&[][..], Vec::as_slice);
                let results: Vec<String> = blocks
                    .iter()
                    .filter(|b| b["type"] == "tool_result")
                    .map(|b| text_of(&b["content"]))
                    .collect();
                // A turn carrying tool results answers the call; its other blocks
                // (reminders a client adds) are no new prompt.
                if results.is_empty() {
                    h.prompt(text_of(&m["content"]));
                } else {
                    h.results.extend(results);
                }
            }
        }
        Vendor::Bedrock => {
            for m in request["messages"].as_array().into_iter().flatten() {
                if m["role"] != "user" {
                    continue;
                }
                let blocks = m["content"].as_array().map_or(&[][..], Vec::as_slice);
                let results: Vec<String> = blocks
                    .iter()
                    .filter_map(|b| b.get("toolResult"))
                    .map(|r| bedrock_result(&r["content"]))
                    .collect();
                if results.is_empty() {
                    let texts: Vec<&str> =
                        blocks.iter().filter_map(|b| b["text"].as_str()).collect();
                    h.prompt(texts.join("\n"));
                } else {
                    h.results.extend(results);
                }
            }
        }
        Vendor::Gemini => {
            for c in request["contents"].as_array().into_iter().flatten() {
                if c["role"].as_str().is_some_and(|r| r != "user") {
                    continue;
                }
                let parts = c["parts"].as_array().map_or(&[][..], Vec::as_slice);
                let results: Vec<String> = parts
                    .iter()
                    .filter_map(|p| p.get("functionResponse"))
                    .map(|r| gemini_result(&r["response"]))
                    .collect();
                if results.is_empty() {
                    let texts: Vec<&str> = parts
                        .iter()
                        .filter(|p| p["thought"] != true)
                        .filter_map(|p| p["text"].as_str())
                        .collect();
                    h.prompt(texts.join("\n"));
                } else {
                    h.results.extend(results);
                }
            }
        }
    }
    h
}

/// A Responses body's `input`: a string (the prompt), or items whose user
/// messages are prompts and whose `function_call_output`s are results.
fn scan_responses(request: &Value) -> History {
    let mut h = History::default();
    match &request["input"] {
        Value::String(text) => h.prompt(text.clone()),
        Value::Array(items) => {
            for item in items {
                match item["type"].as_str() {
                    Some("function_call_output" | "custom_tool_call_output") => {
                        h.results.push(text_of(&item["output"]));
                    }
                    Some("message") | None if item["role"] == "user" => {
                        h.prompt(text_of(&item["content"]));
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    h
}

/// (name, JSON schema) of each function tool a Responses body declares.
fn responses_tools(request: &Value) -> Vec<(&str, &Value)> {
    let tools = request["tools"].as_array().map_or(&[][..], Vec::as_slice);
    tools
        .iter()
        .filter(|t| t["type"] == "function")
        .filter_map(|t| Some((t["name"].as_str()?, &t["parameters"])))
        .collect()
}

/// A string, or the text of a list of text parts / blocks (OpenAI parts, Anthropic
/// blocks; other kinds skipped), joined with `\n`.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| {
                p["type"]
                    .as_str()
                    .is_none_or(|t| matches!(t, "text" | "input_text" | "output_text"))
            })
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A Bedrock `toolResult.content`: its text blocks, else its `json` blocks as JSON.
fn bedrock_result(content: &Value) -> String {
    let blocks = content.as_array().map_or(&[][..], Vec::as_slice);
    blocks
        .iter()
        .map(|b| b["text"].as_str().map_or_else(|| b["json"].to_string(), str::to_owned))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A `functionResponse.response`: its text when it holds one under a usual key,
/// else the object as JSON.
fn gemini_result(response: &Value) -> String {
    ["output", "content", "result", "stdout"]
        .iter()
        .find_map(|k| response[*k].as_str())
        .map_or_else(|| response.to_string(), str::to_owned)
}

/// (name, JSON schema) of each function tool the request declares.
fn declared_tools(vendor: Vendor, request: &Value) -> Vec<(&str, &Value)> {
    let tools = request["tools"].as_array().map_or(&[][..], Vec::as_slice);
    match vendor {
        Vendor::OpenAi => tools
            .iter()
            .filter(|t| t["type"] == "function")
            .filter_map(|t| Some((t["function"]["name"].as_str()?, &t["function"]["parameters"])))
            .collect(),
        // Server tools (`web_search_…`) have a type and no schema: not callable here.
        Vendor::Anthropic => tools
            .iter()
            .filter(|t| t["type"].as_str().is_none_or(|k| k == "custom"))
            .filter_map(|t| Some((t["name"].as_str()?, &t["input_schema"])))
            .collect(),
        Vendor::Bedrock => request["toolConfig"]["tools"]
            .as_array()
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter_map(|t| {
                let spec = &t["toolSpec"];
                Some((spec["name"].as_str()?, &spec["inputSchema"]["json"]))
            })
            .collect(),
        Vendor::Gemini => tools
            .iter()
            .flat_map(|t| t["functionDeclarations"].as_array().map_or(&[][..], Vec::as_slice))
            .filter_map(|d| {
                let schema = match &d["parametersJsonSchema"] {
                    Value::Null => &d["parameters"],
                    s => s,
                };
                Some((d["name"].as_str()?, schema))
            })
            .collect(),
    }
}

fn thinking_on(vendor: Vendor, request: &Value) -> bool {
    match vendor {
        Vendor::Anthropic => {
            matches!(request["thinking"]["type"].as_str(), Some("enabled" | "adaptive"))
        }
        // Claude on Bedrock thinks when asked through the model's own fields.
        Vendor::Bedrock => matches!(
            request["additionalModelRequestFields"]["thinking"]["type"].as_str(),
            Some("enabled" | "adaptive")
        ),
        Vendor::OpenAi => request["reasoning_effort"].as_str().is_some_and(|e| e != "none"),
        Vendor::Gemini => {
            request["generationConfig"]["thinkingConfig"]["includeThoughts"] == true
                && gemini_signs(request)
        }
    }
}

/// Gemini's thinking models think (and sign their calls) unless the budget is 0.
fn gemini_signs(request: &Value) -> bool {
    request["generationConfig"]["thinkingConfig"]["thinkingBudget"] != 0
}

// ---------------------------------------------------------------------------
// Choosing the call

fn choose_call<'a>(tools: &[(&'a str, &Value)], prompt: &str) -> Option<(&'a str, Value)> {
    let by_name = |names: &[&str]| {
        names.iter().find_map(|want| tools.iter().find(|(n, _)| n == want)).copied()
    };
    let shell = by_name(&SHELL_TOOLS).or_else(|| {
        tools.iter().copied().find(|(n, _)| {
            let n = n.to_ascii_lowercase();
            n.contains("shell") || n.contains("bash") || n.contains("exec")
        })
    });
    if let Some((name, schema)) = shell
        && let Some(prop) = key_property(schema, &COMMAND_PROPS)
    {
        let command = if type_of(&schema["properties"][prop]) == "array" {
            json!(["bash", "-lc", COMMAND])
        } else {
            json!(COMMAND)
        };
        return Some((name, arguments(schema, prop, command)));
    }
    let path = prompt.split_whitespace().find(|w| w.starts_with('/'))?;
    let (name, schema) = by_name(&READ_TOOLS)?;
    let prop = key_property(schema, &PATH_PROPS)?;
    Some((name, arguments(schema, prop, json!(path))))
}

/// The property to put the command (or path) in: the first of `names` the schema
/// has, else its first required string or array property.
fn key_property<'s>(schema: &'s Value, names: &[&str]) -> Option<&'s str> {
    let props = schema["properties"].as_object()?;
    if let Some((k, _)) = names.iter().find_map(|n| props.get_key_value(*n)) {
        return Some(k);
    }
    required(schema).find(|r| matches!(type_of(&props[*r]).as_str(), "string" | "array"))
}

fn required(schema: &Value) -> impl Iterator<Item = &str> {
    schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str)
}

/// The arguments: `key` set to `value`, every other required property a placeholder.
fn arguments(schema: &Value, key: &str, value: Value) -> Value {
    let mut out = Map::new();
    out.insert(key.to_owned(), value);
    for r in required(schema) {
        if !out.contains_key(r) {
            out.insert(r.to_owned(), placeholder(r, &schema["properties"][r]));
        }
    }
    Value::Object(out)
}

/// A value of the type a property declares (its first `enum` value or its
/// `default` when it has one).
fn placeholder(name: &str, prop: &Value) -> Value {
    if let Some(first) = prop["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    if !prop["default"].is_null() {
        return prop["default"].clone();
    }
    if let Some(first) = ["anyOf", "oneOf"].iter().find_map(|k| prop[*k].as_array()?.first()) {
        return placeholder(name, first);
    }
    match type_of(prop).as_str() {
        "integer" | "number" => {
            // A timeout of 1 would kill the command; anything else takes its floor.
            let floor = prop["minimum"].as_i64().unwrap_or(1).max(1);
            let wanted = if name.to_ascii_lowercase().contains("timeout") { 60_000 } else { floor };
            json!(prop["maximum"].as_i64().map_or(wanted, |max| wanted.min(max)))
        }
        "boolean" => json!(false),
        "array" => json!([]),
        "object" => json!({}),
        "null" => Value::Null,
        _ if name.to_ascii_lowercase().contains("description") => {
            json!("Prints the switchyard tool-loop marker")
        }
        _ => json!("switchyard"),
    }
}

/// A schema's type, lowercase (Gemini's OpenAPI schemas write `STRING`); the first
/// non-null one of a list.
fn type_of(prop: &Value) -> String {
    let t = match &prop["type"] {
        Value::Array(types) => types.iter().filter_map(Value::as_str).find(|t| *t != "null"),
        t => t.as_str(),
    };
    t.unwrap_or_default().to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(props: Value, required: &[&str]) -> Value {
        json!({"type": "object", "properties": props, "required": required})
    }

    #[test]
    fn a_shell_tool_gets_the_command_in_its_own_shape() {
        let exec = schema(
            json!({"cmd": {"type": "string"}, "yield_time_ms": {"type": "number"}}),
            &["cmd"],
        );
        let shell = schema(
            json!({"command": {"type": "array", "items": {"type": "string"}}}),
            &["command"],
        );
        let bash = schema(
            json!({"command": {"type": "string"}, "description": {"type": "string"},
                   "timeout": {"type": "number", "maximum": 600000}, "mode": {"type": "string", "enum": ["a", "b"]}}),
            &["command", "description", "timeout", "mode"],
        );
        let read = schema(json!({"file_path": {"type": "string"}}), &["file_path"]);
        let (name, args) = choose_call(&[("Read", &read), ("exec_command", &exec)], "go").unwrap();
        assert_eq!((name, args), ("exec_command", json!({"cmd": COMMAND})));
        let (_, args) = choose_call(&[("shell", &shell)], "go").unwrap();
        assert_eq!(args, json!({"command": ["bash", "-lc", COMMAND]}));
        let (_, args) = choose_call(&[("bash", &bash)], "go").unwrap();
        assert_eq!(
            args,
            json!({"command": COMMAND, "description": "Prints the switchyard tool-loop marker",
                   "timeout": 60000, "mode": "a"})
        );
    }

    #[test]
    fn without_a_shell_a_read_tool_reads_the_path_in_the_prompt() {
        let read = schema(
            json!({"filePath": {"type": "STRING"}, "offset": {"type": "integer"}}),
            &["filePath"],
        );
        let tools = [("read", &read)];
        assert_eq!(
            choose_call(&tools, "TOOL_LOOP read /tmp/x.txt please"),
            Some(("read", json!({"filePath": "/tmp/x.txt"})))
        );
        assert_eq!(choose_call(&tools, "TOOL_LOOP read it"), None);
    }

    #[test]
    fn results_after_the_prompt_are_quoted_and_a_new_prompt_starts_over() {
        let tools = json!([{"type": "function", "function": {"name": "shell", "parameters":
            schema(json!({"command": {"type": "string"}}), &["command"])}}]);
        let call = json!({"role": "assistant", "tool_calls": [{"id": "c", "type": "function",
            "function": {"name": "shell", "arguments": "{}"}}]});
        let done = json!({"tools": tools, "messages": [
            {"role": "user", "content": "TOOL_LOOP now"}, call,
            {"role": "tool", "tool_call_id": "c", "content": "switchyard-tool-ok\n"}]});
        let s = step(Vendor::OpenAi, &done).unwrap();
        assert_eq!(s.text.as_deref(), Some("tool result: switchyard-tool-ok"));
        let mut again = done.clone();
        again["messages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "user", "content": "TOOL_LOOP again"}));
        assert!(step(Vendor::OpenAi, &again).unwrap().tool.is_some());
        let mut other = done;
        other["messages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "user", "content": "thanks"}));
        assert_eq!(step(Vendor::OpenAi, &other), None);
    }
}
