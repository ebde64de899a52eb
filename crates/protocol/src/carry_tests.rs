use serde_json::{Value, json};

use super::*;
use crate::{Extras, Message, ModelTraits, ProtocolError, Role, Tool};

fn hosted(
    dialect: Dialect,
    tool_type: &str,
    kind: Option<ServerTool>,
    config: Value,
) -> HostedTool {
    HostedTool { kind, dialect, tool_type: tool_type.into(), path: "tools[0]".into(), config }
}

fn request(extras: Extras) -> Request {
    Request {
        model: "m".into(),
        messages: vec![Message::text(Role::User, "hi")],
        extras,
        ..Request::default()
    }
}

fn settings() -> Extras {
    Extras {
        prompt_cache_key: Some("conv-42".into()),
        prompt_cache_retention: Some("24h".into()),
        safety_identifier: Some("hash-of-alice".into()),
        service_tier: Some("default".into()),
        store: Some(true),
        ..Extras::default()
    }
}

fn body(wire: Wire, req: &Request) -> Value {
    let traits = ModelTraits::infer(wire, &req.model);
    wire.encode_request_for(req, traits).unwrap()
}

#[test]
fn openai_chat_takes_every_setting_as_it_came() {
    let req = request(settings());
    let b = body(Wire::OpenAiChat, &req);
    assert_eq!(b["prompt_cache_key"], "conv-42");
    assert_eq!(b["prompt_cache_retention"], "24h");
    assert_eq!(b["safety_identifier"], "hash-of-alice");
    assert_eq!(b["service_tier"], "default");
    assert_eq!(b["store"], true);
    let c = carriage(Wire::OpenAiChat, &req);
    assert!(c.edits.is_empty(), "{:?}", c.edits);
    for field in ["prompt_cache_key", "safety_identifier", "service_tier", "store"] {
        assert!(c.sent.contains(&field), "{field}: {:?}", c.sent);
    }
    // `store: false` is the client's too, not an absence.
    let req = request(Extras { store: Some(false), ..Extras::default() });
    assert_eq!(body(Wire::OpenAiChat, &req)["store"], false);
    assert!(body(Wire::OpenAiChat, &request(Extras::default())).get("store").is_none());
    // Anthropic's standard tier is OpenAI's default one.
    let req = request(Extras { service_tier: Some("standard_only".into()), ..Extras::default() });
    assert_eq!(body(Wire::OpenAiChat, &req)["service_tier"], "default");
    assert_eq!(carriage(Wire::OpenAiChat, &req).edits, ["service_tier: standard_only -> default"]);
}

#[test]
fn anthropic_maps_the_tier_and_the_safety_id_and_drops_the_rest() {
    let req = request(settings());
    let b = body(Wire::Anthropic, &req);
    assert_eq!(b["service_tier"], "standard_only");
    assert_eq!(b["metadata"], json!({"user_id": "hash-of-alice"}));
    for field in ["prompt_cache_key", "prompt_cache_retention", "safety_identifier", "store"] {
        assert!(b.get(field).is_none(), "{field} reached Anthropic: {b}");
    }
    assert_eq!(
        carriage(Wire::Anthropic, &req).edits,
        [
            "prompt_cache_key: dropped",
            "prompt_cache_retention: dropped",
            "store: dropped",
            "safety_identifier: -> metadata.user_id",
            "service_tier: default -> standard_only",
        ]
    );
    // A user of the request's own wins over the safety identifier.
    let mut named = request(settings());
    named.user = Some("alice".into());
    assert_eq!(body(Wire::Anthropic, &named)["metadata"]["user_id"], "alice");
    assert!(carriage(Wire::Anthropic, &named).edits.contains(&"safety_identifier: dropped".into()));
    for (tier, to) in
        [("auto", Some("auto")), ("priority", Some("auto")), ("flex", Some("standard_only"))]
    {
        assert_eq!(service_tier(Wire::Anthropic, tier), to, "{tier}");
    }
    let odd = request(Extras { service_tier: Some("turbo".into()), ..Extras::default() });
    assert!(body(Wire::Anthropic, &odd).get("service_tier").is_none());
    assert_eq!(carriage(Wire::Anthropic, &odd).edits, ["service_tier: dropped"]);
}

#[test]
fn gemini_takes_none_of_the_settings() {
    let mut req = request(settings());
    req.user = Some("alice".into());
    let b = body(Wire::Gemini, &req);
    for field in ["prompt_cache_key", "safety_identifier", "service_tier", "store", "user"] {
        assert!(b.get(field).is_none(), "{field} reached Gemini: {b}");
    }
    let c = carriage(Wire::Gemini, &req);
    assert!(c.sent.is_empty());
    assert_eq!(c.edits.len(), 6, "{:?}", c.edits);
    assert!(c.edits.iter().all(|e| e.ends_with(": dropped")), "{:?}", c.edits);
}

