use serde_json::{Value, json};

use super::*;

/// `Ok(())`, or the pointer of the violation.
fn path_of(schema: &Value, value: &Value) -> Result<(), String> {
    validate(schema, value).map_err(|v| v.path)
}

#[test]
fn a_table_of_schemas_values_and_the_path_of_their_first_violation() {
    let person = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 5},
            "age": {"type": "integer", "minimum": 0, "exclusiveMaximum": 150},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true, "maxItems": 3},
            "nick": {"type": ["string", "null"]}
        },
        "required": ["name", "age"],
        "additionalProperties": false
    });
    let defs = json!({
        "$defs": {"node": {"type": "object", "properties": {
            "value": {"type": "number"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
        }, "required": ["value"]}},
        "$ref": "#/$defs/node"
    });
    let cases: &[(&Value, Value, Result<(), &str>)] = &[
        (&person, json!({"name": "Ada", "age": 36}), Ok(())),
        (&person, json!({"name": "Ada", "age": 36.0}), Ok(())),
        (&person, json!({"name": "Ada", "age": 36.5}), Err("/age")),
        (&person, json!({"name": "Ada", "age": -1}), Err("/age")),
        (&person, json!({"name": "Ada", "age": 150}), Err("/age")),
        (&person, json!({"name": "Ada"}), Err("")),
        (&person, json!({"name": "", "age": 1}), Err("/name")),
        (&person, json!({"name": "Adelaide", "age": 1}), Err("/name")),
        (&person, json!({"name": "Ada", "age": 1, "extra": true}), Err("/extra")),
        (&person, json!({"name": "Ada", "age": 1, "tags": ["a", "b", "a"]}), Err("/tags")),
        (&person, json!({"name": "Ada", "age": 1, "tags": ["a", 2]}), Err("/tags/1")),
        (&person, json!({"name": "Ada", "age": 1, "tags": ["a", "b", "c", "d"]}), Err("/tags")),
        (&person, json!({"name": "Ada", "age": 1, "nick": null}), Ok(())),
        (&person, json!({"name": "Ada", "age": 1, "nick": 3}), Err("/nick")),
        (&person, json!(["not", "an", "object"]), Err("")),
        (
            &defs,
            json!({"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}),
            Ok(()),
        ),
        (
            &defs,
            json!({"value": 1, "children": [{"value": 2, "children": [{"value": "x"}]}]}),
            Err("/children/0/children/0/value"),
        ),
        (&defs, json!({"value": 1, "children": [{"children": []}]}), Err("/children/0")),
    ];
    for (i, (schema, value, want)) in cases.iter().enumerate() {
        let want = want.map_err(str::to_owned);
        assert_eq!(path_of(schema, value), want, "case {i}: {value}");
    }
}

#[test]
fn each_keyword_accepts_and_refuses() {
    // (schema, a value it accepts, a value it refuses)
    let cases: Vec<(Value, Value, Value)> = vec![
        (json!({"type": "null"}), json!(null), json!(0)),
        (json!({"type": "boolean"}), json!(false), json!("false")),
        (json!({"type": "number"}), json!(1.5), json!("1.5")),
        (json!({"type": "integer"}), json!(7), json!(7.25)),
        (json!({"type": "string"}), json!(""), json!(null)),
        (json!({"type": ["integer", "string"]}), json!("x"), json!(1.5)),
        (json!({"type": "string", "nullable": true}), json!(null), json!(1)),
        (json!({"enum": ["a", 1, null]}), json!(1.0), json!("b")),
        (json!({"const": {"k": [1, 2]}}), json!({"k": [1.0, 2]}), json!({"k": [2, 1]})),
        (json!({"minimum": 1, "exclusiveMinimum": true}), json!(1.5), json!(1)),
        (json!({"maximum": 10}), json!(10), json!(10.5)),
        (json!({"exclusiveMinimum": 0}), json!(0.1), json!(0)),
        (json!({"multipleOf": 3}), json!(9), json!(10)),
        (json!({"multipleOf": 0.1}), json!(0.3), json!(0.35)),
        (json!({"minLength": 2}), json!("éé"), json!("é")),
        (json!({"maxLength": 2}), json!("日本"), json!("日本語")),
        (json!({"minItems": 1}), json!([0]), json!([])),
        (json!({"uniqueItems": true}), json!([1, "1"]), json!([{"a": 1}, {"a": 1.0}])),
        (
            json!({"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false}),
            json!(["a", 1]),
            json!(["a", 1, 2]),
        ),
        (
            json!({"items": [{"type": "string"}], "additionalItems": {"type": "integer"}}),
            json!(["a", 1, 2]),
            json!(["a", "b"]),
        ),
        (json!({"additionalProperties": {"type": "integer"}}), json!({"a": 1}), json!({"a": "1"})),
        (json!({"minProperties": 1}), json!({"a": 1}), json!({})),
        (json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}), json!(3), json!(3.5)),
        (json!({"oneOf": [{"type": "integer"}, {"type": "number"}]}), json!(3.5), json!(3)),
        (json!({"allOf": [{"minimum": 1}, {"maximum": 2}]}), json!(2), json!(3)),
        (json!({"not": {"type": "null"}}), json!(0), json!(null)),
        (
            json!({"if": {"type": "integer"}, "then": {"minimum": 10}, "else": {"type": "string"}}),
            json!("x"),
            json!(5),
        ),
        (
            json!({"definitions": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/definitions/s"}}}),
            json!({"a": "x"}),
            json!({"a": 1}),
        ),
        (json!(false), json!(null), json!(null)),
    ];
    for (schema, good, bad) in &cases {
        if schema != &json!(false) {
            assert_eq!(validate(schema, good), Ok(()), "{schema} should accept {good}");
        }
        assert!(validate(schema, bad).is_err(), "{schema} should refuse {bad}");
    }
}

#[test]
fn what_is_not_supported_is_ignored_never_refused() {
    let lenient = json!({
        "type": "object",
        "properties": {
            "email": {"type": "string", "format": "email", "pattern": "^[a-z]+$"},
            "when": {"type": "string", "format": "date-time"}
        },
        "patternProperties": {"^x-": {"type": "integer"}},
        "additionalProperties": false,
        "propertyNames": {"maxLength": 1},
        "somethingNew": 42,
        "$ref": "https://example.com/elsewhere.json"
    });
    let answer = json!({"email": "NOT AN EMAIL", "when": "yesterday", "x-anything": "s"});
    assert_eq!(validate(&lenient, &answer), Ok(()));
    // A type name it does not know, a keyword of the wrong shape: not refused.
    assert_eq!(validate(&json!({"type": "decimal", "minimum": "1"}), &json!(0)), Ok(()));
}

#[test]
fn a_ref_loop_is_bounded_and_reported() {
    let looped = json!({"$ref": "#"});
    let err = validate(&looped, &json!(1)).unwrap_err();
    assert!(err.message.contains("deeper than"), "{err}");
    let mutual = json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"});
    assert!(validate(&mutual, &json!({})).is_err());
}

#[test]
fn messages_say_what_is_wrong_and_stay_short() {
    let schema = json!({"properties": {"a/b~c": {"type": "string"}}, "required": ["zz"]});
    let err = validate(&schema, &json!({"a/b~c": 1, "zz": 0})).unwrap_err();
    assert_eq!(err.path, "/a~1b~0c", "escaped as RFC 6901 says");
    assert_eq!(err.to_string(), "at /a~1b~0c: expected string, got integer");
    let err = validate(&schema, &json!({})).unwrap_err();
    assert_eq!(err.to_string(), "at the root: the required property \"zz\" is missing");

    // A long path keeps its tail; a long name and long enum values are cut.
    let deep = json!({"items": {"items": {"items": {"type": "string"}}}});
    let long = "k".repeat(500);
    let mut value = json!([[[1]]]);
    for _ in 0..3 {
        value = json!({ long.clone(): value });
    }
    let nested =
        json!({"additionalProperties": {"additionalProperties": {"additionalProperties": deep}}});
    let err = validate(&nested, &value).unwrap_err();
    assert!(err.path.starts_with('…') && err.path.ends_with("/0/0/0"), "{}", err.path);
    assert!(err.path.chars().count() <= 121, "{}", err.path.len());
    let big_enum = json!({"enum": (0..500).collect::<Vec<_>>()});
    let err = validate(&big_enum, &json!(-1)).unwrap_err();
    assert!(err.message.chars().count() < 300, "{}", err.message);
    let err = validate(&json!({"required": [long]}), &json!({})).unwrap_err();
    assert!(err.message.chars().count() < 300, "{}", err.message);
}
