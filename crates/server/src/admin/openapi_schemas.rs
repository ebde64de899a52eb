//! The OpenAPI document's schemas (`components.schemas`): the shapes the admin
//! API takes and answers.

use serde_json::{Map, Value, json};

use super::schema_ref;

fn nullable(ty: &str) -> Value {
    json!({ "type": ty, "nullable": true })
}

pub(super) fn schemas() -> Value {
    let ms = |d: &str| json!({ "type": "integer", "format": "int64", "description": format!("{d} (unix ms)") });
    let ms_opt = |d: &str| json!({ "type": "integer", "format": "int64", "nullable": true, "description": format!("{d} (unix ms)") });
    let role = json!({ "type": "string", "enum": ["admin", "member", "viewer"] });
    let mut s = Map::new();
    s.insert(
        "Error".into(),
        json!({
            "type": "object",
            "required": ["error"],
            "properties": { "error": {
                "type": "object",
                "properties": {
                    "message": { "type": "string" },
                    "type": { "type": "string" },
                    "param": nullable("string"),
                    "code": { "type": "string", "description": "Stable machine code" }
                }
            }}
        }),
    );
    s.insert(
        "User".into(),
        json!({
            "type": "object",
            "required": ["id", "email", "role", "disabled", "created_at"],
            "properties": {
                "id": { "type": "string" },
                "email": { "type": "string", "description": "Lower-cased; unique" },
                "name": nullable("string"),
                "role": role,
                "primary_project_id": nullable("string"),
                "disabled": { "type": "boolean" },
                "created_at": ms("Created"),
            }
        }),
    );
    s.insert("UserDetail".into(), json!({
        "allOf": [schema_ref("User"), {
            "type": "object",
            "properties": {
                "projects": { "type": "array", "items": schema_ref("Project") },
                "groups": { "type": "array", "items": { "type": "string" }, "description": "Group names" }
            }
        }]
    }));
    s.insert("NewUser".into(), json!({
        "type": "object",
        "required": ["email"],
        "additionalProperties": false,
        "properties": {
            "email": { "type": "string" },
            "name": { "type": "string" },
            "role": { "type": "string", "enum": ["admin", "member", "viewer"], "default": "member" },
            "project_id": { "type": "string", "description": "Primary project id; default: a new project" }
        }
    }));
    s.insert(
        "PatchUser".into(),
        json!({
            "type": "object",
            "additionalProperties": false,
            "minProperties": 1,
            "properties": { "role": role, "disabled": { "type": "boolean" } }
        }),
    );
    s.insert(
        "Project".into(),
        json!({
            "type": "object",
            "required": ["id", "name", "log_content", "content_cap_bytes", "created_at"],
            "properties": {
                "id": { "type": "string" },
                "name": { "type": "string" },
                "log_content": { "type": "boolean" },
                "content_cap_bytes": { "type": "integer" },
                "created_at": ms("Created"),
                "routing": schema_ref("RoutingPolicy"),
            }
        }),
    );
    s.insert(
        "NewProject".into(),
        json!({
            "type": "object",
            "required": ["name"],
            "additionalProperties": false,
            "properties": {
                "name": { "type": "string" },
                "log_content": { "type": "boolean", "default": false },
                "content_cap_bytes": { "type": "integer", "default": 65536 }
            }
        }),
    );
    s.insert("Group".into(), json!({
        "type": "object",
        "required": ["id", "name", "created_at"],
        "properties": { "id": { "type": "string" }, "name": { "type": "string" }, "created_at": ms("Created") }
    }));
    s.insert(
        "NewGroup".into(),
        json!({
            "type": "object", "required": ["name"], "additionalProperties": false,
            "properties": { "name": { "type": "string" } }
        }),
    );
    s.insert(
        "Member".into(),
        json!({
            "type": "object", "required": ["user_id"], "additionalProperties": false,
            "properties": { "user_id": { "type": "string" } }
        }),
    );
    s.insert(
        "Membership".into(),
        json!({
            "type": "object",
            "properties": {
                "project_id": { "type": "string" },
                "group_id": { "type": "string" },
                "user_id": { "type": "string" }
            }
        }),
    );
    s.insert("ApiKey".into(), json!({
        "type": "object",
        "required": ["id", "prefix", "user_id", "created_at", "active"],
        "properties": {
            "id": { "type": "string" },
            "prefix": { "type": "string", "description": "The visible start of the secret, e.g. sy-3f9a2b" },
            "user_id": { "type": "string" },
            "project_id": { "type": "string", "nullable": true, "description": "Bound project; null: the user's primary project" },
            "label": nullable("string"),
            "allowed_models": { "type": "array", "items": { "type": "string" }, "nullable": true, "description": "Model id globs; null: no limit" },
            "limits": { "allOf": [schema_ref("Limits")], "nullable": true, "description": "The key's own rate limits; null: none of its own" },
            "routing": { "allOf": [schema_ref("RoutingPolicy")], "nullable": true, "description": "The key's own routing policy; null: none of its own" },
            "created_at": ms("Created"),
            "expires_at": ms_opt("Expiry"),
            "revoked_at": ms_opt("Revocation"),
            "last_used_at": ms_opt("Last use"),
            "active": { "type": "boolean", "description": "Neither revoked nor expired" }
        }
    }));
    s.insert("CreatedKey".into(), json!({
        "allOf": [schema_ref("ApiKey"), {
            "type": "object",
            "required": ["secret"],
            "properties": { "secret": { "type": "string", "description": "The key; shown only in this answer" } }
        }]
    }));
    s.insert("NewKey".into(), json!({
        "type": "object",
        "required": ["user_id"],
        "additionalProperties": false,
        "properties": {
            "user_id": { "type": "string" },
            "project_id": { "type": "string", "description": "A project the user is a member of" },
            "label": { "type": "string" },
            "expires_at": { "type": "integer", "format": "int64", "description": "Unix ms, in the future; not with expires_in_days" },
            "expires_in_days": { "type": "integer", "minimum": 1, "maximum": 36500 },
            "allowed_models": { "type": "array", "minItems": 1, "items": { "type": "string" }, "description": "Model id globs the key is limited to" },
            "limits": schema_ref("Limits")
        }
    }));
    s.insert("Limits".into(), json!({
        "type": "object",
        "additionalProperties": false,
        "description": "Rate limits, counted exactly across instances; a limit left out is not limited. Zero is refused.",
        "properties": {
            "rpm": { "type": "integer", "format": "int64", "minimum": 1, "description": "Requests per minute" },
            "tpm": { "type": "integer", "format": "int64", "minimum": 1, "description": "Tokens per minute: the input estimate plus the output asked for, reconciled with the usage" },
            "concurrent": { "type": "integer", "format": "int64", "minimum": 1, "description": "Requests in flight at once (a stream counts until it ends)" }
        }
    }));
    s.insert("PatchKey".into(), json!({
        "type": "object",
        "additionalProperties": false,
        "description": "At least one of limits and routing",
        "properties": {
            "limits": { "allOf": [schema_ref("Limits")], "nullable": true, "description": "Replaces the key's limits; null clears them" },
            "routing": { "allOf": [schema_ref("RoutingPolicy")], "nullable": true, "description": "Replaces the key's routing policy; null clears it" }
        }
    }));
    s.insert("PatchProject".into(), json!({
        "type": "object",
        "required": ["routing"],
        "additionalProperties": false,
        "properties": {
            "routing": { "allOf": [schema_ref("RoutingPolicy")], "nullable": true, "description": "Replaces the project's routing policy; null clears it" }
        }
    }));
    s.insert("RoutingPolicy".into(), json!({
        "type": "object",
        "additionalProperties": false,
        "description": "A key's or project's own routing (per-application policy); see docs/routing.md",
        "properties": {
            "strategy": { "type": "string", "enum": ["ordered", "weighted", "least_busy", "cost", "latency", "balanced", "adaptive"], "description": "Orders every chain it calls instead of the route's strategy" },
            "adaptive": { "type": "object", "description": "An adaptive policy, as a route's `adaptive:` block (preset, version, weights, …)" },
            "max_cost_per_1k_tokens": { "type": "number", "minimum": 0, "description": "Skips deployments priced above this, USD per 1,000 input or output tokens" },
            "unknown_cost": { "type": "string", "enum": ["reject", "allow"], "description": "What the ceiling does to an unpriced deployment (default reject)" }
        }
    }));
    s.insert("Subject".into(), json!({
        "type": "object",
        "required": ["kind"],
        "description": "Who a rule applies to: {kind: any} or {kind: role|group|project|user, value}",
        "properties": {
            "kind": { "type": "string", "enum": ["any", "role", "group", "project", "user"] },
            "value": { "type": "string", "description": "Role name, group name, project id or user id" }
        }
    }));
    s.insert("NewRule".into(), json!({
        "type": "object",
        "required": ["name", "effect", "pattern", "subject", "reason"],
        "additionalProperties": false,
        "properties": {
            "name": { "type": "string", "description": "Unique; shown in denials: authz denied [<name>]: <reason>" },
            "effect": { "type": "string", "enum": ["allow", "deny"] },
            "pattern": { "type": "string", "description": "Glob over the model id or the route id" },
            "subject": schema_ref("Subject"),
            "reason": { "type": "string" },
            "priority": { "type": "integer", "format": "int64", "default": 0 }
        }
    }));
    s.insert(
        "Rule".into(),
        json!({
            "allOf": [schema_ref("NewRule"), {
                "type": "object",
                "required": ["id", "created_at"],
                "properties": { "id": { "type": "string" }, "created_at": ms("Created") }
            }]
        }),
    );
    s.insert("RuleList".into(), json!({
        "type": "object",
        "properties": {
            "data": { "type": "array", "items": schema_ref("Rule") },
            "config_rules": { "type": "array", "items": schema_ref("NewRule"), "description": "From the configuration file (read-only here)" }
        }
    }));
    s.insert(
        "Deleted".into(),
        json!({
            "type": "object", "properties": { "deleted": { "type": "string" } }
        }),
    );
    s.insert("PutCredential".into(), json!({
        "type": "object",
        "required": ["owner_kind", "owner_id", "provider", "api_key"],
        "additionalProperties": false,
        "properties": {
            "owner_kind": { "type": "string", "enum": ["user", "project"] },
            "owner_id": { "type": "string" },
            "provider": { "type": "string", "description": "A provider name from the configuration" },
            "api_key": { "type": "string", "writeOnly": true, "description": "Never returned" }
        }
    }));
    s.insert("CredentialInfo".into(), json!({
        "type": "object",
        "required": ["id", "owner_kind", "owner_id", "provider", "key_id", "fingerprint"],
        "properties": {
            "id": { "type": "string" },
            "owner_kind": { "type": "string", "enum": ["user", "project"] },
            "owner_id": { "type": "string" },
            "provider": { "type": "string" },
            "key_id": { "type": "string", "description": "Which gateway secret sealed it" },
            "fingerprint": { "type": "string", "description": "fp- and 8 hex digits (an HMAC, not a hash of the key)" },
            "created_at": ms("Created"),
            "updated_at": ms("Last replaced"),
        }
    }));
    s.insert(
        "CredentialDeleted".into(),
        json!({
            "type": "object",
            "properties": {
                "deleted": { "type": "boolean" },
                "owner_kind": { "type": "string" },
                "owner_id": { "type": "string" },
                "provider": { "type": "string" }
            }
        }),
    );
    s.insert("UsageRow".into(), json!({
        "type": "object",
        "properties": {
            "key": { "type": "string", "nullable": true, "description": "User id / project id / model / provider; null for records without one" },
            "requests": { "type": "integer" },
            "errors": { "type": "integer", "description": "Status >= 400 or an error code" },
            "input_tokens": { "type": "integer" },
            "output_tokens": { "type": "integer" },
            "cache_read_tokens": { "type": "integer" },
            "cache_write_tokens": { "type": "integer" },
            "cost_usd": { "type": "number", "nullable": true },
            "cost_complete": { "type": "boolean", "description": "Every record of the group has a known cost" },
            "p50_ms": { "type": "integer" },
            "p95_ms": { "type": "integer" },
            "slo_breach_share": { "type": "number", "minimum": 0, "maximum": 1 }
        }
    }));
    s.insert(
        "BudgetReport".into(),
        json!({
            "type": "object",
            "properties": {
                "data": { "type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "scope": { "type": "string", "description": "gateway, key:<id>, user:<id or email>, project:<id or name>, as configured" },
                        "period": { "type": "string", "enum": ["day", "week", "month"] },
                        "window": { "type": "string", "description": "The period now: d2026-12-02, w2026-11-30 (its Monday), m2026-12" },
                        "mode": { "type": "string", "enum": ["enforce", "warn"] },
                        "limit_usd": { "type": "number" },
                        "spent_usd": { "type": "number" },
                        "reserved_usd": { "type": "number" },
                        "uncertain_usd": { "type": "number" },
                        "source": { "type": "string", "enum": ["counters", "records"] }
                    }
                } }
            }
        }),
    );
    s.insert(
        "DestinationReport".into(),
        json!({
            "type": "object",
            "properties": {
                "window_ms": { "type": "integer" },
                "max_samples": { "type": "integer" },
                "data": { "type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "model": { "type": "string" },
                        "provider": { "type": "string" },
                        "upstream_model": { "type": "string" },
                        "in_flight": { "type": "integer" },
                        "samples": { "type": "integer" },
                        "successes": { "type": "integer" },
                        "errors": { "type": "integer" },
                        "cancellations": { "type": "integer", "description": "The client went away first: no provider error" },
                        "error_rate": nullable("number"),
                        "p50_ms": nullable("number"),
                        "p95_ms": nullable("number"),
                        "ttft_p95_ms": nullable("number"),
                        "tokens_per_s": nullable("number")
                    }
                } }
            }
        }),
    );
    s.insert(
        "UsageReport".into(),
        json!({
            "type": "object",
            "properties": {
                "by": { "type": "string", "enum": ["user", "project", "model", "provider", "key"] },
                "since_ms": nullable("integer"),
                "until_ms": nullable("integer"),
                "slo_ms": { "type": "integer", "description": "The SLO applied" },
                "data": { "type": "array", "items": schema_ref("UsageRow") }
            }
        }),
    );
    s.insert(
        "SeriesReport".into(),
        json!({
            "type": "object",
            "properties": {
                "by": { "type": "string", "enum": ["user", "project", "model", "provider", "key"] },
                "since_ms": nullable("integer"),
                "until_ms": nullable("integer"),
                "slo_ms": { "type": "integer", "description": "The SLO applied" },
                "step_ms": { "type": "integer", "description": "An hour" },
                "data": { "type": "array", "items": { "allOf": [schema_ref("UsageRow"), {
                    "type": "object",
                    "properties": {
                        "hour_ms": { "type": "integer", "description": "The hour's start" },
                        "failovers": { "type": "integer" },
                        "cache_hits": { "type": "integer" },
                        "ttft_p50_ms": { "type": "integer", "nullable": true },
                        "ttft_p95_ms": { "type": "integer", "nullable": true }
                    }
                }]}}
            }
        }),
    );
    s.insert("AttemptRecord".into(), json!({
        "type": "object",
        "properties": {
            "deployment": { "type": "string", "description": "provider/upstream-model" },
            "credential": { "type": "string", "nullable": true, "description": "Fingerprint of the credential used" },
            "outcome": { "type": "string" },
            "latency_ms": { "type": "integer" },
            "started_ms": { "type": "integer", "description": "Milliseconds from the request's arrival to this attempt's start (0 in records from before it was kept)" },
            "kind": { "type": "string", "enum": ["primary", "retry", "failover"] },
            "finish_reason": { "type": "string", "description": "Why the answer stopped (stop, length, tool_call, content_filter, error); absent when not answered or not read" }
        }
    }));
    s.insert(
        "RequestRecord".into(),
        json!({
            "type": "object",
            "properties": {
                "id": { "type": "string" },
                "time_ms": ms("Arrival"),
                "user": nullable("string"),
                "key_prefix": nullable("string"),
                "project": nullable("string"),
                "client_format": { "type": "string" },
                "requested_model": { "type": "string" },
                "resolved_model": nullable("string"),
                "route_id": nullable("string"),
                "provider": nullable("string"),
                "served_provider": nullable("string"),
                "upstream_model": nullable("string"),
                "descriptor": { "type": "string" },
                "status": { "type": "integer" },
                "error_code": nullable("string"),
                "attempts": { "type": "array", "items": schema_ref("AttemptRecord") },
                "ttft_ms": nullable("integer"),
                "total_ms": { "type": "integer" },
                "usage": {
                    "type": "object",
                    "properties": {
                        "input_tokens": { "type": "integer" },
                        "output_tokens": { "type": "integer" },
                        "cache_read_tokens": { "type": "integer" },
                        "cache_write_tokens": { "type": "integer" },
                        "reasoning_tokens": { "type": "integer" }
                    }
                },
                "cost_usd": nullable("number"),
                "estimated": { "type": "boolean" },
                "stream": { "type": "boolean" },
                "session_id": { "type": "string", "description": "The client's own session (Claude Code's); absent when it names none" },
                "field_edits": { "type": "array", "items": { "type": "string" }, "description": "What the body sent upstream changed of the request's settings (`prompt_cache_key: dropped`, `service_tier: default -> standard_only`); absent when nothing" },
                "cache": { "type": "string", "description": "How the response cache took part: hit, coalesced or miss; absent when not cached" },
                "operation": { "type": "string", "description": "What the request asked for beyond a generation: `embeddings`; absent for a generation" },
                "routing": {
                    "type": "object",
                    "description": "What routing decided beyond the route's order; absent when nothing",
                    "properties": {
                        "intent": { "type": "string", "description": "An auto model's class" },
                        "intent_rule": { "type": "string", "description": "The classifier rule that decided it (`named`: the client named the class)" },
                        "structured_output": { "type": "string", "description": "native or prompted" },
                        "adaptive": { "type": "object", "description": "strategy adaptive's decision: policy and quality versions, the explored deployment, every candidate's signals, score, missing signals and exclusion" },
                        "classifier": { "type": "object", "description": "The model-based intent classifier's asking: model, answer (reasoning, direct, timeout, error, unreadable), the rules' class, cached, shadow, latency_ms, cost_usd, request_id" }
                    }
                }
            }
        }),
    );
    Value::Object(s)
}
