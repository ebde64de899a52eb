//! How long resolution takes with a large catalog. Not a timed assertion: run with
//! `cargo test --release -p switchyard-core --test routing_scale -- --ignored --nocapture`
//! and read the figures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Write;
use std::time::Instant;

use switchyard_core::catalog::Scope;
use switchyard_core::util::Date;
use switchyard_core::{Catalog, ConfigSource};

fn catalog(models: usize, routes: usize) -> Catalog {
    let mut y = String::from(
        "providers:\n  p: { wire: openai-chat, endpoint: \"http://127.0.0.1:1/v1\", credentials: { none: true } }\n  q: { wire: anthropic, endpoint: \"http://127.0.0.1:2\", credentials: { none: true } }\nmodels:\n",
    );
    for i in 0..models {
        writeln!(y, "  - {{ id: fam{}-model-{i}, aliases: [alias-{i}], deployments: [{{ provider: p }}, {{ provider: q }}], pricing: {{ input: 1, output: 2 }}, context_window: 100000 }}", i % 500).unwrap();
    }
    if routes > 0 {
        y.push_str("routes:\n");
        for r in 0..routes {
            writeln!(y, "  - {{ name: route-{r}, match: \"fam{r}-*\", provider: q, fallbacks: [{{ provider: p }}] }}").unwrap();
        }
    }
    let raw = ConfigSource::from_text("scale.yaml", &y).parse_with(&|_| None).unwrap();
    Catalog::compile(&raw, "scale.yaml", &|_| None).unwrap()
}

fn time_plans(c: &Catalog, names: &[String]) -> f64 {
    let today = Date::today();
    let n = 200_000;
    let start = Instant::now();
    for i in 0..n {
        let p = c.plan(&names[i % names.len()], today, &Scope::default()).unwrap();
        std::hint::black_box(p);
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

#[test]
#[ignore = "measurement; run explicitly"]
fn resolution_cost_with_5000_models_and_500_routes() {
    let small = catalog(10, 5);
    let started = Instant::now();
    let big = catalog(5000, 500);
    let compile_ms = started.elapsed().as_millis();
    let small_names: Vec<String> = (0..10).map(|i| format!("fam{}-model-{i}", i % 500)).collect();
    let big_names: Vec<String> = (0..5000).step_by(7).map(|i| format!("alias-{i}")).collect();
    let t_small = time_plans(&small, &small_names);
    let t_big = time_plans(&big, &big_names);
    println!(
        "plan(): 10 models / 5 routes: {t_small:.0} ns; 5000 models / 500 routes: {t_big:.0} ns per request (compile: {compile_ms} ms)"
    );
}
