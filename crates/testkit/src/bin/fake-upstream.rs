//! Run fake upstreams from the shell (for the SDK and CLI smoke scripts):
//! `fake-upstream [--log DIR] openai anthropic gemini bedrock vertex-anthropic
//! vertex-gemini azure` starts one per vendor named (a Bedrock fake takes the
//! testkit's default AWS keys; a Vertex one grants tokens to
//! `switchyard_testkit::vertex`'s service account at its `/token`; an Azure
//! OpenAI one takes `switchyard_testkit::azure::API_KEY`),
//! prints `<vendor> <base-url>` per line, and serves until killed. Every request
//! gets the canned answer: the echo, or the scripted tool loop when the prompt asks
//! for it (`switchyard_testkit::tool_loop`).
//!
//! `--log DIR` appends each request a fake receives to `DIR/<vendor>.jsonl`, one
//! JSON object a line (`method`, `path`, `query`, `body`), so a failing client run
//! shows what reached the upstream. Headers are left out: they hold credentials.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value, json};
use switchyard_testkit::{FakeUpstream, Received, Vendor};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1).peekable();
    let mut log_dir = None;
    if args.peek().map(String::as_str) == Some("--log") {
        args.next();
        log_dir = args.next().map(PathBuf::from);
        if log_dir.is_none() {
            usage();
        }
    }
    let mut fakes = Vec::new();
    for arg in args {
        let vendor = match arg.as_str() {
            "openai" => Vendor::OpenAi,
            "anthropic" => Vendor::Anthropic,
            "gemini" => Vendor::Gemini,
            "bedrock" => Vendor::Bedrock,
            // Claude on Vertex AI, with its token endpoint at `/token`
            // (`switchyard_testkit::vertex`).
            "vertex-anthropic" => Vendor::Anthropic,
            "vertex-gemini" => Vendor::Gemini,
            // Azure OpenAI's Chat Completions and Responses API.
            "azure" => Vendor::OpenAi,
            other => {
                eprintln!("unknown vendor {other:?}: expected one of {VENDORS}");
                std::process::exit(2);
            }
        };
        let fake = if arg.starts_with("vertex-") {
            FakeUpstream::start_vertex(vendor).await?
        } else if arg == "azure" {
            FakeUpstream::start_azure().await?
        } else {
            FakeUpstream::start(vendor).await?
        };
        match &log_dir {
            Some(dir) => {
                let file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(dir.join(format!("{arg}.jsonl")))?;
                tokio::spawn(log_requests(fake.clone(), file));
            }
            // Nothing reads the recording: keep memory flat.
            None => fake.set_recording(false),
        }
        println!("{arg} {}", fake.base_url());
        fakes.push(fake);
    }
    if fakes.is_empty() {
        usage();
    }
    let _ = tokio::signal::ctrl_c().await;
    Ok(())
}

/// The vendors it serves.
const VENDORS: &str = "openai, anthropic, gemini, bedrock, vertex-anthropic, vertex-gemini, azure";

fn usage() -> ! {
    eprintln!("usage: fake-upstream [--log DIR] <vendor>... (vendors: {VENDORS})");
    std::process::exit(2);
}

/// Appends every request `fake` records to `file`, in arrival order, until the
/// process ends (a write error ends it early: the log is a debugging aid). The
/// writes are small and local, so they are made in place rather than on a
/// blocking pool: this is a test tool, not the gateway's request path.
async fn log_requests(fake: FakeUpstream, mut file: File) {
    let mut written = 0;
    loop {
        let seen = fake.wait_for_requests(written + 1).await;
        for r in seen.iter().skip(written) {
            let mut line = entry(r).to_string();
            line.push('\n');
            if file.write_all(line.as_bytes()).is_err() {
                return;
            }
        }
        written = seen.len();
    }
}

fn entry(r: &Received) -> Value {
    let body = match &r.body {
        Value::Null => Value::from(String::from_utf8_lossy(&r.raw).into_owned()),
        body => body.clone(),
    };
    json!({"method": r.method, "path": r.path, "query": r.query, "body": body})
}
