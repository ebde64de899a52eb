//! Client connections: a silent or slow client is disconnected, an idle
//! keep-alive connection is closed, a long answer is never cut, and a flood of
//! silent connections does not stop the gateway answering.

mod common;

use std::time::Duration;

use common::*;
use serde_json::json;
use switchyard_testkit::Reply;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Short deadlines, so the tests see them pass.
fn options(max: usize) -> Options {
    Options {
        gateway_extra: format!(
            "  connections: {{ max: {max}, header_read_timeout_ms: 300, idle_timeout_ms: 400 }}"
        ),
        ..Options::default()
    }
}

fn addr(h: &Harness) -> String {
    h.base.trim_start_matches("http://").to_owned()
}

/// Read until the server closes the connection; what it sent before.
async fn read_to_close(tcp: &mut TcpStream) -> Vec<u8> {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tcp.read(&mut buf).await {
            Ok(0) | Err(_) => return seen,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
}

#[tokio::test]
async fn a_connection_that_sends_nothing_is_closed() {
    let h = Harness::start_with(options(0)).await;
    let mut tcp = TcpStream::connect(addr(&h)).await.unwrap();
    let seen = tokio::time::timeout(WAIT, read_to_close(&mut tcp)).await.expect("closed");
    assert!(seen.is_empty(), "closed without an answer");
}

#[tokio::test]
async fn a_slowloris_client_is_disconnected_although_bytes_keep_coming() {
    let h = Harness::start_with(options(0)).await;
    let mut tcp = TcpStream::connect(addr(&h)).await.unwrap();
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    // A header byte every 50 ms, for up to 20 s: far past the 300 ms deadline.
    let mut closed = false;
    for _ in 0..400 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if tcp.write_all(b"X").await.is_err() {
            closed = true;
            break;
        }
        let mut buf = [0u8; 64];
        if let Ok(Ok(0) | Err(_)) = tokio::time::timeout(Duration::ZERO, tcp.read(&mut buf)).await {
            closed = true;
            break;
        }
    }
    assert!(closed, "the trickling connection was cut");
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_its_answer() {
    let h = Harness::start_with(options(0)).await;
    let mut tcp = TcpStream::connect(addr(&h)).await.unwrap();
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let seen = tokio::time::timeout(WAIT, read_to_close(&mut tcp)).await.expect("closed");
    let text = String::from_utf8_lossy(&seen);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(!text.contains("connection: close"), "kept alive, then closed for idleness: {text}");
}

#[tokio::test]
async fn a_stream_longer_than_every_connection_deadline_is_not_cut() {
    let h = Harness::start_with(options(0)).await;
    let mut frames = vec![
        "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"a\"}}]}\n\n".to_owned(),
    ];
    for _ in 0..12 {
        frames.push("data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]}\n\n".to_owned());
    }
    frames.push("data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":13,\"total_tokens\":14}}\n\n".to_owned());
    frames.push("data: [DONE]\n\n".to_owned());
    // 14 frames 100 ms apart: over 1 s, against deadlines of 300 and 400 ms.
    h.openai.push(Reply::sse(frames).chunk_delay(Duration::from_millis(100)));
    let body = json!({"model": "m-openai", "stream": true, "messages": [{"role": "user", "content": "x"}]});
    let r = h.post("/v1/chat/completions", &body).await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    assert_eq!(text.matches("\"content\":\"b\"").count(), 12, "{text}");
    assert!(text.contains("[DONE]"), "{text}");
}

#[tokio::test]
async fn a_flood_of_silent_connections_does_not_stop_the_gateway_answering() {
    // At most 8 connections at once; 64 silent ones arrive first.
    let h = Harness::start_with(options(8)).await;
    let mut flood = Vec::new();
    for _ in 0..64 {
        flood.push(TcpStream::connect(addr(&h)).await.unwrap());
    }
    let r = tokio::time::timeout(WAIT * 3, h.client.get(format!("{}/healthz", h.base)).send())
        .await
        .expect("answered once the silent connections were cut")
        .unwrap();
    assert_eq!(r.status(), 200);
    drop(flood);
}
