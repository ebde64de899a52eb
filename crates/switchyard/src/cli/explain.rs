//! `switchyard explain FILE`: the intent decision for a request body, without
//! sending it: the class an `auto` model would route it by, the rule that
//! decided, and the signals the rules saw. Reads no configuration.

use std::io::Read as _;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;
use switchyard_core::intent;
use switchyard_core::protocol::ClientFormat;

use super::{Failure, Result, out, out_json};

#[derive(clap::Args)]
pub struct ExplainArgs {
    /// The request body (JSON), or `-` for standard input.
    file: PathBuf,
    /// The body's client format; guessed from its shape when left out.
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// JSON for scripts.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    OpenaiChat,
    Anthropic,
    OpenaiResponses,
    Gemini,
}

impl From<Format> for ClientFormat {
    fn from(f: Format) -> ClientFormat {
        match f {
            Format::OpenaiChat => ClientFormat::OpenAiChat,
            Format::Anthropic => ClientFormat::Anthropic,
            Format::OpenaiResponses => ClientFormat::OpenAiResponses,
            Format::Gemini => ClientFormat::Gemini,
        }
    }
}

pub fn run(args: ExplainArgs) -> ExitCode {
    super::block_on(async move { explain(args) })
}

fn explain(args: ExplainArgs) -> Result<()> {
    let body = read(&args.file)?;
    let value: Value = serde_json::from_slice(&body)
        .map_err(|e| Failure(format!("{}: not JSON: {e}", args.file.display())))?;
    let (format, guessed) = match args.format {
        Some(f) => (ClientFormat::from(f), false),
        None => (guess(&value), true),
    };
    let mut req = format
        .parse_request(&body, None)
        .map_err(|e| Failure(format!("not a valid {} request: {e}", format.as_str())))?;
    if req.model.is_empty() {
        "auto".clone_into(&mut req.model);
    }
    let d = intent::classify(&req);
    let s = &d.signals;
    let rows: Vec<(&str, String)> = vec![
        ("task_chars", s.task_chars.to_string()),
        ("turns", s.turns.to_string()),
        ("images_last", s.images_last.to_string()),
        ("image_referred", s.image_referred.to_string()),
        ("image_recent", s.image_recent.to_string()),
        ("tool_results_last", s.tool_results_last.to_string()),
        ("coding_tools", s.coding_tools.to_string()),
        ("coding_system", s.coding_system.to_string()),
        ("small_talk", s.small_talk.to_string()),
        ("writing", s.writing.to_string()),
        ("short", s.short.to_string()),
        ("terse", s.terse.to_string()),
        ("code", format!("{} (decides at {})", s.code, intent::CODE_THRESHOLD)),
        ("reasoning", format!("{} (decides at {})", s.reasoning, intent::REASONING_THRESHOLD)),
    ];
    if args.json {
        let signals: serde_json::Map<String, Value> = rows
            .iter()
            .map(|(k, _)| (*k, signal_value(s, k)))
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        return out_json(&serde_json::json!({
            "format": format.as_str(),
            "format_guessed": guessed,
            "intent": d.intent.as_str(),
            "rule": d.rule,
            "descriptor": format!("auto:{}", d.intent),
            "signals": signals,
        }));
    }
    let mut text = format!(
        "format      {}{}\nintent      {}\nrule        {}\ndescriptor  auto:{}\nsignals\n",
        format.as_str(),
        if guessed { " (guessed from the body; --format to say)" } else { "" },
        d.intent,
        d.rule,
        d.intent,
    );
    for (name, value) in rows {
        text.push_str(&format!("  {name:<18} {value}\n"));
    }
    out(&text)
}

fn signal_value(s: &intent::Signals, name: &str) -> Value {
    match name {
        "task_chars" => s.task_chars.into(),
        "turns" => s.turns.into(),
        "images_last" => s.images_last.into(),
        "image_referred" => s.image_referred.into(),
        "image_recent" => s.image_recent.into(),
        "tool_results_last" => s.tool_results_last.into(),
        "coding_tools" => s.coding_tools.into(),
        "coding_system" => s.coding_system.into(),
        "small_talk" => s.small_talk.into(),
        "writing" => s.writing.into(),
        "short" => s.short.into(),
        "terse" => s.terse.into(),
        "code" => s.code.into(),
        "reasoning" => s.reasoning.into(),
        _ => Value::Null,
    }
}

fn read(file: &std::path::Path) -> Result<Vec<u8>> {
    if file.as_os_str() == "-" {
        let mut body = Vec::new();
        std::io::stdin()
            .read_to_end(&mut body)
            .map_err(|e| Failure(format!("cannot read standard input: {e}")))?;
        return Ok(body);
    }
    std::fs::read(file).map_err(|e| Failure(format!("cannot read {}: {e}", file.display())))
}

/// The format a body's shape says: Gemini's `contents`, the Responses API's
/// `input`, else `messages`: Anthropic's when it has a top-level `system` or
/// `max_tokens` and no OpenAI-only role or field, OpenAI Chat's otherwise.
fn guess(body: &Value) -> ClientFormat {
    if body.get("contents").is_some() {
        return ClientFormat::Gemini;
    }
    if body.get("input").is_some() || body.get("instructions").is_some() {
        return ClientFormat::OpenAiResponses;
    }
    let openai_only = body["messages"].as_array().is_some_and(|ms| {
        ms.iter().any(|m| {
            matches!(m["role"].as_str(), Some("system" | "developer" | "tool"))
                || m.get("tool_calls").is_some()
        })
    }) || body.get("max_completion_tokens").is_some();
    if !openai_only && (body.get("system").is_some() || body.get("max_tokens").is_some()) {
        ClientFormat::Anthropic
    } else {
        ClientFormat::OpenAiChat
    }
}
