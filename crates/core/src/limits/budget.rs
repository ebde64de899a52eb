//! Budgets in USD: what is limited (a scope, a period, a mode) and what a
//! request reserves against it. Counting is the [`Counters`](super::Counters)
//! backend's [`Meter::Spend`](super::Meter::Spend): spent, reserved and
//! uncertain amounts in micro-dollars, per scope and period.
//!
//! A request reserves its estimate before its first attempt (prompt plus the
//! output it may produce, at the first candidate's price, capped per request);
//! the reservation is settled against the metered cost when the request is
//! over. A request whose cost is unknown (failed, cut, unpriced) keeps its
//! reservation as *uncertain* spend, counted against the budget and shown as
//! such. Concurrent requests therefore overshoot a budget by at most one
//! reservation each, never more.

use serde::{Deserialize, Serialize};

use super::counters::BackendError;
use crate::clock::UnixMs;
use crate::continuity::BoxFuture;

/// Where spend is recorded (the request records): read to seed a budget
/// counter that the backend does not have, so that a Redis that lost its data
/// (or a restarted instance on the local backend) rebuilds budgets from what
/// was spent, never from zero.
pub trait Ledger: Send + Sync + std::fmt::Debug {
    /// USD spent this period by `budget`'s scope (its names: a user's id and
    /// email, a project's id and name): the cost of its requests since
    /// `budget.window.start`.
    fn spent<'a>(&'a self, budget: &'a Budgeted) -> BoxFuture<'a, Result<f64, BackendError>>;
}

/// A micro-dollar: budgets count in integers.
pub const MICROS_PER_USD: f64 = 1_000_000.0;

/// USD to micro-dollars, rounded up (a reservation never falls short); 0 for
/// anything not a positive finite number.
pub fn micros(usd: f64) -> u64 {
    if usd.is_finite() && usd > 0.0 { (usd * MICROS_PER_USD).ceil() as u64 } else { 0 }
}

/// Who a budget applies to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BudgetScope {
    /// Every request.
    Gateway,
    /// A stored gateway key, by id.
    Key(String),
    /// A user, by id or email.
    User(String),
    /// A project, by id or name.
    Project(String),
}

impl BudgetScope {
    /// `gateway`, `key:<id>`, `user:<id or email>`, `project:<id or name>`.
    pub fn parse(s: &str) -> Option<BudgetScope> {
        if s == "gateway" {
            return Some(BudgetScope::Gateway);
        }
        let (kind, name) = s.split_once(':')?;
        let name = name.trim();
        if name.is_empty() {
            return None;
        }
        match kind.trim() {
            "key" => Some(BudgetScope::Key(name.to_owned())),
            "user" => Some(BudgetScope::User(name.to_owned())),
            "project" => Some(BudgetScope::Project(name.to_owned())),
            _ => None,
        }
    }
}

impl std::fmt::Display for BudgetScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BudgetScope::Gateway => f.write_str("gateway"),
            BudgetScope::Key(k) => write!(f, "key:{k}"),
            BudgetScope::User(u) => write!(f, "user:{u}"),
            BudgetScope::Project(p) => write!(f, "project:{p}"),
        }
    }
}

/// A budget's period: a UTC calendar day, ISO week (from Monday) or month, or
/// a rolling window of some hours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    /// 00:00 to 24:00 UTC.
    Day,
    /// Monday 00:00 UTC to the next Monday.
    Week,
    /// The first of the month 00:00 UTC to the first of the next.
    Month,
    /// The last `hours` hours, moving in [`ROLLING_STEPS`] steps: spend leaves
    /// the window between `hours - hours / 24` and `hours` hours after it was
    /// made. Each step's counter starts from the ledger (what the requests of
    /// the steps before it in the window cost), so a rolling budget needs the
    /// request records.
    Rolling {
        /// The window's length.
        hours: u32,
    },
}

/// The steps a rolling window moves in: a 24-hour window moves by the hour.
pub const ROLLING_STEPS: u64 = 24;

/// How a period is written in `budgets:` (a rolling window's length is
/// `window_hours`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeriodName {
    /// [`Period::Day`].
    Day,
    /// [`Period::Week`].
    Week,
    /// [`Period::Month`].
    Month,
    /// [`Period::Rolling`].
    Rolling,
}

/// One period: its name (in counter keys) and its bounds, unix milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// `d2026-12-02`, `w2026-11-30` (the Monday), `m2026-12`; a rolling
    /// window's current step, `r24h-493271` (the window's length, and the
    /// step's number since 1970).
    pub id: String,
    /// Its first millisecond (a rolling window's: the first of its oldest step).
    pub start: UnixMs,
    /// The first millisecond after it (a rolling window's: after its current
    /// step, when its counter is replaced by the next step's).
    pub end: UnixMs,
}

