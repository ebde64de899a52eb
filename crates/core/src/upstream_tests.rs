use super::*;
use serde_json::json;

#[test]
fn write_object_overrides_and_drops_without_losing_unknown_fields() {
    let Value::Object(map) =
        json!({"model": "a", "x_unknown": {"k": [1, 2]}, "bad": 1, "stream": true})
    else {
        unreachable!()
    };
    let out = write_object(&map, &[("model", json!("b"))], &["bad"]);
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v, json!({"model": "b", "x_unknown": {"k": [1, 2]}, "stream": true}));
}

#[test]
fn retry_after_parses_seconds() {
    let mut h = reqwest::header::HeaderMap::new();
    h.insert("retry-after", "2".parse().unwrap());
    assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
    h.insert("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
    assert_eq!(retry_after(&h), None);
}

#[test]
fn a_transport_outcome_is_transport_and_its_class() {
    use TransportClass as T;
    for class in [T::Connect, T::Timeout, T::Body, T::Reset] {
        // The outcome strings records and dashboards already hold.
        assert_eq!(class.outcome(), format!("transport_{class}"));
        let failure = Failure::Transport { class, message: "x".into() };
        assert_eq!(failure.outcome(), class.outcome());
    }
    assert_eq!(T::Timeout.as_str(), "timeout");
}
