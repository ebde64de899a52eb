//! The synthetic traffic: request rows shaped like the gateway's own, spread
//! over the last `days` with a daily and weekly rhythm, generated in time
//! order (so ids, which start with their time, arrive in key order as they do
//! from a live gateway).
//!
//! Deterministic for a seed: two runs seed the same rows.

use switchyard_core::protocol::ClientFormat;
use switchyard_core::record::AttemptRecord;

const HOUR_MS: i64 = 3_600_000;

/// A small, fast PRNG (SplitMix64): the bench needs spread, not secrecy, and
/// no new dependency for it.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[0, n)` (`n > 0`).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n.max(1))) >> 64) as u64
    }

    /// True with probability `p`.
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Log-uniform in `[lo, hi]`: token counts and latencies spread over
    /// orders of magnitude.
    pub(crate) fn log_between(&mut self, lo: f64, hi: f64) -> u64 {
        (lo * (hi / lo).powf(self.unit())).round() as u64
    }
}

/// Picks an index with probability proportional to its weight.
pub(crate) struct Weighted(Vec<f64>);

impl Weighted {
    pub(crate) fn new(weights: impl IntoIterator<Item = f64>) -> Weighted {
        let mut acc = 0.0;
        Weighted(
            weights
                .into_iter()
                .map(|w| {
                    acc += w;
                    acc
                })
                .collect(),
        )
    }

    /// Zipf-like popularity over `n` items: a few heavy users, a long tail.
    pub(crate) fn zipf(n: usize, s: f64) -> Weighted {
        Weighted::new((0..n).map(|i| 1.0 / ((i + 1) as f64).powf(s)))
    }

    pub(crate) fn pick(&self, rng: &mut Rng) -> usize {
        let total = self.0.last().copied().unwrap_or(0.0);
        let x = rng.unit() * total;
        self.0.partition_point(|&c| c <= x).min(self.0.len().saturating_sub(1))
    }
}

/// A model of the synthetic catalog.
pub(crate) struct Model {
    pub(crate) id: &'static str,
    /// The provider serving it first, and the one it fails over to.
    pub(crate) primary: usize,
    pub(crate) fallback: usize,
    /// USD per million input and output tokens.
    pub(crate) price: (f64, f64),
    /// Share of all traffic (relative).
    pub(crate) weight: f64,
}

pub(crate) const PROVIDERS: [&str; 6] =
    ["openai", "anthropic", "google", "bedrock", "azure", "mistral"];

/// Twenty models over the six providers, popular first.
pub(crate) const MODELS: [Model; 20] = [
    m("gpt-4o-mini", 0, 4, (0.15, 0.6), 20.0),
    m("claude-sonnet-4", 1, 3, (3.0, 15.0), 16.0),
    m("gpt-4.1", 0, 4, (2.0, 8.0), 10.0),
    m("gemini-2.5-flash", 2, 0, (0.3, 2.5), 9.0),
    m("claude-haiku-3.5", 1, 3, (0.8, 4.0), 7.0),
    m("gpt-4o", 0, 4, (2.5, 10.0), 6.0),
    m("o4-mini", 0, 4, (1.1, 4.4), 5.0),
    m("gemini-2.5-pro", 2, 0, (1.25, 10.0), 4.0),
    m("claude-opus-4", 1, 3, (15.0, 75.0), 3.0),
    m("mistral-small", 5, 0, (0.1, 0.3), 3.0),
    m("llama-3.3-70b", 3, 5, (0.72, 0.72), 2.5),
    m("o3", 0, 4, (2.0, 8.0), 2.5),
    m("mistral-large", 5, 3, (2.0, 6.0), 2.0),
    m("gpt-4.1-mini", 0, 4, (0.4, 1.6), 2.0),
    m("nova-pro", 3, 1, (0.8, 3.2), 1.5),
    m("codestral", 5, 0, (0.3, 0.9), 1.5),
    m("gemini-2.0-flash", 2, 0, (0.1, 0.4), 1.5),
    m("nova-lite", 3, 1, (0.06, 0.24), 1.0),
    m("gpt-4.1-nano", 0, 4, (0.1, 0.4), 1.0),
    m("claude-sonnet-3.7", 1, 3, (3.0, 15.0), 1.0),
];

const fn m(
    id: &'static str,
    primary: usize,
    fallback: usize,
    price: (f64, f64),
    weight: f64,
) -> Model {
    Model { id, primary, fallback, price, weight }
}

/// A gateway key of the directory the bench made: its prefix, user and project.
#[derive(Clone)]
pub(crate) struct Key {
    pub(crate) prefix: String,
    pub(crate) user: String,
    pub(crate) project: String,
}

