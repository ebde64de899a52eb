//! The same-format fast path edits a client's body on its bytes instead of parsing
//! it. Differential: whenever the scan finds the top-level `model`, it must be what
//! a JSON parser finds there, and splicing a new model in must equal parsing,
//! replacing and serializing. The depth check must agree with the parsed value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use switchyard_protocol::util;

/// The nesting depth of a JSON text, counted by the parser over every member,
/// including the earlier ones of a repeated key (which a parsed `Value` drops).
struct Depth(usize);

impl<'de> serde::Deserialize<'de> for Depth {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Depth;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_bool<E>(self, _: bool) -> Result<Depth, E> {
                Ok(Depth(0))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Depth, E> {
                Ok(Depth(0))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Depth, E> {
                Ok(Depth(0))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Depth, E> {
                Ok(Depth(0))
            }
            fn visit_str<E>(self, _: &str) -> Result<Depth, E> {
                Ok(Depth(0))
            }
            fn visit_unit<E>(self) -> Result<Depth, E> {
                Ok(Depth(0))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Depth, A::Error> {
                let mut max = 0;
                while let Some(Depth(d)) = a.next_element()? {
                    max = max.max(d);
                }
                Ok(Depth(max + 1))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Depth, A::Error> {
                let mut max = 0;
                while let Some((serde::de::IgnoredAny, Depth(d))) = a.next_entry()? {
                    max = max.max(d);
                }
                Ok(Depth(max + 1))
            }
        }
        d.deserialize_any(V)
    }
}

fuzz_target!(|data: &[u8]| {
    let span = util::top_level_value(data, "model");
    let spliced = util::replace_top_level_string(data, "model", "up/m\"x");
    let inserted = util::insert_top_level(data, "extra", b"{\"a\":1}");
    let deep = util::nests_deeper_than(data, 8);
    // Only valid JSON objects (the scans' precondition) are compared.
    let Ok(parsed) = serde_json::from_slice::<Value>(data) else { return };
    let Ok(Depth(depth)) = serde_json::from_slice::<Depth>(data) else { return };
    assert_eq!(deep, depth > 8, "depth");
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
