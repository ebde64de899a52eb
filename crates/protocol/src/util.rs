//! Small helpers shared by the wire modules.

use serde_json::{Map, Value};

use crate::ProtocolError;

/// Append `value` as compact JSON to `out`. The bodies this crate writes are
/// structs and `Value`s whose maps have string keys, which always serialize; a
/// value that did not would leave `out` as it was.
pub fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let start = out.len();
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.truncate(start);
    }
}

/// Parse a JSON body into an object map, naming the problem on failure.
pub fn parse_object(body: &[u8]) -> Result<Map<String, Value>, ProtocolError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ProtocolError::body("expected a JSON object")),
        Err(e) => Err(ProtocolError::body(e)),
    }
}

/// Deserialize with the failing field's path in the message (`messages[2].content`).
pub fn from_slice<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ProtocolError> {
    serde_json::from_slice(body).map_err(ProtocolError::body)
}

/// Parse tool-call argument text into a JSON value for wires that take an object
/// (Anthropic `input`, Gemini `args`). Empty text is `{}`; text that is not JSON is
/// an error rather than a silent change of meaning.
pub fn arguments_to_value(arguments: &str) -> Result<Value, ProtocolError> {
    if arguments.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_str(arguments)
        .map_err(|e| ProtocolError::body(format!("tool call arguments are not valid JSON: {e}")))
}

/// Render a JSON value (Anthropic `input`, Gemini `args`) as argument text.
pub fn value_to_arguments(value: &Value) -> String {
    value.to_string()
}

/// Where the value of the top-level `key` of a JSON object lies in `body`, found
/// by scanning the bytes (no parse, no allocation). `None` when `body` is not an
/// object, the key is absent or appears more than once, or a top-level key is
/// written with escapes (then only a real parse can tell what it names). `body`
/// must already be known to be valid JSON: this finds, it does not validate.
///
/// Lets the same-format fast path replace the model of a client's body while
/// keeping every other byte the client sent.
pub fn top_level_value(body: &[u8], key: &str) -> Option<std::ops::Range<usize>> {
    scan_object(body, key)?.value
}

/// [`top_level_value`] for a field bodies seldom have (a client's `tool_choice`
/// without tools, the routing hints): a byte search for the quoted name, far
/// cheaper than walking every value, rules it out first. Keys are matched byte for
/// byte (a key with an escape fails the scan anyway), so the answer is the scan's.
/// Not for fields that are usually there: the search would only add to the scan.
///
/// Built once and kept (a `static`): building the searcher costs more than
/// searching a typical body with it.
///
/// ```
/// use switchyard_protocol::util::RareKey;
/// let hints = RareKey::new("switchyard");
/// assert_eq!(hints.value(br#"{"model": "m", "switchyard": {}}"#), Some(29..31));
/// assert_eq!(hints.value(br#"{"model": "switchyard"}"#), None);
/// ```
pub struct RareKey {
    key: &'static str,
    quoted: memchr::memmem::Finder<'static>,
}

impl RareKey {
    /// The searcher for the top-level field `key`.
    pub fn new(key: &'static str) -> Self {
        let quoted = format!("\"{key}\"");
        Self { key, quoted: memchr::memmem::Finder::new(quoted.as_bytes()).into_owned() }
    }

    /// The span of the field's value, as [`top_level_value`] finds it.
    pub fn value(&self, body: &[u8]) -> Option<std::ops::Range<usize>> {
        self.quoted.find(body)?;
        scan_object(body, self.key)?.value
    }
}

impl std::fmt::Debug for RareKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RareKey").field(&self.key).finish()
    }
}

/// What a scan of a top-level object found.
struct Scanned {
    /// The span of the key's value, if the key is present (exactly once).
    value: Option<std::ops::Range<usize>>,
    /// The index of the object's closing brace.
    close: usize,
    /// The object has no members.
    empty: bool,
}

fn scan_object(body: &[u8], key: &str) -> Option<Scanned> {
    let (mut found, mut twice, mut empty) = (None, false, true);
    let close = members(body, |name, value| {
        empty = false;
        if name == key.as_bytes() {
            twice |= found.replace(value).is_some();
        }
    })?;
    // A key given twice: which one a reader takes is its own choice.
    (!twice).then_some(Scanned { value: found, close, empty })
}