/// One generated record, as the columns of `request_records` hold it.
pub(crate) struct Row {
    pub(crate) id: String,
    pub(crate) time_ms: i64,
    pub(crate) key: usize,
    pub(crate) client_format: &'static str,
    pub(crate) model: usize,
    pub(crate) route_id: Option<&'static str>,
    /// The provider tried first and the one that answered.
    pub(crate) provider: usize,
    pub(crate) served: usize,
    pub(crate) descriptor: String,
    pub(crate) status: i32,
    pub(crate) error_code: Option<&'static str>,
    pub(crate) attempts: String,
    pub(crate) ttft_ms: Option<i64>,
    pub(crate) total_ms: i64,
    /// input, output, cache read, cache write, reasoning.
    pub(crate) tokens: [Option<i64>; 5],
    pub(crate) cost_usd: Option<f64>,
    pub(crate) stream: bool,
    pub(crate) session_id: Option<String>,
    pub(crate) field_edits: Option<&'static str>,
    pub(crate) cache: Option<&'static str>,
    /// Logged content (a few per cent of rows), to be deflated.
    pub(crate) content: Option<String>,
}

/// The generator: `rows` records over the `days` before `end_ms` (an hour's
/// start), hour by hour.
pub(crate) struct Traffic {
    rng: Rng,
    keys: Vec<Key>,
    key_pick: Weighted,
    model_pick: Weighted,
    /// Each key's own three models (most of its traffic).
    key_models: Vec<[usize; 3]>,
    /// Rows for each hour, oldest first, and the hour being emitted.
    per_hour: Vec<u64>,
    hour: usize,
    start_ms: i64,
    /// The current hour's times, sorted, consumed from the front.
    times: Vec<i64>,
    next_time: usize,
    counter: u32,
    instance: u32,
}

