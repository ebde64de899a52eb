//! Parsing what operators type (durations, points in time, status filters) and
//! formatting what they read (times, money, latencies, tables). Pure functions,
//! unit-tested here.

use switchyard_core::limits::Limits;
use switchyard_core::util::Date;

const SECOND_MS: i64 = 1_000;
const MINUTE_MS: i64 = 60 * SECOND_MS;
const HOUR_MS: i64 = 60 * MINUTE_MS;
const DAY_MS: i64 = 24 * HOUR_MS;

/// A positive span of time, in milliseconds: `30s`, `15m`, `1h`, `7d`, `2w`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span(pub i64);

/// `<positive integer><unit>` with unit `s`, `m`, `h`, `d` or `w`.
pub fn parse_span(s: &str) -> Result<Span, String> {
    let t = s.trim();
    let bad = || {
        format!(
            "invalid duration {s:?}: expected a positive number and a unit (s, m, h, d, w), e.g. 30s, 15m, 1h, 7d"
        )
    };
    let split = t.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (digits, unit) = t.split_at(split);
    if digits.is_empty() {
        return Err(bad());
    }
    let n: i64 = digits.parse().map_err(|_| bad())?;
    let unit_ms = match unit {
        "s" => SECOND_MS,
        "m" => MINUTE_MS,
        "h" => HOUR_MS,
        "d" => DAY_MS,
        "w" => 7 * DAY_MS,
        _ => return Err(bad()),
    };
    if n == 0 {
        return Err(bad());
    }
    // Anything past ~290 million years is a typo.
    n.checked_mul(unit_ms).map(Span).ok_or_else(|| format!("duration {s:?} is too long"))
}

/// A rate limit as typed: a positive whole number (zero would refuse every
/// request; to lift a limit, `keys limits --clear`).
pub fn parse_limit(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err("a limit must be at least 1 (0 would refuse every request)".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("invalid limit {s:?}: expected a positive whole number")),
    }
}

/// A point in time as typed: a span before now, or a UTC date/time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// That long before now.
    Ago(Span),
    /// Unix milliseconds.
    At(i64),
}

impl When {
    /// Unix milliseconds, given the current time.
    pub fn resolve(self, now_ms: i64) -> i64 {
        match self {
            When::Ago(Span(ms)) => now_ms.saturating_sub(ms),
            When::At(ms) => ms,
        }
    }
}

/// A span before now (`1h`, `7d`), a UTC time (`2026-01-31`, `2026-01-31T14:00`,
/// `2026-01-31 14:00:05`, optionally ending in `Z`), or unix milliseconds (as the
/// admin API takes them).
pub fn parse_when(s: &str) -> Result<When, String> {
    let t = s.trim();
    if let Ok(span) = parse_span(t) {
        return Ok(When::Ago(span));
    }
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().map(When::At).map_err(|_| format!("invalid time {s:?}: too large"));
    }
    parse_utc(t).map(When::At).ok_or_else(|| {
        format!(
            "invalid time {s:?}: expected a duration before now (30s, 15m, 1h, 7d) \
             , a UTC date/time (2026-01-31, 2026-01-31T14:00, 2026-01-31T14:00:05Z) or unix milliseconds"
        )
    })
}

fn parse_utc(t: &str) -> Option<i64> {
    let t = t.strip_suffix('Z').unwrap_or(t);
    let (date, time) = match t.split_once(['T', ' ']) {
        Some((d, tm)) => (d, Some(tm)),
        None => (t, None),
    };
    if date.len() != 10 {
        return None;
    }
    let d = Date::parse(date)?;
    let days = days_from_civil(i64::from(d.year), i64::from(d.month), i64::from(d.day));
    // Date::parse accepts 31 for every month: reject dates that do not exist.
    if Date::from_days(days) != d {
        return None;
    }
    let mut ms = days.checked_mul(DAY_MS)?;
    if let Some(time) = time {
        let parts: Vec<&str> = time.split(':').collect();
        if !(2..=3).contains(&parts.len())
            || parts.iter().any(|p| p.len() != 2 || !p.bytes().all(|b| b.is_ascii_digit()))
        {
            return None;
        }
        let field = |i: usize, max: i64| -> Option<i64> {
            let v: i64 = parts.get(i).map_or(Some(0), |p| p.parse().ok())?;
            (v <= max).then_some(v)
        };
        ms += field(0, 23)? * HOUR_MS + field(1, 59)? * MINUTE_MS + field(2, 59)? * SECOND_MS;
    }
    Some(ms)
}

