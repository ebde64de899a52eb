//! Ordering a chain's candidates for the first attempt. Pure: the caller supplies
//! what each strategy reads (health, weights, in-flight counts, prices, latency)
//! and a uniform random draw, so every rule is testable without a clock or RNG.
//!
//! | strategy | first attempt |
//! |---|---|
//! | `ordered` | chain order |
//! | `weighted` | drawn by weight among available (breaker not open) candidates; the rest by descending weight |
//! | `least_busy` | fewest requests in flight in this process |
//! | `cost` | cheapest estimated price for this request |
//! | `latency` | lowest recent latency (EWMA) |
//! | `balanced` | lowest `0.5·price/min_price + 0.5·latency/min_latency` (each relative to the best candidate, so neither unit dominates) |
//!
//! A candidate without the figure a strategy reads (no price, no latency sample yet)
//! is still tried, after every scored one. Ties keep chain order (the sort is stable).

use crate::catalog::Strategy;

/// What a strategy may read about one candidate.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct View {
    /// Not blocked by its circuit breaker.
    pub available: bool,
    /// Its weight under `weighted` (0 is never drawn).
    pub weight: u32,
    /// Requests in flight on it in this process.
    pub in_flight: u64,
    /// Estimated USD for this request.
    pub price: Option<f64>,
    /// Recent latency estimate, milliseconds.
    pub latency_ms: Option<f64>,
}

/// The order to try `views` in (indices into `views`). `draw` is uniform in [0, 1).
pub fn order(strategy: Strategy, views: &[View], draw: f64) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..views.len()).collect();
    match strategy {
        // Adaptive is ordered by its policy (`crate::adaptive`), not here.
        Strategy::Ordered | Strategy::Adaptive => {}
        Strategy::Weighted => {
            idx.sort_by(|&a, &b| views[b].weight.cmp(&views[a].weight));
            let pool: Vec<usize> = (0..views.len()).filter(|&i| views[i].available).collect();
            let total: u64 = pool.iter().map(|&i| u64::from(views[i].weight)).sum();
            if total > 0 {
                let mut target = (draw.clamp(0.0, 1.0 - f64::EPSILON) * total as f64) as u64;
                let mut first = pool[0];
                for &i in &pool {
                    let w = u64::from(views[i].weight);
                    if target < w {
                        first = i;
                        break;
                    }
                    target -= w;
                }
                idx.retain(|&i| i != first);
                idx.insert(0, first);
            }
        }
        Strategy::LeastBusy => idx.sort_by_key(|&i| views[i].in_flight),
        Strategy::Cost => sort_scored(&mut idx, |i| views[i].price),
        Strategy::Latency => sort_scored(&mut idx, |i| views[i].latency_ms),
        Strategy::Balanced => {
            let min = |f: fn(&View) -> Option<f64>| {
                views.iter().filter_map(f).filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min)
            };
            let (min_price, min_latency) = (min(|v| v.price), min(|v| v.latency_ms));
            sort_scored(&mut idx, |i| {
                let v = views[i];
                let (p, l) = (v.price?, v.latency_ms?);
                let rel = |x: f64, m: f64| if m.is_finite() && m > 0.0 { x / m } else { 1.0 };
                Some(0.5 * rel(p, min_price) + 0.5 * rel(l, min_latency))
            });
        }
    }
    idx
}

/// Stable sort: scored ascending, then unscored in their original order.
fn sort_scored(idx: &mut [usize], score: impl Fn(usize) -> Option<f64>) {
    idx.sort_by(|&a, &b| match (score(a), score(b)) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
}

/// A small, fast, non-cryptographic random draw in [0, 1) for weighted choice.
pub fn uniform() -> f64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static STATE: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut x = STATE.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed) ^ u64::from(nanos);
    // splitmix64 finaliser
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v() -> View {
        View { available: true, weight: 1, ..View::default() }
    }

    #[test]
    fn ordered_keeps_chain_order() {
        assert_eq!(order(Strategy::Ordered, &[v(), v(), v()], 0.9), [0, 1, 2]);
    }

    #[test]
    fn weighted_draws_the_first_by_weight_among_available_then_descending_weight() {
        let views = [
            View { weight: 1, ..v() },
            View { weight: 3, ..v() },
            View { weight: 6, available: false, ..v() },
        ];
        // Available pool: [0 (w1), 1 (w3)], total 4: draws < 0.25 pick 0, others pick 1.
        assert_eq!(order(Strategy::Weighted, &views, 0.1), [0, 2, 1]);
        assert_eq!(order(Strategy::Weighted, &views, 0.5), [1, 2, 0]);
        // Over many draws the first choice follows the weights.
        let picks1 = (0..1000)
            .filter(|i| order(Strategy::Weighted, &views, f64::from(*i) / 1000.0)[0] == 1)
            .count();
        assert_eq!(picks1, 750);
    }

    #[test]
    fn weighted_with_every_breaker_open_falls_back_to_descending_weight() {
        let views = [
            View { weight: 1, available: false, ..v() },
            View { weight: 2, available: false, ..v() },
        ];
        assert_eq!(order(Strategy::Weighted, &views, 0.0), [1, 0]);
    }

    #[test]
    fn least_busy_prefers_fewest_in_flight_and_keeps_ties_in_chain_order() {
        let views = [
            View { in_flight: 3, ..v() },
            View { in_flight: 1, ..v() },
            View { in_flight: 1, ..v() },
        ];
        assert_eq!(order(Strategy::LeastBusy, &views, 0.0), [1, 2, 0]);
    }

    #[test]
    fn cost_puts_unpriced_candidates_last() {
        let views = [
            View { price: None, ..v() },
            View { price: Some(2.0), ..v() },
            View { price: Some(1.0), ..v() },
        ];
        assert_eq!(order(Strategy::Cost, &views, 0.0), [2, 1, 0]);
    }

    #[test]
    fn latency_puts_unsampled_candidates_last() {
        let views = [
            View { latency_ms: Some(90.0), ..v() },
            View { latency_ms: None, ..v() },
            View { latency_ms: Some(30.0), ..v() },
        ];
        assert_eq!(order(Strategy::Latency, &views, 0.0), [2, 0, 1]);
    }

    #[test]
    fn balanced_combines_relative_cost_and_latency() {
        // a: cheapest but 4x slower (0.5*1 + 0.5*4 = 2.5); b: 2x price, fastest (0.5*2 + 0.5*1 = 1.5).
        let views = [
            View { price: Some(1.0), latency_ms: Some(400.0), ..v() },
            View { price: Some(2.0), latency_ms: Some(100.0), ..v() },
            View { price: Some(1.0), latency_ms: None, ..v() },
        ];
        assert_eq!(order(Strategy::Balanced, &views, 0.0), [1, 0, 2]);
    }

    #[test]
    fn uniform_draws_are_in_range_and_vary() {
        let draws: Vec<f64> = (0..100).map(|_| uniform()).collect();
        assert!(draws.iter().all(|d| (0.0..1.0).contains(d)));
        assert!(draws.windows(2).any(|w| w[0] != w[1]));
    }
}
