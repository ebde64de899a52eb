use super::*;
use futures_util::FutureExt;
use http_body_util::Full;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// An OpenAI stream of `n` content chunks and its end, as SSE.
fn sse(n: usize) -> String {
    let mut out = String::new();
    for i in 0..n {
        out.push_str(&format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"w{i} \"}}}}]}}\n\n"
        ));
    }
    out.push_str("data: [DONE]\n\n");
    out
}

/// A server that answers one request with `body`, chunked one SSE event a
/// chunk, the whole answer in one write: everything arrives together.
async fn answer_together(body: String) -> Source {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(n > 0, "the client closed before its request ended");
            head.extend_from_slice(&buf[..n]);
        }
        let mut out = String::from(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
        );
        for event in body.split_inclusive("\n\n") {
            out.push_str(&format!("{:x}\r\n{event}\r\n", event.len()));
        }
        out.push_str("0\r\n\r\n");
        socket.write_all(out.as_bytes()).await.unwrap();
        // Held open until the client has read it all.
        let _ = socket.read(&mut buf).await;
    });
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = crate::client::HttpClient::new(
        &crate::client::ClientOptions::default(),
        Duration::from_secs(5),
    )
    .unwrap();
    let req = http::Request::post(format!("http://{addr}/v1/chat/completions"))
        .body(Full::new(Bytes::from_static(b"{}")))
        .unwrap();
    let resp = client.send(req).await.unwrap();
    Source::http(resp, Wire::OpenAiChat)
}

fn frames_of(batches: &[Batch]) -> usize {
    batches.iter().map(|b| b.frames.len()).sum()
}

fn raw_of(batches: &[Batch]) -> String {
    batches.iter().map(|b| String::from_utf8_lossy(&b.raw).into_owned()).collect()
}

#[tokio::test]
async fn frames_that_arrive_together_leave_as_one_batch() {
    let body = sse(20);
    let mut source = answer_together(body.clone()).await;
    let first = source.next().await.unwrap().unwrap();
    assert_eq!(first.frames.len(), 21, "the twenty chunks and [DONE], read together");
    assert!(first.end, "the body's end arrived with them");
    assert_eq!(String::from_utf8_lossy(&first.raw), body);
    assert!(source.next().await.unwrap().is_none());
}

#[tokio::test]
async fn a_batch_given_up_on_while_gathering_loses_nothing() {
    // A caller waiting with a timeout (the keep-alive's) drops `next` wherever it
    // is. Here each call is polled once and dropped; one dropped after a read
    // (at the gathering's yield) is followed by a call that is awaited.
    let body = sse(12);
    let mut source = answer_together(body.clone()).await;
    let gathering = |s: &Source| matches!(s, Source::Http { reads, .. } if !reads.is_empty());
    let mut batches = Vec::new();
    let mut dropped_after_a_read = 0;
    for _ in 0..100_000 {
        let next = match source.next().now_or_never() {
            Some(next) => next,
            None if gathering(&source) => {
                dropped_after_a_read += 1;
                source.next().await
            }
            None => {
                tokio::task::yield_now().await;
                continue;
            }
        };
        match next {
            Ok(Some(batch)) => batches.push(batch),
            Ok(None) => break,
            Err(e) => panic!("{e:?}"),
        }
    }
    assert!(dropped_after_a_read > 0, "a call was dropped holding what it had read");
    assert_eq!(frames_of(&batches), 13);
    assert_eq!(raw_of(&batches), body, "every byte once, in order");
    assert!(batches.last().is_some_and(|b| b.end));
}
