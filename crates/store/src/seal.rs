//! Provider API keys supplied by users and projects (BYOK), encrypted at rest.
//!
//! * **Keys.** Every key is derived from the gateway secret (an environment
//!   variable's value, at least [`MIN_SECRET_LEN`] bytes) with HKDF-SHA256. The
//!   HKDF `info` names the purpose and the key id, so one secret gives unrelated
//!   encryption and fingerprint keys, and two key ids never share a key.
//! * **Cipher.** AES-256-GCM with a fresh random 96-bit nonce per seal. The row id
//!   is bound as associated data: a ciphertext copied to another row does not open.
//! * **Rotation.** Each [`Sealed`] value names its key id. A [`Sealer`] seals with
//!   its current key and opens with the current or any previous key
//!   ([`Sealer::with_previous`]); [`Sealer::needs_rotation`] and [`Sealer::reseal`]
//!   move old rows to the current key, after which the old secret can be retired.
//! * **Fingerprints** (`fp-` + 8 hex digits) are an HMAC-SHA256 of the plaintext
//!   under a key derived from the current secret, so a listing shows which key is
//!   which without giving anyone a hash of the key to test guesses against.
//!   Fingerprints are stable for one secret and key id; after rotation new
//!   fingerprints differ (a resealed row gets a new one).

use std::fmt;

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use zeroize::{Zeroize, Zeroizing};

/// The shortest gateway secret accepted, in bytes.
pub const MIN_SECRET_LEN: usize = 16;

const NONCE_LEN: usize = 12;
const SALT: &[u8] = b"switchyard/seal/v1";
const AAD_PREFIX: &[u8] = b"switchyard byok v1 row:";

/// Why sealing or opening failed. Never carries key material or plaintext.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    #[error("the gateway secret is too short: at least {MIN_SECRET_LEN} bytes are required")]
    ShortSecret,
    #[error("invalid key id {0:?}: 1-64 characters from [A-Za-z0-9._-]")]
    BadKeyId(String),
    #[error("key id {0:?} is configured twice")]
    DuplicateKeyId(String),
    #[error("no key with id {0:?} is configured (was its secret retired too early?)")]
    UnknownKeyId(String),
    #[error("the sealed value is malformed (bad base64 or nonce length)")]
    Malformed,
    #[error("the sealed value does not open: wrong secret, wrong row, or tampered")]
    Open,
    #[error("encryption failed")]
    Encrypt,
    #[error("the system random number generator failed")]
    Random,
}

/// A sealed secret as stored in a row: all fields are safe to store and show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sealed {
    pub key_id: String,
    /// 12 bytes, base64 (standard alphabet, padded).
    pub nonce: String,
    /// Ciphertext followed by the 16-byte tag, base64.
    pub ciphertext: String,
    /// `fp-` + 8 hex digits; for listings.
    pub fingerprint: String,
}

impl Sealed {
    pub fn as_sealed_ref(&self) -> SealedRef<'_> {
        SealedRef { key_id: &self.key_id, nonce: &self.nonce, ciphertext: &self.ciphertext }
    }
}

/// The columns [`Sealer::open`] needs, borrowed (e.g. straight from a database row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SealedRef<'a> {
    pub key_id: &'a str,
    pub nonce: &'a str,
    pub ciphertext: &'a str,
}

impl<'a> From<&'a Sealed> for SealedRef<'a> {
    fn from(s: &'a Sealed) -> Self {
        s.as_sealed_ref()
    }
}

/// The keys derived from one secret under one key id.
struct Key {
    id: String,
    cipher: Aes256Gcm,
    fingerprint: Zeroizing<[u8; 32]>,
}

impl Key {
    fn derive(secret: &str, key_id: &str) -> Result<Key, SealError> {
        if secret.len() < MIN_SECRET_LEN {
            return Err(SealError::ShortSecret);
        }
        let valid_id = !key_id.is_empty()
            && key_id.len() <= 64
            && key_id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !valid_id {
            return Err(SealError::BadKeyId(key_id.to_owned()));
        }
        let hk = Hkdf::<Sha256>::new(Some(SALT), secret.as_bytes());
        let mut enc = Zeroizing::new([0u8; 32]);
        let mut fp = Zeroizing::new([0u8; 32]);
        // 32 bytes is always a valid HKDF-SHA256 output length; map the impossible
        // error rather than unwrap.
        hk.expand(format!("switchyard byok aes-256-gcm key_id={key_id}").as_bytes(), &mut enc[..])
            .map_err(|_| SealError::Encrypt)?;
        hk.expand(format!("switchyard byok fingerprint key_id={key_id}").as_bytes(), &mut fp[..])
            .map_err(|_| SealError::Encrypt)?;
        let cipher = Aes256Gcm::new_from_slice(&enc[..]).map_err(|_| SealError::Encrypt)?;
        Ok(Key { id: key_id.to_owned(), cipher, fingerprint: fp })
    }

