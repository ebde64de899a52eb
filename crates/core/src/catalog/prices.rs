//! The price list: what a request is billed, per model and deployment, as the
//! meter computes it (the deployment's prices, else the model's, times the
//! provider's markup; cache prices falling back to the input price). The
//! console's pages and the public price page show this, so the price shown is
//! the price billed.

use super::Catalog;
use crate::config::raw::Pricing;

/// One line of the price list: USD per million tokens, as billed.
#[derive(Debug, Clone)]
pub struct PriceLine {
    /// The catalog id.
    pub model: String,
    /// The provider serving it.
    pub provider: String,
    /// The provider's id for the model.
    pub upstream_model: String,
    /// Prices per million tokens with the markup applied; `None`: not priced
    /// (its requests' costs are unknown).
    pub billed: Option<Pricing>,
    /// Listed to clients (`/v1/models`): not hidden, not retired.
    pub visible: bool,
}

impl Catalog {
    /// Every deployment of every model, in catalog order, with what it bills.
    pub fn price_list(&self, today: crate::util::Date) -> Vec<PriceLine> {
        let visible: Vec<&str> = self.visible_models(today).map(|m| m.id.as_str()).collect();
        let mut out = Vec::new();
        for m in &self.models {
            for d in &m.deployments {
                let Some(provider) = self.providers.get(d.provider) else { continue };
                let pricing = d.pricing.as_ref().or(m.pricing.as_ref());
                out.push(PriceLine {
                    model: m.id.clone(),
                    provider: provider.name.clone(),
                    upstream_model: d.upstream_model.clone(),
                    billed: pricing.map(|p| billed(p, provider.markup)),
                    visible: visible.contains(&m.id.as_str()),
                });
            }
        }
        out
    }
}

/// `p` as billed with `markup`: the cache prices the meter falls back to made
/// explicit.
fn billed(p: &Pricing, markup: f64) -> Pricing {
    let times = |v: Option<f64>| v.map(|v| v * markup);
    Pricing {
        input: times(p.input),
        output: times(p.output),
        cache_read: times(p.cache_read.or(p.input)),
        cache_write: times(p.cache_write.or(p.input)),
        // The tier as the meter reads it (`Pricing::for_prompt`), explicit.
        long_context: p.long_context.map(|l| {
            let (tier, _) = p.for_prompt(l.threshold.saturating_add(1));
            crate::config::raw::LongContext {
                threshold: l.threshold,
                input: times(tier.input),
                output: times(tier.output),
                cache_read: times(tier.cache_read.or(tier.input)),
                cache_write: times(tier.cache_write.or(tier.input)),
            }
        }),
        per_image: times(p.per_image),
        per_image_size: p.per_image_size.iter().map(|(k, v)| (k.clone(), v * markup)).collect(),
        per_second: times(p.per_second),
        per_job: times(p.per_job),
        batch: p.batch,
    }
}

// The test reads its catalog from YAML (the `yaml` feature).
#[cfg(all(test, feature = "yaml"))]
mod tests {
    use switchyard_protocol::Usage;

    use crate::config::ConfigSource;
    use crate::record::cost;
    use crate::util::Date;

    use super::*;

    #[test]
    fn the_list_bills_what_the_meter_charges() {
        let yaml = r#"
storage: { url: none }
providers:
  cheap: { wire: mock }
  marked: { wire: mock, markup: 1.5 }
models:
  - id: a
    pricing: { input: 2.0, output: 8.0, cache_read: 0.2, long_context: { threshold: 1000000, input: 4.0, output: 12.0 } }
    deployments: [{ provider: cheap }, { provider: marked, pricing: { input: 4.0, output: 10.0 } }]
  - id: free
    hidden: true
    deployments: [{ provider: cheap }]
"#;
        let raw = ConfigSource::from_text("t.yaml", yaml).parse_with(&|_| None).unwrap();
        let catalog = Catalog::compile(&raw, "t.yaml", &|_| None).unwrap();
        let list = catalog.price_list(Date::today());
        assert_eq!(list.len(), 3);
        // Over `a`'s long-context threshold: its tier, for both deployments.
        let usage = Usage {
            input_tokens: Some(1_500_000),
            output_tokens: Some(250_000),
            cache_read_tokens: Some(300_000),
            cache_write_tokens: Some(200_000),
            reasoning_tokens: None,
        };
        // The meter: the deployment's prices, else the model's, times the markup.
        for (line, (m, d)) in list.iter().zip([(0, 0), (0, 1), (1, 0)]) {
            let model = &catalog.models[m];
            let dep = &model.deployments[d];
            let provider = &catalog.providers[dep.provider];
            let metered = cost(&usage, dep.pricing.as_ref().or(model.pricing.as_ref()))
                .map(|c| c * provider.markup);
            let shown = cost(&usage, line.billed.as_ref());
            match (metered, shown) {
                (Some(a), Some(b)) => assert!((a - b).abs() < 1e-9, "{}: {a} vs {b}", line.model),
                (a, b) => assert_eq!(a, b, "{}", line.model),
            }
        }
        let tier = list[0].billed.as_ref().and_then(|p| p.long_context).unwrap();
        assert_eq!(
            (tier.threshold, tier.input, tier.cache_read),
            (1_000_000, Some(4.0), Some(4.0))
        );
        let marked = &list[1];
        assert_eq!(marked.billed.as_ref().and_then(|p| p.input), Some(6.0));
        assert_eq!(
            marked.billed.as_ref().and_then(|p| p.cache_write),
            Some(6.0),
            "cache falls back to input"
        );
        assert!(list[0].visible && !list[2].visible);
        assert!(list[2].billed.is_none());
    }
}
