use switchyard_protocol::{Message, Role, StopReason};

use super::*;
use crate::catalog::{Catalog, Scope};
use crate::config::ConfigSource;
use crate::util::Date;

const YAML: &str = r#"
providers:
  a: { wire: openai-chat, endpoint: "http://127.0.0.1:1/v1", credentials: { none: true } }
  b: { wire: anthropic, endpoint: "http://127.0.0.1:2", credentials: { none: true } }
models:
  - id: m
    max_output_tokens: 100
    deployments: [{ provider: a }, { provider: b }]
    cache: { ttl_ms: 1000 }
  - id: plain
    deployments: [{ provider: a }]
  - id: routed
    deployments: [{ provider: a }]
routes:
  - { name: r, match: "routed", provider: a, cache: { ttl_ms: 5000 } }
"#;

fn plan(model: &str) -> Plan {
    let raw = ConfigSource::from_text("t.yaml", YAML).parse_with(&|_| None).unwrap();
    let catalog = Catalog::compile(&raw, "t.yaml", &|_| None).unwrap();
    catalog.plan(model, Date::parse("2026-11-30").unwrap(), &Scope::default()).unwrap()
}

fn request(text: &str) -> Request {
    Request {
        model: "m".into(),
        messages: vec![Message::text(Role::User, text)],
        ..Request::default()
    }
}

fn inbound(request: Request) -> Inbound {
    Inbound::new("r1".into(), ClientFormat::OpenAiChat, request, Principal::default())
}

fn base(i: &Inbound) -> String {
    keyed(i, &plan("m"), None).unwrap().base
}

#[test]
fn only_opted_in_models_and_routes_are_cached() {
    assert!(keyed(&inbound(request("x")), &plan("plain"), None).is_none());
    let k = keyed(&inbound(request("x")), &plan("m"), None).unwrap();
    assert_eq!((k.ttl_ms, k.keys.len()), (1000, 2), "one key per candidate");
    assert_ne!(k.keys[0], k.keys[1], "an answer is kept under the deployment that served it");
    assert_eq!(keyed(&inbound(request("x")), &plan("routed"), None).unwrap().ttl_ms, 5000);
    let mut skip = inbound(request("x"));
    skip.cache = CacheMode::Skip;
    assert!(keyed(&skip, &plan("m"), None).is_none());
    assert!(keyed(&inbound(request("x")), &plan("m"), Some("compaction")).is_none());
}

#[test]
fn the_key_covers_what_changes_the_answer_and_nothing_else() {
    let same = base(&inbound(request("x")));
    assert_eq!(same, base(&inbound(request("x"))), "deterministic");
    assert_ne!(same, base(&inbound(request("y"))));
    let changed = |f: &dyn Fn(&mut Request)| {
        let mut r = request("x");
        f(&mut r);
        base(&inbound(r))
    };
    // What can change the answer.
    assert_ne!(same, changed(&|r| r.temperature = Some(0.5)));
    assert_ne!(same, changed(&|r| r.top_p = Some(0.5)));
    assert_ne!(same, changed(&|r| r.top_k = Some(5)));
    assert_ne!(same, changed(&|r| r.stop = vec!["END".into()]));
    assert_ne!(same, changed(&|r| r.parallel_tool_calls = Some(false)));
    assert_ne!(same, changed(&|r| r.tool_choice = Some(switchyard_protocol::ToolChoice::None)));
    assert_ne!(
        same,
        changed(&|r| r.system = vec![switchyard_protocol::TextBlock::new("be terse")])
    );
    // How it is delivered or billed does not.
    assert_eq!(same, changed(&|r| r.stream = true));
    assert_eq!(same, changed(&|r| r.user = Some("u".into())));
    assert_eq!(same, changed(&|r| r.extras.session_id = Some("s".into())));
    assert_eq!(same, changed(&|r| r.extras.prompt_cache_key = Some("p".into())));
    // Another API kind, another entry.
    let mut other = inbound(request("x"));
    other.format = ClientFormat::Anthropic;
    assert_ne!(same, base(&other));
}

#[test]
fn tenants_never_share_a_key() {
    let anonymous = base(&inbound(request("x")));
    let with = |f: &dyn Fn(&mut Inbound)| {
        let mut i = inbound(request("x"));
        f(&mut i);
        base(&i)
    };
    let key_a = with(&|i| i.principal.key_id = Some("k_a".into()));
    let key_b = with(&|i| i.principal.key_id = Some("k_b".into()));
    let static_a = with(&|i| i.principal.key_prefix = Some("k_a".into()));
    let user = with(&|i| i.principal.user_id = Some("u".into()));
    let project = with(&|i| i.project = Some("p".into()));
    let all = [&anonymous, &key_a, &key_b, &static_a, &user, &project];
    for (n, a) in all.iter().enumerate() {
        for b in all.iter().skip(n + 1) {
            assert_ne!(a, b);
        }
    }
}

#[test]
fn the_output_ceiling_is_the_one_the_deployment_gets() {
    let keys = |max: Option<u64>| {
        let mut r = request("x");
        r.max_tokens = max;
        keyed(&inbound(r), &plan("m"), None).unwrap().keys
    };
    // The model's cap is 100: asking for more, or for none, is asking for 100.
    assert_eq!(keys(Some(500)), keys(Some(100)));
    assert_eq!(keys(None), keys(Some(100)));
    assert_ne!(keys(Some(50)), keys(Some(100)));
}

#[test]
fn only_complete_answers_are_kept() {
    let with = |stop_reason| Response {
        id: String::new(),
        model: String::new(),
        content: Vec::new(),
        stop_reason,
        stop_sequence: None,
        usage: Usage::default(),
    };
    for ok in
        [StopReason::EndTurn, StopReason::MaxTokens, StopReason::StopSequence, StopReason::ToolUse]
    {
        assert!(keepable(&with(Some(ok))));
    }
    for not in
        [StopReason::Error, StopReason::ContentFilter, StopReason::Refusal, StopReason::PauseTurn]
    {
        assert!(!keepable(&with(Some(not))));
    }
    assert!(!keepable(&with(None)));
}

#[test]
fn the_request_header_reads_skip_and_refresh() {
    assert_eq!(CacheMode::parse("skip"), Some(CacheMode::Skip));
    assert_eq!(CacheMode::parse(" Refresh "), Some(CacheMode::Refresh));
    assert_eq!(CacheMode::parse("always"), None);
}
