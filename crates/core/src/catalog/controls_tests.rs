//! The controls' configuration: limits, state, budgets and the response
//! cache, refused at their lines when they cannot mean what they say.

use super::*;

#[test]
fn limits_and_state_that_would_refuse_everything_are_problems_naming_their_field() {
    let yaml = r#"
state: { backend: redis, expected_instances: 0, lease_ttl_ms: 0 }
limits:
  projects: { research: { rpm: 0 } }
  users: { "a@example.com": { concurrent: 0, tpm: 5 } }
providers:
  a: { wire: openai-chat, endpoint: "http://127.0.0.1:1/v1", credentials: { env: [KEY] } }
models:
  - id: m
    deployments:
      - provider: a
        limits: { tpm: 0 }
"#;
    let text = problems(yaml);
    for want in [
        "t.yaml:11: models[m].deployments[a].limits.tpm: must be greater than 0",
        "t.yaml:2: state.expected_instances: must be greater than 0",
        "t.yaml:2: state.lease_ttl_ms: must be greater than 0",
        "t.yaml:2: state.redis.url: required by `backend: redis`",
        "t.yaml:4: limits.projects[research].rpm: must be greater than 0",
        "t.yaml:4: limits.users[a@example.com].concurrent: must be greater than 0",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    assert_eq!(text.matches("tpm: must").count(), 1, "a user's tpm of 5 is fine: {text}");
    let bad_url = r#"
state: { backend: redis, redis: { url: "http://127.0.0.1:6379", timeout_ms: 0 } }
"#;
    let text = problems(bad_url);
    assert!(text.contains("state.redis.url: must start with redis://"), "{text}");
    let tls = "state: { backend: redis, redis: { url: \"rediss://cache:6380\" } }\n";
    assert!(problems(tls).contains("TLS to Redis (rediss://) is not supported yet"));
    assert!(text.contains("state.redis.timeout_ms: must be greater than 0"), "{text}");
    // An unknown field in a limit is refused by name (a typo is not a no-limit).
    let typo = "limits: { projects: { p: { rpn: 5 } } }\n";
    let err = crate::ConfigSource::from_text("t.yaml", typo).parse().unwrap_err();
    assert!(err.to_string().contains("unknown field `rpn`"), "{err}");
}

#[test]
fn budgets_are_refused_by_line_when_their_period_cannot_be_counted() {
    let yaml = r#"
budgets:
  - { scope: gateway, limit_usd: 5, period: rolling }
  - { scope: gateway, limit_usd: 5, period: rolling, window_hours: 0 }
  - { scope: gateway, limit_usd: 5, period: day, window_hours: 24 }
  - { scope: gateway, limit_usd: 0, period: rolling, window_hours: 24 }
  - { scope: gateway, limit_usd: 5, period: day, mode: warn, lower_max_tokens: true }
"#;
    let text = problems(yaml);
    for want in [
        "t.yaml:3: budgets[0].window_hours: required by `period: rolling`",
        "t.yaml:4: budgets[1].window_hours: must be 1 to 8784",
        "t.yaml:5: budgets[2].window_hours: only with `period: rolling`",
        "t.yaml:6: budgets[3].limit_usd: must be a number greater than 0",
        "t.yaml:7: budgets[4].lower_max_tokens: only in `mode: enforce`",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    // A rolling window is rebuilt from the records: none kept, none counted.
    let unrecorded = "storage: { url: none }\nbudgets:\n  - { scope: gateway, limit_usd: 5, period: rolling, window_hours: 24 }\n";
    let text = problems(unrecorded);
    assert!(text.contains("t.yaml:3: budgets[0].period: a rolling window is rebuilt"), "{text}");
    let fine =
        "budgets:\n  - { scope: gateway, limit_usd: 5, period: rolling, window_hours: 720 }\n";
    let c = compile(fine).unwrap();
    assert_eq!(c.budgets[0].period, crate::limits::Period::Rolling { hours: 720 });
}

#[test]
fn a_cache_that_keeps_nothing_is_a_problem_with_its_line() {
    let yaml = r#"
state: { cache: { max_entries: 0, max_bytes: 10, max_entry_bytes: 20 } }
providers:
  a: { wire: openai-chat, endpoint: "http://127.0.0.1:1/v1", credentials: { env: [KEY] } }
models:
  - id: m
    deployments: [{ provider: a }]
    cache: { ttl_ms: 0 }
routes:
  - { name: r, match: "m", provider: a, cache: { ttl_ms: 0 } }
"#;
    let text = problems(yaml);
    for want in [
        "t.yaml:8: models[m].cache.ttl_ms: must be greater than 0",
        "t.yaml:10: routes[r].cache.ttl_ms: must be greater than 0",
        "t.yaml:2: state.cache.max_entries: must be greater than 0",
        "t.yaml:2: state.cache.max_entry_bytes: larger than state.cache.max_bytes",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    let ok = yaml
        .replace("max_entries: 0, max_bytes: 10, max_entry_bytes: 20", "max_entries: 5")
        .replace("ttl_ms: 0", "ttl_ms: 1000");
    let c = compile(&ok).unwrap();
    let today = Date::parse("2026-11-30").unwrap();
    let plan = c.plan("m", today, &Scope::default()).unwrap();
    assert_eq!(plan.cache, Some(crate::catalog::CacheSpec { ttl_ms: 1000 }));
}
