use super::*;
use switchyard_protocol::{Message, TextBlock, ToolCall};

fn block_on<T>(f: BoxFuture<'_, T>) -> T {
    // The local store's futures are ready at once.
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut f = f;
    match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("the local store never waits"),
    }
}

#[test]
fn the_local_store_bounds_entries_and_lifetimes() {
    let store = LocalContinuity::new(2);
    block_on(store.put("a".into(), b"1".to_vec(), TTL));
    block_on(store.put("b".into(), b"2".to_vec(), TTL));
    block_on(store.put("a".into(), b"3".to_vec(), TTL));
    block_on(store.put("c".into(), b"4".to_vec(), TTL));
    assert_eq!(block_on(store.get("a")), Some(b"3".to_vec()), "the newer put of a survives");
    assert_eq!(block_on(store.get("b")), None, "the oldest went first");
    assert_eq!(block_on(store.get("c")), Some(b"4".to_vec()));
    block_on(store.put("gone".into(), b"5".to_vec(), Duration::ZERO));
    assert_eq!(block_on(store.get("gone")), None, "expired entries are never returned");
}

fn call(id: &str) -> Part {
    Part::ToolCall(ToolCall {
        id: id.into(),
        name: "f".into(),
        arguments: "{}".into(),
        signature: None,
    })
}

#[test]
fn signed_thinking_before_a_call_is_kept_and_put_back_in_front_of_it() {
    let signed = Part::Thinking { text: "hm".into(), signature: Some("c2ln".into()) };
    let answer = vec![signed.clone(), Part::Text(TextBlock::new("checking")), call("call_1")];
    let (key, value) = thinking_to_keep(&answer).unwrap();
    assert_eq!(key, "thinking:call_1");
    assert_eq!(thinking_to_keep(&[Part::Text(TextBlock::new("x")), call("c")]), None);
    assert_eq!(
        thinking_to_keep(std::slice::from_ref(&signed)),
        None,
        "no tool loop, nothing to continue"
    );

    // The client echoes reasoning_content (unsigned) and its call.
    let mut req = Request {
        messages: vec![
            Message::text(Role::User, "go"),
            Message {
                role: Role::Assistant,
                content: vec![
                    Part::Thinking { text: "hm".into(), signature: None },
                    call("call_1"),
                ],
            },
        ],
        ..Request::default()
    };
    assert_eq!(wanted(&req), vec![key.clone()]);
    let parts: Vec<Part> = serde_json::from_slice(&value).unwrap();
    restore(&mut req, &HashMap::from([(key, parts)]));
    assert_eq!(req.messages[1].content, vec![signed, call("call_1")]);
    assert!(wanted(&req).is_empty(), "a turn with its own thinking wants nothing");
}