    fn fingerprint(&self, plaintext: &str) -> String {
        // HMAC accepts keys of any length; the error arm cannot happen.
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&self.fingerprint[..]) else {
            return "fp-????????".to_owned();
        };
        mac.update(plaintext.as_bytes());
        let tag = mac.finalize().into_bytes();
        let mut out = String::with_capacity(11);
        out.push_str("fp-");
        for b in &tag[..4] {
            out.push_str(&format!("{b:02x}"));
        }
        out
    }
}

/// Seals and opens BYOK provider keys. Cheap to share (`Arc<Sealer>`); `Debug`
/// shows key ids only.
pub struct Sealer {
    current: Key,
    previous: Vec<Key>,
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sealer")
            .field("current", &self.current.id)
            .field("previous", &self.previous.iter().map(|k| k.id.as_str()).collect::<Vec<_>>())
            .finish()
    }
}

impl Sealer {
    /// A sealer whose current key comes from `secret` under `key_id`. Refuses
    /// secrets shorter than [`MIN_SECRET_LEN`] bytes and key ids outside
    /// `[A-Za-z0-9._-]{1,64}`.
    pub fn new(secret: &str, key_id: &str) -> Result<Sealer, SealError> {
        Ok(Sealer { current: Key::derive(secret, key_id)?, previous: Vec::new() })
    }

    /// Adds a retired secret that can still open (but no longer seals), for
    /// rotation. Key ids must be distinct.
    pub fn with_previous(mut self, secret: &str, key_id: &str) -> Result<Sealer, SealError> {
        let key = Key::derive(secret, key_id)?;
        if self.current.id == key_id || self.previous.iter().any(|k| k.id == key_id) {
            return Err(SealError::DuplicateKeyId(key_id.to_owned()));
        }
        self.previous.push(key);
        Ok(self)
    }

    /// The key id new seals use.
    pub fn current_key_id(&self) -> &str {
        &self.current.id
    }

    /// Encrypts `plaintext` for the row `row_id` with the current key.
    pub fn seal(&self, row_id: &str, plaintext: &str) -> Result<Sealed, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|_| SealError::Random)?;
        let aad = aad(row_id);
        let ciphertext = self
            .current
            .cipher
            .encrypt(&Nonce::from(nonce), Payload { msg: plaintext.as_bytes(), aad: &aad })
            .map_err(|_| SealError::Encrypt)?;
        Ok(Sealed {
            key_id: self.current.id.clone(),
            nonce: B64.encode(nonce),
            ciphertext: B64.encode(&ciphertext),
            fingerprint: self.current.fingerprint(plaintext),
        })
    }

    /// Decrypts a sealed value of the row `row_id`, with whichever configured key
    /// its key id names. The plaintext is wiped from memory when dropped.
    pub fn open(
        &self,
        row_id: &str,
        sealed: &SealedRef<'_>,
    ) -> Result<Zeroizing<String>, SealError> {
        let key = self.key(sealed.key_id)?;
        let nonce: [u8; NONCE_LEN] = B64
            .decode(sealed.nonce)
            .ok()
            .and_then(|n| n.try_into().ok())
            .ok_or(SealError::Malformed)?;
        let ciphertext = B64.decode(sealed.ciphertext).map_err(|_| SealError::Malformed)?;
        let aad = aad(row_id);
        let plain = key
            .cipher
            .decrypt(&Nonce::from(nonce), Payload { msg: &ciphertext, aad: &aad })
            .map_err(|_| SealError::Open)?;
        match String::from_utf8(plain) {
            Ok(s) => Ok(Zeroizing::new(s)),
            Err(e) => {
                // Authentic but not UTF-8: cannot happen for values sealed here.
                e.into_bytes().zeroize();
                Err(SealError::Malformed)
            }
        }
    }

    /// Whether a value sealed under `key_id` should be resealed with the current key.
    pub fn needs_rotation(&self, key_id: &str) -> bool {
        key_id != self.current.id
    }

    /// Opens with whichever key the value names and seals again with the current
    /// key (fresh nonce, current fingerprint).
    pub fn reseal(&self, row_id: &str, sealed: &SealedRef<'_>) -> Result<Sealed, SealError> {
        let plain = self.open(row_id, sealed)?;
        self.seal(row_id, &plain)
    }

    /// `fp-` + 8 hex digits of HMAC-SHA256 under the current fingerprint key.
    pub fn fingerprint(&self, plaintext: &str) -> String {
        self.current.fingerprint(plaintext)
    }

    fn key(&self, key_id: &str) -> Result<&Key, SealError> {
        std::iter::once(&self.current)
            .chain(&self.previous)
            .find(|k| k.id == key_id)
            .ok_or_else(|| SealError::UnknownKeyId(key_id.to_owned()))
    }
}

