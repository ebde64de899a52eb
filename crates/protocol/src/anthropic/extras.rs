//! What a Messages request asks beyond the conversation: server tools and MCP
//! servers (carried as [`HostedTool`]s, never skipped), tools to load on demand,
//! the service tier; and the session Claude Code names in `metadata.user_id`.

use serde_json::Value;

use crate::{Dialect, HostedTool, MCP_SERVER, ServerTool};

/// The hosted tool a `tools` entry is, when it is one: a typed tool without an
/// input schema (`web_search_20250305`, `mcp_toolset`, `bash_20250124`, …).
/// `None` for a client tool (it has a schema; its `type`, if any, is `custom`).
pub(super) fn hosted_tool(raw: &Value, path: &str) -> Option<HostedTool> {
    let tool_type = raw.get("type").and_then(Value::as_str).filter(|t| *t != "custom")?;
    if raw.get("input_schema").is_some_and(|s| !s.is_null()) {
        return None;
    }
    Some(HostedTool {
        kind: ServerTool::from_anthropic(tool_type),
        dialect: Dialect::Anthropic,
        tool_type: tool_type.to_owned(),
        path: path.to_owned(),
        config: raw.clone(),
    })
}

/// The `mcp_servers` entries, each a server the provider connects to.
pub(super) fn mcp_servers(servers: Vec<Value>) -> impl Iterator<Item = HostedTool> {
    servers.into_iter().enumerate().map(|(i, config)| HostedTool {
        kind: Some(ServerTool::Mcp),
        dialect: Dialect::Anthropic,
        tool_type: MCP_SERVER.to_owned(),
        path: format!("mcp_servers[{i}]"),
        config,
    })
}

/// The longest session id kept (a UUID is 36 characters).
const MAX_SESSION: usize = 128;

/// The session Claude Code names in `metadata.user_id`: the legacy
/// `user_<hash>_account_<uuid>_session_<uuid>`, or the newer JSON object (as a
/// string) with a `session_id`. `None` for any other user id: it names a user of
/// the client's, which is not the gateway's business.
pub fn claude_code_session(user_id: &str) -> Option<String> {
    let user_id = user_id.trim();
    let session = if user_id.starts_with('{') {
        let v: Value = serde_json::from_str(user_id).ok()?;
        v.get("session_id").and_then(Value::as_str)?.to_owned()
    } else {
        let rest = user_id.strip_prefix("user_")?;
        let (account, session) = rest.rsplit_once("_session_")?;
        account.contains("_account_").then_some(())?;
        session.to_owned()
    };
    // A record column, not a free text field: an id of a sane length and alphabet.
    let plain = session.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    (!session.is_empty() && session.len() <= MAX_SESSION && plain).then_some(session)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claude_code_sessions_are_read_from_both_forms() {
        let legacy = "user_5dd07c33da27e6d2968d94ea20bf47a7b090b6b158b82328d54da2909a108e84_account__session_d2e70091-3007-41a3-a916-cb8b0d3098de";
        assert_eq!(
            claude_code_session(legacy).as_deref(),
            Some("d2e70091-3007-41a3-a916-cb8b0d3098de")
        );
        let with_account = "user_ab12_account_0f5e8d4c-1111-2222-3333-444455556666_session_7d0e2f61-4b5c-4a9d-8f11-2c3d4e5f6a7b";
        assert_eq!(
            claude_code_session(with_account).as_deref(),
            Some("7d0e2f61-4b5c-4a9d-8f11-2c3d4e5f6a7b")
        );
        let json_form = json!({"device_id": "3f4a", "account_uuid": "", "session_id": "2c4e1cf0-7a67-4d2e-9a4b-1d16d3f44752"}).to_string();
        assert_eq!(
            claude_code_session(&json_form).as_deref(),
            Some("2c4e1cf0-7a67-4d2e-9a4b-1d16d3f44752")
        );
        for other in [
            "alice@example.com",
            "user_42",
            "user_abc_session_1",
            "user_a_account__session_",
            "user_a_account__session_bad id",
            r#"{"device_id": "x"}"#,
            "{not json",
        ] {
            assert_eq!(claude_code_session(other), None, "{other}");
        }
        assert_eq!(
            claude_code_session(&format!("user_a_account__session_{}", "x".repeat(200))),
            None
        );
    }

    #[test]
    fn typed_tools_without_a_schema_are_hosted() {
        let search = json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 3});
        let t = hosted_tool(&search, "tools[1]").unwrap();
        assert_eq!(t.kind, Some(ServerTool::WebSearch));
        assert_eq!((t.tool_type.as_str(), t.path.as_str()), ("web_search_20250305", "tools[1]"));
        assert_eq!(t.config, search);
        let unknown = hosted_tool(&json!({"type": "teleport_20990101", "name": "t"}), "tools[0]");
        assert_eq!(unknown.map(|t| t.kind), Some(None));
        let client = json!({"name": "f", "input_schema": {"type": "object"}});
        assert!(hosted_tool(&client, "tools[0]").is_none());
        let custom = json!({"type": "custom", "name": "f", "input_schema": {"type": "object"}});
        assert!(hosted_tool(&custom, "tools[0]").is_none());
    }
}
