//! The same-format fast path edits a client's body on its bytes instead of parsing
//! it. Differential: whenever the scan finds the top-level `model`, it must be what
//! a JSON parser finds there, and splicing a new model in must equal parsing,
//! replacing and serializing. The depth check must agree with the parsed value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use switchyard_protocol::util;

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fuzz_target!(|data: &[u8]| {
    let span = util::top_level_value(data, "model");
    let spliced = util::replace_top_level_string(data, "model", "up/m\"x");
    let inserted = util::insert_top_level(data, "extra", b"{\"a\":1}");
    let deep = util::nests_deeper_than(data, 8);
    // Only valid JSON objects (the scans' precondition) are compared.
    let Ok(parsed) = serde_json::from_slice::<Value>(data) else { return };
    assert_eq!(deep, depth(&parsed) > 8, "depth");
    let Value::Object(map) = parsed else { return };
    if let Some(span) = span {
        let found: Value = serde_json::from_slice(&data[span]).expect("the span is a JSON value");
        assert_eq!(map.get("model"), Some(&found), "span");
        let spliced: Value =
            serde_json::from_slice(&spliced.expect("splice where found")).expect("spliced JSON");
        let mut want = map.clone();
        want.insert("model".into(), Value::from("up/m\"x"));
        assert_eq!(spliced, Value::Object(want), "splice");
    }
    if let Some(inserted) = inserted {
        assert!(!map.contains_key("extra"), "inserted beside an existing key");
        let got: Value = serde_json::from_slice(&inserted).expect("inserted JSON");
        let mut want = map;
        want.insert("extra".into(), serde_json::json!({"a": 1}));
        assert_eq!(got, Value::Object(want), "insert");
    }
});