/// Calls `each` with every member of the JSON object that opens `body` (after
/// whitespace), in order: the key's bytes (between its quotes) and the span of its
/// value. The index of the object's closing brace; `None` where the scan cannot
/// read the object (not an object, a key with an escape, a malformed member),
/// possibly after `each` saw some members. Values are scanned (strings closed,
/// brackets balanced), not validated.
pub(crate) fn members(
    body: &[u8],
    mut each: impl FnMut(&[u8], std::ops::Range<usize>),
) -> Option<usize> {
    let mut i = skip_ws(body, 0);
    if body.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut first = true;
    loop {
        i = skip_ws(body, i);
        match body.get(i)? {
            b'}' if first => return Some(i),
            b'"' => {}
            _ => return None,
        }
        first = false;
        let (close, escaped) = string_end(body, i)?;
        if escaped {
            return None;
        }
        let name = body.get(i + 1..close)?;
        i = skip_ws(body, close + 1);
        if body.get(i) != Some(&b':') {
            return None;
        }
        let start = skip_ws(body, i + 1);
        let end = value_end(body, start)?;
        each(name, start..end);
        i = skip_ws(body, end);
        match body.get(i)? {
            b',' => i += 1,
            b'}' => return Some(i),
            _ => return None,
        }
    }
}

/// `body` with the member `"key": raw_value` added at the end of its top-level
/// object; `None` when the key is already there (or [`top_level_value`] could not
/// tell). `raw_value` must be valid JSON.
pub fn insert_top_level(body: &[u8], key: &str, raw_value: &[u8]) -> Option<Vec<u8>> {
    let scanned = scan_object(body, key)?;
    if scanned.value.is_some() {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() + key.len() + raw_value.len() + 4);
    out.extend_from_slice(body.get(..scanned.close)?);
    if !scanned.empty {
        out.push(b',');
    }
    // Writing a str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, key);
    out.push(b':');
    out.extend_from_slice(raw_value);
    out.extend_from_slice(body.get(scanned.close..)?);
    Some(out)
}

fn skip_ws(body: &[u8], mut i: usize) -> usize {
    while matches!(body.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// The index of the quote closing the string that opens at `open`.
fn string_close(body: &[u8], open: usize) -> Option<usize> {
    string_end(body, open).map(|(close, _)| close)
}

/// [`string_close`], and whether the string holds an escape.
fn string_end(body: &[u8], open: usize) -> Option<(usize, bool)> {
    let mut i = open + 1;
    let mut escaped = false;
    loop {
        // Text runs are skipped a word at a time; only quotes and escapes stop.
        // (Looking at a key's first bytes one by one before the search was tried:
        // it made the scans twice as costly, 11k → 24k instructions a request.)
        i += memchr::memchr2(b'"', b'\\', body.get(i..)?)?;
        match body.get(i)? {
            b'\\' => {
                escaped = true;
                i += 2;
            }
            _ => return Some((i, escaped)),
        }
    }
}

/// Whether arrays and objects in `body` nest deeper than `max`, counted on the
/// bytes (strings skipped) so a parser's recursion never meets a body that is too
/// deep. Not a validator: bytes that are not JSON get an answer the parse then
/// refuses (an unterminated string ends the count).
pub fn nests_deeper_than(body: &[u8], max: usize) -> bool {
    let mut depth = 0usize;
    for (_, open) in Brackets::from(body, 0) {
        if open {
            depth += 1;
            if depth > max {
                return true;
            }
        } else {
            depth = depth.saturating_sub(1);
        }
    }
    false
}

/// A bound a body breaks before it is parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonBound {
    /// Arrays and objects nest deeper than allowed.
    Depth,
    /// More values than allowed.
    Elements,
}

/// Whether `body` nests deeper than `max_depth`, or holds more than
/// `max_elements` values, counted on the bytes (strings skipped) in one pass
/// before any parse: a parsed value costs tens of bytes however short its text
/// (`0,` is two), so a body's element count, not its size, bounds the memory its
/// parse takes. Counted: every array and object, and every element after a
/// comma, so a count is close to, and never far below, the values a parse would
/// build. Not a validator, like [`nests_deeper_than`].
pub fn exceeds_json_bounds(
    body: &[u8],
    max_depth: usize,
    max_elements: usize,
) -> Option<JsonBound> {
    let (mut depth, mut elements, mut at) = (0usize, 0usize, 0usize);
    while let Some(i) =
        body.get(at..).and_then(|rest| rest.iter().position(|&b| SHAPE[usize::from(b)]))
    {
        let i = at + i;
        match body.get(i) {
            Some(b'"') => {
                at = string_close(body, i).map_or(body.len(), |c| c + 1);
                continue;
            }
            Some(b'{' | b'[') => {
                depth += 1;
                elements += 1;
                if depth > max_depth {
                    return Some(JsonBound::Depth);
                }
            }
            Some(b',') => elements += 1,
            _ => depth = depth.saturating_sub(1),
        }
        if elements > max_elements {
            return Some(JsonBound::Elements);
        }
        at = i + 1;
    }
    None
}

/// Bytes the shape scan stops at: [`STRUCTURAL`]'s and commas.
const SHAPE: [bool; 256] = {
    let mut t = STRUCTURAL;
    t[b',' as usize] = true;
    t
};

/// The brackets of `body` outside strings, from an index on: `(index, opening)`.
/// Ends at the end of `body` or at a string that does not close.
struct Brackets<'a> {
    body: &'a [u8],
    at: usize,
}

