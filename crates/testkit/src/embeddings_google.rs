//! Google's embeddings, as the fakes check and answer them: Gemini's
//! `:embedContent` and `:batchEmbedContents`, Vertex AI's `:predict` (see
//! [`crate::embeddings`] for the fake's choices).

use serde_json::{Map, Value, json};

use super::{
    GEMINI_MAX_BATCH, GOOGLE_MAX_DIMS, TASK_TYPES, VERTEX_MAX_INPUT_TOKENS, VERTEX_MAX_INSTANCES,
    dims_or_default, fake_vector, kind, positive, token_count,
};

// ---------------------------------------------------------------------------
// Gemini (Google AI Studio)

/// An embed request's fields: lowerCamelCase or the proto's names, as Google's
/// JSON mapping takes both.
const GEMINI_FIELDS: [&str; 7] = [
    "model",
    "content",
    "taskType",
    "task_type",
    "title",
    "outputDimensionality",
    "output_dimensionality",
];
/// A `Part`'s other fields: known to the API, not embeddable here.
const NOT_TEXT_PARTS: [&str; 14] = [
    "inlineData",
    "inline_data",
    "fileData",
    "file_data",
    "functionCall",
    "function_call",
    "functionResponse",
    "function_response",
    "executableCode",
    "executable_code",
    "codeExecutionResult",
    "code_execution_result",
    "thought",
    "thoughtSignature",
];

/// One content to embed, and its size.
pub(super) struct GeminiOne {
    pub(super) text: String,
    pub(super) dims: usize,
}

fn unknown_name(key: &str, at: &str) -> String {
    let at = if at.is_empty() { String::new() } else { format!(" at '{at}'") };
    format!("Invalid JSON payload received. Unknown name \"{key}\"{at}: Cannot find field.")
}

/// Either of a field's two JSON names.
fn either<'a>(map: &'a Map<String, Value>, camel: &str, snake: &str) -> Option<&'a Value> {
    map.get(camel).or_else(|| map.get(snake))
}

/// One `EmbedContentRequest`: on its own (`at`: `None`) or the `at`-th of a batch.
pub(super) fn gemini_one(
    model: &str,
    request: &Value,
    at: Option<usize>,
) -> Result<GeminiOne, String> {
    let (path, prefix) = match at {
        Some(i) => {
            (format!("requests[{i}]"), format!("* BatchEmbedContentsRequest.requests[{i}]."))
        }
        None => (String::new(), "* EmbedContentRequest.".to_owned()),
    };
    let map = request.as_object().ok_or_else(|| {
        format!("Invalid JSON payload received. Expected an object, got {}.", kind(request))
    })?;
    if let Some(key) = map.keys().find(|k| !GEMINI_FIELDS.contains(&k.as_str())) {
        return Err(unknown_name(key, &path));
    }
    match map.get("model") {
        None if at.is_none() => {}
        None => return Err(format!("{prefix}model: model is required")),
        Some(Value::String(m)) if *m == format!("models/{model}") => {}
        Some(other) => {
            return Err(format!(
                "{prefix}model: Model in request must match the model in the URL: expected \
                 \"models/{model}\", got {other}"
            ));
        }
    }
    let content =
        map.get("content").ok_or_else(|| format!("{prefix}content: contents is not specified"))?;
    let text = gemini_text(content, &path, &prefix)?;
    let task = task_type(either(map, "taskType", "task_type"), &format!("{prefix}task_type"))?;
    title(map.get("title"), task, &prefix)?;
    let dims = match either(map, "outputDimensionality", "output_dimensionality") {
        None | Some(Value::Null) => None,
        Some(v) => Some(google_dims(v, &format!("{prefix}output_dimensionality"))?),
    };
    Ok(GeminiOne { text, dims: dims_or_default(dims) })
}

