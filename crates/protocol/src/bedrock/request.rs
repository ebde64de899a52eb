//! Requests: canonical → the body of `converse` / `converse-stream`
//! ([`encode_request`]). The choices are listed in the wire's docs ([`super`]).

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::anthropic::{
    DEFAULT_MAX_TOKENS, Samplers, anthropic_effort, budget_within, continues_without_thinking,
    tool_id,
};
use crate::{
    Document, DocumentSource, Effort, Family, Image, ImageSource, Message, ModelTraits, Part,
    ProtocolError, ReasoningControl, Request, ResponseFormat, Role, ToolChoice, ToolResult, util,
};

/// What refusals call this wire.
const TARGET: &str = "a Bedrock upstream";

/// Added to `system` for [`ResponseFormat::JsonObject`], which Converse has no
/// form for (its `outputConfig` takes a schema only).
const JSON_OBJECT_INSTRUCTION: &str = "Respond with a single valid JSON object and nothing \
else: no text before or after it, and no Markdown code fence around it.";

/// The user turn put before a conversation that opens with the assistant:
/// Converse refuses such a conversation, and one neutral character asks nothing
/// of the model.
pub(super) const OPENING_TURN: &str = ".";

/// What a tool result with nothing in it says: Converse wants at least one
/// block in a result's `content`, and Claude refuses blank text.
pub(super) const EMPTY_RESULT: &str = "(no output)";

/// The longest document name Converse takes.
const MAX_DOCUMENT_NAME: usize = 200;

/// The model families whose Converse fields differ are read from the model id
/// by [`Family::of`] (Bedrock's `anthropic.claude-…`, `us.amazon.nova-…`, an
/// ARN): Claude takes Anthropic's fields, and Claude and Nova cache prompts, so
/// cache points mean something to them (and are not refused). Every other
/// family (Llama, Mistral, DeepSeek, …) and an id that names none (an
/// application inference profile's ARN) takes Converse's common fields only.
fn caches(family: Family) -> bool {
    matches!(family, Family::Claude | Family::Nova)
}

/// What the encoding of parts needs beyond the part.
struct Ctx {
    family: Family,
    /// A `toolConfig` goes: tool calls and results can go as blocks.
    tool_blocks: bool,
    /// Document names given so far (Converse's names are unique in a request).
    names: HashSet<String>,
}

impl Ctx {
    /// A `cachePoint` block for a part with this marker, where the family caches.
    fn cache_point(&self, marker: Option<&Value>) -> Option<Value> {
        let marker = marker.filter(|_| caches(self.family))?;
        let mut point = Map::new();
        point.insert("type".into(), json!("default"));
        // Anthropic's `ttl` is Converse's too; other values are left to the default.
        if let Some(ttl) =
            marker.get("ttl").and_then(Value::as_str).filter(|t| ["5m", "1h"].contains(t))
        {
            point.insert("ttl".into(), json!(ttl));
        }
        Some(json!({"cachePoint": point}))
    }
}

/// One content block on its way into a turn, with the cache point that follows it.
struct Block {
    value: Value,
    cache: Option<Value>,
    kind: Kind,
}

#[derive(PartialEq)]
enum Kind {
    Text { blank: bool },
    ToolResult,
    Other,
}

impl Block {
    fn text(text: String, cache: Option<Value>) -> Self {
        let blank = text.trim().is_empty();
        Block { value: json!({"text": text}), cache, kind: Kind::Text { blank } }
    }

    fn other(value: Value, cache: Option<Value>) -> Self {
        Block { value, cache, kind: Kind::Other }
    }

    fn is_blank(&self) -> bool {
        self.kind == Kind::Text { blank: true }
    }
}

