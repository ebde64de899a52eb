//! Stored responses survive a restart: the binary keeps them in its database
//! (SQLite here), so a conversation goes on after the gateway comes back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use serde_json::Value;

fn body_of(answer: &str) -> Value {
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    // A chunked answer: the JSON is between the chunk sizes.
    let start = body.find('{').unwrap_or(0);
    let end = body.rfind('}').map_or(body.len(), |e| e + 1);
    serde_json::from_str(&body[start..end]).unwrap_or(Value::Null)
}

#[test]
fn a_stored_response_is_continued_after_a_restart() {
    let data = fresh_dir("stored");
    let config = format!(
        r#"
storage: {{ url: "sqlite://{}/sy.db" }}
gateway: {{ api_keys: ["sk-gw-stored-0123456789abcdef"] }}
providers: {{ mock: {{ wire: mock }} }}
models: [{{ id: mock-echo, deployments: [{{ provider: mock }}] }}]
"#,
        data.display()
    );
    let key = [("authorization", "Bearer sk-gw-stored-0123456789abcdef")];
    let id = {
        let gw = Gateway::start_with("stored-1", &[], Some(&config));
        let addr =
            gw.wait_for("switchyard listening")["fields"]["listen"].as_str().unwrap().to_owned();
        let first = r#"{"model": "mock-echo", "input": "remember the number 42", "store": true}"#;
        let (status, answer) = post(&addr, "/v1/responses", first, &key);
        assert_eq!(status, 200, "{answer}");
        body_of(&answer)["id"].as_str().unwrap().to_owned()
    };
    // Another process, the same database.
    let gw = Gateway::start_with("stored-2", &[], Some(&config));
    let addr = gw.wait_for("switchyard listening")["fields"]["listen"].as_str().unwrap().to_owned();
    let next = format!(
        r#"{{"model": "mock-echo", "previous_response_id": "{id}", "input": "which number?", "store": true}}"#
    );
    let (status, answer) = post(&addr, "/v1/responses", &next, &key);
    assert_eq!(status, 200, "{answer}");
    // The mock echoes the last user text; the record of the conversation is
    // in what the stored input holds.
    let second = body_of(&answer)["id"].as_str().unwrap().to_owned();
    let (status, items) =
        get_with_key(&addr, &format!("/v1/responses/{second}/input_items?order=asc"));
    assert_eq!(status, 200, "{items}");
    let listed = body_of(&items);
    let texts: Vec<String> =
        listed["data"].as_array().unwrap().iter().map(|i| i["content"].to_string()).collect();
    assert!(texts[0].contains("remember the number 42"), "{texts:?}");
    assert!(texts.last().unwrap().contains("which number?"), "{texts:?}");
    drop(gw);
    let _ = std::fs::remove_dir_all(&data);
}

/// `GET path` with the key: the status and the whole answer.
fn get_with_key(addr: &str, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer sk-gw-stored-0123456789abcdef\r\nconnection: close\r\n\r\n"
    );
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, out)
}
