//! SigV4 request signing, with the `aws-sigv4` crate.

use std::time::SystemTime;

use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;

use super::super::CredentialError;
use super::AwsCredentials;

/// The headers that sign a request with SigV4, to add to it as they are:
/// `x-amz-date`, `authorization`, and `x-amz-security-token` when the
/// credentials have a session token. No `x-amz-content-sha256`: the body's
/// hash is in the signature all the same (Bedrock and most services want no
/// more), except for S3 (`service` `s3`), which requires it, and whose path
/// is signed as it is sent, not encoded again.
///
/// - `url` is the request's whole URL, already percent-encoded (a Bedrock
///   model ID's `:` as `%3A`), as reqwest will send it (what is signed is the
///   URL as reqwest writes it); its path is encoded once more for the
///   canonical request, as every service but S3 expects.
/// - `headers` are the ones the request will carry that are to be signed
///   (`content-type`, say); `host` is taken from the URL unless given.
///   `authorization`, `user-agent`, `x-amzn-trace-id` and `transfer-encoding`
///   are never signed.
/// - `body` is the body's exact final bytes: a byte changed after signing
///   fails the request.
///
/// Fails ([`CredentialError::Config`]) on a URL with no host or a header
/// that is not a valid HTTP header; the error never shows the credentials.
#[allow(clippy::too_many_arguments)]
pub fn sign(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    creds: &AwsCredentials,
    region: &str,
    service: &str,
    time: SystemTime,
) -> Result<Vec<(String, String)>, CredentialError> {
    let refused = |m: String| CredentialError::config("SigV4 signing", m);
    let shown = crate::util::redact_userinfo(url);
    // The crate panics on a URL without a host: checked first.
    let parsed =
        reqwest::Url::parse(url).map_err(|e| refused(format!("{shown:?} is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none_or(str::is_empty) {
        return Err(refused(format!("{shown:?}: not an http(s) URL with a host")));
    }
    if region.is_empty() || service.is_empty() {
        return Err(refused("a region and a service are needed".to_owned()));
    }
    let identity: Identity = aws_credential_types::Credentials::new(
        creds.access_key_id.clone(),
        creds.secret_access_key.expose().to_owned(),
        creds.session_token.as_ref().map(|t| t.expose().to_owned()),
        None,
        "switchyard",
    )
    .into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(time)
        .settings(settings(service))
        .build()
        .map_err(|e| refused(format!("signing parameters: {e}")))?
        .into();
    // What the client will send: the URL as reqwest writes it.
    let request = SignableRequest::new(
        method,
        parsed.as_str(),
        headers.iter().map(|(k, v)| (*k, *v)),
        SignableBody::Bytes(body),
    )
    .map_err(|e| refused(format!("{shown:?} cannot be signed: {e}")))?;
    // The crate logs the canonical request at TRACE, session token included:
    // nothing it logs is let through while it signs.
    let signed =
        tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), || {
            aws_sigv4::http_request::sign(request, &params)
        });
    let (instructions, _signature) = signed
        // The crate's errors name what is malformed (a header, the URL), not
        // the keys.
        .map_err(|e| refused(format!("cannot sign the request: {e}")))?
        .into_parts();
    Ok(instructions.headers().map(|(k, v)| (k.to_owned(), v.to_owned())).collect())
}

/// S3 signs its path as sent and wants the body's hash in a header of its
/// own; every other service the defaults.
fn settings(service: &str) -> SigningSettings {
    let mut settings = SigningSettings::default();
    if service == "s3" {
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    }
    settings
}

#[cfg(test)]
#[path = "sign_tests.rs"]
pub(super) mod tests;
