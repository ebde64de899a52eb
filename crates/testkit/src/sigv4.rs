//! An independent AWS SigV4 verifier, written from AWS's description of the
//! algorithm and sharing no code with the gateway's signer
//! (`switchyard_core::credentials::aws::sign`): a signing bug cannot hide
//! behind a shared helper. The core's signing tests and the Bedrock fake
//! ([`Vendor::Bedrock`](crate::Vendor::Bedrock)) both judge requests with it,
//! so there is one verifier.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

/// The parts of an `Authorization: AWS4-HMAC-SHA256 …` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorization {
    /// The access key ID.
    pub access_key_id: String,
    /// The scope's date, `YYYYMMDD`.
    pub date: String,
    /// The scope's region.
    pub region: String,
    /// The scope's service.
    pub service: String,
    /// `SignedHeaders`, as sent (`;`-separated, lowercase).
    pub signed_headers: String,
    /// `Signature`, hex.
    pub signature: String,
}

/// Parses the `authorization` header among `headers` (any case).
pub fn authorization(headers: &[(String, String)]) -> Result<Authorization, String> {
    let value = header(headers, "authorization").first().copied().ok_or("no authorization")?;
    let rest = value.strip_prefix("AWS4-HMAC-SHA256 ").ok_or("not AWS4-HMAC-SHA256")?;
    let mut parts = rest.split(", ");
    let credential =
        parts.next().and_then(|p| p.strip_prefix("Credential=")).ok_or("no Credential")?;
    let signed =
        parts.next().and_then(|p| p.strip_prefix("SignedHeaders=")).ok_or("no SignedHeaders")?;
    let signature =
        parts.next().and_then(|p| p.strip_prefix("Signature=")).ok_or("no Signature")?;
    let scope: Vec<&str> = credential.split('/').collect();
    let [akid, date, region, service, "aws4_request"] = scope[..] else {
        return Err(format!("bad scope {credential}"));
    };
    Ok(Authorization {
        access_key_id: akid.to_owned(),
        date: date.to_owned(),
        region: region.to_owned(),
        service: service.to_owned(),
        signed_headers: signed.to_owned(),
        signature: signature.to_owned(),
    })
}

/// Recomputes the signature of a request as received (`target`: the path and
/// query exactly as sent, percent-encoding kept; `headers` include `host`) with
/// `secret`, and compares it with its `authorization` header. Checks the scope
/// (`region`, `service`, `aws4_request`), that `x-amz-date` matches the scope's
/// date, and that `host`, `x-amz-date` and (when sent) `x-amz-security-token`
/// are signed. Returns the access key ID. Does not judge the time: see
/// [`skew`]. The canonical request is every service's but S3's (the path
/// encoded once more): S3's is [`verify_s3`].
pub fn verify(
    method: &str,
    target: &str,
    headers: &[(String, String)],
    body: &[u8],
    secret: &str,
    region: &str,
    service: &str,
) -> Result<String, String> {
    verify_as(Canon::Standard, method, target, headers, body, secret, (region, service))
}

/// [`verify`] for Amazon S3 (service `s3`), whose canonical request differs
/// from every other service's in two ways a client must get right: the path
/// is **not** encoded twice (each segment is decoded, then encoded once, so
/// `/b/test%24file.text` signs as itself, not as `%2524`), and the payload's
/// hash is the signed `x-amz-content-sha256` header, which must be sent and
/// must be the body's hex SHA-256 (the fake takes no `UNSIGNED-PAYLOAD` nor
/// chunked uploads: a client sending whole bodies has no need of them).
pub fn verify_s3(
    method: &str,
    target: &str,
    headers: &[(String, String)],
    body: &[u8],
    secret: &str,
    region: &str,
) -> Result<String, String> {
    verify_as(Canon::S3, method, target, headers, body, secret, (region, "s3"))
}

/// Which canonical request a service signs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Canon {
    /// Every service's but S3's.
    Standard,
    S3,
}