/// Civil date → days since 1970-01-01 (Howard Hinnant's algorithm; the inverse
/// of [`Date::from_days`]).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A status filter: one code, or a class (`4xx`: 400-499).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusFilter {
    Code(u16),
    /// The hundreds digit: 4 for `4xx`.
    Class(u16),
}

impl StatusFilter {
    pub fn matches(self, status: u16) -> bool {
        match self {
            StatusFilter::Code(c) => status == c,
            StatusFilter::Class(c) => status / 100 == c,
        }
    }
}

/// `200`, `429`, `4xx`, `5xx` (any code 100-599, any class 1xx-5xx).
pub fn parse_status(s: &str) -> Result<StatusFilter, String> {
    let t = s.trim().to_ascii_lowercase();
    let bad = || {
        format!("invalid status {s:?}: expected a code (200, 429, …) or a class (2xx, 4xx, 5xx)")
    };
    if let Some(class) = t.strip_suffix("xx") {
        return match class {
            "1" | "2" | "3" | "4" | "5" => {
                class.parse().map(StatusFilter::Class).map_err(|_| bad())
            }
            _ => Err(bad()),
        };
    }
    match t.parse::<u16>() {
        Ok(code) if (100..=599).contains(&code) && t.len() == 3 => Ok(StatusFilter::Code(code)),
        _ => Err(bad()),
    }
}

/// `2026-01-31 14:00:05Z` (UTC, second precision).
pub fn fmt_time(ms: i64) -> String {
    let days = ms.div_euclid(DAY_MS);
    let rest = ms.rem_euclid(DAY_MS);
    format!(
        "{} {:02}:{:02}:{:02}Z",
        Date::from_days(days),
        rest / HOUR_MS,
        rest % HOUR_MS / MINUTE_MS,
        rest % MINUTE_MS / SECOND_MS
    )
}

/// A time, or `-` when there is none.
pub fn fmt_opt_time(ms: Option<i64>) -> String {
    ms.map_or_else(|| "-".to_owned(), fmt_time)
}

/// US dollars with at most 6 decimals (at least 2): `$1.50`, `$0.000123`.
/// A cost too small to show is `<$0.000001`, never a made-up zero.
pub fn fmt_usd(v: f64) -> String {
    if !v.is_finite() {
        return "?".to_owned();
    }
    let fixed = format!("{:.6}", v.abs());
    if v != 0.0 && fixed.bytes().all(|b| b == b'0' || b == b'.') {
        return if v < 0.0 { ">-$0.000001" } else { "<$0.000001" }.to_owned();
    }
    let mut s = fixed.trim_end_matches('0').to_owned();
    let decimals = s.split_once('.').map_or(0, |(_, d)| d.len());
    for _ in decimals..2 {
        s.push('0');
    }
    let sign = if v < 0.0 { "-" } else { "" };
    format!("{sign}${s}")
}

/// A cost that may be unknown: `?` then.
pub fn fmt_cost(v: Option<f64>) -> String {
    v.map_or_else(|| "?".to_owned(), fmt_usd)
}

/// `850ms`, `12.3s`, `4m05s`.
pub fn fmt_ms(ms: u64) -> String {
    if ms < 1_000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1_000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, ms % 60_000 / 1_000)
    }
}

/// `12.5%`.
pub fn fmt_share(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// A count that may be unknown.
pub fn fmt_count(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_owned(), |n| n.to_string())
}

