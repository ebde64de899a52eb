//! Logged content at rest (`request_contents`, migration 7): deflated, in a
//! table of its own, read back with its record.

use std::io::{Read, Write};

use flate2::Compression;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;

use crate::error::StoreError;

/// The column a record read adds: its content, packed (NULL without one). By
/// the whole key: on PostgreSQL an id alone is not unique across days, and the
/// time picks the one day partition to look in.
pub(super) const PACKED: &str = "(SELECT content FROM request_contents c \
     WHERE c.id = request_records.id AND c.time_ms = request_records.time_ms) AS packed";

/// The most a packed content may inflate to: content is capped when it is
/// logged (`content_cap_bytes`, 64 KiB by default), so a row that inflates
/// past this was not written by the gateway.
const MAX_INFLATED: u64 = 16 * 1024 * 1024;

/// `text`, deflated.
pub(super) fn deflate(text: &str) -> Result<Vec<u8>, StoreError> {
    let mut encoder = DeflateEncoder::new(Vec::with_capacity(text.len() / 4), Compression::fast());
    encoder
        .write_all(text.as_bytes())
        .and_then(|()| encoder.finish())
        .map_err(|e| StoreError::Invalid(format!("content: {e}")))
}

/// What [`deflate`] made, as text.
pub(super) fn inflate(packed: &[u8]) -> Result<String, StoreError> {
    let mut text = String::new();
    DeflateDecoder::new(packed)
        .take(MAX_INFLATED + 1)
        .read_to_string(&mut text)
        .map_err(|e| StoreError::Corrupt(format!("request_contents.content: {e}")))?;
    if text.len() as u64 > MAX_INFLATED {
        return Err(StoreError::Corrupt("request_contents.content inflates past 16 MiB".into()));
    }
    Ok(text)
}

/// The INSERT of `rows` contents.
pub(super) fn insert_sql(sqlite: bool, rows: usize) -> &'static str {
    static SQL: super::Statements = super::Statements::new();
    SQL.get(sqlite, rows, |rows| {
        super::values_sql(
            "INSERT INTO request_contents (id, time_ms, content)",
            3,
            rows,
            sqlite,
            // PostgreSQL's key holds the partition key (migration 8).
            if sqlite {
                " ON CONFLICT (id) DO NOTHING"
            } else {
                " ON CONFLICT (id, time_ms) DO NOTHING"
            },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_round_trips_smaller_and_a_bomb_is_refused() {
        let text =
            r#"{"messages":[{"role":"user","content":"hello"}],"completion":"hi"}"#.repeat(50);
        let packed = deflate(&text).unwrap();
        assert!(packed.len() * 5 < text.len(), "{} of {}", packed.len(), text.len());
        assert_eq!(inflate(&packed).unwrap(), text);
        assert!(matches!(inflate(b"not deflate"), Err(StoreError::Corrupt(_))));
        let bomb = deflate(&"0".repeat(17 * 1024 * 1024)).unwrap();
        assert!(matches!(inflate(&bomb), Err(StoreError::Corrupt(_))));
    }
}
