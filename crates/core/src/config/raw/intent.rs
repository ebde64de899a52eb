//! `intent:`: where the `auto` models send a request, by the class the intent
//! classifier gives it ([`crate::intent`]), as written.

use std::collections::BTreeMap;

use serde::Deserialize;

/// `intent:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct IntentConfig {
    /// Class (`reasoning`, `code`, `ordinary`, `cheap`, `vision`) → the catalog
    /// model (or a name a route matches) that serves it. `ordinary` is required
    /// once any is set; a class left out goes where `ordinary` goes.
    pub targets: BTreeMap<String, String>,
    /// A catalog model that answers whether a request needs reasoning, over
    /// the rules (`crate::intent::model`); absent: the rules alone.
    pub classifier: Option<crate::config::Spanned<ClassifierConfig>>,
}

/// `intent.classifier`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ClassifierConfig {
    /// The catalog model (or a name a route matches) asked.
    pub model: String,
    /// How long its answer is waited for; past it the rules decide alone
    /// (default 1000, at most 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Classify and record, but route by the rules: to compare before switching.
    #[serde(default)]
    pub shadow: bool,
    /// How long an answer is kept, by the hash of the text it was asked about
    /// (default 3600000, an hour; 0: not kept).
    #[serde(default)]
    pub cache_ttl_ms: Option<u64>,
}
