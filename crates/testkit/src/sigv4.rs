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
/// [`skew`].
pub fn verify(
    method: &str,
    target: &str,
    headers: &[(String, String)],
    body: &[u8],
    secret: &str,
    region: &str,
    service: &str,
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

    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    // Every service but S3 encodes the path once more: `%3A` as sent is
    // `%253A` here.
    let canonical_uri = if path.is_empty() {
        "/".to_owned()
    } else {
        path.split('/').map(uri_encode).collect::<Vec<_>>().join("/")
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
        auth.signed_headers,
        hex(&Sha256::digest(body))
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

    #[test]
    fn percent_decoding_keeps_what_is_not_an_escape() {
        assert_eq!(percent_decode("a%3A0%20b%zz%"), "a:0 b%zz%");
    }
}
