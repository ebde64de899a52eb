//! The body size limit, checked while the body is read (the nesting depth and
//! the model id are checked where it is parsed, `switchyard_core::exec::context`).

use axum::body::{Body, Bytes};
use switchyard_core::GatewayError;
use switchyard_protocol::ErrorCode;

pub async fn read_body(body: Body, limit: usize) -> Result<Bytes, GatewayError> {
    axum::body::to_bytes(body, limit).await.map_err(|_| {
        GatewayError::new(
            ErrorCode::RequestTooLarge,
            format!("request body larger than {limit} bytes (or unreadable)"),
        )
    })
}
