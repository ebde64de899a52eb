//! Cloud Storage's JSON API on the Vertex AI Gemini fake ([`super`]): the
//! bucket a batch prediction job reads its requests from and writes its
//! answers to. Served beside the jobs on the same fake, so a test points the
//! gateway's storage endpoint at [`crate::FakeUpstream::base_url`] and sees
//! both sides of the hand-over.
//!
//! Only what a batch needs: a media upload, a listing by prefix, a download
//! and an object's metadata. Buckets need no creating (any well-formed name
//! is a bucket, empty until written to); errors are in GCS's own shape
//! (`{"error": {"code", "message", "errors": [{"message", "domain", "reason"}]}}`),
//! not Vertex AI's.

use std::collections::BTreeMap;

use axum::body::Body;
use axum::http::header::{CONTENT_TYPE, HeaderValue};
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Value, json};

use super::{Batches, now, ok, rfc3339};
use crate::fake::{Received, plain};
use crate::sigv4::percent_decode;

/// The longest object name GCS takes (bytes of UTF-8).
const MAX_NAME: usize = 1024;

/// A fake's objects, by bucket and name (so a listing is in name order).
#[derive(Debug, Default)]
pub(super) struct Gcs {
    objects: BTreeMap<(String, String), Object>,
    /// The last output directory's stamp (µs since the epoch): each job's
    /// directory is named from a later one, so no two collide.
    last_stamp: u64,
}

#[derive(Debug)]
struct Object {
    bytes: Bytes,
    content_type: String,
    /// 1 when first written, then one more at each overwrite.
    generation: u64,
    created: u64,
    updated: u64,
}

impl Gcs {
    /// The bytes of `gs://bucket/name`, if stored.
    pub(super) fn read(&self, bucket: &str, name: &str) -> Option<&Bytes> {
        self.objects.get(&(bucket.to_owned(), name.to_owned())).map(|o| &o.bytes)
    }

    /// Stores `bytes` as `gs://bucket/name` (a new generation if it was
    /// there): what an upload does, and a job writing its answers.
    pub(super) fn write(&mut self, bucket: &str, name: &str, bytes: Bytes, content_type: &str) {
        let now = now();
        let key = (bucket.to_owned(), name.to_owned());
        let (generation, created) =
            self.objects.get(&key).map_or((1, now), |o| (o.generation + 1, o.created));
        let object = Object {
            bytes,
            content_type: content_type.to_owned(),
            generation,
            created,
            updated: now,
        };
        self.objects.insert(key, object);
    }

    /// `gs://bucket/name` of every object, sorted.
    pub(super) fn uris(&self) -> Vec<String> {
        self.objects.keys().map(|(bucket, name)| format!("gs://{bucket}/{name}")).collect()
    }

    /// A stamp for a new output directory, in µs: now, or just after the
    /// last one handed out.
    pub(super) fn stamp(&mut self) -> u64 {
        let micros = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        self.last_stamp = micros.max(self.last_stamp.saturating_add(1));
        self.last_stamp
    }
}

/// `POST /upload/storage/v1/b/{bucket}/o?uploadType=media&name=…`: the body
/// is the object.
pub(super) fn upload(st: &mut Batches, bucket: &str, rx: &Received) -> Response {
    if let Some(refusal) = bad_bucket(bucket) {
        return refusal;
    }
    match param(rx, "uploadType").as_deref() {
        Some("media") => {}
        Some(other) => {
            let message =
                format!("Invalid upload type '{other}': this fake takes only uploadType=media.");
            return error(400, "invalid", &message);
        }
        None => {
            let message = "Upload requests must include an uploadType URL parameter and a URL \
                           path beginning with /upload/";
            return error(400, "wrongUrlForUpload", message);
        }
    }
    let name = match param(rx, "name") {
        Some(name) if !name.is_empty() => name,
        _ => return error(400, "required", "Required"),
    };
    if name.len() > MAX_NAME || name.contains(['\r', '\n']) {
        return error(400, "invalid", "The specified object name is not valid.");
    }
    let content_type = rx.header("content-type").unwrap_or("application/octet-stream");
    st.gcs.write(bucket, &name, rx.raw.clone(), content_type);
    match st.gcs.objects.get(&(bucket.to_owned(), name.clone())) {
        Some(object) => ok(resource(bucket, &name, object)),
        None => plain(500, "text/plain", "fake upstream: the object was not kept".into()),
    }
}