impl<'a> Brackets<'a> {
    fn from(body: &'a [u8], at: usize) -> Self {
        Self { body, at }
    }
}

impl Iterator for Brackets<'_> {
    type Item = (usize, bool);

    fn next(&mut self) -> Option<(usize, bool)> {
        loop {
            let i = self.at
                + self.body.get(self.at..)?.iter().position(|&b| STRUCTURAL[usize::from(b)])?;
            let byte = *self.body.get(i)?;
            if byte == b'"' {
                // Past the closing quote; an unterminated string ends the scan.
                self.at = string_close(self.body, i).map_or(self.body.len(), |c| c + 1);
                continue;
            }
            self.at = i + 1;
            return Some((i, matches!(byte, b'{' | b'[')));
        }
    }
}

/// Bytes the bracket scan stops at: quotes (strings are skipped) and brackets.
const STRUCTURAL: [bool; 256] = {
    let mut t = [false; 256];
    t[b'"' as usize] = true;
    t[b'{' as usize] = true;
    t[b'}' as usize] = true;
    t[b'[' as usize] = true;
    t[b']' as usize] = true;
    t
};

/// One past the end of the JSON value starting at `start`.
fn value_end(body: &[u8], start: usize) -> Option<usize> {
    match body.get(start)? {
        b'"' => string_close(body, start).map(|c| c + 1),
        b'{' | b'[' => {
            let mut depth = 0usize;
            for (i, open) in Brackets::from(body, start) {
                if open {
                    depth += 1;
                } else {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
            }
            None
        }
        _ => {
            let mut i = start;
            while !matches!(
                body.get(i),
                None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            ) {
                i += 1;
            }
            (i > start).then_some(i)
        }
    }
}

/// `body` with the value of its top-level `key` replaced by the JSON string
/// `value`; `None` where [`top_level_value`] finds no single plain `key`.
pub fn replace_top_level_string(body: &[u8], key: &str, value: &str) -> Option<Vec<u8>> {
    replace_and_insert(body, key, value, None)
}

/// [`replace_top_level_string`] then, when given, [`insert_top_level`] of
/// `insert`, in one scan of the members and one copy: the same-format fast
/// path's two edits of a stream's body (its model, and `stream_options` asking
/// for usage). `None` where either would be.
pub fn replace_and_insert(
    body: &[u8],
    key: &str,
    value: &str,
    insert: Option<(&str, &[u8])>,
) -> Option<Vec<u8>> {
    let (mut span, mut twice, mut inserted_present) = (None, false, false);
    let close = members(body, |name, v| {
        if name == key.as_bytes() {
            twice |= span.replace(v).is_some();
        } else if insert.is_some_and(|(k, _)| name == k.as_bytes()) {
            inserted_present = true;
        }
    })?;
    let span = span.filter(|_| !twice && !inserted_present)?;
    let extra = insert.map_or(0, |(k, v)| k.len() + v.len() + 4);
    let mut out = Vec::with_capacity(body.len() + value.len() + 2 + extra);
    out.extend_from_slice(body.get(..span.start)?);
    // Writing a str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, value);
    out.extend_from_slice(body.get(span.end..close)?);
    if let Some((k, v)) = insert {
        // The replaced key is a member: the object is not empty.
        out.push(b',');
        let _ = serde_json::to_writer(&mut out, k);
        out.push(b':');
        out.extend_from_slice(v);
    }
    out.extend_from_slice(body.get(close..)?);
    Some(out)
}

/// `bytes` as text, as `String::from_utf8_lossy` gives it (U+FFFD for each
/// invalid sequence), but checked first by the standard library's validator:
/// `from_utf8_lossy` walks valid text a byte at a time, and on a stream's frames
/// it was the relay's largest single cost.
pub fn lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// FNV-1a, 64-bit: a stable, dependency-free hash for deterministic ids.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// `body` (a response, or one stream event's data) with the model it names
/// replaced by `model`: the top-level `model` (Gemini: `modelVersion`), else the
/// one inside a top-level `message` or `response` object (Anthropic's
/// `message_start`, Responses' `response.*` events). `None` where it names none
/// (e.g. a content delta).
pub fn rename_model(body: &[u8], model: &str) -> Option<Vec<u8>> {
    for key in ["model", "modelVersion"] {
        if let Some(out) = replace_top_level_string(body, key, model) {
            return Some(out);
        }
    }
    for outer in ["message", "response"] {
        let Some(span) = top_level_value(body, outer) else { continue };
        let Some(renamed) = replace_top_level_string(body.get(span.clone())?, "model", model)
        else {
            continue;
        };
        let mut out = Vec::with_capacity(body.len() + model.len());
        out.extend_from_slice(body.get(..span.start)?);
        out.extend_from_slice(&renamed);
        out.extend_from_slice(body.get(span.end..)?);
        return Some(out);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    proptest! {
        #[test]
        fn lossy_reads_as_from_utf8_lossy(bytes in proptest::collection::vec(any::<u8>(), 0..64), text in ".{0,16}") {
            prop_assert_eq!(lossy(&bytes), String::from_utf8_lossy(&bytes));
            prop_assert!(matches!(lossy(text.as_bytes()), std::borrow::Cow::Borrowed(t) if t == text));
        }
    }

    #[test]
    fn a_flat_array_of_zeros_is_refused_by_its_count() {
        let body = format!("[{}0]", "0,".repeat(1000));
        assert_eq!(exceeds_json_bounds(body.as_bytes(), 64, 1000), Some(JsonBound::Elements));
        assert_eq!(exceeds_json_bounds(body.as_bytes(), 64, 1001), None);
        // Commas inside strings are text, not elements.
        let text = format!(r#"{{"s":"{}"}}"#, ",".repeat(5000));
        assert_eq!(exceeds_json_bounds(text.as_bytes(), 64, 10), None);
    }

    #[test]
    fn renames_the_model_a_gemini_answer_names() {
        let chunk = br#"{"candidates":[],"modelVersion":"up-gemini","responseId":"r"}"#;
        let v: Value = serde_json::from_slice(&rename_model(chunk, "alias").unwrap()).unwrap();
        assert_eq!(v, json!({"candidates": [], "modelVersion": "alias", "responseId": "r"}));
    }

    #[test]
    fn renames_the_model_at_the_top_or_in_the_message() {
        let chunk = br#"{"id":"c","model":"up-1","choices":[{"delta":{"model":"x"}}]}"#;
        let v: Value = serde_json::from_slice(&rename_model(chunk, "alias").unwrap()).unwrap();
        assert_eq!(v, json!({"id": "c", "model": "alias", "choices": [{"delta": {"model": "x"}}]}));
        let start = br#"{"type":"message_start","message":{"id":"m","model":"claude-haiku-4-5","content":[]}}"#;
        let v: Value =
            serde_json::from_slice(&rename_model(start, "conf-claude").unwrap()).unwrap();
        assert_eq!(v["message"]["model"], "conf-claude");
        assert_eq!(v["message"]["id"], "m");
        let created = br#"{"type":"response.created","response":{"id":"r","model":"m1"}}"#;
        let v: Value = serde_json::from_slice(&rename_model(created, "a").unwrap()).unwrap();
        assert_eq!(v["response"]["model"], "a");
        assert_eq!(rename_model(br#"{"type":"content_block_delta","index":0}"#, "a"), None);
        assert_eq!(rename_model(b"[DONE]", "a"), None);
    }

    #[test]
    fn finds_the_top_level_key_only() {
        let body =
            br#" { "messages": [{"model": "inner", "x": "}\"]"}], "model" : "gpt-4o" , "n": 1 } "#;
        let span = top_level_value(body, "model").unwrap();
        assert_eq!(&body[span], br#""gpt-4o""#);
        let out = replace_top_level_string(body, "model", "up/\"m\"").unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["model"], "up/\"m\"");
        assert_eq!(v["messages"][0]["model"], "inner");
        assert_eq!(v["n"], 1);
    }

    #[test]
    fn refuses_what_only_a_parse_could_decide() {
        for body in [
            &br#"{"model": "a", "model": "b"}"#[..],
            br#"{"mod\u0065l": "a"}"#,
            br#"{"messages": []}"#,
            br#"["model", "a"]"#,
            b"",
            br#"{"model": "a""#,
        ] {
            assert!(top_level_value(body, "model").is_none(), "{}", String::from_utf8_lossy(body));
        }
        let span = top_level_value(br#"{"n":-1.5e3,"model":null}"#, "n").unwrap();
        assert_eq!(span, 5..11);
        // The name only inside a value or nested: the byte search lets the scan
        // decide, and the scan finds no top-level key.
        for body in [
            &br#"{"text": "the \"model\" field"}"#[..],
            br#"{"meta": {"model": "a"}}"#,
            br#"{"models": "a", "xmodel": "b"}"#,
        ] {
            assert!(top_level_value(body, "model").is_none(), "{}", String::from_utf8_lossy(body));
            assert!(RareKey::new("model").value(body).is_none());
        }
        assert_eq!(RareKey::new("model").value(br#"{"model": 2}"#), Some(10..11));
        assert_eq!(
            top_level_value(br#"{"meta": {"model": 1}, "model": 2}"#, "model"),
            Some(32..33)
        );
    }

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
            // Past string_end's byte-by-byte stretch too, escapes anywhere.
            ".{0,40}".prop_map(Value::String),
            "[a-z\"\\\\]{14,20}".prop_map(Value::String),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z\"\\\\{}]{0,6}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Splicing the bytes means the same as parsing, replacing and serializing,
        /// whatever the other fields hold and however the body is spaced.
        #[test]
        fn splice_equals_parse_and_replace(
            fields in prop::collection::btree_map("[a-z_]{1,8}", value(), 0..6),
            model in ".{0,20}",
            pretty in any::<bool>(),
        ) {
            let mut obj: Map<String, Value> = fields.into_iter().collect();
            obj.insert("model".into(), json!("original"));
            let body = if pretty {
                serde_json::to_vec_pretty(&obj).unwrap()
            } else {
                serde_json::to_vec(&obj).unwrap()
            };
            let out = replace_top_level_string(&body, "model", &model).unwrap();
            let mut want = parse_object(&body).unwrap();
            want.insert("model".into(), Value::String(model));
            let got: Value = serde_json::from_slice(&out).unwrap();
            prop_assert_eq!(got, Value::Object(want));
        }

        #[test]
        fn insert_equals_parse_and_insert(
            fields in prop::collection::btree_map("[a-z_]{1,8}", value(), 0..6),
            pretty in any::<bool>(),
        ) {
            let obj: Map<String, Value> = fields.into_iter().filter(|(k, _)| k != "opts").collect();
            let body = if pretty {
                serde_json::to_vec_pretty(&obj).unwrap()
            } else {
                serde_json::to_vec(&obj).unwrap()
            };
            let out = insert_top_level(&body, "opts", br#"{"a":true}"#).unwrap();
            let mut want = parse_object(&body).unwrap();
            want.insert("opts".into(), json!({"a": true}));
            let got: Value = serde_json::from_slice(&out).unwrap();
            prop_assert_eq!(got, Value::Object(want));
            prop_assert!(insert_top_level(&out, "opts", b"1").is_none(), "already present");
        }

        /// One scan and one copy mean the same as the two edits one after the
        /// other, and refuse where either refuses.
        #[test]
        fn replace_and_insert_equals_the_two_edits(
            fields in prop::collection::btree_map("[a-z_]{1,8}", value(), 0..6),
            model in ".{0,20}",
            pretty in any::<bool>(),
            opts_present in any::<bool>(),
        ) {
            let mut obj: Map<String, Value> = fields.into_iter().collect();
            obj.insert("model".into(), json!("original"));
            if !opts_present {
                obj.remove("opts");
            } else {
                obj.insert("opts".into(), json!(1));
            }
            let body = if pretty {
                serde_json::to_vec_pretty(&obj).unwrap()
            } else {
                serde_json::to_vec(&obj).unwrap()
            };
            let one = replace_and_insert(&body, "model", &model, Some(("opts", br#"{"a":true}"#)));
            let two = replace_top_level_string(&body, "model", &model)
                .and_then(|b| insert_top_level(&b, "opts", br#"{"a":true}"#));
            prop_assert_eq!(one.is_some(), !opts_present);
            match (one, two) {
                (Some(one), Some(two)) => {
                    let (a, b): (Value, Value) =
                        (serde_json::from_slice(&one).unwrap(), serde_json::from_slice(&two).unwrap());
                    prop_assert_eq!(a, b);
                }
                (None, None) => {}
                (one, two) => prop_assert!(false, "one: {:?}, two: {:?}", one.is_some(), two.is_some()),
            }
        }

        #[test]
        fn never_panics(body in prop::collection::vec(any::<u8>(), 0..64)) {
            let _ = top_level_value(&body, "model");
            let _ = insert_top_level(&body, "k", b"1");
            let _ = replace_and_insert(&body, "model", "m", Some(("k", b"1")));
            let _ = nests_deeper_than(&body, 3);
            let _ = exceeds_json_bounds(&body, 3, 5);
        }

        /// The element count is the values a parse builds (scalars outside arrays
        /// and object members aside), and the depth agrees with the depth scan.
        #[test]
        fn element_count_matches_the_value(v in value(), pretty in any::<bool>()) {
            fn count(v: &Value) -> usize {
                match v {
                    Value::Array(a) => 1 + a.len().saturating_sub(1) + a.iter().map(count).sum::<usize>(),
                    Value::Object(o) => 1 + o.len().saturating_sub(1) + o.values().map(count).sum::<usize>(),
                    _ => 0,
                }
            }
            let body = if pretty { serde_json::to_vec_pretty(&v) } else { serde_json::to_vec(&v) }.unwrap();
            let n = count(&v);
            prop_assert_eq!(exceeds_json_bounds(&body, usize::MAX, n), None);
            if n > 0 {
                prop_assert_eq!(exceeds_json_bounds(&body, usize::MAX, n - 1), Some(JsonBound::Elements));
            }
            let deep = nests_deeper_than(&body, 2);
            prop_assert_eq!(exceeds_json_bounds(&body, 2, usize::MAX) == Some(JsonBound::Depth), deep);
        }

        /// The byte count agrees with the depth of the parsed value.
        #[test]
        fn nesting_count_matches_the_value(v in value(), pretty in any::<bool>()) {
            fn depth(v: &Value) -> usize {
                match v {
                    Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
                    Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
                    _ => 0,
                }
            }
            let body = if pretty { serde_json::to_vec_pretty(&v) } else { serde_json::to_vec(&v) }.unwrap();
            let d = depth(&v);
            prop_assert!(!nests_deeper_than(&body, d));
            if d > 0 {
                prop_assert!(nests_deeper_than(&body, d - 1));
            }
        }
    }
}