const DAY_MS: u64 = 86_400_000;

impl Period {
    /// The period `now` falls in.
    pub fn window(self, now: UnixMs) -> Window {
        let day = now.0 / DAY_MS;
        match self {
            Period::Rolling { hours } => {
                let step_ms = (u64::from(hours.max(1)) * 3_600_000 / ROLLING_STEPS).max(1);
                let step = now.0 / step_ms;
                let first = step.saturating_sub(ROLLING_STEPS - 1);
                Window {
                    id: format!("r{hours}h-{step}"),
                    start: UnixMs(first * step_ms),
                    end: UnixMs((step + 1) * step_ms),
                }
            }
            Period::Day => {
                let (y, m, d) = civil(day);
                Window {
                    id: format!("d{y:04}-{m:02}-{d:02}"),
                    start: UnixMs(day * DAY_MS),
                    end: UnixMs((day + 1) * DAY_MS),
                }
            }
            Period::Week => {
                // 1970-01-01 was a Thursday: days since the Monday before it.
                let monday = day - (day + 3) % 7;
                let (y, m, d) = civil(monday);
                Window {
                    id: format!("w{y:04}-{m:02}-{d:02}"),
                    start: UnixMs(monday * DAY_MS),
                    end: UnixMs((monday + 7) * DAY_MS),
                }
            }
            Period::Month => {
                let (y, m, _) = civil(day);
                let first = days_from_civil(y, m, 1);
                let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                Window {
                    id: format!("m{y:04}-{m:02}"),
                    start: UnixMs(first * DAY_MS),
                    end: UnixMs(days_from_civil(ny, nm, 1) * DAY_MS),
                }
            }
        }
    }

    /// Its name in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Week => "week",
            Period::Month => "month",
            Period::Rolling { .. } => "rolling",
        }
    }

    /// As operators read it: `day`, `week`, `month`, `rolling 24h`.
    pub fn label(self) -> String {
        match self {
            Period::Rolling { hours } => format!("rolling {hours}h"),
            other => other.as_str().to_owned(),
        }
    }
}

/// (year, month, day) of a day number since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// The day number of (year, month, day), for years from 1970.
fn days_from_civil(y: u64, m: u64, d: u64) -> u64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// What a breached budget does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetMode {
    /// Refuse requests once spent, reserved and uncertain reach the limit (402
    /// `budget_exceeded`, no retry, no fallback).
    #[default]
    Enforce,
    /// Never refuse: record and count the breach.
    Warn,
}

/// A compiled budget.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetSpec {
    /// Who it applies to.
    pub scope: BudgetScope,
    /// USD per period.
    pub limit_usd: f64,
    /// Its period.
    pub period: Period,
    /// Enforce or warn.
    pub mode: BudgetMode,
    /// The most one request reserves (its estimate is capped here, so that a
    /// request with no `max_tokens` cannot hold a whole budget; the reservation
    /// for a model without prices).
    pub max_reservation_usd: f64,
    /// A request whose output the rest of the budget cannot pay for is sent
    /// with `max_tokens` lowered to what it can (enforce mode, priced models),
    /// instead of refused.
    pub lower_max_tokens: bool,
}

/// A budget a request is charged against, resolved for its scope and period.
#[derive(Debug, Clone, PartialEq)]
pub struct Budgeted {
    /// The scope as configured (a user by email, say): it names the counter
    /// and the refusal.
    pub scope: BudgetScope,
    /// How the records name the scope, for the ledger: a key's prefix, a user's
    /// or project's id (empty for the gateway).
    pub names: Vec<String>,
    /// The budget.
    pub spec: BudgetSpec,
    /// The period now.
    pub window: Window,
    /// What this request reserves, USD.
    pub reserve_usd: f64,
}

impl Budgeted {
    /// `spec` in the period `now` falls in, reserving nothing (to read it).
    pub fn now(spec: &BudgetSpec, now: UnixMs) -> Self {
        Self {
            scope: spec.scope.clone(),
            names: Vec::new(),
            spec: spec.clone(),
            window: spec.period.window(now),
            reserve_usd: 0.0,
        }
    }

    /// The counter's name: scope and period.
    pub fn key(&self) -> String {
        format!("budget:{}:{}", self.scope, self.window.id)
    }
}

#[cfg(test)]
#[path = "budget_tests.rs"]
mod tests;
