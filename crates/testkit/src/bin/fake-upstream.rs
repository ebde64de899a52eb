//! Run fake upstreams from the shell (for the SDK and CLI smoke scripts):
//! `fake-upstream openai anthropic gemini` starts one per vendor named, prints
//! `<vendor> <base-url>` per line, and serves until killed. Every request gets the
//! canned echo answer.

use switchyard_testkit::{FakeUpstream, Vendor};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut fakes = Vec::new();
    for arg in std::env::args().skip(1) {
        let vendor = match arg.as_str() {
            "openai" => Vendor::OpenAi,
            "anthropic" => Vendor::Anthropic,
            "gemini" => Vendor::Gemini,
            other => {
                eprintln!("unknown vendor {other:?}: expected openai, anthropic or gemini");
                std::process::exit(2);
            }
        };
        let fake = FakeUpstream::start(vendor).await?;
        fake.set_recording(false);
        println!("{arg} {}", fake.base_url());
        fakes.push(fake);
    }
    if fakes.is_empty() {
        eprintln!("usage: fake-upstream <openai|anthropic|gemini>...");
        std::process::exit(2);
    }
    let _ = tokio::signal::ctrl_c().await;
    Ok(())
}
