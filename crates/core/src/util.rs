//! Small self-contained helpers: dates, globs, FNV-1a, secrets.

use std::fmt;

/// A calendar date (UTC), enough for retirement dates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    /// The year (proleptic Gregorian).
    pub year: i32,
    /// 1 to 12.
    pub month: u8,
    /// 1 to 31 (not checked against the month).
    pub day: u8,
}

impl Date {
    /// Parse `YYYY-MM-DD`.
    pub fn parse(s: &str) -> Option<Date> {
        let mut it = s.trim().splitn(3, '-');
        let year = it.next()?.parse().ok()?;
        let month: u8 = it.next()?.parse().ok()?;
        let day: u8 = it.next()?.parse().ok()?;
        ((1..=12).contains(&month) && (1..=31).contains(&day)).then_some(Date { year, month, day })
    }

    /// Today in UTC.
    pub fn today() -> Date {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Date::from_days((secs / 86_400) as i64)
    }

    /// Days since 1970-01-01 → civil date (Howard Hinnant's algorithm).
    pub fn from_days(days: i64) -> Date {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
        let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
        Date { year, month, day }
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

/// Glob match: `*` matches any run (including empty), `?` one character; case-
/// sensitive (ids are lowercased before matching). Allocation-free for ASCII input.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    if pattern.is_ascii() && text.is_ascii() {
        return glob_units(pattern.as_bytes(), text.as_bytes());
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    glob_units(&p, &t)
}

fn glob_units<T: PartialEq + Copy + From<u8>>(p: &[T], t: &[T]) -> bool {
    let (star, any) = (T::from(b'*'), T::from(b'?'));
    let (mut pi, mut ti) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some(&c) if c == star => {
                backtrack = Some((pi, ti));
                pi += 1;
            }
            Some(&c) if c == any || Some(&c) == t.get(ti) => {
                pi += 1;
                ti += 1;
            }
            _ => match backtrack {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    backtrack = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p.get(pi..).is_some_and(|rest| rest.iter().all(|&c| c == star))
}

/// 64-bit FNV-1a: a small, stable hash for ids that must not change between
/// versions or machines.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// `Claude (Vertex AI)` → `claude-vertex-ai`.
pub fn slug(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    out
}

/// The most characters of a client's input an error message repeats.
pub const ECHO_CHARS: usize = 100;

/// `s` as an error message may repeat it: its first [`ECHO_CHARS`] characters,
/// then `…` when there were more. Errors quote what the client sent so it can see
/// what was refused; repeating all of it would let a 10 MB model name or event
/// type come back as a 10 MB error.
pub fn excerpt(s: &str) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(ECHO_CHARS) {
        None => std::borrow::Cow::Borrowed(s),
        Some((end, _)) => {
            std::borrow::Cow::Owned(format!("{}\u{2026}", s.get(..end).unwrap_or_default()))
        }
    }
}

/// A secret string (API key). Its `Debug` never shows the value, and it has no
/// `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wrap a key.
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }

    /// The value, for putting in an upstream header. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// A short non-reversible identifier for logs and records: `key-<8 hex>`.
    pub fn fingerprint(&self) -> String {
        format!("key-{:08x}", fnv1a(self.0.as_bytes()) as u32)
    }

    /// Constant-time comparison (for gateway keys presented by clients).
    pub fn matches(&self, presented: &[u8]) -> bool {
        use subtle::ConstantTimeEq;
        self.0.len() == presented.len() && bool::from(self.0.as_bytes().ct_eq(presented))
    }
}

impl From<String> for Secret {
    fn from(s: String) -> Self {
        Secret(s)
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Self {
        Secret(s.to_owned())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({})", self.fingerprint())
    }
}

/// `%XX` escapes decoded (as a URL's userinfo is before it is sent); invalid
/// escapes and invalid UTF-8 kept as they are.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()).filter(|_| b == b'%') {
            Some(v) => {
                out.push(v);
                i += 3;
            }
            None => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Starts of keys that are a fixed format, not part of the secret: the
/// gateway's own (`sy-`) and the OpenAI style many static keys copy (`sk-`).
const KEY_SCHEMES: &[&str] = &["sy-", "sk-"];

/// Most characters of a key's secret part that [`key_prefix`] shows.
pub const KEY_PREFIX_CHARS: usize = 6;

/// What records, logs and listings show of a gateway key: enough to tell keys
/// apart, too little to weaken one. The rule: a known scheme (`sy-`, `sk-`) is
/// shown whole, since it is no secret; of the rest at most
/// [`KEY_PREFIX_CHARS`] characters, and never more than a fifth of them (a
/// generated key, `sy-` and 40 characters, shows `sy-` and 6; a 16-character
/// static key shows 3; a 32-character one 6). `None` when that leaves no
/// character to show (under 5 after the scheme).
pub fn key_prefix(key: &str) -> Option<String> {
    let scheme = KEY_SCHEMES.iter().copied().find(|s| key.starts_with(s)).unwrap_or("");
    let body = key.get(scheme.len()..).unwrap_or_default();
    let shown = (body.chars().count() / 5).min(KEY_PREFIX_CHARS);
    (shown > 0).then(|| format!("{scheme}{}", body.chars().take(shown).collect::<String>()))
}

/// Replace every occurrence of each secret in `text` with `[redacted]`. Used on
/// upstream error bodies before they reach logs, clients or records.
pub fn redact<'a>(text: &str, secrets: impl IntoIterator<Item = &'a Secret>) -> String {
    let mut out = text.to_owned();
    for s in secrets {
        if s.0.len() >= MIN_REDACTED && out.contains(&s.0) {
            out = out.replace(&s.0, "[redacted]");
        }
    }
    out
}