fn verify_as(
    canon: Canon,
    method: &str,
    target: &str,
    headers: &[(String, String)],
    body: &[u8],
    secret: &str,
    (region, service): (&str, &str),
) -> Result<String, String> {
    let auth = authorization(headers)?;
    if (auth.region.as_str(), auth.service.as_str()) != (region, service) {
        return Err(format!("signed for {}/{}", auth.region, auth.service));
    }
    let date = auth.date.as_str();
    let amz_date = *header(headers, "x-amz-date").first().ok_or("no x-amz-date")?;
    if !amz_date.starts_with(date) || amz_date.len() != 16 {
        return Err(format!("x-amz-date {amz_date} does not match the scope's {date}"));
    }
    let signed_names: Vec<&str> = auth.signed_headers.split(';').collect();
    let mut must_sign = vec!["host", "x-amz-date"];
    if !header(headers, "x-amz-security-token").is_empty() {
        must_sign.push("x-amz-security-token");
    }
    if let Some(missing) = must_sign.iter().find(|n| !signed_names.contains(n)) {
        return Err(format!("{missing} is not signed"));
    }
    let mut sorted = signed_names.clone();
    sorted.sort_unstable();
    if sorted != signed_names {
        return Err("SignedHeaders not sorted".to_owned());
    }

    let body_hash = hex(&Sha256::digest(body));
    if canon == Canon::S3 {
        let sent = *header(headers, "x-amz-content-sha256").first().ok_or(
            "no x-amz-content-sha256: S3 wants the payload's hash in a header, and signed",
        )?;
        if !signed_names.contains(&"x-amz-content-sha256") {
            return Err("x-amz-content-sha256 is not signed".to_owned());
        }
        if sent != body_hash {
            return Err(format!(
                "x-amz-content-sha256 {sent} is not the body's SHA-256 ({body_hash})"
            ));
        }
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    // Every service but S3 encodes the path once more: `%3A` as sent is
    // `%253A` here. S3 signs the path as encoded once (`$` or `%24` as sent
    // are both `%24`).
    let canonical_uri = match (path.is_empty(), canon) {
        (true, _) => "/".to_owned(),
        (false, Canon::Standard) => path.split('/').map(uri_encode).collect::<Vec<_>>().join("/"),
        (false, Canon::S3) => {
            path.split('/').map(|s| uri_encode(&percent_decode(s))).collect::<Vec<_>>().join("/")
        }
    };
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (uri_encode(&percent_decode(k)), uri_encode(&percent_decode(v)))
        })
        .collect();
    pairs.sort();
    let canonical_query =
        pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&");
    let mut canonical_headers = String::new();
    for name in &signed_names {
        let values: Vec<String> = header(headers, name)
            .iter()
            .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        if values.is_empty() {
            return Err(format!("signed header {name} not sent"));
        }
        canonical_headers.push_str(&format!("{name}:{}\n", values.join(",")));
    }
    let canonical_request = format!(
        "{method}\n{canonical_uri}\n{canonical_query}\n{canonical_headers}\n{}\n{}",
        auth.signed_headers, body_hash
    );
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{date}/{region}/{service}/aws4_request\n{}",
        hex(&Sha256::digest(canonical_request.as_bytes()))
    );
    let key = [date, region, service, "aws4_request"]
        .iter()
        .fold(format!("AWS4{secret}").into_bytes(), |key, part| hmac(&key, part));
    let expected = hex(&hmac(&key, &string_to_sign));
    if expected == auth.signature {
        Ok(auth.access_key_id)
    } else {
        Err("signature mismatch".to_owned())
    }
}

/// AWS refuses a request whose `x-amz-date` is more than this far from its clock.
pub const MAX_SKEW: Duration = Duration::from_secs(5 * 60);

/// How far `amz_date` (`YYYYMMDDTHHMMSSZ`) is from `now`, either way; `None` if
/// it is not such a time.
pub fn skew(amz_date: &str, now: SystemTime) -> Option<Duration> {
    let signed = parse_amz_date(amz_date)?;
    Some(now.duration_since(signed).unwrap_or_else(|e| e.duration()))
}

/// `YYYYMMDDTHHMMSSZ` as a time.
pub fn parse_amz_date(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<u64>().ok();
    let (y, mo, d) = (num(0..4)?, num(4..6)?, num(6..8)?);
    let (h, mi, sec) = (num(9..11)?, num(11..13)?, num(13..15)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm), years ≥ 1970.
    let (y, m) = if mo <= 2 { (y.checked_sub(1)?, mo + 9) } else { (y, mo - 3) };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    Some(UNIX_EPOCH + Duration::from_secs(days * 86_400 + h * 3_600 + mi * 60 + sec))
}

