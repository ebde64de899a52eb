//! The console's one stylesheet, embedded in the binary. Its URL does not
//! change between versions, so it is revalidated rather than cached for long:
//! an ETag of its content answers 304 when nothing changed.

use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

const CSS: &str = include_str!("assets/console.css");

/// The stylesheet's ETag: FNV-1a of its bytes, computed once per process.
fn etag() -> &'static str {
    static TAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TAG.get_or_init(|| {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in CSS.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        format!("\"{h:016x}\"")
    })
}

pub(crate) async fn serve(Path(name): Path<String>, headers: HeaderMap) -> Response {
    if name != "console.css" {
        return StatusCode::NOT_FOUND.into_response();
    }
    let tag = etag();
    let fresh = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) == Some(tag);
    let cache = [(header::ETAG, tag), (header::CACHE_CONTROL, "no-cache")];
    if fresh {
        return (StatusCode::NOT_MODIFIED, cache).into_response();
    }
    (cache, [(header::CONTENT_TYPE, "text/css; charset=utf-8")], CSS).into_response()
}