/// Build the Converse body for a model with `traits` (its family decides what
/// goes, see [`super`]). The body names no model: it goes in the URL. `Unsupported` for what Converse cannot take.
pub fn encode_request(req: &Request, traits: ModelTraits) -> Result<Value, ProtocolError> {
    if let Some(tool) = req.extras.hosted_tools.first() {
        return Err(crate::cannot_send(&tool.describe(), TARGET, "Converse runs no hosted tools"));
    }
    let family = traits.family;
    let claude = family == Family::Claude;
    let tool_blocks = !req.tools.is_empty() && req.tool_choice != Some(ToolChoice::None);
    let mut ctx = Ctx { family, tool_blocks, names: HashSet::new() };
    let mut body = Map::new();

    // Leading system text: `req.system`, then leading system messages.
    let leading = req.messages.iter().take_while(|m| m.role == Role::System).count();
    let mut system = Vec::new();
    let texts = req.system.iter().map(|b| (&b.text, b.cache_control.as_ref()));
    for (text, marker) in texts.chain(leading_text(&req.messages[..leading])?) {
        // Blank system text is refused like blank text anywhere, and says nothing.
        if !text.trim().is_empty() {
            system.push(json!({"text": text}));
        }
        system.extend(ctx.cache_point(marker));
    }
    if req.response_format == Some(ResponseFormat::JsonObject) {
        system.push(json!({"text": JSON_OBJECT_INSTRUCTION}));
    }

    let messages = encode_messages(&req.messages[leading..], &mut ctx)?;
    body.insert("messages".into(), Value::Array(messages));
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }

    // Claude's own settings, in its own terms (`additionalModelRequestFields`).
    let mut additional = Map::new();
    let thinking =
        req.reasoning.as_ref().filter(|r| claude && r.enabled && !continues_without_thinking(req));
    let mut max_tokens = req.max_tokens;
    match (thinking, traits.reasoning) {
        (Some(reasoning), ReasoningControl::Budget) => {
            let asked = req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
            let (budget, raised) = budget_within(reasoning.budget(), asked);
            max_tokens = Some(raised);
            additional
                .insert("thinking".into(), json!({"type": "enabled", "budget_tokens": budget}));
        }
        (Some(reasoning), ReasoningControl::Effort) => {
            additional.insert("thinking".into(), json!({"type": "adaptive"}));
            // No effort asked for: the model's default applies.
            let effort = reasoning.effort.or(reasoning.budget_tokens.map(Effort::from_budget));
            if let Some(effort) = effort {
                additional
                    .insert("output_config".into(), json!({"effort": anthropic_effort(effort)}));
            }
        }
        (None, _) => {}
    }

    let sent = Samplers::asked(req).sent(traits, thinking.is_some());
    let mut inference = Map::new();
    if let Some(max) = max_tokens {
        inference.insert("maxTokens".into(), json!(max));
    }
    if let Some(t) = sent.temperature {
        inference.insert("temperature".into(), json!(t));
    }
    if let Some(p) = sent.top_p {
        inference.insert("topP".into(), json!(p));
    }
    if !req.stop.is_empty() {
        inference.insert("stopSequences".into(), json!(req.stop));
    }
    if !inference.is_empty() {
        body.insert("inferenceConfig".into(), Value::Object(inference));
    }
    // Converse has no top_k of its own; Claude's goes in its own fields (other
    // families name it each their own way, so it is left out for them).
    if let Some(k) = sent.top_k.filter(|_| claude) {
        additional.insert("top_k".into(), json!(k));
    }
    if tool_blocks {
        body.insert("toolConfig".into(), tool_config(req, &ctx));
    }
    if !additional.is_empty() {
        body.insert("additionalModelRequestFields".into(), Value::Object(additional));
    }
    // Converse's `stopReason` does not say which sequence matched; Claude's own
    // answer does, when asked for.
    if claude && !req.stop.is_empty() {
        body.insert("additionalModelResponseFieldPaths".into(), json!(["/stop_sequence"]));
    }
    if let Some(ResponseFormat::JsonSchema { name, schema, description, .. }) = &req.response_format
    {
        let mut definition = Map::new();
        // Converse takes the schema as JSON text.
        definition.insert("schema".into(), json!(schema.to_string()));
        if !name.is_empty() {
            definition.insert("name".into(), json!(name));
        }
        if let Some(description) = description {
            definition.insert("description".into(), json!(description));
        }
        body.insert(
            "outputConfig".into(),
            json!({"textFormat": {"type": "json_schema", "structure": {"jsonSchema": definition}}}),
        );
    }
    Ok(Value::Object(body))
}

