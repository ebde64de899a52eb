//! Vertex AI's `labels` on a Gemini generateContent request: Vertex takes
//! them for billing (the Gemini API does not), and a batch prediction job
//! echoes them with each answer, which is how a client maps its answers back
//! to its requests. A Vertex Gemini fake checks them as Google checks
//! resource labels, then validates the rest of the body by Gemini's rules.

use serde_json::Value;

/// The most labels one request carries.
const MAX_LABELS: usize = 64;

/// The most characters of a label's key or value.
const MAX_LEN: usize = 63;

/// The body without its `labels` once they are well formed (`None`: it has
/// none, validate the body as it is); `Err`: Vertex's refusal.
pub(super) fn strip(body: &Value) -> Result<Option<Value>, String> {
    let Some(labels) = body.get("labels") else { return Ok(None) };
    check(labels)?;
    let mut rest = body.clone();
    if let Some(map) = rest.as_object_mut() {
        map.remove("labels");
    }
    Ok(Some(rest))
}

/// Google's label rules: an object of at most 64 string pairs; keys of 1 to
/// 63 lowercase letters, digits, `_` or `-`, starting with a lowercase
/// letter; values of at most 63 of the same (empty allowed).
pub(super) fn check(labels: &Value) -> Result<(), String> {
    let Some(map) = labels.as_object() else {
        return Err("Invalid value at 'labels': expected a map of string to string.".into());
    };
    if map.len() > MAX_LABELS {
        return Err(format!("labels: at most {MAX_LABELS} labels are allowed."));
    }
    let allowed = |c: char| c.is_lowercase() || c.is_ascii_digit() || c == '_' || c == '-';
    for (key, value) in map {
        let key_ok = key.chars().next().is_some_and(char::is_lowercase)
            && key.chars().count() <= MAX_LEN
            && key.chars().all(allowed);
        if !key_ok {
            return Err(format!(
                "labels: key {key:?} is invalid: keys are 1 to {MAX_LEN} lowercase letters, \
                 digits, '_' or '-', starting with a lowercase letter."
            ));
        }
        let Some(value) = value.as_str() else {
            return Err(format!("Invalid value at 'labels[{key}]': expected a string."));
        };
        if value.chars().count() > MAX_LEN || !value.chars().all(allowed) {
            return Err(format!(
                "labels: value {value:?} of key {key:?} is invalid: values are at most {MAX_LEN} \
                 lowercase letters, digits, '_' or '-'."
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn labels_follow_googles_rules_and_are_stripped_before_validation() {
        let body = json!({"contents": [], "labels": {"switchyard_line": "line-0", "team": ""}});
        assert_eq!(strip(&body), Ok(Some(json!({"contents": []}))));
        assert_eq!(strip(&json!({"contents": []})), Ok(None));
        for bad in [
            json!({"Upper": "x"}),
            json!({"0key": "x"}),
            json!({"": "x"}),
            json!({"k": "Upper"}),
            json!({"k": 1}),
            json!({"k": "has space"}),
            json!({"k": "x".repeat(64)}),
            json!(["k"]),
        ] {
            assert!(check(&bad).is_err(), "{bad}");
        }
        let longest: serde_json::Map<String, Value> =
            [("k".repeat(63), json!("v".repeat(63)))].into_iter().collect();
        assert_eq!(check(&Value::Object(longest)), Ok(()));
        let many: serde_json::Map<String, Value> =
            (0..65).map(|i| (format!("k{i}"), json!("v"))).collect();
        assert!(check(&Value::Object(many)).is_err());
    }
}
