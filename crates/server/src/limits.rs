//! Request limits, checked before anything is parsed or sent upstream: body size,
//! JSON nesting depth, and the shape of the model id.

use axum::body::{Body, Bytes};
use switchyard_core::GatewayError;
use switchyard_protocol::ErrorKind;

pub const MAX_MODEL_ID: usize = 256;

pub async fn read_body(body: Body, limit: usize) -> Result<Bytes, GatewayError> {
    axum::body::to_bytes(body, limit).await.map_err(|_| {
        GatewayError::new(
            413,
            ErrorKind::RequestTooLarge,
            "request_too_large",
            format!("request body larger than {limit} bytes (or unreadable)"),
        )
    })
}

/// Refuse JSON nested deeper than `max` (arrays and objects), without parsing it.
pub fn check_depth(bytes: &[u8], max: usize) -> Result<(), GatewayError> {
    if switchyard_protocol::util::nests_deeper_than(bytes, max) {
        return Err(GatewayError::invalid(
            "json_too_deep",
            format!("request JSON is nested deeper than {max} levels"),
        ));
    }
    Ok(())
}

pub fn check_model_id(model: &str) -> Result<(), GatewayError> {
    if model.len() > MAX_MODEL_ID {
        return Err(GatewayError::invalid(
            "invalid_model",
            format!("model id longer than {MAX_MODEL_ID} characters"),
        ));
    }
    if model.chars().any(char::is_control) {
        return Err(GatewayError::invalid("invalid_model", "model id contains control characters"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_ignores_brackets_in_strings() {
        assert!(check_depth(br#"{"a":[[1]]}"#, 3).is_ok());
        assert!(check_depth(br#"{"a":[[[1]]]}"#, 3).is_err());
        assert!(check_depth(br#"{"a":"[[[[[[\"]]]"}"#, 1).is_ok());
    }

    #[test]
    fn model_ids() {
        assert!(check_model_id("gpt-5").is_ok());
        assert!(check_model_id(&"x".repeat(257)).is_err());
        assert!(check_model_id("gpt\n5").is_err());
    }
}
