use super::*;

fn decode_all(chunks: &[&[u8]]) -> Result<Vec<Frame>, FrameError> {
    let mut d = JsonLinesDecoder::new();
    let mut out = Vec::new();
    for c in chunks {
        d.push(c, &mut out)?;
    }
    d.finish(&mut out)?;
    Ok(out)
}

fn data(frames: &[Frame]) -> Vec<&str> {
    frames.iter().map(|f| f.data.as_str()).collect()
}

#[test]
fn one_frame_a_line_blank_lines_skipped() {
    let frames = decode_all(&[b"{\"a\":1}\n\n  \r\n{\"b\":2}\r\n{\"c\":3}"]).unwrap();
    assert_eq!(data(&frames), [r#"{"a":1}"#, r#"{"b":2}"#, r#"{"c":3}"#]);
    assert!(frames.iter().all(|f| f.event.is_none() && f.id.is_none()));
    assert_eq!(decode_all(&[b"\n\n"]).unwrap(), []);
}

#[test]
fn refuses_a_line_over_the_cap_however_it_arrives() {
    let mut d = JsonLinesDecoder::with_max_line(8);
    let mut out = Vec::new();
    assert_eq!(d.push(b"0123456789", &mut out), Err(FrameError::JsonLineTooLong(8)));
    let mut d = JsonLinesDecoder::with_max_line(8);
    assert_eq!(d.push(b"0123456789\n", &mut out), Err(FrameError::JsonLineTooLong(8)));
    let mut d = JsonLinesDecoder::with_max_line(8);
    d.push(b"01234567\n", &mut out).unwrap();
    assert_eq!(data(&out), ["01234567"], "a line at the cap is taken");
}

proptest::proptest! {
    #[test]
    fn any_split_gives_the_same_frames(split in proptest::collection::vec(0usize..64, 0..8)) {
        let input: &[u8] = "{\"k\":\"h\u{e9}llo\"}\r\n\n{\"k\":2}\n  \n{\"k\":3}".as_bytes();
        let whole = decode_all(&[input]).unwrap();
        proptest::prop_assert_eq!(whole.len(), 3);
        let mut cuts: Vec<usize> = split.into_iter().map(|c| c % (input.len() + 1)).collect();
        cuts.sort_unstable();
        let mut chunks = Vec::new();
        let mut prev = 0;
        for c in cuts { chunks.push(&input[prev..c]); prev = c; }
        chunks.push(&input[prev..]);
        proptest::prop_assert_eq!(decode_all(&chunks).unwrap(), whole);
    }
}

#[test]
fn a_long_line_in_one_byte_pushes_is_one_frame() {
    let mut input = vec![b'"'];
    input.extend(std::iter::repeat_n(b'x', 100_000));
    input.extend_from_slice(b"\"\n{}\n");
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    let frames = decode_all(&bytes).unwrap();
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0].data.len(), 100_002);
}

#[test]
fn pending_is_the_line_not_yet_ended() {
    let mut d = JsonLinesDecoder::new();
    let mut out = Vec::new();
    d.push(b"{\"a\":1}\n{\"b\"", &mut out).unwrap();
    assert_eq!(d.pending(), b"{\"b\"".len());
    d.push(b":2}\n", &mut out).unwrap();
    assert_eq!(d.pending(), 0);
    assert_eq!(out.len(), 2);
}

proptest::proptest! {
    #[test]
    fn the_bytes_before_pending_frame_to_the_frames_so_far(cut in 0usize..64) {
        let input: &[u8] = b"{\"k\":1}\r\n\n{\"k\":2}\n  \n{\"k\":3}";
        let (a, b) = input.split_at(cut % (input.len() + 1));
        let mut d = JsonLinesDecoder::new();
        let mut out = Vec::new();
        for (chunk, pushed) in [(a, a.len()), (b, input.len())] {
            d.push(chunk, &mut out).unwrap();
            let complete = &input[..pushed - d.pending()];
            proptest::prop_assert_eq!(decode_all(&[complete]).unwrap(), out.clone());
        }
    }
}
