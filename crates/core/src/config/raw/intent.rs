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
}
