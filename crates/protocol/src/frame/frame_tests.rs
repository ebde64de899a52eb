use super::test_support::event;
use super::*;

fn frames(framer: &mut Framer, bytes: &[u8]) -> Result<Vec<Frame>, FrameError> {
    let mut out = Vec::new();
    framer.push(bytes, &mut out)?;
    framer.finish(&mut out)?;
    Ok(out)
}

fn frame(event: Option<&str>, data: &str) -> Frame {
    Frame { event: event.map(Into::into), data: data.into(), id: None }
}

#[test]
fn each_framing_gets_its_own_framer() {
    let sse = frames(&mut Framing::Sse.framer(), b"event: a\ndata: {}\nid: 7\n\ndata: [DONE]");
    assert_eq!(
        sse.unwrap(),
        [
            Frame { event: Some("a".into()), data: "{}".into(), id: Some("7".into()) },
            frame(None, "[DONE]")
        ]
    );
    let lines = frames(&mut Framing::JsonLines.framer(), b"{\"a\":1}\n{\"b\":2}\n");
    assert_eq!(lines.unwrap(), [frame(None, r#"{"a":1}"#), frame(None, r#"{"b":2}"#)]);
    let message = event("messageStop", r#"{"stopReason":"end_turn"}"#);
    let binary = frames(&mut Framing::AwsEventStream.framer(), &message);
    assert_eq!(binary.unwrap(), [frame(Some("messageStop"), r#"{"stopReason":"end_turn"}"#)]);
}

#[test]
fn framing_errors_read_as_before_and_map_to_protocol_errors() {
    // SSE's error, through the framer, is the one the gateway always reported.
    let mut sse = Framer::from(SseDecoder::with_max_line(8));
    let err = sse.push(b"data: 0123456789", &mut Vec::new()).unwrap_err();
    assert_eq!(err.to_string(), "server-sent event line longer than 8 bytes");
    assert_eq!(
        ProtocolError::from(err),
        ProtocolError::MalformedUpstream("server-sent event line longer than 8 bytes".into())
    );
    let mut lines = Framer::from(JsonLinesDecoder::with_max_line(4));
    let err = lines.push(b"{\"a\":1}", &mut Vec::new()).unwrap_err();
    assert!(matches!(ProtocolError::from(err), ProtocolError::MalformedUpstream(_)));
    // A binary stream cut inside a message fails at the end; SSE and JSON lines
    // take what they have.
    let message = event("messageStop", "{}");
    let mut binary = Framing::AwsEventStream.framer();
    assert_eq!(
        frames(&mut binary, &message[..message.len() - 1]),
        Err(FrameError::Truncated(message.len() - 1))
    );
    assert_eq!(frames(&mut Framing::Sse.framer(), b"data: x").unwrap(), [frame(None, "x")]);
    assert_eq!(frames(&mut Framing::JsonLines.framer(), b"{}").unwrap(), [frame(None, "{}")]);
}