#[test]
fn a_web_search_is_declared_in_each_wires_form() {
    let responses = hosted(
        Dialect::OpenAiResponses,
        "web_search",
        Some(ServerTool::WebSearch),
        json!({"type": "web_search", "search_context_size": "low",
               "user_location": {"type": "approximate", "country": "FR", "city": "Lyon"}}),
    );
    assert_eq!(
        place(Wire::Anthropic, &responses),
        Ok(Placement::Tool(json!({"type": "web_search_20250305", "name": "web_search",
            "user_location": {"type": "approximate", "country": "FR", "city": "Lyon"}})))
    );
    assert_eq!(
        place(Wire::OpenAiChat, &responses),
        Ok(Placement::Field(
            "web_search_options",
            json!({"search_context_size": "low",
                   "user_location": {"type": "approximate", "approximate": {"country": "FR", "city": "Lyon"}}})
        ))
    );
    assert_eq!(place(Wire::Gemini, &responses), Ok(Placement::Tool(json!({"googleSearch": {}}))));

    // Domain filters cannot be dropped: only Anthropic has them.
    let filtered = hosted(
        Dialect::OpenAiResponses,
        "web_search",
        Some(ServerTool::WebSearch),
        json!({"type": "web_search", "filters": {"allowed_domains": ["docs.rs"]}}),
    );
    assert!(matches!(place(Wire::Anthropic, &filtered),
        Ok(Placement::Tool(t)) if t["allowed_domains"] == json!(["docs.rs"])));
    assert!(place(Wire::OpenAiChat, &filtered).unwrap_err().contains("domains"));
    assert!(!takes(Wire::Gemini, &filtered));

    // An Anthropic client's own tool reaches Anthropic exactly as it came.
    let own = json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 2});
    let anthropic =
        hosted(Dialect::Anthropic, "web_search_20250305", Some(ServerTool::WebSearch), own.clone());
    assert_eq!(place(Wire::Anthropic, &anthropic), Ok(Placement::Tool(own)));
    assert_eq!(
        place(Wire::OpenAiChat, &anthropic),
        Ok(Placement::Field("web_search_options", json!({})))
    );
}

#[test]
fn other_hosted_tools_go_where_they_can_or_are_refused_by_name() {
    let interpreter = |container: Value| {
        hosted(
            Dialect::OpenAiResponses,
            "code_interpreter",
            Some(ServerTool::CodeExecution),
            json!({"type": "code_interpreter", "container": container}),
        )
    };
    assert!(takes(Wire::Gemini, &interpreter(json!({"type": "auto"}))));
    assert!(takes(Wire::Gemini, &interpreter(json!("auto"))));
    assert!(!takes(Wire::Gemini, &interpreter(json!({"type": "auto", "file_ids": ["file-1"]}))));
    assert!(!takes(Wire::Gemini, &interpreter(json!("cntr_123"))));
    assert!(!takes(Wire::Anthropic, &interpreter(json!({"type": "auto"}))));

    let file_search = hosted(
        Dialect::OpenAiResponses,
        "file_search",
        Some(ServerTool::FileSearch),
        json!({"type": "file_search", "vector_store_ids": ["vs_1"]}),
    );
    for wire in [Wire::OpenAiChat, Wire::Anthropic, Wire::Gemini] {
        assert!(!takes(wire, &file_search), "{wire:?}");
        assert!(!runnable(wire).contains(ServerTool::FileSearch));
    }
    let mut req = request(Extras { hosted_tools: vec![file_search], ..Extras::default() });
    let err = Wire::Anthropic.encode_request(&req).unwrap_err();
    assert!(
        matches!(&err, ProtocolError::Unsupported(m) if m.contains("the `file_search` tool (tools[0])")),
        "{err:?}"
    );
    req.extras.hosted_tools[0].path = "tools[3]".into();
    assert!(Wire::Gemini.encode_request(&req).unwrap_err().to_string().contains("tools[3]"));

    // A type the gateway does not know goes only to its own API, as it is.
    let unknown =
        hosted(Dialect::Anthropic, "teleport_20990101", None, json!({"type": "teleport_20990101"}));
    assert!(takes(Wire::Anthropic, &unknown));
    assert!(!takes(Wire::Gemini, &unknown));
}

#[test]
fn anthropic_gets_its_mcp_servers_and_deferred_tools_back() {
    let server = json!({"type": "url", "url": "https://mcp.example.com/sse", "name": "docs"});
    let toolset = json!({"type": "mcp_toolset", "mcp_server_name": "docs"});
    let mut req = request(Extras {
        hosted_tools: vec![
            hosted(Dialect::Anthropic, "mcp_toolset", Some(ServerTool::Mcp), toolset.clone()),
            HostedTool {
                path: "mcp_servers[0]".into(),
                ..hosted(Dialect::Anthropic, MCP_SERVER, Some(ServerTool::Mcp), server.clone())
            },
        ],
        deferred_tools: vec!["lookup".into()],
        ..Extras::default()
    });
    req.tools = vec![Tool {
        name: "lookup".into(),
        description: None,
        parameters: json!({"type": "object"}),
        strict: None,
        cache_control: None,
        freeform: None,
        namespace: None,
    }];
    let b = body(Wire::Anthropic, &req);
    assert_eq!(b["mcp_servers"], json!([server]));
    assert_eq!(b["tools"][0]["defer_loading"], true);
    assert_eq!(b["tools"][1], toolset);
    assert_eq!(req.extras.needs(), ServerTools::of([ServerTool::Mcp, ServerTool::ToolSearch]));
}

