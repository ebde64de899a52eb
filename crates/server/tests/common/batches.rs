//! Batches as a client drives them: a JSONL file uploaded as the OpenAI SDK
//! uploads it, a batch polled until it ends.

use serde_json::{Value, json};

use super::{GATEWAY_KEY, Harness, WAIT};

/// A chat line of an input file.
pub fn chat_line(id: &str, model: &str, text: &str) -> String {
    json!({"custom_id": id, "method": "POST", "url": "/v1/chat/completions",
           "body": {"model": model, "messages": [{"role": "user", "content": text}]}})
    .to_string()
}

/// Upload `content` as the OpenAI SDK does (`purpose` and `file` parts): the
/// status and the answer.
pub async fn upload(h: &Harness, key: &str, purpose: &str, content: &str) -> (u16, Value) {
    let boundary = "----switchyard-test-boundary";
    let body = format!(
        "--{boundary}\r\ncontent-disposition: form-data; name=\"purpose\"\r\n\r\n{purpose}\r\n\
         --{boundary}\r\ncontent-disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n\
         content-type: application/jsonl\r\n\r\n{content}\r\n--{boundary}--\r\n"
    );
    let r = h
        .client
        .post(format!("{}/v1/files", h.base))
        .bearer_auth(key)
        .header("content-type", format!("multipart/form-data; boundary={boundary}"))
        .body(body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// Batch `id` (of [`GATEWAY_KEY`]) once it has ended, polled as a client
/// polls one.
pub async fn until_ended(h: &Harness, id: &str) -> Value {
    let ended = async {
        loop {
            let r = h
                .client
                .get(format!("{}/v1/batches/{id}", h.base))
                .bearer_auth(GATEWAY_KEY)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 200);
            let b: Value = r.json().await.unwrap();
            if matches!(
                b["status"].as_str(),
                Some("completed" | "failed" | "expired" | "cancelled")
            ) {
                return b;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(WAIT, ended).await.expect("the batch ended")
}

/// A JSONL file's lines.
pub fn lines_of(jsonl: &str) -> Vec<Value> {
    jsonl.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}