/// A key's limits in a cell: `60 rpm, 10000 tpm, 2 at once`; `-` for none.
pub fn fmt_limits(limits: Option<&Limits>) -> String {
    let Some(l) = limits else { return "-".to_owned() };
    let parts: Vec<String> = [(l.rpm, " rpm"), (l.tpm, " tpm"), (l.concurrent, " at once")]
        .into_iter()
        .filter_map(|(v, unit)| v.map(|n| format!("{n}{unit}")))
        .collect();
    if parts.is_empty() { "-".to_owned() } else { parts.join(", ") }
}

/// A plain-text table: columns padded to their widest cell, numbers right-aligned.
pub struct Table {
    headers: Vec<&'static str>,
    right: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// Headers; a leading `>` right-aligns the column (`">TOKENS"`).
    pub fn new(headers: &[&'static str]) -> Table {
        Table {
            headers: headers.iter().map(|h| h.trim_start_matches('>')).collect(),
            right: headers.iter().map(|h| h.starts_with('>')).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn render(&self) -> String {
        let n = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        let headers: Vec<String> = self.headers.iter().map(|h| (*h).to_owned()).collect();
        for row in std::iter::once(&headers).chain(&self.rows) {
            let mut line = String::new();
            for i in 0..n {
                let cell = row.get(i).map_or("", String::as_str);
                let width = widths.get(i).copied().unwrap_or(0);
                let pad = width.saturating_sub(cell.chars().count());
                if i > 0 {
                    line.push_str("  ");
                }
                if self.right.get(i).copied().unwrap_or(false) {
                    line.extend(std::iter::repeat_n(' ', pad));
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    if i + 1 < n {
                        line.extend(std::iter::repeat_n(' ', pad));
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans() {
        assert_eq!(parse_span("30s"), Ok(Span(30_000)));
        assert_eq!(parse_span("15m"), Ok(Span(900_000)));
        assert_eq!(parse_span("1h"), Ok(Span(3_600_000)));
        assert_eq!(parse_span(" 7d "), Ok(Span(604_800_000)));
        assert_eq!(parse_span("2w"), Ok(Span(2 * 604_800_000)));
        for bad in [
            "",
            "7",
            "d",
            "0d",
            "-1h",
            "1.5h",
            "1y",
            "1ms",
            "1 h",
            "h1",
            "1hh",
            "1h30m",
            "99999999999999999999d",
        ] {
            assert!(parse_span(bad).is_err(), "{bad:?}");
        }
        assert!(parse_span("999999999999d").unwrap_err().contains("too long"));
        assert!(parse_span("1y").unwrap_err().contains("e.g. 30s"));
    }

    #[test]
    fn limits() {
        assert_eq!(parse_limit("60"), Ok(60));
        assert_eq!(parse_limit(" 1 "), Ok(1));
        for bad in ["0", "-1", "1.5", "", "ten", "99999999999999999999999"] {
            assert!(parse_limit(bad).is_err(), "{bad:?}");
        }
        assert!(parse_limit("0").unwrap_err().contains("at least 1"));
        assert_eq!(fmt_limits(None), "-");
        assert_eq!(fmt_limits(Some(&Limits::default())), "-");
        let l = Limits::default().rpm(60).tpm(10_000).concurrent(2);
        assert_eq!(fmt_limits(Some(&l)), "60 rpm, 10000 tpm, 2 at once");
        assert_eq!(fmt_limits(Some(&Limits::default().concurrent(1))), "1 at once");
    }

    #[test]
    fn points_in_time() {
        let now = 1_800_000_000_000;
        assert_eq!(parse_when("1h").unwrap().resolve(now), now - 3_600_000);
        assert_eq!(parse_when("1970-01-01"), Ok(When::At(0)));
        assert_eq!(parse_when("1970-01-02T00:00:01Z"), Ok(When::At(DAY_MS + 1_000)));
        // 2026-01-31 14:05 UTC = 1769868300 s.
        assert_eq!(parse_when("2026-01-31 14:05"), Ok(When::At(1_769_868_300_000)));
        assert_eq!(parse_when("2026-01-31T14:05:00Z"), Ok(When::At(1_769_868_300_000)));
        assert_eq!(parse_when("2000-02-29"), Ok(When::At(951_782_400_000)));
        assert_eq!(parse_when("1769868300000"), Ok(When::At(1_769_868_300_000)));
        for bad in [
            "2026-02-30",
            "2025-02-29",
            "2026-13-01",
            "2026-1-5",
            "2026-01-31T25:00",
            "2026-01-31T10",
            "2026-01-31T10:00:00:00",
            "yesterday",
            "1e3",
            "2026-01-31T1:00",
        ] {
            assert!(parse_when(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn days_round_trip() {
        for days in [-800_000, -1, 0, 1, 59, 365, 11_016, 20_000, 2_932_896] {
            let d = Date::from_days(days);
            assert_eq!(
                days_from_civil(i64::from(d.year), i64::from(d.month), i64::from(d.day)),
                days,
                "{d}"
            );
        }
    }

    #[test]
    fn statuses() {
        assert_eq!(parse_status("200"), Ok(StatusFilter::Code(200)));
        assert_eq!(parse_status("4xx"), Ok(StatusFilter::Class(4)));
        assert_eq!(parse_status("5XX"), Ok(StatusFilter::Class(5)));
        for bad in ["", "20", "2000", "600", "099", "6xx", "xx", "4x", "abc", "+200"] {
            assert!(parse_status(bad).is_err(), "{bad:?}");
        }
        assert!(StatusFilter::Class(4).matches(404) && StatusFilter::Class(4).matches(499));
        assert!(!StatusFilter::Class(4).matches(500) && !StatusFilter::Class(4).matches(399));
        assert!(StatusFilter::Code(429).matches(429) && !StatusFilter::Code(429).matches(428));
    }

    #[test]
    fn times() {
        assert_eq!(fmt_time(0), "1970-01-01 00:00:00Z");
        assert_eq!(fmt_time(1_769_868_305_999), "2026-01-31 14:05:05Z");
        assert_eq!(fmt_time(-1_000), "1969-12-31 23:59:59Z");
        assert_eq!(fmt_opt_time(None), "-");
    }

    #[test]
    fn money_has_at_most_six_decimals() {
        assert_eq!(fmt_usd(0.0), "$0.00");
        assert_eq!(fmt_usd(1.5), "$1.50");
        assert_eq!(fmt_usd(12.0), "$12.00");
        assert_eq!(fmt_usd(0.000123), "$0.000123");
        assert_eq!(fmt_usd(12.345_678_9), "$12.345679");
        assert_eq!(fmt_usd(0.1 + 0.2), "$0.30");
        assert_eq!(fmt_usd(0.000_000_4), "<$0.000001");
        assert_eq!(fmt_usd(0.000_000_6), "$0.000001");
        assert_eq!(fmt_usd(-2.25), "-$2.25");
        assert_eq!(fmt_usd(f64::NAN), "?");
        assert_eq!(fmt_cost(None), "?");
        assert_eq!(fmt_cost(Some(3.0)), "$3.00");
    }

    #[test]
    fn latencies_shares_counts() {
        assert_eq!(fmt_ms(0), "0ms");
        assert_eq!(fmt_ms(999), "999ms");
        assert_eq!(fmt_ms(12_345), "12.3s");
        assert_eq!(fmt_ms(245_000), "4m05s");
        assert_eq!(fmt_share(0.125), "12.5%");
        assert_eq!(fmt_share(1.0), "100.0%");
        assert_eq!(fmt_count(None), "-");
        assert_eq!(fmt_count(Some(7)), "7");
    }

    #[test]
    fn tables_align() {
        let mut t = Table::new(&["NAME", ">COUNT", "NOTE"]);
        assert!(t.is_empty());
        t.row(vec!["alpha".into(), "7".into(), "x".into()]);
        t.row(vec!["b".into(), "1234".into(), String::new()]);
        assert_eq!(t.render(), "NAME   COUNT  NOTE\nalpha      7  x\nb       1234\n");
    }
}
