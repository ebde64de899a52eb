//! Documents kept as deflated JSON (stored responses, media jobs): a
//! conversation or a job's result is mostly repeated text, and compresses
//! several times over.

use std::io::{Read, Write};

use flate2::Compression;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::StoreError;

/// The most a stored document inflates to: one past it is corrupt.
const MAX_INFLATED: u64 = 256 << 20;

/// `value` as deflated JSON; `what` names it in an error.
pub(super) fn pack<T: Serialize + ?Sized>(value: &T, what: &str) -> Result<Vec<u8>, StoreError> {
    let json =
        serde_json::to_vec(value).map_err(|e| StoreError::Invalid(format!("{what}: {e}")))?;
    let mut encoder = DeflateEncoder::new(Vec::with_capacity(json.len() / 4), Compression::fast());
    encoder
        .write_all(&json)
        .and_then(|()| encoder.finish())
        .map_err(|e| StoreError::Invalid(format!("{what}: {e}")))
}

/// A document [`pack`] made; `column` names it in an error.
pub(super) fn unpack<T: DeserializeOwned>(packed: &[u8], column: &str) -> Result<T, StoreError> {
    let mut json = Vec::new();
    DeflateDecoder::new(packed)
        .take(MAX_INFLATED + 1)
        .read_to_end(&mut json)
        .map_err(|e| StoreError::Corrupt(format!("{column}: {e}")))?;
    if json.len() as u64 > MAX_INFLATED {
        return Err(StoreError::Corrupt(format!("{column} inflates past 256 MiB")));
    }
    serde_json::from_slice(&json).map_err(|e| StoreError::Corrupt(format!("{column}: {e}")))
}