#[test]
fn a_forced_tool_is_forced_only_where_the_wire_can_say_so() {
    let search = hosted(
        Dialect::OpenAiResponses,
        "web_search",
        Some(ServerTool::WebSearch),
        json!({"type": "web_search"}),
    );
    // Anthropic names it; a Chat search model searches every time; Gemini's
    // calling modes name functions only.
    assert!(forces(Wire::Anthropic, &search));
    assert!(forces(Wire::OpenAiChat, &search));
    assert!(!forces(Wire::Gemini, &search));
    let server = HostedTool {
        path: "mcp_servers[0]".into(),
        ..hosted(Dialect::Anthropic, MCP_SERVER, Some(ServerTool::Mcp), json!({"name": "docs"}))
    };
    assert!(!forces(Wire::Anthropic, &server), "an MCP server is no tool to name");

    // Forced from a Responses client, Anthropic is told by the name it declares.
    let mut req = request(Extras { hosted_tools: vec![search], ..Extras::default() });
    req.tool_choice = Some(crate::ToolChoice::Hosted { path: "tools[0]".into() });
    let b = body(Wire::Anthropic, &req);
    assert_eq!(b["tool_choice"], json!({"type": "tool", "name": "web_search"}));
    assert_eq!(b["tools"][0]["name"], "web_search");
}

/// A client's own body and what it parses into.
fn own(wire: Wire, body: Value) -> (Map<String, Value>, Request) {
    let bytes = serde_json::to_vec(&body).unwrap();
    let req = match wire {
        Wire::Anthropic => crate::anthropic::parse_request(&bytes),
        _ => crate::openai_chat::parse_request(&bytes),
    };
    (serde_json::from_value(body).unwrap(), req.unwrap())
}

#[test]
fn dropped_tools_leave_a_clients_own_body_and_nothing_else() {
    let search = json!({"type": "web_search_20250305", "name": "web_search"});
    let lookup = json!({"name": "lookup", "input_schema": {"type": "object"}});
    let toolset = json!({"type": "mcp_toolset", "mcp_server_name": "docs"});
    let claude = |tools: Value, messages: Value| {
        own(
            Wire::Anthropic,
            json!({"model": "m", "max_tokens": 10, "messages": messages, "tools": tools,
                   "tool_choice": {"type": "auto"},
                   "mcp_servers": [{"type": "url", "url": "https://mcp.example.com/sse", "name": "docs"}]}),
        )
    };
    let hi = json!([{"role": "user", "content": "hi"}]);
    let dropping = |req: &Request, paths: &[&str]| -> Vec<HostedTool> {
        req.extras
            .hosted_tools
            .iter()
            .filter(|t| paths.contains(&t.path.as_str()))
            .cloned()
            .collect()
    };

    // The search goes; the client's tool, the toolset and `tool_choice: auto` stay.
    let (body, req) = claude(json!([search, lookup, toolset]), hi.clone());
    let gone = dropping(&req, &["tools[0]"]);
    let edits = Wire::Anthropic.drop_hosted(&body, &req, &gone.iter().collect::<Vec<_>>());
    assert_eq!(edits, [("tools", Some(json!([lookup, toolset])))]);

    // Every tool gone: `tools` and its `tool_choice` go (the API refuses one
    // alone), and MCP's servers with its toolset.
    let (body, req) = claude(json!([search, toolset]), hi);
    let gone = dropping(&req, &["tools[0]", "tools[1]", "mcp_servers[0]"]);
    let edits = Wire::Anthropic.drop_hosted(&body, &req, &gone.iter().collect::<Vec<_>>());
    assert_eq!(edits, [("tool_choice", None), ("tools", None), ("mcp_servers", None)]);

    // A history that calls tools keeps them declared, not to be called (Anthropic
    // refuses tool calls with no tools).
    let looped = json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}
    ]);
    let (body, req) = claude(json!([search]), looped);
    let gone = dropping(&req, &["tools[0]"]);
    let edits = Wire::Anthropic.drop_hosted(&body, &req, &gone.iter().collect::<Vec<_>>());
    assert!(edits.contains(&("tool_choice", Some(json!({"type": "none"})))), "{edits:?}");
    let declared = edits.iter().find(|(f, _)| *f == "tools").and_then(|(_, v)| v.clone());
    assert_eq!(declared.unwrap()[0]["name"], "lookup");

    // Chat's search is a field of its own; its tools and choice are not touched.
    let (body, req) = own(
        Wire::OpenAiChat,
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
               "web_search_options": {}, "tool_choice": "auto",
               "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}),
    );
    let gone: Vec<&HostedTool> = req.extras.hosted_tools.iter().collect();
    assert_eq!(Wire::OpenAiChat.drop_hosted(&body, &req, &gone), [("web_search_options", None)]);
}