/// The text of leading system messages, which joins `system`; anything else in
/// them is refused (Converse's `system` takes text only).
fn leading_text(messages: &[Message]) -> Result<Vec<(&String, Option<&Value>)>, ProtocolError> {
    let mut out = Vec::new();
    for part in messages.iter().flat_map(|m| &m.content) {
        match part {
            Part::Text(t) => out.push((&t.text, t.cache_control.as_ref())),
            Part::Thinking { .. } | Part::RedactedThinking { .. } => {}
            other => {
                return Err(crate::cannot_send(
                    &other.describe(),
                    TARGET,
                    "a leading system message goes to `system`, which takes only text",
                ));
            }
        }
    }
    Ok(out)
}

fn tool_config(req: &Request, ctx: &Ctx) -> Value {
    let mut tools = Vec::new();
    for tool in &req.tools {
        let schema = if tool.parameters.is_object() {
            tool.parameters.clone()
        } else {
            // A tool without parameters: Converse needs an object schema regardless.
            json!({"type": "object", "properties": {}})
        };
        let mut spec = Map::new();
        spec.insert("name".into(), json!(tool.name));
        // Converse refuses an empty description.
        if let Some(d) = tool.description.as_ref().filter(|d| !d.is_empty()) {
            spec.insert("description".into(), json!(d));
        }
        spec.insert("inputSchema".into(), json!({"json": schema}));
        if let Some(strict) = tool.strict.filter(|_| ctx.family == Family::Claude) {
            spec.insert("strict".into(), json!(strict));
        }
        tools.push(json!({"toolSpec": spec}));
        tools.extend(ctx.cache_point(tool.cache_control.as_ref()));
    }
    let mut config = Map::new();
    config.insert("tools".into(), Value::Array(tools));
    let choice = match &req.tool_choice {
        Some(ToolChoice::Auto) => Some(json!({"auto": {}})),
        Some(ToolChoice::Required) => Some(json!({"any": {}})),
        Some(ToolChoice::Tool { name }) => Some(json!({"tool": {"name": name}})),
        // `none` sends no tools at all; a hosted tool was refused already.
        Some(ToolChoice::None | ToolChoice::Hosted { .. }) | None => None,
    };
    if let Some(choice) = choice {
        config.insert("toolChoice".into(), choice);
    }
    Value::Object(config)
}

/// The conversation as Converse takes it: user and assistant turns alternating,
/// the first a user's (see the wire's docs in [`super`]).
fn encode_messages(messages: &[Message], ctx: &mut Ctx) -> Result<Vec<Value>, ProtocolError> {
    let mut turns: Vec<(Role, Vec<Block>)> = Vec::new();
    for message in messages {
        let mut blocks = Vec::new();
        for part in &message.content {
            encode_part(part, message.role, ctx, &mut blocks)?;
        }
        push_turn(&mut turns, side(message.role), blocks);
    }
    // Blank text is dropped, and turns left empty with it, except from a last
    // turn of nothing else: dropping that would send another question (or none),
    // so it goes as it is and the upstream says what it makes of it.
    let last = turns.len().saturating_sub(1);
    let mut kept: Vec<(Role, Vec<Block>)> = Vec::with_capacity(turns.len());
    for (i, (role, mut blocks)) in turns.into_iter().enumerate() {
        if i != last || !blocks.iter().all(Block::is_blank) {
            blocks.retain(|b| !b.is_blank());
        }
        // A turn dropped between two of one side leaves them side by side.
        push_turn(&mut kept, role, blocks);
    }
    if kept.first().is_some_and(|(role, _)| *role == Role::Assistant) {
        kept.insert(0, (Role::User, vec![Block::text(OPENING_TURN.to_owned(), None)]));
    }
    Ok(kept
        .into_iter()
        .map(|(role, mut blocks)| {
            // Tool results first in a user turn, as Claude requires; a stable sort
            // keeps each kind's order.
            if role == Role::User {
                blocks.sort_by_key(|b| b.kind != Kind::ToolResult);
            }
            let content: Vec<Value> =
                blocks.into_iter().flat_map(|b| std::iter::once(b.value).chain(b.cache)).collect();
            let role = if role == Role::Assistant { "assistant" } else { "user" };
            json!({"role": role, "content": content})
        })
        .collect())
}

