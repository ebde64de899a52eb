//! The one place the core touches the `metrics` facade. With the `metrics`
//! feature (on by default) these are the facade's own handles and macros; without
//! it they are empty stand-ins, so the call sites read the same either way and an
//! embedder that leaves the feature out links no `metrics` crate at all.
//!
//! Whether series are recorded at run time is the configuration's
//! `gateway.metrics` (every call site checks it); the feature decides whether the
//! code to record them is there at all.

#[cfg(feature = "metrics")]
pub(crate) use metrics::{Counter, Histogram};

/// `metrics::counter!` with the feature; an empty [`Counter`] without it.
#[cfg(feature = "metrics")]
macro_rules! counter {
    ($($arg:tt)*) => { ::metrics::counter!($($arg)*) };
}

/// `metrics::histogram!` with the feature; an empty [`Histogram`] without it.
#[cfg(feature = "metrics")]
macro_rules! histogram {
    ($($arg:tt)*) => { ::metrics::histogram!($($arg)*) };
}

// Without the feature the label values are still evaluated (borrowed, then
// dropped), so that a value computed only for a label is not an unused variable.
#[cfg(not(feature = "metrics"))]
macro_rules! counter {
    ($name:expr $(, $key:literal => $value:expr)* $(,)?) => {{
        let _ = ($name, $(($key, &$value)),*);
        $crate::telemetry::Counter
    }};
}

#[cfg(not(feature = "metrics"))]
macro_rules! histogram {
    ($name:expr $(, $key:literal => $value:expr)* $(,)?) => {{
        let _ = ($name, $(($key, &$value)),*);
        $crate::telemetry::Histogram
    }};
}

pub(crate) use {counter, histogram};

/// A counter that counts nothing (the `metrics` feature is off).
#[cfg(not(feature = "metrics"))]
#[derive(Debug, Clone, Default)]
pub(crate) struct Counter;

#[cfg(not(feature = "metrics"))]
impl Counter {
    pub(crate) fn increment(&self, _: u64) {}
}

/// A histogram that records nothing (the `metrics` feature is off).
#[cfg(not(feature = "metrics"))]
#[derive(Debug, Clone, Default)]
pub(crate) struct Histogram;

#[cfg(not(feature = "metrics"))]
impl Histogram {
    pub(crate) fn record(&self, _: f64) {}
}
