//! What the Anthropic tests share.

use serde_json::Value;

use crate::{ProtocolError, Request};

use super::parse_request;

pub(super) const SIGNATURE: &str = "EqoBCkgIBxABGAIiQL7c4+/Kq9zs3Jtq0m3Uq1Z8h/7uQ9vZ3p5Y0dH6mQx0eF+Ql1k\
    uJw2m0x9Y3A1bq5xZ0t3Yk8aDMu5yF0e6X1o8s2k9hIMq3Xy0C8+/pD0uBzwIjBZm0Qz==";

pub(super) fn parse_value(v: &Value) -> Result<Request, ProtocolError> {
    parse_request(&serde_json::to_vec(v).unwrap())
}