/// Mid-conversation system messages are the user's side.
fn side(role: Role) -> Role {
    if role == Role::Assistant { Role::Assistant } else { Role::User }
}

/// Appends `blocks` to the last turn when it is of the same side, else as a new
/// turn; nothing for no blocks.
fn push_turn(turns: &mut Vec<(Role, Vec<Block>)>, role: Role, blocks: Vec<Block>) {
    if blocks.is_empty() {
        return;
    }
    match turns.last_mut() {
        Some((last, existing)) if *last == role => existing.extend(blocks),
        _ => turns.push((role, blocks)),
    }
}

fn encode_part(
    part: &Part,
    role: Role,
    ctx: &mut Ctx,
    out: &mut Vec<Block>,
) -> Result<(), ProtocolError> {
    let claude_assistant = role == Role::Assistant && ctx.family == Family::Claude;
    match part {
        Part::Text(t) if role == Role::System => {
            if !t.text.trim().is_empty() {
                let text = format!("<system-reminder>\n{}\n</system-reminder>", t.text);
                out.push(Block::text(text, ctx.cache_point(t.cache_control.as_ref())));
            }
        }
        Part::Text(t) => {
            out.push(Block::text(t.text.clone(), ctx.cache_point(t.cache_control.as_ref())))
        }
        Part::Image(image) => out
            .push(Block::other(image_block(image)?, ctx.cache_point(image.cache_control.as_ref()))),
        Part::Document(doc) => {
            let block = document_block(doc, &mut ctx.names)?;
            out.push(Block::other(block, ctx.cache_point(doc.cache_control.as_ref())));
        }
        Part::ToolCall(call) => {
            if role != Role::Assistant {
                return Err(ProtocolError::Unsupported(format!(
                    "tool call {} outside an assistant message",
                    call.id
                )));
            }
            if ctx.tool_blocks {
                let input = util::arguments_to_value(&call.arguments)?;
                let block = json!({"toolUse": {
                    "toolUseId": tool_id(&call.id),
                    "name": call.name,
                    "input": input,
                }});
                out.push(Block::other(block, None));
            } else {
                let text = format!(
                    "[called tool `{}` (call {}) with {}]",
                    call.name, call.id, call.arguments
                );
                out.push(Block::text(text, None));
            }
        }
        Part::ToolResult(result) => {
            if role == Role::Assistant {
                return Err(ProtocolError::Unsupported(format!(
                    "tool result {} inside an assistant message",
                    result.call_id
                )));
            }
            if ctx.tool_blocks {
                out.push(tool_result_block(result, ctx)?);
            } else {
                tool_result_as_text(result, ctx, out)?;
            }
        }
        // Claude's own reasoning, signed or redacted, goes back to Claude; anything
        // else (another provider's, unsigned) means nothing upstream and is dropped.
        Part::Thinking { text, signature: Some(signature) }
            if claude_assistant && crate::continuity::is_anthropic_signature(signature) =>
        {
            let block = json!({"reasoningContent": {
                "reasoningText": {"text": text, "signature": signature},
            }});
            out.push(Block::other(block, None));
        }
        Part::RedactedThinking { data } if claude_assistant => {
            out.push(Block::other(json!({"reasoningContent": {"redactedContent": data}}), None));
        }
        Part::Thinking { .. } | Part::RedactedThinking { .. } => {}
        Part::Untranslatable { what } => {
            return Err(crate::cannot_send(
                what,
                TARGET,
                "the gateway cannot translate it; send it to a provider of the wire it came from",
            ));
        }
        Part::Compaction { .. } => return Err(crate::compaction::refused(TARGET)),
    }
    Ok(())
}