impl Traffic {
    pub(crate) fn new(keys: Vec<Key>, rows: u64, days: u32, end_ms: i64, seed: u64) -> Traffic {
        let mut rng = Rng::new(seed);
        let hours = usize::try_from(days).unwrap_or(1).max(1) * 24;
        let start_ms = end_ms - hours as i64 * HOUR_MS;
        let weights: Vec<f64> = (0..hours).map(|h| shape(start_ms + h as i64 * HOUR_MS)).collect();
        let total: f64 = weights.iter().sum();
        let mut per_hour: Vec<u64> =
            weights.iter().map(|w| (rows as f64 * w / total).floor() as u64).collect();
        // The rounding's remainder goes to the busiest hours.
        let left = rows.saturating_sub(per_hour.iter().sum());
        let mut order: Vec<usize> = (0..hours).collect();
        order.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]));
        for &h in order.iter().cycle().take(usize::try_from(left).unwrap_or(0)) {
            per_hour[h] += 1;
        }
        let key_models = (0..keys.len())
            .map(|_| {
                let mp = Weighted::new(MODELS.iter().map(|m| m.weight));
                [mp.pick(&mut rng), mp.pick(&mut rng), mp.pick(&mut rng)]
            })
            .collect();
        let instance = (rng.next() & 0xf_ffff) as u32;
        Traffic {
            key_pick: Weighted::zipf(keys.len(), 0.9),
            model_pick: Weighted::new(MODELS.iter().map(|m| m.weight)),
            keys,
            key_models,
            per_hour,
            hour: 0,
            start_ms,
            times: Vec::new(),
            next_time: 0,
            counter: 0,
            instance,
            rng,
        }
    }

    pub(crate) fn keys(&self) -> &[Key] {
        &self.keys
    }

    /// The next record's time, in order; `None` when all are out.
    fn next_time(&mut self) -> Option<i64> {
        while self.next_time >= self.times.len() {
            let n = *self.per_hour.get(self.hour)?;
            let base = self.start_ms + self.hour as i64 * HOUR_MS;
            self.hour += 1;
            self.times.clear();
            self.next_time = 0;
            for _ in 0..n {
                self.times.push(base + self.rng.below(HOUR_MS as u64) as i64);
            }
            self.times.sort_unstable();
        }
        let t = self.times[self.next_time];
        self.next_time += 1;
        Some(t)
    }

    /// The next record, or `None` when all `rows` are out.
    pub(crate) fn next_row(&mut self) -> Option<Row> {
        let time_ms = self.next_time()?;
        let r = &mut self.rng;
        self.counter = self.counter.wrapping_add(1);
        // As the gateway's `request_id_at`: time, instance, counter.
        let id = format!(
            "req_{:011x}{:05x}{:08x}",
            time_ms as u64 & 0xfff_ffff_ffff,
            self.instance,
            self.counter
        );
        let key = self.key_pick.pick(r);
        let model = if r.chance(0.9) {
            let own = self.key_models[key];
            own[[0, 0, 0, 0, 0, 0, 1, 1, 1, 2][r.below(10) as usize]]
        } else {
            self.model_pick.pick(r)
        };
        let spec = &MODELS[model];
        let client_format = match r.below(20) {
            0..=11 => ClientFormat::OpenAiChat,
            12..=16 => ClientFormat::Anthropic,
            17..=18 => ClientFormat::OpenAiResponses,
            _ => ClientFormat::Gemini,
        }
        .as_str();
        let stream = r.chance(0.6);
        let route_id = r.chance(0.25).then_some("route:default-chain");
        // What happened: mostly a first-attempt answer; some retries and
        // failovers (~3 %); some failures passed on.
        let roll = r.unit();
        let (status, error_code, failover, retry) = match roll {
            x if x < 0.020 => (429, Some("rate_limited"), false, false),
            x if x < 0.030 => (500, Some("upstream_error"), false, true),
            x if x < 0.040 => (503, Some("upstream_unavailable"), true, false),
            x if x < 0.045 => (400, Some("upstream_invalid_request"), false, false),
            x if x < 0.065 => (200, None, true, false),
            x if x < 0.075 => (200, None, false, true),
            _ => (200, None, false, false),
        };
        let ok = status == 200;
        let served = if failover { spec.fallback } else { spec.primary };
        let input = r.log_between(60.0, 30_000.0) as i64;
        let output = if ok { r.log_between(8.0, 3_000.0) as i64 } else { 0 };
        let cache_read = (ok && spec.primary == 1 && r.chance(0.4)).then_some(input / 2);
        let cache_write = (ok && spec.primary == 1 && r.chance(0.1)).then_some(input / 4);
        let reasoning = (ok && spec.id.starts_with('o')).then_some(output / 2);
        let ttft = (ok && stream).then(|| r.log_between(150.0, 4_000.0) as i64);
        let gen_ms = if ok { output * (8 + r.below(25) as i64) } else { r.below(400) as i64 };
        let first_latency = ttft.unwrap_or(0) + if stream { 0 } else { gen_ms };
        // Attempts: a failed one first (1 or 2 on a retry or failover), then the last.
        let mut attempts = Vec::with_capacity(3);
        let mut started = r.below(4);
        let deployment = |p: usize| format!("{}/{}", PROVIDERS[p], spec.id);
        let failed_tries = if failover || retry { 1 + u64::from(r.chance(0.15)) } else { 0 };
        for i in 0..failed_tries {
            let latency = r.log_between(20.0, 3_000.0);
            let outcome = ["status_429", "status_503", "status_500", "transport_timeout"]
                [r.below(4) as usize];
            let kind = if i == 0 { "primary" } else { "retry" };
            let mut a = AttemptRecord::new(deployment(spec.primary), outcome, latency, kind);
            a.started_ms = started;
            a.credential = Some(format!("key-{:08x}", (spec.primary as u32 + 1) * 0x1f3a_5c7d));
            attempts.push(a);
            started += latency + 50 * (i + 1);
        }
        let last_kind = match (failed_tries, failover) {
            (0, _) => "primary",
            (_, true) => "failover",
            (_, false) => "retry",
        };
        let outcome = match status {
            200 => "ok".to_owned(),
            s => format!("status_{s}"),
        };
        let last_latency = u64::try_from(first_latency.max(1)).unwrap_or(1);
        let mut a = AttemptRecord::new(deployment(served), outcome, last_latency, last_kind);
        a.started_ms = started;
        a.credential = Some(format!("key-{:08x}", (served as u32 + 1) * 0x1f3a_5c7d));
        if ok {
            a.finish_reason = Some(if r.chance(0.9) { "stop" } else { "tool_call" }.to_owned());
        }
        attempts.push(a);
        let total_ms = started as i64 + first_latency.max(1) + if stream { gen_ms } else { 0 };
        let mut descriptor = route_id.unwrap_or_default().to_owned();
        if failover {
            if !descriptor.is_empty() {
                descriptor.push(' ');
            }
            descriptor.push_str(&format!(
                "failover:{}->{}",
                PROVIDERS[spec.primary], PROVIDERS[spec.fallback]
            ));
        }
        let cost =
            ok.then(|| (input as f64 * spec.price.0 + output as f64 * spec.price.1) / 1_000_000.0);
        let cache = match r.below(100) {
            0..=1 => Some("hit"),
            2..=9 => Some("miss"),
            _ => None,
        };
        let session_id =
            r.chance(0.3).then(|| format!("sess_{:012x}", r.next() & 0xffff_ffff_ffff));
        let field_edits = r.chance(0.05).then_some(r#"["max_tokens clamped to 8192"]"#);
        let content = r.chance(0.02).then(|| content_text(r, spec.id, input, output));
        let attempts = serde_json::to_string(&attempts).unwrap_or_else(|_| "[]".to_owned());
        Some(Row {
            id,
            time_ms,
            key,
            client_format,
            model,
            route_id,
            provider: spec.primary,
            served,
            descriptor,
            status,
            error_code,
            attempts,
            ttft_ms: ttft,
            total_ms,
            tokens: [Some(input), ok.then_some(output), cache_read, cache_write, reasoning],
            cost_usd: cost,
            stream,
            session_id,
            field_edits,
            cache,
            content,
        })
    }
}

