//! Amazon S3 on the Bedrock fake ([`super`]): the bucket a Bedrock batch
//! inference job reads its records from and writes its answers to. Served
//! beside the jobs on the same fake, path-style (`{base}/{bucket}/{key…}`), so
//! a test points the gateway's S3 endpoint at
//! [`crate::FakeUpstream::base_url`] and sees both sides of the hand-over.
//!
//! Only what a batch needs: `PUT` an object and `GET` it back (no listing, no
//! multipart, no ranges). Buckets need no creating: any well-formed name is a
//! bucket, empty until written to. Every request must be SigV4-signed for
//! service `s3` in the fake's region, with the body's hash in a signed
//! `x-amz-content-sha256`, over S3's own canonical request
//! ([`crate::sigv4::verify_s3`]); S3 takes no Bedrock API key. Errors are in
//! S3's XML shape (`<Error><Code>…</Code><Message>…</Message>…</Error>`),
//! not Bedrock's JSON.

use std::collections::BTreeMap;
use std::time::SystemTime;

use axum::body::Body;
use axum::http::Method;
use axum::http::header::{CONTENT_TYPE, ETAG, HeaderValue};
use axum::response::Response;
use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::bedrock::BedrockAuth;
use crate::fake::{Received, plain};
use crate::sigv4;

/// The longest key S3 takes (bytes of UTF-8).
const MAX_KEY: usize = 1024;

/// A fake's objects, by bucket and key (so [`S3::uris`] comes out sorted).
#[derive(Debug, Default)]
pub(super) struct S3 {
    objects: BTreeMap<(String, String), Object>,
}

#[derive(Debug)]
struct Object {
    bytes: Bytes,
    content_type: String,
    /// Quoted, as S3 sends it. S3's is the MD5 of a simple upload's body; the
    /// fake has no MD5 and hands out part of the SHA-256 instead: a client
    /// may compare ETags, never recompute one.
    etag: String,
}

impl S3 {
    /// The bytes of `s3://bucket/key`, if stored.
    pub(super) fn read(&self, bucket: &str, key: &str) -> Option<&Bytes> {
        self.objects.get(&(bucket.to_owned(), key.to_owned())).map(|o| &o.bytes)
    }

    /// Stores `bytes` as `s3://bucket/key`, replacing what was there: what a
    /// `PUT` does, and a job writing its answers.
    pub(super) fn write(&mut self, bucket: &str, key: &str, bytes: Bytes, content_type: &str) {
        let digest: String =
            Sha256::digest(&bytes).iter().take(16).map(|b| format!("{b:02x}")).collect();
        let object =
            Object { bytes, content_type: content_type.to_owned(), etag: format!("\"{digest}\"") };
        self.objects.insert((bucket.to_owned(), key.to_owned()), object);
    }

    /// `s3://bucket/key` of every object, sorted.
    pub(super) fn uris(&self) -> Vec<String> {
        self.objects.keys().map(|(bucket, key)| format!("s3://{bucket}/{key}")).collect()
    }
}

/// The bucket and key (decoded) of an object route: a `GET` or `PUT` of
/// `/{bucket}/{key…}` that is not Bedrock's (`/model/…`, the runtime's, and
/// `/model-invocation-job…`, batch inference's). `None` for any other
/// request: the Bedrock fake answers it (so a `POST` to an unknown path still
/// gets Bedrock's 404).
pub(super) fn route(method: &Method, path: &str) -> Option<(String, String)> {
    if method != Method::GET && method != Method::PUT {
        return None;
    }
    let (bucket, key) = path.strip_prefix('/')?.split_once('/')?;
    if bucket.is_empty()
        || key.is_empty()
        || bucket == "model"
        || bucket == super::bedrock_batch::ROOT
    {
        return None;
    }
    Some((sigv4::percent_decode(bucket), sigv4::percent_decode(key)))
}

/// Checks a request's credentials as S3 does: SigV4 for service `s3` in the
/// fake's region with the one key pair it accepts, the date within
/// [`sigv4::MAX_SKEW`] of `now`, the payload's hash sent, signed and right.
/// `Some`: S3's 403, in its shape.
pub(super) fn refusal(auth: &BedrockAuth, rx: &Received, now: SystemTime) -> Option<Response> {
    check(auth, rx, now).err().map(|(code, message)| error(403, code, &message, None))
}

