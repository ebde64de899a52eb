//! Switchyard as a library: a gateway configured in code and run in-process, in
//! front of a fake OpenAI and a fake Anthropic from the test kit. The primary
//! deployment fails with a 500; the request's own fallback serves it; the answer
//! says who served it and how. Then the same request as a stream of canonical
//! events.
//!
//!     cargo run -p switchyard-core --example embedded
//!
//! (CI runs it: `.ci/run`.)

use std::process::ExitCode;

// Everything from `embed`: what a program built on the library needs is there.
use switchyard_core::embed::RequestRouting;
use switchyard_core::embed::prelude::*;
use switchyard_testkit::{FakeUpstream, Reply, Vendor};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("embedded example failed: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let openai = FakeUpstream::start(Vendor::OpenAi).await?;
    let anthropic = FakeUpstream::start(Vendor::Anthropic).await?;
    let price = Pricing::per_million(3.0, 15.0);
    let gateway = Gateway::builder()
        .provider(
            "openai",
            Provider::openai_compatible(format!("{}/v1", openai.base_url()))
                .key(Secret::from("sk-example")),
        )
        .provider(
            "anthropic",
            Provider::anthropic()
                .endpoint(anthropic.base_url())
                .key(Secret::from("sk-ant-example")),
        )
        .model(Model::new("fast").deployment("openai", "gpt-example"))
        .model(Model::new("careful").deployment("anthropic", "claude-example").pricing(price))
        .build()?;

    openai.push(Reply::status(500));
    let request = Request {
        model: "fast".into(),
        messages: vec![Message::text(Role::User, "hello from the library")],
        ..Request::default()
    };
    let routing = RequestRouting::default().fallback("careful");
    let answer = gateway.generate(Generate::new(request.clone()).routing(routing)).await?;
    println!(
        "served by {} ({}) after {} attempt(s): {}",
        answer.provider,
        answer.upstream_model,
        answer.attempts.len(),
        answer.attempts.iter().map(|a| a.outcome.as_str()).collect::<Vec<_>>().join(" → ")
    );
    println!(
        "usage {:?}, cost {:?} USD, descriptor {:?}",
        answer.usage, answer.cost_usd, answer.descriptor
    );
    if answer.provider != "anthropic" || answer.attempts.len() != 2 {
        return Err("the fallback did not serve the request".into());
    }

    let mut stream = gateway.stream(Generate::new(request)).await?;
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        if let StreamEvent::Delta { delta: Delta::Text { text: t }, .. } = event? {
            text.push_str(&t);
        }
    }
    println!("streamed from {}: {text:?}", stream.provider);
    if !text.contains("hello from the library") {
        return Err("the stream lost its text".into());
    }
    Ok(())
}
