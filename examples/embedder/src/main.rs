//! A program built on `switchyard-core` as an embedding team writes one: every
//! name from `embed`, no module paths into the crate. It checks, and exits
//! non-zero unless each holds:
//!
//! 1. a failed request says what happened: its id (the caller's own), every
//!    attempt, its record; and the builder's sink receives every record;
//! 2. one import brings what the program needs (`embed::prelude`);
//! 3. a throttle, a failover and a catalog-less `provider/model` read as such;
//! 4. tools, tool results and answers are one call each; a stream is a
//!    `futures::Stream` that finishes into the `Response` `generate` gives;
//! 5. building a gateway installs no process-wide TLS provider: the program then
//!    installs its own, and that succeeds;
//! 6. a provider's HTTP client is shaped from code (pool, proxy).
//!
//!     cargo run -p switchyard-example-embedder

use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::json;
use switchyard_core::embed::prelude::*;
use switchyard_core::embed::{ClientOptions, RecordSink, RequestRecord, RequestRouting};

/// The application's own accounting: every record, as the gateway writes it.
#[derive(Default)]
struct Ledger(Mutex<Vec<RequestRecord>>);

impl RecordSink for Ledger {
    fn record(&self, record: RequestRecord) {
        if let Ok(mut rows) = self.0.lock() {
            rows.push(record);
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => {
            println!("embedder: every check held");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("embedder: {e}");
            ExitCode::FAILURE
        }
    }
}

fn check(ok: bool, what: &str) -> Result<(), String> {
    if ok { Ok(()) } else { Err(format!("check failed: {what}")) }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let ledger = Arc::new(Ledger::default());
    // Nothing listens on port 1: its connections are refused, and the request
    // fails over to the local echo.
    let unreachable = Provider::openai_compatible("http://127.0.0.1:1/v1")
        .key(Secret::from("sk-unreachable-0000"))
        .client(
            ClientOptions::default()
                .pool_max_idle_per_host(8)
                .pool_idle_timeout(Duration::from_secs(30)),
        )
        .allow_unlisted_models();
    let gateway = Gateway::builder()
        .provider("remote", unreachable)
        .provider("local", Provider::mock())
        .model(Model::new("echo").deployment("remote", "gpt-remote").deployment("local", "echo-1"))
        .model(Model::new("remote-only").deployment("remote", "gpt-remote"))
        .sink(ledger.clone())
        .build()?;

    // (5) The gateway installed no process-wide provider: the application's own
    // install succeeds.
    let installed = rustls::crypto::ring::default_provider().install_default();
    check(installed.is_ok(), "the application installs its own TLS provider after the gateway")?;

    // (1) A failure, under the caller's id, with its attempts and its record.
    let ask = |model: &str, text: &str| Request {
        model: model.into(),
        messages: vec![Message::user(text)],
        ..Request::default()
    };
    let failed =
        match gateway.generate(Generate::new(ask("remote-only", "hi")).id("invoice-7")).await {
            Ok(_) => return Err("a request to an unreachable deployment succeeded".into()),
            Err(failed) => failed,
        };
    println!("failed as expected: {failed}");
    check(failed.request_id == "invoice-7", "the failure carries the caller's id")?;
    check(
        failed.attempts.iter().all(|a| a.outcome == "transport_connect"),
        "the attempts say the connection was refused",
    )?;
    check(
        failed.record.as_ref().is_some_and(|r| r.id == "invoice-7"),
        "the failure carries its record",
    )?;

    // (3) A failover, said in the answer.
    let served = gateway
        .generate(
            Generate::new(ask("echo", "hello"))
                .routing(RequestRouting::default().deadline(Duration::from_secs(10))),
        )
        .await?;
    println!(
        "served by {} after {} attempt(s): {}",
        served.provider,
        served.attempts.len(),
        served.response.text()
    );
    check(
        served.provider == "local" && served.attempts.len() == 2,
        "a refused connection fails over",
    )?;
    check(served.response.text().contains("hello"), "Response::text is the answer's text")?;
    // A model no catalog lists, by provider: refused here only because the
    // provider is unreachable, not because it is unlisted.
    let unlisted = gateway.generate(Generate::new(ask("remote/any-model-id", "hi"))).await;
    check(
        unlisted.as_ref().err().is_some_and(|f| f.attempts.len() == 1 && f.status() != 404),
        "provider/model reaches a provider that allows unlisted models",
    )?;

    // (4) Tools and streams.
    let mut with_tool = ask("echo", "weather in Oslo?");
    with_tool.tools = vec![
        Tool::function(
            "weather",
            json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        )
        .with_description("The weather in a city"),
    ];
    with_tool.messages.push(Message::tool_result("call_1", "sunny"));
    let whole = gateway.generate(Generate::new(with_tool.clone())).await?.response;
    let events: Vec<StreamEvent> = gateway
        .stream(Generate::new(with_tool.clone()))
        .await?
        .filter_map(|e| async { e.ok() })
        .collect()
        .await;
    check(events.iter().any(StreamEvent::is_content), "a stream is a futures::Stream of events")?;
    let assembled = gateway.stream(Generate::new(with_tool)).await?.into_response().await?;
    check(assembled.text() == whole.text(), "a stream finishes into the Response generate gives")?;

    // (1) The sink got every record, ids included.
    let ids: Vec<String> =
        ledger.0.lock().map(|rows| rows.iter().map(|r| r.id.clone()).collect()).unwrap_or_default();
    check(
        ids.first().map(String::as_str) == Some("invoice-7"),
        "the sink got the failed request's record",
    )?;
    check(ids.len() == 6, "the sink got a record per request")?;
    println!("{} records kept", ids.len());
    Ok(())
}
