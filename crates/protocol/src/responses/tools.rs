//! Tools: `function` tools as they are, `custom` (free-form) tools as a function of
//! one string argument, `namespace` tools flattened into qualified names; and how
//! the calls of each go back to a Responses client (see the wire's docs in
//! [`super`]).

use serde_json::{Map, Value, json};

use crate::{Dialect, HostedTool, ProtocolError, ServerTool, Tool};

use super::request::from_value;
use super::wire::{InCustomTool, InFunctionTool, InNamespace};

/// The argument object a free-form tool's text travels in on other wires.
pub const FREEFORM_INPUT: &str = "input";

/// The JSON Schema other wires see for a free-form tool: one string, `input`,
/// described with the tool's grammar when it has one.
fn freeform_parameters(format: &Value) -> Value {
    let mut about = "The tool's input, as plain text (not JSON).".to_owned();
    if format.get("type").and_then(Value::as_str) == Some("grammar")
        && let Some(definition) = format.get("definition").and_then(Value::as_str)
    {
        let syntax = format.get("syntax").and_then(Value::as_str).unwrap_or("grammar");
        about.push_str(&format!(" It must match this {syntax} grammar:\n{definition}"));
    }
    json!({
        "type": "object",
        "properties": {FREEFORM_INPUT: {"type": "string", "description": about}},
        "required": [FREEFORM_INPUT],
        "additionalProperties": false,
    })
}

/// A free-form call's text as canonical arguments: `{"input": text}`.
pub(super) fn freeform_arguments(text: &str) -> String {
    json!({ FREEFORM_INPUT: text }).to_string()
}

/// The text of a free-form call from canonical arguments; arguments that are not
/// `{"input": "..."}` (a model that ignored the schema) are passed on as they are.
pub(super) fn freeform_text(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(mut map)) => match map.remove(FREEFORM_INPUT) {
            Some(Value::String(text)) => text,
            _ => arguments.to_owned(),
        },
        _ => arguments.to_owned(),
    }
}

/// Between a namespace and a tool's name in the qualified name other wires see
/// (`multi_agent_v1__spawn_agent`): function names allow letters, digits, `_`, `-`.
pub(super) const NAMESPACE_SEPARATOR: &str = "__";

pub(super) fn qualified(namespace: &str, name: &str) -> String {
    format!("{namespace}{NAMESPACE_SEPARATOR}{name}")
}

/// A function or custom tool as a Responses request declares it, named `name`.
pub(super) fn tool_json(t: &Tool, name: &str) -> Value {
    let mut tool = Map::new();
    if let Some(format) = &t.freeform {
        tool.insert("type".into(), json!("custom"));
        tool.insert("name".into(), json!(name));
        if let Some(description) = &t.description {
            tool.insert("description".into(), json!(description));
        }
        if !format.is_null() {
            tool.insert("format".into(), format.clone());
        }
        return Value::Object(tool);
    }
    tool.insert("type".into(), json!("function"));
    tool.insert("name".into(), json!(name));
    if let Some(description) = &t.description {
        tool.insert("description".into(), json!(description));
    }
    tool.insert("parameters".into(), t.parameters.clone());
    // Responses defaults `strict` to true; canonical "unset" means not strict.
    tool.insert("strict".into(), json!(t.strict.unwrap_or(false)));
    Value::Object(tool)
}

/// How the calls of each of a request's tools go back to a Responses client:
/// (qualified name, namespace, free-form).
#[derive(Debug, Default, Clone)]
pub(super) struct CallShapes(Vec<(String, Option<String>, bool)>);

impl CallShapes {
    pub(super) fn of(tools: &[Tool]) -> Self {
        Self(
            tools
                .iter()
                .filter(|t| t.namespace.is_some() || t.freeform.is_some())
                .map(|t| (t.name.clone(), t.namespace.clone(), t.freeform.is_some()))
                .collect(),
        )
    }

    /// The namespace, inner name and free-form flag of a call of `name`.
    pub(super) fn shape<'a>(&'a self, name: &'a str) -> (Option<&'a str>, &'a str, bool) {
        let Some((_, ns, freeform)) = self.0.iter().find(|(n, _, _)| n == name) else {
            return (None, name, false);
        };
        let inner = ns.as_deref().and_then(|ns| {
            name.strip_prefix(ns).and_then(|rest| rest.strip_prefix(NAMESPACE_SEPARATOR))
        });
        match inner {
            Some(inner) => (ns.as_deref(), inner, *freeform),
            None => (None, name, *freeform),
        }
    }
}

/// The tools a request declares, by kind: `function`/`custom` tools (namespaced
/// ones flattened), hosted tools (carried, see [`crate::Extras`]), and the names
/// of the tools to load on demand.
#[derive(Debug, Default)]
pub(super) struct Declared {
    pub(super) tools: Vec<Tool>,
    pub(super) hosted: Vec<HostedTool>,
    pub(super) deferred: Vec<String>,
}

impl Declared {
    /// One `function` or `custom` tool, or a hosted one.
    fn add(
        &mut self,
        tool: &Value,
        path: &str,
        namespace: Option<&str>,
    ) -> Result<(), ProtocolError> {
        let ty = tool
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| ProtocolError::body(format!("{path}.type: expected a string")))?;
        let mut parsed = match ty {
            "custom" => {
                let c: InCustomTool = from_value(tool, path)?;
                let format = c.format.unwrap_or(Value::Null);
                Tool {
                    name: c.name,
                    description: c.description,
                    parameters: freeform_parameters(&format),
                    strict: None,
                    cache_control: None,
                    freeform: Some(format),
                    namespace: None,
                }
            }
            "function" => {
                let f: InFunctionTool = from_value(tool, path)?;
                if f.defer_loading == Some(true) {
                    let name =
                        namespace.map_or_else(|| f.name.clone(), |ns| qualified(ns, &f.name));
                    self.deferred.push(name);
                }
                Tool {
                    name: f.name,
                    description: f.description,
                    parameters: f
                        .parameters
                        .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
                    strict: f.strict,
                    cache_control: None,
                    freeform: None,
                    namespace: None,
                }
            }
            // Hosted and special tools (`web_search`, `file_search`, `mcp`, …): carried
            // by kind, so the request goes only where they run (see the wire's docs).
            other => {
                self.hosted.push(HostedTool {
                    kind: ServerTool::from_responses(other),
                    dialect: Dialect::OpenAiResponses,
                    tool_type: other.to_owned(),
                    path: path.to_owned(),
                    config: tool.clone(),
                });
                return Ok(());
            }
        };
        if let Some(ns) = namespace {
            parsed.name = qualified(ns, &parsed.name);
            parsed.namespace = Some(ns.to_owned());
        }
        self.tools.push(parsed);
        Ok(())
    }

    /// A `tools` array (the request's, or an `additional_tools` item's) at `path`.
    pub(super) fn add_all(
        &mut self,
        tools: Option<&Value>,
        path: &str,
    ) -> Result<(), ProtocolError> {
        let tools = match tools {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Array(tools)) => tools,
            Some(_) => return Err(ProtocolError::body(format!("{path}: expected an array"))),
        };
        for (i, tool) in tools.iter().enumerate() {
            let at = format!("{path}[{i}]");
            if tool.get("type").and_then(Value::as_str) == Some("namespace") {
                let ns: InNamespace = from_value(tool, &at)?;
                for (j, inner) in ns.tools.iter().enumerate() {
                    self.add(inner, &format!("{at}.tools[{j}]"), Some(&ns.name))?;
                }
                continue;
            }
            self.add(tool, &at, None)?;
        }
        Ok(())
    }
}
