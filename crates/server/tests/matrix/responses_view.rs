//! OpenAI's Responses body, read into the matrix's wire-neutral [`View`]:
//! `instructions` and leading `system` / `developer` messages as the system,
//! `input` (a string, or items: `message`s with text / `input_image` /
//! `input_file` parts or a plain string, `function_call`, `function_call_output`
//! (a string, or parts: their text, then any image or file), `reasoning`), and the
//! flat `function` tools.
//!
//! Items have no turns: a run of the assistant's items (its messages, calls and
//! reasoning) is one `assistant` turn, a call's output a `tool` turn (as OpenAI
//! Chat's tool messages), every other message a turn of its role.

use serde_json::Value;

use super::{Item, View, openai_image, parse_args, str_of};

fn part(part: &Value, items: &mut Vec<Item>, p: &mut Vec<String>, at: &str) {
    match part["type"].as_str() {
        Some("input_text" | "output_text") => {
            items.push(Item::Text(str_of(&part["text"]).unwrap_or_default()))
        }
        Some("input_image") => match part["file_id"].as_str() {
            Some(id) => items.push(Item::Image { media_type: "file_id".into(), data: id.into() }),
            None => items.push(openai_image(&part["image_url"])),
        },
        Some("input_file") => {
            let item = if let Some(id) = part["file_id"].as_str() {
                Item::Document { media_type: "file_id".into(), data: id.to_owned() }
            } else if let Some(url) = part["file_url"].as_str() {
                Item::Document { media_type: "url".into(), data: url.to_owned() }
            } else {
                match openai_image(&part["file_data"]) {
                    Item::Image { media_type, data } => Item::Document { media_type, data },
                    other => other,
                }
            };
            items.push(item);
        }
        _ => p.push(format!("{at}: unexpected part {part}")),
    }
}

fn content(content: &Value, p: &mut Vec<String>, at: &str) -> Vec<Item> {
    let mut items = Vec::new();
    match content {
        Value::String(s) => items.push(Item::Text(s.clone())),
        Value::Array(parts) => {
            for x in parts {
                part(x, &mut items, p, at);
            }
        }
        other => p.push(format!("{at}: content is {other}")),
    }
    items
}

/// Add `item` to the assistant's turn in progress, or begin one.
fn assistant(view: &mut View, items: Vec<Item>) {
    match view.turns.last_mut() {
        Some((role, turn)) if role == "assistant" => turn.extend(items),
        _ => view.turns.push(("assistant".into(), items)),
    }
}

pub fn responses_view(body: &Value) -> View {
    let mut view = View::default();
    if let Some(instructions) = body.get("instructions").filter(|v| !v.is_null()) {
        match instructions.as_str() {
            Some(text) => view.system.push(text.to_owned()),
            None => view.problems.push(format!("instructions is {instructions}")),
        }
    }
    match &body["input"] {
        Value::String(s) => view.turns.push(("user".into(), vec![Item::Text(s.clone())])),
        Value::Array(input) => {
            for (i, item) in input.iter().enumerate() {
                input_item(&mut view, item, &format!("input[{i}]"));
            }
        }
        other => view.problems.push(format!("input is {other}")),
    }
    for (i, t) in body["tools"].as_array().into_iter().flatten().enumerate() {
        if t["type"] != "function" {
            view.problems.push(format!("tools[{i}].type is {}", t["type"]));
        }
        view.tools.push((
            str_of(&t["name"]).unwrap_or_default(),
            str_of(&t["description"]),
            t["parameters"].clone(),
        ));
    }
    view
}

fn input_item(view: &mut View, item: &Value, at: &str) {
    let ty = item["type"].as_str().or(item.get("role").map(|_| "message"));
    match ty {
        Some("message") => {
            let role = item["role"].as_str().unwrap_or("(none)");
            let items = content(&item["content"], &mut view.problems, at);
            match role {
                "system" | "developer" if view.turns.is_empty() => {
                    for i in items {
                        match i {
                            Item::Text(t) => view.system.push(t),
                            other => view.problems.push(format!("{at}: system {other:?}")),
                        }
                    }
                }
                "assistant" => assistant(view, items),
                "user" | "system" | "developer" => view.turns.push((role.to_owned(), items)),
                other => view.problems.push(format!("{at}: role {other:?}")),
            }
        }
        Some("function_call") => {
            let call = Item::Call {
                id: str_of(&item["call_id"]),
                name: str_of(&item["name"]).unwrap_or_default(),
                args: parse_args(&item["arguments"], &mut view.problems, at),
            };
            assistant(view, vec![call]);
        }
        Some("function_call_output") => {
            // Text, or content parts: their text, and any image or file after it.
            let mut output = String::new();
            let mut attached = Vec::new();
            match &item["output"] {
                Value::String(s) => output.push_str(s),
                Value::Array(_) => {
                    for i in content(&item["output"], &mut view.problems, at) {
                        match i {
                            Item::Text(t) => output.push_str(&t),
                            other => attached.push(other),
                        }
                    }
                }
                other => view.problems.push(format!("{at}: output is {other}")),
            }
            let result = Item::Result { id: str_of(&item["call_id"]), name: None, output };
            view.turns.push(("tool".into(), [vec![result], attached].concat()));
        }
        Some("reasoning") => {
            let text: String = item["summary"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s["text"].as_str())
                .collect();
            let thinking = Item::Thinking { text, signature: str_of(&item["encrypted_content"]) };
            assistant(view, vec![thinking]);
        }
        _ => view.problems.push(format!("{at}: unexpected item {item}")),
    }
}