/// A `toolResult` block; a cache marker inside the result puts a cache point
/// after it (a result's content takes none).
fn tool_result_block(result: &ToolResult, ctx: &mut Ctx) -> Result<Block, ProtocolError> {
    let mut content = Vec::new();
    let mut marker = None;
    for part in &result.content {
        match part {
            Part::Text(t) => {
                if !t.text.trim().is_empty() {
                    content.push(json!({"text": t.text}));
                }
                marker = marker.or(t.cache_control.as_ref());
            }
            Part::Image(image) => {
                content.push(image_block(image)?);
                marker = marker.or(image.cache_control.as_ref());
            }
            Part::Document(doc) => {
                content.push(document_block(doc, &mut ctx.names)?);
                marker = marker.or(doc.cache_control.as_ref());
            }
            other => {
                return Err(crate::cannot_send(
                    &other.describe(),
                    TARGET,
                    "a tool result holds only text, images and documents",
                ));
            }
        }
    }
    if content.is_empty() {
        content.push(json!({"text": EMPTY_RESULT}));
    }
    let mut block = Map::new();
    block.insert("toolUseId".into(), json!(tool_id(&result.call_id)));
    block.insert("content".into(), Value::Array(content));
    // Only Claude takes a result's status.
    if ctx.family == Family::Claude {
        block.insert("status".into(), json!(if result.is_error { "error" } else { "success" }));
    }
    Ok(Block {
        value: json!({"toolResult": block}),
        cache: ctx.cache_point(marker),
        kind: Kind::ToolResult,
    })
}

/// A tool result where no `toolConfig` goes: its text, then its images and
/// documents as blocks of their own.
fn tool_result_as_text(
    result: &ToolResult,
    ctx: &mut Ctx,
    out: &mut Vec<Block>,
) -> Result<(), ProtocolError> {
    let error = if result.is_error { " (an error)" } else { "" };
    let text = format!("[result of tool call {}{error}]\n{}", result.call_id, result.text());
    out.push(Block::text(text, None));
    for part in &result.content {
        match part {
            Part::Text(_) => {}
            Part::Image(image) => out.push(Block::other(image_block(image)?, None)),
            Part::Document(doc) => {
                out.push(Block::other(document_block(doc, &mut ctx.names)?, None))
            }
            other => {
                return Err(crate::cannot_send(
                    &other.describe(),
                    TARGET,
                    "a tool result holds only text, images and documents",
                ));
            }
        }
    }
    Ok(())
}

/// An `image` block: its bytes, or an S3 location by an `s3://` URL.
fn image_block(image: &Image) -> Result<Value, ProtocolError> {
    const FORMATS: &str = "Converse takes PNG, JPEG, GIF and WebP images";
    let (format, source) = match &image.source {
        ImageSource::Base64 { media_type, data } => {
            let format = image_format(media_type).ok_or_else(|| {
                crate::cannot_send(&format!("a {media_type} image"), TARGET, FORMATS)
            })?;
            (format, json!({"bytes": data}))
        }
        ImageSource::Url { url } => {
            let what = format!("an image by URL ({url})");
            if !url.starts_with("s3://") {
                return Err(crate::cannot_send(
                    &what,
                    TARGET,
                    "Converse takes an image's bytes or an S3 location, and fetches no URL; \
                     send the image inline (base64)",
                ));
            }
            let format = extension(url)
                .and_then(|ext| image_format(&format!("image/{ext}")))
                .ok_or_else(|| crate::cannot_send(&what, TARGET, FORMATS))?;
            (format, json!({"s3Location": {"uri": url}}))
        }
    };
    Ok(json!({"image": {"format": format, "source": source}}))
}

fn image_format(media_type: &str) -> Option<&'static str> {
    Some(match media_type.to_ascii_lowercase().as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => return None,
    })
}

