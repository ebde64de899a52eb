//! What providers refused of requests, learned from their answers: the
//! `anthropic-beta` flags and body fields a platform that serves another
//! vendor's API does not take (Claude on Vertex AI lags Anthropic's API, by
//! region). The attempt that learns one sends its request again without it,
//! once; later requests to the provider leave it out from the start.
//!
//! Kept per provider name, in the [`Runtime`](crate::runtime::Runtime), so a
//! configuration reload keeps it. Each lesson lapses after [`REMEMBERED`]: a
//! platform that starts taking a flag gets it again without a restart, at the
//! cost of one refused request per provider and flag.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use switchyard_protocol::Refused;

/// How long a provider's refusal of a flag or field is remembered.
pub const REMEMBERED: Duration = Duration::from_secs(3600);

/// What each provider refuses, as learned ([`Refusals::learn`]).
#[derive(Debug, Default)]
pub struct Refusals {
    by_provider: RwLock<HashMap<String, Arc<Learned>>>,
}

/// What one provider refuses, and since when.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Learned {
    betas: Vec<(String, Instant)>,
    fields: Vec<(String, Instant)>,
}

impl Learned {
    /// Whether the provider refuses the `anthropic-beta` flag `flag`.
    pub fn refuses_beta(&self, flag: &str) -> bool {
        self.betas.iter().any(|(f, _)| f == flag)
    }

    /// The top-level body fields the provider refuses.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|(f, _)| f.as_str())
    }

    fn is_empty(&self) -> bool {
        self.betas.is_empty() && self.fields.is_empty()
    }

    /// The same, less what was learned before `since`.
    fn fresh(&self, since: Instant) -> Learned {
        let keep =
            |v: &[(String, Instant)]| v.iter().filter(|(_, at)| *at >= since).cloned().collect();
        Learned { betas: keep(&self.betas), fields: keep(&self.fields) }
    }
}

impl Refusals {
    /// What `provider` refuses now; `None` when nothing (the common case, one
    /// read of an empty map).
    pub fn get(&self, provider: &str) -> Option<Arc<Learned>> {
        self.get_at(provider, Instant::now())
    }

    fn get_at(&self, provider: &str, now: Instant) -> Option<Arc<Learned>> {
        let learned = {
            let map = self.by_provider.read().unwrap_or_else(|e| e.into_inner());
            Arc::clone(map.get(provider)?)
        };
        let since = now.checked_sub(REMEMBERED);
        let lapsed =
            |v: &[(String, Instant)]| since.is_some_and(|s| v.iter().any(|(_, at)| *at < s));
        if !lapsed(&learned.betas) && !lapsed(&learned.fields) {
            return Some(learned);
        }
        // Some lessons lapsed: keep the rest.
        let mut map = self.by_provider.write().unwrap_or_else(|e| e.into_inner());
        let kept = since.map_or_else(|| (*learned).clone(), |s| learned.fresh(s));
        if kept.is_empty() {
            map.remove(provider);
            return None;
        }
        let kept = Arc::new(kept);
        map.insert(provider.to_owned(), Arc::clone(&kept));
        Some(kept)
    }

    /// Learns what `refused` names for `provider`; whether any of it is new
    /// (only then is a request worth sending again).
    pub fn learn(&self, provider: &str, refused: &Refused) -> bool {
        self.learn_at(provider, refused, Instant::now())
    }

    fn learn_at(&self, provider: &str, refused: &Refused, now: Instant) -> bool {
        let mut map = self.by_provider.write().unwrap_or_else(|e| e.into_inner());
        let mut learned = map.get(provider).map(|l| (**l).clone()).unwrap_or_default();
        let mut new = false;
        for (names, into) in
            [(&refused.betas, &mut learned.betas), (&refused.fields, &mut learned.fields)]
        {
            for name in names {
                if !into.iter().any(|(n, _)| n == name) {
                    into.push((name.clone(), now));
                    new = true;
                }
            }
        }
        if new {
            tracing::warn!(
                provider,
                betas = ?refused.betas,
                fields = ?refused.fields,
                "the provider refused these; they are left out of its requests for the next hour"
            );
            map.insert(provider.to_owned(), Arc::new(learned));
        }
        new
    }
}

#[cfg(test)]
#[path = "refusals_tests.rs"]
mod tests;
