use std::borrow::Cow;

use serde_json::json;
use switchyard_protocol::{
    Dialect, Extras, HostedTool, Message, Role, ServerTools, Tool, ToolChoice,
};

use super::*;
use crate::catalog::{Catalog, Scope};
use crate::config::ConfigSource;
use crate::util::Date;

const YAML: &str = r#"
providers:
  plain: { wire: openai-chat, endpoint: "http://127.0.0.1:1/v1", credentials: { none: true } }
  claude: { wire: anthropic, endpoint: "http://127.0.0.1:2", credentials: { none: true } }
  google: { wire: gemini, endpoint: "http://127.0.0.1:3", credentials: { none: true } }
models:
  - id: m
    deployments: [{ provider: plain }, { provider: google }, { provider: claude }]
  - id: only-plain
    deployments: [{ provider: plain }]
"#;

fn plan(model: &str) -> Plan {
    let raw = ConfigSource::from_text("t.yaml", YAML).parse_with(&|_| None).unwrap();
    let catalog = Catalog::compile(&raw, "t.yaml", &|_| None).unwrap();
    catalog.plan(model, Date::parse("2026-11-30").unwrap(), &Scope::default()).unwrap()
}

fn search(path: &str) -> HostedTool {
    HostedTool {
        kind: Some(ServerTool::WebSearch),
        dialect: Dialect::OpenAiResponses,
        tool_type: "web_search".into(),
        path: path.into(),
        config: json!({"type": "web_search"}),
    }
}

/// A Responses request offering a web search (what Codex sends every turn).
fn offering() -> Request {
    Request {
        model: "m".into(),
        messages: vec![Message::text(Role::User, "hi")],
        extras: Extras { hosted_tools: vec![search("tools[0]")], ..Extras::default() },
        ..Request::default()
    }
}

fn providers(plan: &Plan) -> Vec<&str> {
    plan.candidates.iter().map(|c| c.provider.name.as_str()).collect()
}

#[test]
fn an_offered_tool_goes_first_where_it_runs_and_is_dropped_elsewhere() {
    let req = offering();
    let demand = ToolDemand::default();
    let mut p = plan("m");
    demand.filter(&mut p, &req).unwrap();
    assert_eq!(providers(&p), ["plain", "google", "claude"], "nothing is refused");
    demand.order(&mut p, &req);
    assert_eq!(providers(&p), ["google", "claude", "plain"], "runners first, in their order");
    let plain = &p.candidates[2];
    let dropped = demand.dropped(plain, &req);
    assert_eq!(dropped.names(&req), ["web_search"]);
    assert!(matches!(dropped.apply(&req), Cow::Owned(r) if r.extras.hosted_tools.is_empty()));
    assert_eq!(
        dropped.edits(&req).collect::<Vec<_>>(),
        ["the `web_search` tool (tools[0]): dropped (the deployment does not run it)"]
    );
    let runs = demand.dropped(&p.candidates[0], &req);
    assert!(runs.is_empty() && matches!(runs.apply(&req), Cow::Borrowed(_)));

    // A request with no hosted tool is never looked at twice.
    let mut plain_req = req.clone();
    plain_req.extras.hosted_tools.clear();
    let mut p = plan("m");
    demand.order(&mut p, &plain_req);
    assert_eq!(providers(&p), ["plain", "google", "claude"]);
}

#[test]
fn refuse_mode_and_a_forced_tool_keep_the_refusal() {
    let strict = ToolDemand::new(UnrunnableServerTools::Refuse, None);
    let mut p = plan("m");
    strict.filter(&mut p, &offering()).unwrap();
    assert_eq!(providers(&p), ["google", "claude"]);
    assert!(p.descriptor.contains(&"server_tool:plain!web_search".to_owned()));
    let err = strict.filter(&mut plan("only-plain"), &offering()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::UnsupportedTool);
    let message = err.to_string();
    assert!(
        message.contains("the `web_search` tool (tools[0])")
            && message.contains("\"only-plain\"")
            && message.contains("plain/only-plain"),
        "{message}"
    );

    // Forced: only where it runs and can be made to (Gemini cannot force its own).
    let mut forced = offering();
    forced.tool_choice = Some(ToolChoice::Hosted { path: "tools[0]".into() });
    let mut p = plan("m");
    ToolDemand::default().filter(&mut p, &forced).unwrap();
    assert_eq!(providers(&p), ["claude"]);
    let err = ToolDemand::default().filter(&mut plan("only-plain"), &forced).unwrap_err();
    assert!(err.to_string().contains("which tool_choice requires"), "{err}");
}

#[test]
fn a_required_call_that_only_hosted_tools_answer_requires_one_of_them() {
    let mut req = offering();
    req.tool_choice = Some(ToolChoice::Required);
    let mut p = plan("m");
    ToolDemand::default().filter(&mut p, &req).unwrap();
    assert_eq!(providers(&p), ["google", "claude"]);
    // With a function tool to call, the search may go.
    req.tools.push(Tool {
        name: "f".into(),
        description: None,
        parameters: json!({"type": "object"}),
        strict: None,
        cache_control: None,
        freeform: None,
        namespace: None,
    });
    let mut p = plan("m");
    ToolDemand::default().filter(&mut p, &req).unwrap();
    assert_eq!(p.candidates.len(), 3);
}

#[test]
fn a_tools_items_in_the_history_go_only_to_the_clients_own_wire() {
    let mut req = offering();
    req.extras.history_tools = ServerTools::of([ServerTool::WebSearch]);
    // An Anthropic client's body goes as it is to Anthropic alone.
    let demand = ToolDemand::new(UnrunnableServerTools::Drop, Some(Wire::Anthropic));
    let mut p = plan("m");
    demand.filter(&mut p, &req).unwrap();
    assert_eq!(providers(&p), ["claude"]);
    // No wire takes a Responses client's items back.
    let err = ToolDemand::default().filter(&mut plan("m"), &req).unwrap_err();
    assert!(err.to_string().contains("whose own items the conversation holds"), "{err}");
    // A tool the request does not offer is not this module's concern.
    req.extras.hosted_tools.clear();
    let mut p = plan("m");
    ToolDemand::default().filter(&mut p, &req).unwrap();
    assert_eq!(p.candidates.len(), 3);
}

#[test]
fn drop_notices_are_hourly_per_key_tool_and_model_and_bounded() {
    let notices = DropNotices::default();
    let t0 = UnixMs(1_000_000);
    assert!(notices.due("sy-a", "web_search", "m", t0));
    assert!(!notices.due("sy-a", "web_search", "m", UnixMs(t0.0 + 60_000)));
    assert!(notices.due("sy-b", "web_search", "m", t0));
    assert!(notices.due("sy-a", "web_search", "m2", t0));
    assert!(notices.due("sy-a", "web_search", "m", UnixMs(t0.0 + NOTICE_EVERY_MS)));
    for i in 0..NOTICES_KEPT + 100 {
        notices.due(&format!("key-{i}"), "web_search", "m", UnixMs(t0.0 + i as u64));
    }
    let kept = notices.logged.lock().map(|m| m.len()).unwrap_or(usize::MAX);
    assert!(kept <= NOTICES_KEPT, "{kept}");
    // The newest are remembered.
    let last = format!("key-{}", NOTICES_KEPT + 99);
    assert!(!notices.due(&last, "web_search", "m", UnixMs(t0.0 + 200_000)));
}