/// [`refusal`]'s checks: `Err` is S3's error code and message.
fn check(auth: &BedrockAuth, rx: &Received, now: SystemTime) -> Result<(), (&'static str, String)> {
    let denied = |message: String| Err(("AccessDenied", message));
    let Some(authorization) = rx.header("authorization") else {
        return denied("Access Denied".into());
    };
    if authorization.starts_with("Bearer ") {
        return denied(
            "Unsupported Authorization Type: S3 takes SigV4, not a Bedrock API key.".into(),
        );
    }
    let parsed = match sigv4::authorization(&rx.headers) {
        Ok(parsed) => parsed,
        Err(why) => return denied(format!("The authorization header is malformed: {why}")),
    };
    if parsed.access_key_id != auth.access_key_id {
        let message = "The AWS Access Key Id you provided does not exist in our records.";
        return Err(("InvalidAccessKeyId", message.into()));
    }
    let mismatch = |why: &str| {
        let message = format!(
            "The request signature we calculated does not match the signature you provided. \
             Check your key and signing method. ({why})"
        );
        Err(("SignatureDoesNotMatch", message))
    };
    if (parsed.region.as_str(), parsed.service.as_str()) != (auth.region.as_str(), "s3") {
        let why =
            format!("signed for {}/{}, expected {}/s3", parsed.region, parsed.service, auth.region);
        return mismatch(&why);
    }
    let amz_date = rx.header("x-amz-date").unwrap_or_default();
    match sigv4::skew(amz_date, now) {
        None => return denied(format!("Bad x-amz-date {amz_date:?}")),
        Some(skew) if skew > sigv4::MAX_SKEW => {
            let message = "The difference between the request time and the current time is too \
                           large.";
            return Err(("RequestTimeTooSkewed", message.into()));
        }
        Some(_) => {}
    }
    let target = match &rx.query {
        Some(q) => format!("{}?{q}", rx.path),
        None => rx.path.clone(),
    };
    let verified = sigv4::verify_s3(
        &rx.method,
        &target,
        &rx.headers,
        &rx.raw,
        &auth.secret_access_key,
        &auth.region,
    );
    match verified {
        Ok(_) => Ok(()),
        Err(why) => mismatch(&why),
    }
}

/// Serves an object route whose credentials were checked.
pub(super) fn serve(
    s3: &mut S3,
    method: &Method,
    bucket: &str,
    key: &str,
    rx: &Received,
) -> Response {
    if let Some(refusal) = bad_name(bucket, key) {
        return refusal;
    }
    if let Some(q) = &rx.query {
        let multipart = q.split('&').any(|kv| {
            let k = kv.split_once('=').map_or(kv, |(k, _)| k);
            matches!(k, "uploads" | "uploadId" | "partNumber")
        });
        if multipart {
            let message = "fake upstream: multipart uploads are not served; PUT the whole object.";
            return error(501, "NotImplemented", message, Some(&format!("/{bucket}/{key}")));
        }
    }
    if method == Method::PUT {
        let content_type = rx.header("content-type").unwrap_or("binary/octet-stream");
        s3.write(bucket, key, rx.raw.clone(), content_type);
        let etag = s3.objects.get(&(bucket.to_owned(), key.to_owned())).map(|o| o.etag.clone());
        let mut response = Response::new(Body::empty());
        if let Some(etag) = etag.and_then(|e| HeaderValue::from_str(&e).ok()) {
            response.headers_mut().insert(ETAG, etag);
        }
        return response;
    }
    let Some(object) = s3.objects.get(&(bucket.to_owned(), key.to_owned())) else {
        let resource = format!("/{bucket}/{key}");
        return error(404, "NoSuchKey", "The specified key does not exist.", Some(&resource));
    };
    let mut response = Response::new(Body::from(object.bytes.clone()));
    let kind = HeaderValue::from_str(&object.content_type)
        .unwrap_or(HeaderValue::from_static("binary/octet-stream"));
    response.headers_mut().insert(CONTENT_TYPE, kind);
    if let Ok(etag) = HeaderValue::from_str(&object.etag) {
        response.headers_mut().insert(ETAG, etag);
    }
    response
}

/// A refusal of a bucket name S3 would not take (3 to 63 characters of
/// lowercase letters, digits, `.` and `-`, starting and ending with a letter
/// or digit), or of a key over [`MAX_KEY`] bytes.
fn bad_name(bucket: &str, key: &str) -> Option<Response> {
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || ".-".contains(c);
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let good = (3..=63).contains(&bucket.len())
        && bucket.chars().all(allowed)
        && edge(bucket.chars().next())
        && edge(bucket.chars().next_back());
    if !good {
        return Some(error(400, "InvalidBucketName", "The specified bucket is not valid.", None));
    }
    (key.len() > MAX_KEY).then(|| error(400, "KeyTooLongError", "Your key is too long", None))
}

/// An error in S3's XML shape, with its `Resource` when it names one.
pub(super) fn error(status: u16, code: &str, message: &str, resource: Option<&str>) -> Response {
    let resource =
        resource.map_or_else(String::new, |r| format!("<Resource>{}</Resource>", xml(r)));
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{}\
         </Message>{resource}<RequestId>FAKES3REQUEST0001</RequestId></Error>",
        xml(message)
    );
    plain(status, "application/xml", body)
}

/// `text` escaped for XML character data.
fn xml(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
