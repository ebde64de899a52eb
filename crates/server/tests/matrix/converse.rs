//! Bedrock's Converse body, read into the matrix's wire-neutral [`View`]: `system`
//! blocks, `messages` turns of `text` / `image` / `document` / `toolUse` /
//! `toolResult` / `reasoningContent` blocks, `toolConfig.tools[].toolSpec`. Cache
//! points are markers, not content: they are passed over.

use serde_json::Value;

use super::{Item, View, str_of};

/// The media type of a Converse image `format` (`png` → `image/png`).
fn image_media(format: &str) -> String {
    format!("image/{format}")
}

/// The media type of a Converse document `format` (the ones the tests send).
fn document_media(format: &str) -> String {
    match format {
        "pdf" => "application/pdf".into(),
        "txt" => "text/plain".into(),
        "md" => "text/markdown".into(),
        "csv" => "text/csv".into(),
        "html" => "text/html".into(),
        other => format!("document/{other}"),
    }
}

/// `source.bytes`, or `source.s3Location.uri` (then the media type is `"url"`).
fn source(block: &Value, media: String, p: &mut Vec<String>, at: &str) -> (String, String) {
    let source = &block["source"];
    if let Some(bytes) = source["bytes"].as_str() {
        (media, bytes.to_owned())
    } else if let Some(uri) = source["s3Location"]["uri"].as_str() {
        ("url".into(), uri.to_owned())
    } else {
        p.push(format!("{at}: source without bytes or an S3 location: {block}"));
        (media, String::new())
    }
}

fn image(block: &Value, p: &mut Vec<String>, at: &str) -> Item {
    let format = block["format"].as_str().unwrap_or_default();
    let (media_type, data) = source(block, image_media(format), p, at);
    Item::Image { media_type, data }
}

fn document(block: &Value, p: &mut Vec<String>, at: &str) -> Item {
    let format = block["format"].as_str().unwrap_or_default();
    if block["name"].as_str().is_none_or(str::is_empty) {
        p.push(format!("{at}: a document without a name: {block}"));
    }
    let (media_type, data) = source(block, document_media(format), p, at);
    Item::Document { media_type, data }
}

/// One content block of a turn (several items for a tool result with images).
fn block(b: &Value, items: &mut Vec<Item>, p: &mut Vec<String>, at: &str) {
    let keys: Vec<&String> = b.as_object().map(|m| m.keys().collect()).unwrap_or_default();
    if keys.len() != 1 {
        p.push(format!("{at}: a block is a union of one member: {b}"));
    }
    if let Some(t) = b.get("text") {
        items.push(Item::Text(str_of(t).unwrap_or_default()));
    } else if let Some(i) = b.get("image") {
        items.push(image(i, p, at));
    } else if let Some(d) = b.get("document") {
        items.push(document(d, p, at));
    } else if let Some(u) = b.get("toolUse") {
        if !u["input"].is_object() {
            p.push(format!("{at}: toolUse input is not an object: {}", u["input"]));
        }
        items.push(Item::Call {
            id: str_of(&u["toolUseId"]),
            name: str_of(&u["name"]).unwrap_or_default(),
            args: u["input"].clone(),
        });
    } else if let Some(r) = b.get("toolResult") {
        // The deployment is Claude: every result says how it went.
        let status = r["status"].as_str();
        if !matches!(status, Some("success" | "error")) {
            p.push(format!("{at}: toolResult status {:?}", r["status"]));
        }
        let mut output = String::new();
        let mut media = Vec::new();
        for c in r["content"].as_array().into_iter().flatten() {
            if let Some(t) = c["text"].as_str() {
                output.push_str(t);
            } else if let Some(i) = c.get("image") {
                media.push(image(i, p, at));
            } else if let Some(d) = c.get("document") {
                media.push(document(d, p, at));
            } else {
                p.push(format!("{at}: toolResult content {c}"));
            }
        }
        items.push(Item::Result { id: str_of(&r["toolUseId"]), name: None, output });
        items.extend(media);
    } else if let Some(r) = b.get("reasoningContent") {
        let text = &r["reasoningText"];
        if text.is_object() {
            items.push(Item::Thinking {
                text: str_of(&text["text"]).unwrap_or_default(),
                signature: str_of(&text["signature"]),
            });
        } else {
            p.push(format!("{at}: reasoningContent without reasoningText: {b}"));
        }
    } else if b.get("cachePoint").is_none() {
        p.push(format!("{at}: unexpected block {b}"));
    }
}

/// A Converse request body in the matrix's terms.
pub(super) fn converse_view(body: &Value) -> View {
    let mut view = View::default();
    let p = &mut view.problems;
    match &body["system"] {
        Value::Null => {}
        Value::Array(blocks) => {
            for b in blocks {
                if let Some(t) = b["text"].as_str() {
                    view.system.push(t.to_owned());
                } else if b.get("cachePoint").is_none() {
                    p.push(format!("system: unexpected block {b}"));
                }
            }
        }
        other => p.push(format!("system is {other}, not an array of blocks")),
    }
    for (i, m) in body["messages"].as_array().into_iter().flatten().enumerate() {
        let at = format!("messages[{i}]");
        let role = m["role"].as_str().unwrap_or("(none)");
        if role != "user" && role != "assistant" {
            p.push(format!("{at}: role {role:?}"));
        }
        let mut items = Vec::new();
        match &m["content"] {
            Value::Array(blocks) => {
                for b in blocks {
                    block(b, &mut items, p, &at);
                }
            }
            other => p.push(format!("{at}: content is {other}, not an array of blocks")),
        }
        view.turns.push((role.to_owned(), items));
    }
    for (i, t) in body["toolConfig"]["tools"].as_array().into_iter().flatten().enumerate() {
        let Some(spec) = t.get("toolSpec") else {
            if t.get("cachePoint").is_none() {
                view.problems.push(format!("toolConfig.tools[{i}]: {t}"));
            }
            continue;
        };
        view.tools.push((
            str_of(&spec["name"]).unwrap_or_default(),
            str_of(&spec["description"]),
            spec["inputSchema"]["json"].clone(),
        ));
    }
    view
}