/// `GET /storage/v1/b/{bucket}/o?prefix=…`: the objects whose name starts
/// with the prefix, in name order; no `items` when there are none, as GCS
/// answers. One page: the fake never answers a `nextPageToken`.
pub(super) fn list(st: &Batches, bucket: &str, rx: &Received) -> Response {
    if let Some(refusal) = bad_bucket(bucket) {
        return refusal;
    }
    if param(rx, "delimiter").is_some() {
        // Real GCS folds names into `prefixes`; answering the flat list
        // instead would mislead a test, so the fake says it cannot.
        return error(400, "invalid", "fake upstream: delimiter is not served by this fake");
    }
    let prefix = param(rx, "prefix").unwrap_or_default();
    let items: Vec<Value> = st
        .gcs
        .objects
        .iter()
        .filter(|((b, name), _)| b == bucket && name.starts_with(&prefix))
        .map(|((b, name), object)| resource(b, name, object))
        .collect();
    let mut body = json!({"kind": "storage#objects"});
    if !items.is_empty() {
        body["items"] = Value::Array(items);
    }
    ok(body)
}

/// `GET /storage/v1/b/{bucket}/o/{name}`: with `alt=media` the bytes, else
/// the object resource.
pub(super) fn get(st: &Batches, bucket: &str, name: &str, rx: &Received) -> Response {
    if let Some(refusal) = bad_bucket(bucket) {
        return refusal;
    }
    let Some(object) = st.gcs.objects.get(&(bucket.to_owned(), name.to_owned())) else {
        return error(404, "notFound", &format!("No such object: {bucket}/{name}"));
    };
    match param(rx, "alt").as_deref() {
        Some("media") => {
            let mut response = Response::new(Body::from(object.bytes.clone()));
            let kind = HeaderValue::from_str(&object.content_type)
                .unwrap_or(HeaderValue::from_static("application/octet-stream"));
            response.headers_mut().insert(CONTENT_TYPE, kind);
            response
        }
        None | Some("json") => ok(resource(bucket, name, object)),
        Some(other) => error(400, "invalid", &format!("Invalid value for alt: {other}")),
    }
}

/// The object resource, int64s as strings as Google writes them.
fn resource(bucket: &str, name: &str, object: &Object) -> Value {
    json!({
        "kind": "storage#object",
        "id": format!("{bucket}/{name}/{}", object.generation),
        "name": name,
        "bucket": bucket,
        "size": object.bytes.len().to_string(),
        "contentType": object.content_type,
        "generation": object.generation.to_string(),
        "metageneration": "1",
        "storageClass": "STANDARD",
        "timeCreated": rfc3339(object.created),
        "updated": rfc3339(object.updated),
    })
}

/// A refusal of a bucket name GCS would not take: one of 3 to 222
/// characters of lowercase letters, digits, `-`, `_` and `.`, starting and
/// ending with a letter or digit, is taken.
fn bad_bucket(bucket: &str) -> Option<Response> {
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c);
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let ok = (3..=222).contains(&bucket.len())
        && bucket.chars().all(allowed)
        && edge(bucket.chars().next())
        && edge(bucket.chars().next_back());
    (!ok).then(|| error(400, "invalid", &format!("Invalid bucket name: '{bucket}'")))
}

/// Query parameter `name`, decoded (`+` is a space, as forms write it).
fn param(rx: &Received, name: &str) -> Option<String> {
    rx.query.as_deref()?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (percent_decode(k) == name).then(|| percent_decode(&v.replace('+', " ")))
    })
}

/// An error in Cloud Storage's shape.
pub(super) fn error(status: u16, reason: &str, message: &str) -> Response {
    let body = json!({"error": {"code": status, "message": message,
                                "errors": [{"message": message, "domain": "global",
                                            "reason": reason}]}});
    plain(status, "application/json", body.to_string())
}

/// A credential Cloud Storage does not take, in its shape.
pub(super) fn unauthorized() -> Response {
    let message = "Invalid Credentials";
    let body = json!({"error": {"code": 401, "message": message,
                                "errors": [{"message": message, "domain": "global",
                                            "reason": "authError", "locationType": "header",
                                            "location": "Authorization"}]}});
    plain(401, "application/json", body.to_string())
}
