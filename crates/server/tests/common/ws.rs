//! A client for the Responses WebSocket mode (`GET /v1/responses`, upgraded).

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{self, Message};

use super::{GATEWAY_KEY, WAIT};

pub type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Open `path` at `base` (`http://…`) with these headers.
pub async fn connect(
    base: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<Ws, tungstenite::Error> {
    let url = format!("{}{path}", base.replacen("http://", "ws://", 1));
    let mut request = url.into_client_request()?;
    for (name, value) in headers {
        let name = tungstenite::http::HeaderName::from_bytes(name.as_bytes()).unwrap();
        request.headers_mut().insert(name, HeaderValue::from_str(value).unwrap());
    }
    let (ws, _) = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(request))
        .await
        .expect("the handshake did not finish in time")?;
    Ok(ws)
}

/// Open `/v1/responses` with `key` as a bearer token.
pub async fn connect_with(base: &str, key: &str) -> Ws {
    let bearer = format!("Bearer {key}");
    connect(base, "/v1/responses", &[("authorization", &bearer)]).await.unwrap()
}

/// Open `/v1/responses` with the gateway key.
pub async fn open(base: &str) -> Ws {
    connect_with(base, GATEWAY_KEY).await
}

pub async fn send(ws: &mut Ws, event: &Value) {
    tokio::time::timeout(WAIT, ws.send(Message::text(event.to_string())))
        .await
        .expect("send timed out")
        .unwrap();
}

/// What the server sent next.
#[derive(Debug)]
pub enum Next {
    Event(Value),
    /// A close frame (code, reason), or the connection ending without one.
    Closed(Option<(u16, String)>),
}

pub async fn next(ws: &mut Ws) -> Next {
    loop {
        let m = tokio::time::timeout(WAIT, ws.next()).await.expect("no message in time");
        match m {
            Some(Ok(Message::Text(text))) => {
                return Next::Event(
                    serde_json::from_str(text.as_str()).unwrap_or_else(|e| {
                        panic!("a message is not JSON ({e}): {}", text.as_str())
                    }),
                );
            }
            Some(Ok(Message::Close(frame))) => {
                return Next::Closed(frame.map(|f| (u16::from(f.code), f.reason.to_string())));
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
            Some(Ok(Message::Binary(_))) => panic!("a binary message"),
            Some(Err(_)) | None => return Next::Closed(None),
        }
    }
}

/// The next message, which must be an event.
pub async fn event(ws: &mut Ws) -> Value {
    match next(ws).await {
        Next::Event(v) => v,
        Next::Closed(frame) => panic!("closed ({frame:?}) where an event was expected"),
    }
}

/// The events up to the end of a turn: `response.completed`, `.failed` or
/// `.incomplete`, or an `error` event that no `response.failed` follows (a refusal
/// before the answer started has no response).
pub async fn read_turn(ws: &mut Ws) -> Vec<Value> {
    let mut events: Vec<Value> = Vec::new();
    loop {
        let e = event(ws).await;
        let ty = e["type"].as_str().unwrap_or_default().to_owned();
        events.push(e);
        match ty.as_str() {
            "response.completed" | "response.failed" | "response.incomplete" => return events,
            // A refusal carries the HTTP status; an error inside a stream does not,
            // and its `response.failed` follows.
            "error" if events.last().is_some_and(|e| e.get("status").is_some()) => return events,
            _ => {}
        }
    }
}

/// Send `response.create` with `body`'s fields at the top level; the turn's events.
pub async fn turn(ws: &mut Ws, body: Value) -> Vec<Value> {
    let mut event = body;
    event["type"] = Value::from("response.create");
    send(ws, &event).await;
    read_turn(ws).await
}

/// The events as the SSE body `POST /v1/responses` would have streamed.
pub fn as_sse(events: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in events {
        let ty = e["type"].as_str().unwrap_or("message");
        out.extend_from_slice(format!("event: {ty}\ndata: {e}\n\n").as_bytes());
    }
    out
}

/// The kinds of `events`, in order.
pub fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap_or("?")).collect()
}

/// Send text exactly as given.
pub async fn send_text(ws: &mut Ws, text: &str) {
    tokio::time::timeout(WAIT, ws.send(Message::text(text)))
        .await
        .expect("send timed out")
        .unwrap();
}

pub async fn send_binary(ws: &mut Ws, bytes: &'static [u8]) {
    tokio::time::timeout(WAIT, ws.send(Message::binary(bytes)))
        .await
        .expect("send timed out")
        .unwrap();
}

/// Close from the client side (normal closure) and wait for the server's reply.
pub async fn close(ws: &mut Ws) {
    tokio::time::timeout(WAIT, ws.close(None)).await.expect("close timed out").unwrap();
    while let Some(Ok(m)) = tokio::time::timeout(WAIT, ws.next()).await.expect("no close reply") {
        if m.is_close() {
            break;
        }
    }
}