fn aad(row_id: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(AAD_PREFIX.len() + row_id.len());
    aad.extend_from_slice(AAD_PREFIX);
    aad.extend_from_slice(row_id.as_bytes());
    aad
}

/// Seals continuation data (thinking signatures, redacted thinking) into answers
/// for clients that carry it to their next request (the Responses API's
/// `encrypted_content`), so it reaches the upstream that wrote it unchanged and
/// unforged. AES-256-GCM under a key derived from the gateway secret (its own HKDF
/// purpose, so unrelated to BYOK keys), so every instance sharing the secret opens
/// what any of them sealed. Tokens are `sy1.` + base64url(nonce ‖ ciphertext ‖ tag).
pub struct ContinuitySeal {
    cipher: Aes256Gcm,
}

const CONTINUITY_PREFIX: &str = "sy1.";
const CONTINUITY_AAD: &[u8] = b"switchyard continuity v1";

impl ContinuitySeal {
    /// Keyed by the gateway secret.
    pub fn from_secret(secret: &str) -> Result<Self, SealError> {
        if secret.len() < MIN_SECRET_LEN {
            return Err(SealError::ShortSecret);
        }
        let hk = Hkdf::<Sha256>::new(Some(SALT), secret.as_bytes());
        let mut key = Zeroizing::new([0u8; 32]);
        hk.expand(b"switchyard continuity aes-256-gcm", &mut key[..])
            .map_err(|_| SealError::Encrypt)?;
        let cipher = Aes256Gcm::new_from_slice(&key[..]).map_err(|_| SealError::Encrypt)?;
        Ok(Self { cipher })
    }

    /// Keyed at random: tokens open only in this process (without a gateway
    /// secret, a restart or another instance cannot continue them).
    pub fn ephemeral() -> Result<Self, SealError> {
        let mut key = Zeroizing::new([0u8; 32]);
        getrandom::fill(&mut key[..]).map_err(|_| SealError::Random)?;
        let cipher = Aes256Gcm::new_from_slice(&key[..]).map_err(|_| SealError::Encrypt)?;
        Ok(Self { cipher })
    }
}

impl fmt::Debug for ContinuitySeal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ContinuitySeal")
    }
}