/// A content's text: its text parts joined with `\n`; none, or only empty
/// ones, is refused, and so is a part of another kind.
fn gemini_text(content: &Value, path: &str, prefix: &str) -> Result<String, String> {
    let at = |rest: &str| if path.is_empty() { rest.to_owned() } else { format!("{path}.{rest}") };
    let missing = || format!("{prefix}content: contents is not specified");
    let map = content.as_object().ok_or_else(missing)?;
    if let Some(key) = map.keys().find(|k| !matches!(k.as_str(), "parts" | "role")) {
        return Err(unknown_name(key, &at("content")));
    }
    let parts = map.get("parts").and_then(Value::as_array).ok_or_else(missing)?;
    let mut texts = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let part = part.as_object().ok_or_else(missing)?;
        if let Some(key) = part.keys().find(|k| *k != "text") {
            if NOT_TEXT_PARTS.contains(&key.as_str()) {
                return Err(format!("{prefix}content.parts[{i}]: only text can be embedded"));
            }
            return Err(unknown_name(key, &at(&format!("content.parts[{i}]"))));
        }
        match part.get("text") {
            Some(Value::String(t)) => texts.push(t.as_str()),
            Some(other) => {
                return Err(format!(
                    "Invalid value at '{}' (TYPE_STRING), {other}",
                    at(&format!("content.parts[{i}].text"))
                ));
            }
            None => {}
        }
    }
    let text = texts.join("\n");
    if text.is_empty() {
        return Err(missing());
    }
    Ok(text)
}

/// A task type, if given: one of [`TASK_TYPES`].
fn task_type<'a>(v: Option<&'a Value>, field: &str) -> Result<Option<&'a str>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(t)) if TASK_TYPES.contains(&t.as_str()) => Ok(Some(t)),
        Some(other) => Err(format!(
            "Invalid value at '{field}' (type.googleapis.com/google.ai.generativelanguage.v1beta.\
             TaskType), {other}"
        )),
    }
}

/// A title: a string, with task type `RETRIEVAL_DOCUMENT` only.
fn title(v: Option<&Value>, task: Option<&str>, prefix: &str) -> Result<(), String> {
    match v {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(_)) if task == Some("RETRIEVAL_DOCUMENT") => Ok(()),
        Some(Value::String(_)) => {
            Err(format!("{prefix}title: a title is only allowed with task type RETRIEVAL_DOCUMENT"))
        }
        Some(other) => Err(format!("{prefix}title: expected a string, got {}", kind(other))),
    }
}

/// An output size: 1 to [`GOOGLE_MAX_DIMS`].
fn google_dims(v: &Value, field: &str) -> Result<usize, String> {
    positive(v)
        .filter(|n| u64::try_from(*n).is_ok_and(|n| n <= GOOGLE_MAX_DIMS))
        .ok_or_else(|| format!("{field}: must be an integer from 1 to {GOOGLE_MAX_DIMS}, got {v}"))
}

pub(super) fn gemini_batch(model: &str, body: &Value) -> Result<Vec<GeminiOne>, String> {
    let map = body.as_object().ok_or_else(|| {
        format!("Invalid JSON payload received. Expected an object, got {}.", kind(body))
    })?;
    if let Some(key) = map.keys().find(|k| *k != "requests") {
        return Err(unknown_name(key, ""));
    }
    let requests = match map.get("requests") {
        Some(Value::Array(r)) if !r.is_empty() => r,
        _ => {
            return Err(
                "* BatchEmbedContentsRequest.requests: at least one request is required".into()
            );
        }
    };
    if requests.len() > GEMINI_MAX_BATCH {
        return Err(format!(
            "* BatchEmbedContentsRequest.requests: at most {GEMINI_MAX_BATCH} requests can be \
             in one batch"
        ));
    }
    requests.iter().enumerate().map(|(i, r)| gemini_one(model, r, Some(i))).collect()
}

// ---------------------------------------------------------------------------
// Vertex AI `:predict`

pub(super) struct VertexInstance {
    text: String,
    tokens: u64,
    truncated: bool,
}

pub(super) struct VertexRequest {
    instances: Vec<VertexInstance>,
    dims: usize,
}