/// A `document` block: its bytes, or an S3 location by an `s3://` URL, with a
/// name Converse takes, unique in the request.
fn document_block(doc: &Document, names: &mut HashSet<String>) -> Result<Value, ProtocolError> {
    const FORMATS: &str =
        "Converse takes PDF, CSV, DOC, DOCX, XLS, XLSX, HTML, TXT and Markdown documents";
    let what = || crate::describe_document(doc);
    let (format, source) = match &doc.source {
        DocumentSource::Base64 { media_type, data } => {
            let format = document_format(media_type)
                .ok_or_else(|| crate::cannot_send(&what(), TARGET, FORMATS))?;
            (format, json!({"bytes": data}))
        }
        DocumentSource::Url { url, media_type } => {
            if !url.starts_with("s3://") {
                return Err(crate::cannot_send(
                    &what(),
                    TARGET,
                    "Converse takes a document's bytes or an S3 location, and fetches no URL; \
                     send the document inline (base64)",
                ));
            }
            let format = media_type
                .as_deref()
                .and_then(document_format)
                .or_else(|| extension(url).and_then(|ext| document_format_of_extension(&ext)))
                .ok_or_else(|| crate::cannot_send(&what(), TARGET, FORMATS))?;
            (format, json!({"s3Location": {"uri": url}}))
        }
    };
    let name = unique_name(names, document_name(doc.filename.as_deref().or(doc.title.as_deref())));
    Ok(json!({"document": {"format": format, "name": name, "source": source}}))
}

fn document_format(media_type: &str) -> Option<&'static str> {
    Some(match media_type.to_ascii_lowercase().as_str() {
        "application/pdf" => "pdf",
        "text/csv" => "csv",
        "application/msword" => "doc",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => "docx",
        "application/vnd.ms-excel" => "xls",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => "xlsx",
        "text/html" => "html",
        "text/plain" => "txt",
        "text/markdown" | "text/x-markdown" => "md",
        _ => return None,
    })
}

fn document_format_of_extension(ext: &str) -> Option<&'static str> {
    Some(match ext {
        "pdf" => "pdf",
        "csv" => "csv",
        "doc" => "doc",
        "docx" => "docx",
        "xls" => "xls",
        "xlsx" => "xlsx",
        "html" | "htm" => "html",
        "txt" => "txt",
        "md" | "markdown" => "md",
        _ => return None,
    })
}

/// The lowercased extension of a URL's last path segment.
fn extension(url: &str) -> Option<String> {
    let path = url.split(['?', '#']).next()?;
    let (_, ext) = path.rsplit('/').next()?.rsplit_once('.')?;
    Some(ext.to_ascii_lowercase())
}

/// A document name as Converse takes it: ASCII letters and digits, single
/// spaces, `-`, `(`, `)`, `[`, `]`, 1 to 200 characters. The file's extension
/// goes (the `format` says it); a run of other characters becomes one `-` (none
/// at either end), a run of whitespace one space; a name left without a letter
/// or digit is `document`.
pub(super) fn document_name(name: Option<&str>) -> String {
    /// Stands for a run of characters Converse refuses until the ends are trimmed.
    const REFUSED: char = '\u{1}';
    let name = name.unwrap_or_default();
    let stem = match name.rsplit_once('.') {
        Some((stem, ext))
            if !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            stem
        }
        _ => name,
    };
    let mut out = String::new();
    for c in stem.chars() {
        let c = if c.is_ascii_alphanumeric() || matches!(c, '-' | '(' | ')' | '[' | ']') {
            c
        } else if c.is_whitespace() {
            ' '
        } else {
            REFUSED
        };
        if (c == ' ' || c == REFUSED) && out.ends_with(c) {
            continue;
        }
        if out.len() == MAX_DOCUMENT_NAME {
            break;
        }
        out.push(c);
    }
    let out = out.trim_matches([' ', REFUSED]).replace(REFUSED, "-");
    if out.bytes().any(|b| b.is_ascii_alphanumeric()) { out } else { "document".to_owned() }
}

/// `name`, or `name (2)`, `name (3)`, … when taken already; recorded as taken.
fn unique_name(taken: &mut HashSet<String>, name: String) -> String {
    let mut candidate = name.clone();
    let mut n = 1;
    while taken.contains(&candidate) {
        n += 1;
        let suffix = format!(" ({n})");
        // The name is ASCII, so any byte is a character boundary.
        let keep = name.len().min(MAX_DOCUMENT_NAME - suffix.len());
        candidate = format!("{}{suffix}", name[..keep].trim_end());
    }
    taken.insert(candidate.clone());
    candidate
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