/// `url` without the password in its userinfo (`https://user:****@host/…`),
/// for printing an endpoint: a userinfo with no `:` may be a token standing in
/// for the user (`https://TOKEN@host`), so it is hidden whole. Anything that is
/// not `scheme://authority…` comes back unchanged.
pub fn redact_userinfo(url: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else { return Cow::Borrowed(url) };
    let rest = url.get(scheme_end..).unwrap_or_default();
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = rest.get(..authority_end).unwrap_or_default();
    // The last `@` ends the userinfo: a password may itself hold an `@`.
    let Some(at) = authority.rfind('@') else { return Cow::Borrowed(url) };
    let userinfo = authority.get(..at).unwrap_or_default();
    let shown = match userinfo.split_once(':') {
        Some((user, _)) => format!("{user}:****"),
        None => "****".to_owned(),
    };
    Cow::Owned(format!(
        "{}{shown}{}",
        url.get(..scheme_end).unwrap_or_default(),
        url.get(scheme_end + at..).unwrap_or_default()
    ))
}

/// Shorter values are not treated as secrets: replacing them would mangle text
/// without protecting anything a key of that size could.
const MIN_REDACTED: usize = 8;

/// The credentials one attempt may have put on the wire: every secret of the
/// provider (`ProviderSpec::secrets`: keys, credential headers, userinfo), the
/// key the attempt used (the caller's own, for BYOK) and what its cloud
/// credential minted for it (an access token, a session token, a signature:
/// empty for a keyed provider, so the usual attempt allocates nothing here).
/// Whatever text an upstream sends back passes through this before it travels
/// anywhere.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Redactor<'a> {
    pub platform: &'a [Secret],
    pub used: Option<&'a Secret>,
    pub minted: &'a [Secret],
}