pub(super) fn vertex(model: &str, body: &Value) -> Result<VertexRequest, String> {
    let map = body.as_object().ok_or_else(|| {
        format!("Invalid JSON payload received. Expected an object, got {}.", kind(body))
    })?;
    if let Some(key) = map.keys().find(|k| !matches!(k.as_str(), "instances" | "parameters")) {
        return Err(unknown_name(key, ""));
    }
    let instances = match map.get("instances") {
        Some(Value::Array(i)) if !i.is_empty() => i,
        _ => return Err("instances: at least one instance is required".into()),
    };
    let cap = if model.starts_with("gemini-embedding") { 1 } else { VERTEX_MAX_INSTANCES };
    if instances.len() > cap {
        return Err(if cap == 1 {
            format!(
                "Unable to submit request because the model {model} only supports 1 instance \
                 per request, got {}.",
                instances.len()
            )
        } else {
            format!(
                "Unable to submit request because the number of instances ({}) is over the \
                 limit of {cap} instances per request for model {model}.",
                instances.len()
            )
        });
    }
    let (dims, auto_truncate) = vertex_parameters(map.get("parameters"))?;
    let instances = instances
        .iter()
        .enumerate()
        .map(|(i, instance)| vertex_instance(i, instance, auto_truncate))
        .collect::<Result<_, _>>()?;
    Ok(VertexRequest { instances, dims: dims_or_default(dims) })
}

/// `parameters`: its `outputDimensionality` and `autoTruncate` (default true).
fn vertex_parameters(parameters: Option<&Value>) -> Result<(Option<usize>, bool), String> {
    let map = match parameters {
        None | Some(Value::Null) => return Ok((None, true)),
        Some(Value::Object(map)) => map,
        Some(other) => return Err(format!("parameters: expected an object, got {}", kind(other))),
    };
    let known = ["outputDimensionality", "autoTruncate"];
    if let Some(key) = map.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(unknown_name(key, "parameters"));
    }
    let dims = match map.get("outputDimensionality") {
        None | Some(Value::Null) => None,
        Some(v) => Some(google_dims(v, "parameters.outputDimensionality")?),
    };
    let auto_truncate = match map.get("autoTruncate") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(format!("parameters.autoTruncate: expected a boolean, got {other}"));
        }
    };
    Ok((dims, auto_truncate))
}

fn vertex_instance(
    i: usize,
    instance: &Value,
    auto_truncate: bool,
) -> Result<VertexInstance, String> {
    let at = format!("instances[{i}]");
    let map = instance
        .as_object()
        .ok_or_else(|| format!("{at}: expected an object, got {}", kind(instance)))?;
    if let Some(key) = map.keys().find(|k| !matches!(k.as_str(), "content" | "task_type" | "title"))
    {
        return Err(unknown_name(key, &at));
    }
    let text = match map.get("content") {
        Some(Value::String(t)) if !t.is_empty() => t.clone(),
        Some(Value::String(_)) => return Err(format!("{at}.content: the content is empty")),
        _ => return Err(format!("{at}.content: a string content is required")),
    };
    let task = task_type(map.get("task_type"), &format!("{at}.task_type"))?;
    title(map.get("title"), task, &format!("{at}."))?;
    let tokens = token_count(&text);
    if tokens > VERTEX_MAX_INPUT_TOKENS && !auto_truncate {
        return Err(format!(
            "Unable to submit request because the input token count is {tokens} but the model \
             supports up to {VERTEX_MAX_INPUT_TOKENS}. Reduce the input token count and try \
             again. You can also use autoTruncate to truncate the input."
        ));
    }
    let truncated = tokens > VERTEX_MAX_INPUT_TOKENS;
    Ok(VertexInstance { text, tokens: tokens.min(VERTEX_MAX_INPUT_TOKENS), truncated })
}

pub(super) fn vertex_answer(request: VertexRequest) -> Value {
    let predictions: Vec<Value> = request
        .instances
        .iter()
        .map(|x| {
            json!({"embeddings": {"values": fake_vector(&x.text, request.dims),
                "statistics": {"token_count": x.tokens, "truncated": x.truncated}}})
        })
        .collect();
    let billable: usize = request
        .instances
        .iter()
        .map(|x| x.text.chars().filter(|c| !c.is_whitespace()).count())
        .sum();
    json!({"predictions": predictions, "metadata": {"billableCharacterCount": billable}})
}
