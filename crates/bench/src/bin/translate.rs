//! `switchyard-translate`: what translation costs, stage by stage, in process.
//!
//! The gateway's own benchmark measures the same-format fast path and one
//! translated pair end to end (`gateway, no records, Anthropic in`); this takes
//! the translated path apart. For each client format against an OpenAI Chat
//! upstream, and for an OpenAI Chat client against each other upstream, it
//! times the four steps of a whole request (parse the client's body, write the
//! upstream's, parse the upstream's answer, write the client's) and a stream's
//! chunks (decode the upstream's frame, encode the client's chunk), on an
//! agent-shaped turn: a system prompt, four tools, a tool call and its result.
//!
//! Each figure is the best of 40 rounds of about 5 ms (microseconds per
//! operation): the machine's noise only ever adds. Compare two builds in one
//! sitting; see docs/benchmark.md, "Translation".

use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchyard_protocol::{
    ClientFormat, Frame, ModelPlacement, ModelTraits, Request, Response, StreamEvent, Wire,
};
use switchyard_testkit::{ReplyBody, Vendor, canned};

/// The upstream model each wire is asked for.
const MODEL: &str = "bench-model";
/// Words in the answer (one stream chunk each).
const WORDS: usize = 20;
/// Rounds per figure, the best kept.
const ROUNDS: usize = 40;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("switchyard-translate: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The turn every pair translates, as an OpenAI SDK sends it.
fn chat_body() -> Value {
    let tool = |name: &str, what: &str| {
        json!({"type": "function", "function": {
            "name": name,
            "description": what,
            "parameters": {"type": "object", "properties": {
                "path": {"type": "string", "description": "A path relative to the workspace."},
                "limit": {"type": "integer", "minimum": 1}
            }, "required": ["path"]}
        }})
    };
    json!({
        "model": MODEL,
        "max_tokens": 1024,
        "messages": [
            {"role": "system", "content": "You are a coding agent. Work in small steps, run the tests after each change, and explain what you changed and why in one short paragraph at the end."},
            {"role": "user", "content": "The parser drops the last line of a file without a trailing newline. Find out why and fix it."},
            {"role": "assistant", "content": "I'll read the parser first.", "tool_calls": [
                {"id": "call_0001", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"src/parse.rs\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_0001", "content": "fn lines(s: &str) -> Vec<&str> {\n    s.split_terminator('\\n').filter(|l| l.ends_with('\\n')).collect()\n}\n"},
            {"role": "user", "content": "Go on."}
        ],
        "tools": [
            tool("read_file", "Read a file of the workspace."),
            tool("write_file", "Write a file of the workspace."),
            tool("list_dir", "List a directory of the workspace."),
            tool("run_tests", "Run the workspace's tests.")
        ]
    })
}

fn vendor(wire: Wire) -> Vendor {
    match wire {
        Wire::Anthropic => Vendor::Anthropic,
        Wire::Gemini => Vendor::Gemini,
        Wire::Bedrock => Vendor::Bedrock,
        _ => Vendor::OpenAi,
    }
}

fn answer_text() -> String {
    (0..WORDS).map(|i| format!("word{i:02}")).collect::<Vec<_>>().join(" ")
}

/// The upstream's whole answer, and its stream as the bytes it sends.
fn upstream_answers(wire: Wire) -> Result<(Vec<u8>, Vec<u8>), String> {
    let text = answer_text();
    let whole = match canned::text(vendor(wire), MODEL, &text, false) {
        ReplyBody::Json(v) => v.to_string().into_bytes(),
        other => return Err(format!("{}: unexpected canned answer {other:?}", wire.as_str())),
    };
    let stream = match canned::text(vendor(wire), MODEL, &text, true) {
        ReplyBody::Sse(frames) => frames.concat().into_bytes(),
        ReplyBody::Frames(frames, _) => frames.concat(),
        other => return Err(format!("{}: unexpected canned stream {other:?}", wire.as_str())),
    };
    Ok((whole, stream))
}

/// Nanoseconds per call of `f`: the best of many short rounds. On a shared VM
/// the noise comes in bursts that only ever add; a round of a few milliseconds
/// often falls between them.
fn per_call(mut f: impl FnMut()) -> f64 {
    let mut n = 1u64;
    // Calibrate: enough calls for a round of about 5 ms.
    loop {
        let start = Instant::now();
        for _ in 0..n {
            f();
        }
        if start.elapsed() >= Duration::from_millis(5) {
            break;
        }
        n *= 2;
    }
    (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..n {
                f();
            }
            start.elapsed().as_nanos() as f64 / n as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// One pair's inputs, made once.
struct Prepared {
    client: ClientFormat,
    wire: Wire,
    body: Vec<u8>,
    parsed: Request,
    traits: ModelTraits,
    whole: Vec<u8>,
    response: Response,
    frames: Vec<Frame>,
}

fn prepare(client: ClientFormat, wire: Wire, canonical: &Request) -> Result<Prepared, String> {
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        format!("{} → {}: {what}: {e}", client.as_str(), wire.as_str())
    };
    // The client's body: the canonical turn written by the wire that speaks it.
    let speaks = client.native_wire().unwrap_or(Wire::OpenAiChat);
    let mut asked = canonical.clone();
    asked.stream = false;
    let body = serde_json::to_vec(&speaks.encode_request(&asked).map_err(|e| fail("body", &e))?)
        .map_err(|e| fail("body", &e))?;
    let parsed = client.parse_request(&body, None).map_err(|e| fail("parse", &e))?;
    let traits = ModelTraits::infer(wire, MODEL);
    let (whole, stream) = upstream_answers(wire)?;
    let response = wire.parse_response(&whole).map_err(|e| fail("answer", &e))?;
    let mut frames = Vec::new();
    let mut framer = wire.spec().framing.framer();
    framer.push(&stream, &mut frames).map_err(|e| fail("frames", &e))?;
    framer.finish(&mut frames).map_err(|e| fail("frames", &e))?;
    Ok(Prepared { client, wire, body, parsed, traits, whole, response, frames })
}

// The steps, each a function of its own so that a profile (callgrind's
// inclusive cost, `--count`) names it.

#[inline(never)]
fn step_parse(p: &Prepared) {
    black_box(p.client.parse_request(black_box(&p.body), None).ok());
}

#[inline(never)]
fn step_encode(p: &Prepared) {
    // As the gateway writes a translated body: the model set where the wire
    // names it in the body.
    let model = (p.wire.spec().model == ModelPlacement::Body).then_some(MODEL);
    let mut body = Vec::new();
    black_box(p.wire.write_request_for(black_box(&p.parsed), p.traits, model, &mut body).ok());
    black_box(body);
}

#[inline(never)]
fn step_parse_answer(p: &Prepared) {
    black_box(p.wire.parse_response(black_box(&p.whole)).ok());
}

#[inline(never)]
fn step_encode_answer(p: &Prepared) {
    black_box(p.client.encode_response(black_box(&p.response), &p.parsed.tools, None));
}

#[inline(never)]
fn step_stream(p: &Prepared, events: &mut Vec<StreamEvent>, out: &mut Vec<u8>) {
    let mut decoder = p.wire.stream_decoder();
    let mut encoder = p.client.stream_encoder(&p.parsed, None);
    out.clear();
    for frame in black_box(&p.frames) {
        events.clear();
        if decoder.push(frame, events).is_err() {
            return;
        }
        for event in events.iter() {
            encoder.push(event, out);
        }
    }
    encoder.finish(out);
    black_box(&out);
}

struct Row {
    client: ClientFormat,
    wire: Wire,
    parse: f64,
    encode: f64,
    parse_answer: f64,
    encode_answer: f64,
    stream: f64,
    chunks: usize,
}

fn measure(p: &Prepared) -> Row {
    let mut events = Vec::new();
    let mut out = Vec::with_capacity(4096);
    Row {
        client: p.client,
        wire: p.wire,
        parse: per_call(|| step_parse(p)),
        encode: per_call(|| step_encode(p)),
        parse_answer: per_call(|| step_parse_answer(p)),
        encode_answer: per_call(|| step_encode_answer(p)),
        stream: per_call(|| step_stream(p, &mut events, &mut out)),
        chunks: p.frames.len(),
    }
}

/// `--count N`: each step N times, untimed, for a profiler to count.
fn count(p: &Prepared, n: usize) {
    let mut events = Vec::new();
    let mut out = Vec::with_capacity(4096);
    for _ in 0..n {
        step_parse(p);
        step_encode(p);
        step_parse_answer(p);
        step_encode_answer(p);
        step_stream(p, &mut events, &mut out);
    }
}

/// The table's rows: every client format against an OpenAI Chat upstream, then
/// an OpenAI Chat client against each other upstream.
fn pairs_of() -> Vec<(ClientFormat, Wire)> {
    let mut pairs: Vec<(ClientFormat, Wire)> = [
        ClientFormat::OpenAiChat,
        ClientFormat::Anthropic,
        ClientFormat::OpenAiResponses,
        ClientFormat::Gemini,
    ]
    .into_iter()
    .map(|c| (c, Wire::OpenAiChat))
    .collect();
    pairs.extend(
        [Wire::Anthropic, Wire::Gemini, Wire::Bedrock].map(|w| (ClientFormat::OpenAiChat, w)),
    );
    pairs
}

fn run() -> Result<(), String> {
    let canonical = ClientFormat::OpenAiChat
        .parse_request(chat_body().to_string().as_bytes(), None)
        .map_err(|e| format!("the turn does not parse: {e}"))?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (counted, only) = match args.as_slice() {
        [] => (None, None),
        // The number of frames of a row's stream (for the per-frame figure of
        // scripts/translate-instructions.sh).
        [flag, k] if flag == "--frames" => {
            let k = k.parse::<usize>().map_err(|e| format!("--frames: {e}"))?;
            let (client, wire) =
                pairs_of().get(k).copied().ok_or_else(|| format!("--frames {k}: no such row"))?;
            println!("{}", prepare(client, wire, &canonical)?.frames.len());
            return Ok(());
        }
        [flag, n, pair, k] if flag == "--count" && pair == "--pair" => (
            Some(n.parse::<usize>().map_err(|e| format!("--count: {e}"))?),
            Some(k.parse::<usize>().map_err(|e| format!("--pair: {e}"))?),
        ),
        _ => {
            return Err(
                "usage: switchyard-translate [--count N --pair K] (K from 0, the table's rows)"
                    .into(),
            );
        }
    };
    let pairs = pairs_of();
    if let (Some(n), Some(k)) = (counted, only) {
        let (client, wire) =
            pairs.get(k).copied().ok_or_else(|| format!("--pair {k}: no such row"))?;
        count(&prepare(client, wire, &canonical)?, n);
        return Ok(());
    }
    println!(
        "| client → upstream | parse request | write upstream's | parse answer | write client's | whole request | stream ({WORDS} words) | per frame |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (client, wire) in pairs {
        let r = measure(&prepare(client, wire, &canonical)?);
        let us = |ns: f64| format!("{:.2}", ns / 1000.0);
        println!(
            "| {} → {} | {} | {} | {} | {} | {} | {} | {} |",
            r.client.as_str(),
            r.wire.as_str(),
            us(r.parse),
            us(r.encode),
            us(r.parse_answer),
            us(r.encode_answer),
            us(r.parse + r.encode + r.parse_answer + r.encode_answer),
            us(r.stream),
            us(r.stream / r.chunks.max(1) as f64),
        );
    }
    println!(
        "\nµs per operation, the best of 40 rounds of about 5 ms; a translated request pays all four steps."
    );
    Ok(())
}