impl switchyard_protocol::Seal for ContinuitySeal {
    fn seal(&self, plain: &[u8]) -> Option<String> {
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).ok()?;
        let sealed = self
            .cipher
            .encrypt(&Nonce::from(nonce), Payload { msg: plain, aad: CONTINUITY_AAD })
            .ok()?;
        let mut raw = Vec::with_capacity(NONCE_LEN + sealed.len());
        raw.extend_from_slice(&nonce);
        raw.extend_from_slice(&sealed);
        Some(format!("{CONTINUITY_PREFIX}{}", URL_SAFE_NO_PAD.encode(raw)))
    }

    fn open(&self, token: &str) -> Option<Vec<u8>> {
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let raw = URL_SAFE_NO_PAD.decode(token.strip_prefix(CONTINUITY_PREFIX)?).ok()?;
        if raw.len() < NONCE_LEN {
            return None;
        }
        let (nonce, sealed) = raw.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().ok()?;
        self.cipher.decrypt(&Nonce::from(nonce), Payload { msg: sealed, aad: CONTINUITY_AAD }).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuity_tokens_open_under_the_same_secret_only() {
        use switchyard_protocol::Seal as _;
        let a = ContinuitySeal::from_secret("a gateway secret of some length").unwrap();
        let same = ContinuitySeal::from_secret("a gateway secret of some length").unwrap();
        let other = ContinuitySeal::from_secret("another gateway secret, longer").unwrap();
        let token = a.seal(b"thinking and its signature").unwrap();
        assert!(token.starts_with("sy1.") && !token.contains("thinking"));
        assert_eq!(same.open(&token).unwrap(), b"thinking and its signature");
        assert_eq!(other.open(&token), None);
        assert_eq!(ContinuitySeal::ephemeral().unwrap().open(&token), None);
        let mut tampered = token.clone();
        tampered.pop();
        tampered.push(if token.ends_with('A') { 'B' } else { 'A' });
        assert_eq!(a.open(&tampered), None);
        assert_eq!(a.open("gAAAAABopaque-openai-token"), None);
        assert!(ContinuitySeal::from_secret("short").is_err());
    }

    const SECRET: &str = "correct horse battery staple 42";
    const OLD_SECRET: &str = "an older gateway secret, now retired";
    const KEY: &str = "sk-proj-THIS-IS-THE-PROVIDER-KEY-123";

    fn sealer() -> Sealer {
        Sealer::new(SECRET, "k1").unwrap()
    }

    #[test]
    fn round_trip() {
        let s = sealer();
        let sealed = s.seal("row-1", KEY).unwrap();
        assert_eq!(sealed.key_id, "k1");
        assert_eq!(B64.decode(&sealed.nonce).unwrap().len(), 12);
        assert_eq!(B64.decode(&sealed.ciphertext).unwrap().len(), KEY.len() + 16);
        assert!(!sealed.ciphertext.contains(KEY));
        assert_eq!(s.open("row-1", &sealed.as_sealed_ref()).unwrap().as_str(), KEY);
        // A fresh nonce every time.
        let again = s.seal("row-1", KEY).unwrap();
        assert_ne!(again.nonce, sealed.nonce);
        assert_ne!(again.ciphertext, sealed.ciphertext);
        // Empty and non-ASCII plaintexts too.
        for p in ["", "ключ-🔑"] {
            let x = s.seal("r", p).unwrap();
            assert_eq!(s.open("r", &(&x).into()).unwrap().as_str(), p);
        }
        // A new Sealer from the same secret (a restart) opens it.
        assert_eq!(sealer().open("row-1", &sealed.as_sealed_ref()).unwrap().as_str(), KEY);
    }

    #[test]
    fn wrong_row_or_secret_fails() {
        let s = sealer();
        let sealed = s.seal("row-1", KEY).unwrap();
        assert_eq!(s.open("row-2", &sealed.as_sealed_ref()), Err(SealError::Open));
        assert_eq!(s.open("", &sealed.as_sealed_ref()), Err(SealError::Open));
        let other = Sealer::new("a different secret of length", "k1").unwrap();
        assert_eq!(other.open("row-1", &sealed.as_sealed_ref()), Err(SealError::Open));
        // Same secret, different key id: a different key.
        let renamed = Sealer::new(SECRET, "k2").unwrap();
        let relabelled = SealedRef { key_id: "k2", ..sealed.as_sealed_ref() };
        assert_eq!(renamed.open("row-1", &relabelled), Err(SealError::Open));
        assert_eq!(
            renamed.open("row-1", &sealed.as_sealed_ref()),
            Err(SealError::UnknownKeyId("k1".into()))
        );
    }

    #[test]
    fn tampering_fails() {
        let s = sealer();
        let sealed = s.seal("row-1", KEY).unwrap();
        let mut ct = B64.decode(&sealed.ciphertext).unwrap();
        for i in [0, ct.len() / 2, ct.len() - 1] {
            ct[i] ^= 0x01;
            let bad = B64.encode(&ct);
            let r = SealedRef { ciphertext: &bad, ..sealed.as_sealed_ref() };
            assert_eq!(s.open("row-1", &r), Err(SealError::Open), "byte {i}");
            ct[i] ^= 0x01;
        }
        let truncated = B64.encode(&ct[..ct.len() - 1]);
        let r = SealedRef { ciphertext: &truncated, ..sealed.as_sealed_ref() };
        assert_eq!(s.open("row-1", &r), Err(SealError::Open));
        let mut nonce = B64.decode(&sealed.nonce).unwrap();
        nonce[0] ^= 0x80;
        let bad_nonce = B64.encode(&nonce);
        let r = SealedRef { nonce: &bad_nonce, ..sealed.as_sealed_ref() };
        assert_eq!(s.open("row-1", &r), Err(SealError::Open));
        let short_nonce = B64.encode(&nonce[..8]);
        let r = SealedRef { nonce: &short_nonce, ..sealed.as_sealed_ref() };
        assert_eq!(s.open("row-1", &r), Err(SealError::Malformed));
        let r = SealedRef { ciphertext: "not base64!", ..sealed.as_sealed_ref() };
        assert_eq!(s.open("row-1", &r), Err(SealError::Malformed));
    }

    #[test]
    fn rotation() {
        let old = Sealer::new(OLD_SECRET, "2024-01").unwrap();
        let sealed = old.seal("row-9", KEY).unwrap();
        assert!(!old.needs_rotation(&sealed.key_id));

        let rotated =
            Sealer::new(SECRET, "2025-06").unwrap().with_previous(OLD_SECRET, "2024-01").unwrap();
        assert_eq!(rotated.current_key_id(), "2025-06");
        assert!(rotated.needs_rotation(&sealed.key_id));
        assert_eq!(rotated.open("row-9", &sealed.as_sealed_ref()).unwrap().as_str(), KEY);
        let resealed = rotated.reseal("row-9", &sealed.as_sealed_ref()).unwrap();
        assert_eq!(resealed.key_id, "2025-06");
        assert!(!rotated.needs_rotation(&resealed.key_id));
        assert_eq!(resealed.fingerprint, rotated.fingerprint(KEY));
        // Reseal keeps the row binding.
        assert_eq!(rotated.open("row-8", &resealed.as_sealed_ref()), Err(SealError::Open));

        // The old secret is no longer needed...
        let new_only = Sealer::new(SECRET, "2025-06").unwrap();
        assert_eq!(new_only.open("row-9", &resealed.as_sealed_ref()).unwrap().as_str(), KEY);
        // ...but rows not yet resealed need it.
        assert_eq!(
            new_only.open("row-9", &sealed.as_sealed_ref()),
            Err(SealError::UnknownKeyId("2024-01".into()))
        );

        // Key ids must be distinct.
        assert_eq!(
            Sealer::new(SECRET, "a").unwrap().with_previous(OLD_SECRET, "a").unwrap_err(),
            SealError::DuplicateKeyId("a".into())
        );
        assert!(matches!(
            Sealer::new(SECRET, "a")
                .unwrap()
                .with_previous(OLD_SECRET, "b")
                .unwrap()
                .with_previous(SECRET, "b"),
            Err(SealError::DuplicateKeyId(_))
        ));
    }

    #[test]
    fn fingerprints() {
        let s = sealer();
        let fp = s.fingerprint(KEY);
        assert_eq!(fp.len(), 11);
        assert!(fp.starts_with("fp-") && fp[3..].bytes().all(|b| b.is_ascii_hexdigit()), "{fp}");
        assert_eq!(fp, s.fingerprint(KEY));
        assert_eq!(fp, sealer().fingerprint(KEY));
        assert_eq!(fp, s.seal("row-1", KEY).unwrap().fingerprint);
        assert_ne!(fp, s.fingerprint("sk-proj-THIS-IS-THE-PROVIDER-KEY-124"));
        // Keyed: another secret gives another fingerprint, and it is not a plain hash.
        assert_ne!(fp, Sealer::new(OLD_SECRET, "k1").unwrap().fingerprint(KEY));
        assert_ne!(fp, Sealer::new(SECRET, "k2").unwrap().fingerprint(KEY));
        use sha2::Digest;
        let plain_hash = Sha256::digest(KEY.as_bytes());
        assert_ne!(
            &fp[3..],
            format!(
                "{:02x}{:02x}{:02x}{:02x}",
                plain_hash[0], plain_hash[1], plain_hash[2], plain_hash[3]
            )
        );
    }

    #[test]
    fn nothing_secret_is_printed() {
        let s = Sealer::new(SECRET, "k1").unwrap().with_previous(OLD_SECRET, "k0").unwrap();
        let sealed = s.seal("row-1", KEY).unwrap();
        let texts = [
            format!("{s:?}"),
            format!("{s:#?}"),
            format!("{sealed:?}"),
            format!("{:?}", sealed.as_sealed_ref()),
            format!("{:?}", s.open("row-1", &sealed.as_sealed_ref()).map(|_| ())),
            format!("{}", SealError::Open),
            format!("{}", SealError::ShortSecret),
        ];
        for t in &texts {
            for needle in [SECRET, OLD_SECRET, KEY, "horse", "PROVIDER"] {
                assert!(!t.contains(needle), "{t:?} contains {needle:?}");
            }
        }
        assert_eq!(texts[0], r#"Sealer { current: "k1", previous: ["k0"] }"#);
    }

    #[test]
    fn short_secret_and_bad_key_id_refused() {
        assert_eq!(Sealer::new("", "k1").unwrap_err(), SealError::ShortSecret);
        assert_eq!(Sealer::new("fifteen bytes!!", "k1").unwrap_err(), SealError::ShortSecret);
        assert!(Sealer::new("sixteen bytes!!!", "k1").is_ok());
        assert_eq!(
            Sealer::new(SECRET, "k1").unwrap().with_previous("short", "k0").unwrap_err(),
            SealError::ShortSecret
        );
        for bad in ["", "has space", "slash/id", &"x".repeat(65)] {
            assert!(matches!(Sealer::new(SECRET, bad), Err(SealError::BadKeyId(_))), "{bad:?}");
        }
    }
}
