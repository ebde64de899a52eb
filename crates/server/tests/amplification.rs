//! A body made of small values, or a message over the limit, costs the gateway a
//! small multiple of its size: sizes and shapes are checked on the bytes before
//! anything parses them. Measured on this process's peak resident memory (its
//! own file: no other test shares the process), with generous bounds.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use futures_util::SinkExt;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

const MB: usize = 1024 * 1024;

fn status_kb(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Forget the peak so far (`VmHWM` restarts from the current resident size).
fn reset_peak() {
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
}

/// How far the peak rose above the resident size at the reset, in MiB.
fn peak_growth_mb(at_reset_kb: usize) -> usize {
    status_kb("VmHWM:").saturating_sub(at_reset_kb) / 1024
}

#[tokio::test]
async fn bodies_of_small_values_and_oversized_messages_are_refused_before_parsing() {
    let h = Harness::start_with(Options { max_body_bytes: 40 * MB, ..Options::default() }).await;

    // 31 MB of `0,`: 16 million values, each tens of bytes once parsed.
    let zeros = "0,".repeat(31 * MB / 2);
    let body = format!(
        r#"{{"model":"m-openai","messages":[{{"role":"user","content":"x"}}],"metadata":[{zeros}0]}}"#
    );
    drop(zeros);
    reset_peak();
    let before = status_kb("VmRSS:");
    let r = h.post_raw("/v1/chat/completions", body).await;
    assert_eq!(r.status(), 413);
    let v: Value = r.json().await.unwrap();
    assert!(v["error"]["message"].as_str().unwrap().contains("max_json_elements"), "{v}");
    let growth = peak_growth_mb(before);
    eprintln!("HTTP, 31 MB of small values: the peak rose {growth} MiB");
    // The body is held about three times over (the client's copy, the request
    // in flight, the gateway's); a parse would add some 500 MB.
    assert!(growth < 200, "a 31 MB body raised the peak by {growth} MiB");
    assert!(h.openai.received().is_empty());

    // Four WebSocket messages of 30 MB against a 16 MB limit, at once.
    let h = Harness::start_with(Options { max_body_bytes: 16 * MB, ..Options::default() }).await;
    let message = format!(
        r#"{{"type":"response.create","model":"mock","input":[{}0]}}"#,
        "0,".repeat(15 * MB)
    );
    reset_peak();
    let before = status_kb("VmRSS:");
    let turns: Vec<_> = (0..4)
        .map(|_| {
            let (base, message) = (h.base.clone(), message.clone());
            tokio::spawn(async move {
                let mut socket = ws::open(&base).await;
                socket.send(Message::text(message)).await.unwrap();
                ws::event(&mut socket).await
            })
        })
        .collect();
    for turn in turns {
        let event = turn.await.unwrap();
        assert_eq!(event["status"], 413, "{event}");
    }
    let growth = peak_growth_mb(before);
    eprintln!("WebSocket, four 30 MB messages: the peak rose {growth} MiB");
    // Each message is held by the client (twice) and by the gateway's socket;
    // parsed, the four took gigabytes.
    assert!(growth < 700, "four 30 MB messages raised the peak by {growth} MiB");
}
