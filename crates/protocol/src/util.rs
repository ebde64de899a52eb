//! Small helpers shared by the wire modules.

use serde_json::{Map, Value};

use crate::ProtocolError;

/// Parse a JSON body into an object map, naming the problem on failure.
pub fn parse_object(body: &[u8]) -> Result<Map<String, Value>, ProtocolError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ProtocolError::body("expected a JSON object")),
        Err(e) => Err(ProtocolError::body(e)),
    }
}

/// Deserialize with the failing field's path in the message (`messages[2].content`).
pub fn from_slice<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ProtocolError> {
    serde_json::from_slice(body).map_err(ProtocolError::body)
}

/// Parse tool-call argument text into a JSON value for wires that take an object
/// (Anthropic `input`, Gemini `args`). Empty text is `{}`; text that is not JSON is
/// an error rather than a silent change of meaning.
pub fn arguments_to_value(arguments: &str) -> Result<Value, ProtocolError> {
    if arguments.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_str(arguments)
        .map_err(|e| ProtocolError::body(format!("tool call arguments are not valid JSON: {e}")))
}

/// Render a JSON value (Anthropic `input`, Gemini `args`) as argument text.
pub fn value_to_arguments(value: &Value) -> String {
    value.to_string()
}