/// `time` as `YYYYMMDDTHHMMSSZ` (for tests that forge a stale date).
pub fn format_amz_date(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // The inverse of `parse_amz_date`'s day count.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    format!("{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z", rem / 3_600, rem % 3_600 / 60, rem % 60)
}

/// RFC 3986 encoding as SigV4 wants it: all but the unreserved characters.
pub fn uri_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `%XX` sequences decoded (a malformed one is kept as it is); invalid UTF-8
/// is replaced.
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex_at = |j: usize| b.get(j).and_then(|c| char::from(*c).to_digit(16));
        match (b[i], hex_at(i + 1), hex_at(i + 2)) {
            (b'%', Some(hi), Some(lo)) => {
                out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'?'));
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()).collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hmac(key: &[u8], data: &str) -> Vec<u8> {
    // HMAC takes a key of any length: this cannot fail.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else { return Vec::new() };
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amz_dates_round_trip() {
        // 2015-08-30T12:36:00Z, the AWS test suite's time.
        let t = UNIX_EPOCH + Duration::from_secs(1_440_938_160);
        assert_eq!(format_amz_date(t), "20150830T123600Z");
        assert_eq!(parse_amz_date("20150830T123600Z"), Some(t));
        let leap = UNIX_EPOCH + Duration::from_secs(1_709_208_000); // 2024-02-29T12:00:00Z
        assert_eq!(parse_amz_date(&format_amz_date(leap)), Some(leap));
        assert_eq!(parse_amz_date("2015-08-30T12:36"), None);
        assert_eq!(skew("20150830T124100Z", t), Some(Duration::from_secs(300)));
    }

    /// AWS's own S3 examples ("Examples of signature calculations", the
    /// S3 API reference): the key `test$file.text` signs as `/test%24file.text`,
    /// once encoded, whether `$` is sent raw or escaped.
    #[test]
    fn s3_verification_matches_aws_s_documented_examples() {
        const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
        let cred = "AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request";
        let headers = |signed: &str, sig: &str, hash: &str, extra: &[(&str, &str)]| {
            let mut h: Vec<(String, String)> = vec![
                ("host".into(), "examplebucket.s3.amazonaws.com".into()),
                ("x-amz-date".into(), "20130524T000000Z".into()),
                ("x-amz-content-sha256".into(), hash.into()),
                (
                    "authorization".into(),
                    format!(
                        "AWS4-HMAC-SHA256 Credential={cred}, SignedHeaders={signed}, \
                         Signature={sig}"
                    ),
                ),
            ];
            h.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
            h
        };
        let body = b"Welcome to Amazon S3.";
        let hash = "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072";
        let put = headers(
            "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
            "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
            hash,
            &[
                ("date", "Fri, 24 May 2013 00:00:00 GMT"),
                ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
            ],
        );
        for target in ["/test%24file.text", "/test$file.text"] {
            let got = verify_s3("PUT", target, &put, body, SECRET, "us-east-1");
            assert_eq!(got.as_deref(), Ok("AKIAIOSFODNN7EXAMPLE"), "{target}");
        }
        // The same request judged as any other service would encode `%24` twice.
        let other = verify("PUT", "/test%24file.text", &put, body, SECRET, "us-east-1", "s3");
        assert_eq!(other, Err("signature mismatch".to_owned()));
        // A body that is not the one hashed, and no hash at all.
        let changed = verify_s3("PUT", "/test%24file.text", &put, b"other", SECRET, "us-east-1");
        assert!(changed.is_err_and(|e| e.contains("not the body's SHA-256")));
        let unhashed: Vec<_> =
            put.iter().filter(|(k, _)| k != "x-amz-content-sha256").cloned().collect();
        let missing = verify_s3("PUT", "/test%24file.text", &unhashed, body, SECRET, "us-east-1");
        assert!(missing.is_err_and(|e| e.contains("no x-amz-content-sha256")));

        let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let get = headers(
            "host;range;x-amz-content-sha256;x-amz-date",
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
            empty,
            &[("range", "bytes=0-9")],
        );
        let got = verify_s3("GET", "/test.txt", &get, b"", SECRET, "us-east-1");
        assert_eq!(got.as_deref(), Ok("AKIAIOSFODNN7EXAMPLE"));
    }

    #[test]
    fn percent_decoding_keeps_what_is_not_an_escape() {
        assert_eq!(percent_decode("a%3A0%20b%zz%"), "a:0 b%zz%");
    }
}