impl Redactor<'_> {
    fn secrets(&self) -> impl Iterator<Item = &Secret> + '_ {
        self.platform.iter().chain(self.used).chain(self.minted)
    }

    /// `text` with every credential replaced.
    pub fn text(&self, text: &str) -> String {
        redact(text, self.secrets())
    }

    /// Upstream bytes about to be forwarded as they are (whole frames, or a whole
    /// answer): every credential replaced, and invalid UTF-8 replaced by U+FFFD
    /// (a client's JSON parser may refuse it, or read it otherwise than we did).
    /// Borrowed when nothing needs changing, the usual case: one search per
    /// secret and one UTF-8 check.
    pub fn forwarded<'b>(&self, bytes: &'b [u8]) -> std::borrow::Cow<'b, [u8]> {
        use std::borrow::Cow;
        let found = self.secrets().any(|s| {
            s.0.len() >= MIN_REDACTED && memchr::memmem::find(bytes, s.0.as_bytes()).is_some()
        });
        let mut out =
            if found { Cow::Owned(self.bytes(bytes, false)) } else { Cow::Borrowed(bytes) };
        if std::str::from_utf8(&out).is_err() {
            out = Cow::Owned(String::from_utf8_lossy(&out).into_owned().into_bytes());
        }
        out
    }

    /// Upstream bytes with every credential replaced, and a credential's prefix at
    /// the very end dropped (`bytes` may have been cut short in the middle of one).
    pub fn bytes(&self, bytes: &[u8], truncated: bool) -> Vec<u8> {
        let mut out = bytes.to_vec();
        for s in self.secrets() {
            let key = s.0.as_bytes();
            if key.len() < MIN_REDACTED {
                continue;
            }
            if memchr::memmem::find(&out, key).is_some() {
                let mut replaced = Vec::with_capacity(out.len());
                let mut rest = out.as_slice();
                while let Some(at) = memchr::memmem::find(rest, key) {
                    replaced.extend_from_slice(rest.get(..at).unwrap_or_default());
                    replaced.extend_from_slice(b"[redacted]");
                    rest = rest.get(at + key.len()..).unwrap_or_default();
                }
                replaced.extend_from_slice(rest);
                out = replaced;
            }
            if truncated {
                let longest = (1..key.len().min(out.len() + 1))
                    .rev()
                    .find(|&n| out.ends_with(key.get(..n).unwrap_or_default()));
                if let Some(n) = longest.filter(|&n| n >= 4) {
                    out.truncate(out.len() - n);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_parse_compare_and_convert() {
        assert_eq!(Date::from_days(0), Date { year: 1970, month: 1, day: 1 });
        assert_eq!(Date::from_days(20_422), Date::parse("2025-11-30").unwrap());
        assert!(Date::parse("2026-01-02").unwrap() > Date::parse("2025-12-31").unwrap());
        assert_eq!(Date::parse("2026-13-01"), None);
        assert_eq!(Date::parse("2026-02-03").unwrap().to_string(), "2026-02-03");
    }

    #[test]
    fn percent_decoding_keeps_what_is_not_an_escape() {
        assert_eq!(percent_decode("p%40ss%2Fword"), "p@ss/word");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%C3%A9"), "\u{e9}");
    }

    #[test]
    fn key_prefixes_show_a_scheme_and_at_most_a_fifth_of_the_rest() {
        let generated = format!("sy-{}", "A".repeat(40));
        assert_eq!(key_prefix(&generated).as_deref(), Some("sy-AAAAAA"));
        assert_eq!(key_prefix("sk-0123456789abcdefghij").as_deref(), Some("sk-0123"));
        assert_eq!(key_prefix("0123456789abcdef").as_deref(), Some("012"), "16 characters");
        assert_eq!(key_prefix(&"x".repeat(32)).as_deref(), Some("xxxxxx"));
        assert_eq!(key_prefix(&"x".repeat(200)).as_deref(), Some("xxxxxx"));
        assert_eq!(key_prefix("sy-abcd"), None);
        assert_eq!(key_prefix("abcd"), None);
        assert_eq!(key_prefix(""), None);
        // Characters, not bytes.
        assert_eq!(
            key_prefix("\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}").as_deref(),
            Some("\u{e9}\u{e9}")
        );
        for len in 0..200 {
            let key = "k".repeat(len);
            let shown = key_prefix(&key).map_or(0, |p| p.chars().count());
            assert!(shown * 5 <= len, "{len}: {shown}");
        }
    }

    #[test]
    fn userinfo_passwords_are_hidden() {
        assert_eq!(redact_userinfo("https://u:p%40ss@h.example/v1"), "https://u:****@h.example/v1");
        assert_eq!(redact_userinfo("https://u:a@b@h:8443?x=@"), "https://u:****@h:8443?x=@");
        assert_eq!(redact_userinfo("http://token@h/"), "http://****@h/");
        assert_eq!(redact_userinfo("https://h.example/a@b"), "https://h.example/a@b");
        assert_eq!(redact_userinfo("no url"), "no url");
    }

    #[test]
    fn excerpts_keep_short_input_and_cut_long_input_on_a_character() {
        assert_eq!(excerpt("gpt-5"), "gpt-5");
        let exact = "x".repeat(ECHO_CHARS);
        assert_eq!(excerpt(&exact), exact.as_str());
        let long = "\u{e9}".repeat(ECHO_CHARS + 1);
        let cut = excerpt(&long);
        assert_eq!(cut.chars().count(), ECHO_CHARS + 1);
        assert!(cut.ends_with('\u{2026}'));
        assert!(cut.starts_with(&"\u{e9}".repeat(ECHO_CHARS)));
        assert!(excerpt(&"y".repeat(1 << 20)).len() < 2 * ECHO_CHARS);
    }

    #[test]
    fn globs() {
        assert!(glob_match("claude-*", "claude-sonnet-5"));
        assert!(glob_match("*", ""));
        assert!(glob_match("gpt-?", "gpt-5"));
        assert!(!glob_match("gpt-?", "gpt-55"));
        assert!(glob_match("a*b*c", "axxbyyc"));
        assert!(!glob_match("a*b*c", "axxbyy"));
        assert!(!glob_match("claude-*", "anthropic-claude-x"));
        assert!(glob_match("m\u{e9}-*", "m\u{e9}-x"), "non-ASCII falls back to chars");
        assert!(!glob_match("m?", "m\u{e9}\u{e9}"));
        assert!(glob_match("m?", "m\u{e9}"));
    }

    #[test]
    fn fnv_and_slug_are_stable() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(slug("Claude (Vertex AI)"), "claude-vertex-ai");
    }

    #[test]
    fn secrets_never_print_and_redact() {
        let s = Secret::new("sk-live-abcdefgh");
        assert!(!format!("{s:?}").contains("abcdefgh"));
        assert!(s.matches(b"sk-live-abcdefgh"));
        assert!(!s.matches(b"sk-live-abcdefgX"));
        assert_eq!(redact("bad key sk-live-abcdefgh!", [&s]), "bad key [redacted]!");
        let platform = [Secret::new("platform-key-0001")];
        let r = Redactor { platform: &platform, used: Some(&s), minted: &[] };
        assert_eq!(
            r.text("a sk-live-abcdefgh b platform-key-0001 c sk-live-abcdefgh"),
            "a [redacted] b [redacted] c [redacted]"
        );
        assert_eq!(r.bytes(b"x sk-live-abcdefgh y", false), b"x [redacted] y");
        // Cut short inside a key: its prefix goes too.
        assert_eq!(r.bytes(b"rejected sk-live-ab", true), b"rejected ");
        assert_eq!(r.bytes(b"rejected sk-live-ab", false), b"rejected sk-live-ab");
        assert_eq!(r.bytes(b"ends in sk", true), b"ends in sk", "too short to be a key's start");
    }
}