/// How busy an hour is, relative: a day peaking in the (UTC) afternoon, a
/// quiet night, weekends at 40 %.
fn shape(hour_start_ms: i64) -> f64 {
    let hour_of_day = (hour_start_ms.rem_euclid(86_400_000) / HOUR_MS) as f64;
    let day = hour_start_ms.div_euclid(86_400_000);
    // 1970-01-01 was a Thursday: day 2 and 3 of each week are Saturday, Sunday.
    let weekend = matches!(day.rem_euclid(7), 2 | 3);
    let daily = 0.2 + (1.0 + ((hour_of_day - 14.0) / 24.0 * std::f64::consts::TAU).cos()) / 2.0;
    daily * if weekend { 0.4 } else { 1.0 }
}

/// A logged exchange, as the gateway's `content_json` writes one (request and
/// response text).
fn content_text(r: &mut Rng, model: &str, input: i64, output: i64) -> String {
    const WORDS: [&str; 12] = [
        "the", "gateway", "routes", "a", "request", "to", "its", "provider", "and", "records",
        "every", "attempt",
    ];
    let mut text = |n: usize| {
        (0..n).map(|_| WORDS[r.below(WORDS.len() as u64) as usize]).collect::<Vec<_>>().join(" ")
    };
    let ask = text(usize::try_from(input.clamp(20, 400)).unwrap_or(20));
    let answer = text(usize::try_from(output.clamp(10, 300)).unwrap_or(10));
    serde_json::json!({
        "request": format!("system: You are a helpful assistant for {model}.\nuser: {ask}"),
        "response": answer,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> Vec<Key> {
        (0..10)
            .map(|i| Key {
                prefix: format!("sy-{i:06}"),
                user: format!("usr_{i}"),
                project: format!("prj_{}", i % 3),
            })
            .collect()
    }

    #[test]
    fn rows_come_out_in_time_order_within_the_window_and_every_one_is_there() {
        let end = 1_800_000_000_000 - 1_800_000_000_000 % HOUR_MS;
        let mut t = Traffic::new(keys(), 5_000, 3, end, 7);
        let mut last = (i64::MIN, String::new());
        let mut n = 0;
        let (mut failovers, mut errors) = (0, 0);
        while let Some(row) = t.next_row() {
            assert!(row.time_ms >= end - 3 * 24 * HOUR_MS && row.time_ms < end, "{}", row.time_ms);
            assert!((row.time_ms, row.id.clone()) > last, "ordered by (time, id)");
            assert!(row.id.starts_with("req_") && row.id.len() == 28, "{}", row.id);
            let attempts: Vec<AttemptRecord> = serde_json::from_str(&row.attempts).unwrap();
            assert!((1..=3).contains(&attempts.len()));
            assert!(attempts.windows(2).all(|w| w[0].started_ms < w[1].started_ms));
            failovers += usize::from(row.descriptor.contains("failover:"));
            errors += usize::from(row.status >= 400);
            last = (row.time_ms, row.id);
            n += 1;
        }
        assert_eq!(n, 5_000);
        // ~3 % failovers, ~4.5 % errors: well inside these bounds for 5 000 rows.
        assert!((100..400).contains(&failovers), "{failovers}");
        assert!((100..400).contains(&errors), "{errors}");
    }

    #[test]
    fn afternoons_are_busier_than_nights_and_weekdays_than_weekends() {
        let monday = 4 * 86_400_000; // 1970-01-05
        assert!(shape(monday + 14 * HOUR_MS) > 3.0 * shape(monday + 2 * HOUR_MS));
        assert!(shape(monday + 14 * HOUR_MS) > 2.0 * shape(monday - 2 * 86_400_000 + 14 * HOUR_MS));
    }
}
