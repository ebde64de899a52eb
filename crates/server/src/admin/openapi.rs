//! `GET /admin/openapi.json`: an OpenAPI 3.0 description of the admin API, written
//! by hand (the routes are few and their shapes are stable). A test in
//! `tests/admin.rs` checks that every route is listed.

use serde_json::{Map, Value, json};

use super::{Admin, ApiResult, ok};

pub(crate) async fn document(_: Admin) -> ApiResult {
    ok(spec())
}

/// The whole document.
pub(crate) fn spec() -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "Switchyard admin API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Administer users, projects, groups, gateway keys, access rules and \
                BYOK provider keys; read usage and request records. Every route needs a key \
                of a user with the admin role (or the bootstrap admin key). Errors use the \
                OpenAI error shape with stable codes: invalid_request, not_found, conflict, \
                admin_required, storage_disabled, byok_disabled, storage_unavailable. \
                Secrets are never returned, except a new key's secret, once."
        },
        "servers": [{ "url": "/" }],
        "security": [{ "bearer": [] }],
        "paths": paths(),
        "components": {
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A gateway key (Authorization: Bearer <key>; x-api-key works too)."
                }
            },
            "responses": error_responses(),
            "schemas": schemas(),
        }
    })
}

fn paths() -> Value {
    let mut p = Map::new();
    let mut add = |path: &str, ops: Value| {
        p.insert(path.to_owned(), ops);
    };
    add(
        "/admin/users",
        json!({
            "get": op("users", "List users", "Every user, by email.", vec![], None,
                      ok_list("User"), &[]),
            "post": op("users", "Create a user",
                       "Creates a user and, unless project_id names an existing project, their \
                        primary project (named after the email's local part). The user becomes \
                        a member of it.",
                       vec![], Some(body_ref("NewUser")),
                       created("User"), &["400", "404", "409"]),
        }),
    );
    add(
        "/admin/users/{id}",
        json!({
            "get": op("users", "Get a user", "The user with their projects and group names.",
                      vec![path_param("id", "User id (usr_…)")], None,
                      ok_ref("UserDetail"), &["404"]),
            "patch": op("users", "Change a user's role or disable/enable them",
                        "Takes effect immediately on this instance (cached key lookups are \
                         dropped). A disabled user's keys get 401.",
                        vec![path_param("id", "User id (usr_…)")], Some(body_ref("PatchUser")),
                        ok_ref("User"), &["400", "404"]),
        }),
    );
    add(
        "/admin/projects",
        json!({
            "get": op("projects", "List projects", "Every project, by name.", vec![], None,
                      ok_list("Project"), &[]),
            "post": op("projects", "Create a project", "", vec![], Some(body_ref("NewProject")),
                       created("Project"), &["400", "409"]),
        }),
    );
    add(
        "/admin/projects/{id}",
        json!({
            "patch": op("projects", "Change a project's routing policy",
                        "routing replaces the project's whole policy (a pinned strategy, an \
                         adaptive policy, a cost ceiling); null clears it. A key's own policy \
                         wins over its project's; either over the route's. Checked against the \
                         catalog: a quality profile must name a model or a provider's deployment.",
                        vec![path_param("id", "Project id (prj_…)")], Some(body_ref("PatchProject")),
                        ok_ref("Project"), &["400", "404"]),
        }),
    );
    add(
        "/admin/projects/{id}/members",
        json!({
            "post": op("projects", "Add a user to a project", "Adding an existing member is fine.",
                       vec![path_param("id", "Project id (prj_…)")], Some(body_ref("Member")),
                       ok_ref("Membership"), &["400", "404"]),
        }),
    );
    add(
        "/admin/groups",
        json!({
            "get": op("groups", "List groups", "Every group, by name.", vec![], None,
                      ok_list("Group"), &[]),
            "post": op("groups", "Create a group", "", vec![], Some(body_ref("NewGroup")),
                       created("Group"), &["400", "409"]),
        }),
    );
    add(
        "/admin/groups/{id}/members",
        json!({
            "post": op("groups", "Add a user to a group",
                       "Group membership decides which group-subject access rules apply.",
                       vec![path_param("id", "Group id (grp_…)")], Some(body_ref("Member")),
                       ok_ref("Membership"), &["400", "404"]),
        }),
    );
    add(
        "/admin/keys",
        json!({
            "get": op("keys", "List gateway keys",
                      "Newest first. Only the visible prefix and metadata: never a secret or a hash.",
                      vec![query_param("user", "string", "Only this user's keys (user id).")],
                      None, ok_list("ApiKey"), &["400"]),
            "post": op("keys", "Create a gateway key",
                       "Answers the key with its secret. The secret is shown once and cannot be \
                        retrieved again (only its SHA-256 is stored).",
                       vec![], Some(body_ref("NewKey")),
                       created("CreatedKey"), &["400", "404"]),
        }),
    );
    add(
        "/admin/keys/{id}",
        json!({
            "delete": op("keys", "Revoke a gateway key",
                         "Immediate on this instance; other instances within their key-cache TTL. \
                          Revoking twice keeps the first time.",
                         vec![path_param("id", "Key id (key_…)")], None,
                         ok_ref("ApiKey"), &["404"]),
            "patch": op("keys", "Change a gateway key's own rate limits or routing policy",
                        "limits replaces the key's whole set, routing its whole routing policy; \
                         null (or {}) clears either. Immediate \
                         on this instance; other instances apply it when their cached lookup of \
                         the key expires (security.key_cache_ms). Counters already running for \
                         the key keep their state.",
                        vec![path_param("id", "Key id (key_…)")], Some(body_ref("PatchKey")),
                        ok_ref("ApiKey"), &["400", "404"]),
        }),
    );
    add(
        "/admin/rules",
        json!({
            "get": op("rules", "List access rules",
                      "Stored rules (data, highest priority first) and, read-only, the rules from \
                       the configuration file (config_rules).",
                      vec![], None, ok_ref("RuleList"), &[]),
            "post": op("rules", "Create an access rule",
                       "Applies to the next request. Among the rules whose subject matches the \
                        caller and whose pattern matches the model (or route) id, the highest \
                        priority wins; on a tie deny beats allow; no match means allowed.",
                       vec![], Some(body_ref("NewRule")),
                       created("Rule"), &["400", "409"]),
        }),
    );
    add(
        "/admin/rules/{name_or_id}",
        json!({
            "delete": op("rules", "Delete an access rule", "Applies to the next request.",
                         vec![path_param("name_or_id", "Rule id (rul_…) or name")], None,
                         ok_ref("Deleted"), &["404"]),
        }),
    );
    add(
        "/admin/credentials",
        json!({
            "get": op("credentials", "List stored provider keys (BYOK)",
                      "Fingerprints and metadata only; the keys themselves are never returned.",
                      vec![
                          query_param_enum("owner_kind", &["user", "project"], "With owner_id: one owner's keys."),
                          query_param("owner_id", "string", "With owner_kind."),
                      ],
                      None, ok_list("CredentialInfo"), &["400"]),
            "put": op("credentials", "Store a provider key (BYOK)",
                      "Write-only: the key is sealed (AES-256-GCM under the gateway secret) and \
                       replaces the owner's earlier key for the provider. Requests by the user \
                       (or, when the user has none, in the project) to that provider use it \
                       instead of the platform key.",
                      vec![], Some(body_ref("PutCredential")),
                      ok_ref("CredentialInfo"), &["400", "404", "503"]),
        }),
    );
    add(
        "/admin/credentials/{owner_kind}/{owner_id}/{provider}",
        json!({
            "delete": op("credentials", "Delete a stored provider key", "",
                         vec![
                             path_param_enum("owner_kind", &["user", "project"]),
                             path_param("owner_id", "User or project id"),
                             path_param("provider", "Provider name from the configuration"),
                         ],
                         None, ok_ref("CredentialDeleted"), &["400", "404"]),
        }),
    );
    add(
        "/admin/usage",
        json!({
            "get": op("records", "Usage by user, project, model or provider",
                      "Requests, errors, token sums, cost, latency percentiles and SLO breaches \
                       of the matching request records, the busiest group first.",
                      usage_params("Records at or after this time.", "Records before this time."),
                      None, ok_ref("UsageReport"), &["400"]),
        }),
    );
    add(
        "/admin/analytics",
        json!({
            "get": op("records", "Usage hour by hour",
                      "For each hour the window touches (widened to whole hours) and each \
                       group, what /admin/usage reports, with failovers, cache hits and the \
                       time to first token; read from the hourly rollups, percentiles to the \
                       latency histograms' bucket. Oldest hour first.",
                      usage_params(
                          "Hours at or after this time's hour.",
                          "Hours before this time (its own hour included).",
                      ),
                      None, ok_ref("SeriesReport"), &["400"]),
        }),
    );
    add(
        "/admin/budgets",
        json!({
            "get": op("records", "Budgets this period",
                      "Every configured budget in its current period: its limit, and what is \
                       spent, reserved by requests in flight and uncertain (cost unknown). \
                       `source` is `counters` where the live counters have the period (this \
                       instance's, or Redis's), else `records` (spent only, from the ledger).",
                      vec![], None, ok_ref("BudgetReport"), &[]),
        }),
    );
    add(
        "/admin/destinations",
        json!({
            "get": op("records", "Deployments' recent behaviour",
                      "Each deployment of the catalog (and each one a route reached) with its \
                       requests in flight now and, over its window (the last `max_samples` \
                       attempts of the last `window_ms`), successes, errors, client \
                       cancellations (no error), p50/p95 total latency, p95 time to first \
                       token and output tokens per second: what the adaptive strategy scores \
                       by. This instance's memory; needs no database.",
                      vec![], None, ok_ref("DestinationReport"), &[]),
        }),
    );
    add(
        "/admin/requests",
        json!({
            "get": op("records", "List request records", "Newest first.",
                      vec![
                          time_param("since", "Records at or after this time."),
                          time_param("until", "Records before this time."),
                          query_param("user", "string", "Only this user id."),
                          query_param("project", "string", "Only this project id."),
                          query_param("model", "string", "Only this model (resolved or requested)."),
                          query_param("provider", "string", "Only requests this provider served."),
                          query_param("status", "integer", "Only this HTTP status."),
                          query_param("intent", "string", "Only requests an `auto` model sent to this class (reasoning, code, ordinary, cheap, vision)."),
                          query_param("operation", "string", "Only requests of this operation: `embeddings`, or `generation` (chat, messages, responses, generateContent)."),
                          query_param("limit", "integer", "Most rows (default 100, at most 1000)."),
                      ],
                      None, ok_list("RequestRecord"), &["400"]),
        }),
    );
    add(
        "/admin/requests/{id}",
        json!({
            "get": op("records", "Get one request record", "",
                      vec![path_param("id", "Request id (the x-request-id response header)")],
                      None, ok_ref("RequestRecord"), &["404"]),
        }),
    );
    add(
        "/admin/openapi.json",
        json!({
            "get": {
                "tags": ["meta"],
                "summary": "This document",
                "responses": {
                    "200": { "description": "OpenAPI 3.0 document", "content": { "application/json": { "schema": { "type": "object" } } } },
                    "401": { "$ref": "#/components/responses/Unauthorized" },
                    "403": { "$ref": "#/components/responses/Forbidden" },
                }
            }
        }),
    );
    Value::Object(p)
}

/// One operation. Every operation may answer 401, 403 and 503 besides `errors`.
fn op(
    tag: &str,
    summary: &str,
    description: &str,
    parameters: Vec<Value>,
    body: Option<Value>,
    success: (&str, Value),
    errors: &[&str],
) -> Value {
    let mut responses = Map::new();
    responses.insert(success.0.to_owned(), success.1);
    for code in errors.iter().copied().chain(["401", "403", "503"]) {
        let name = match code {
            "400" => "BadRequest",
            "401" => "Unauthorized",
            "403" => "Forbidden",
            "404" => "NotFound",
            "409" => "Conflict",
            _ => "Unavailable",
        };
        responses
            .insert(code.to_owned(), json!({ "$ref": format!("#/components/responses/{name}") }));
    }
    let mut o = Map::new();
    o.insert("tags".into(), json!([tag]));
    o.insert("summary".into(), json!(summary));
    if !description.is_empty() {
        o.insert("description".into(), json!(description));
    }
    if !parameters.is_empty() {
        o.insert("parameters".into(), Value::Array(parameters));
    }
    if let Some(b) = body {
        o.insert("requestBody".into(), b);
    }
    o.insert("responses".into(), Value::Object(responses));
    Value::Object(o)
}

fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn body_ref(name: &str) -> Value {
    json!({ "required": true, "content": { "application/json": { "schema": schema_ref(name) } } })
}

fn ok_ref(name: &str) -> (&'static str, Value) {
    (
        "200",
        json!({ "description": "OK", "content": { "application/json": { "schema": schema_ref(name) } } }),
    )
}

fn created(name: &str) -> (&'static str, Value) {
    (
        "201",
        json!({ "description": "Created", "content": { "application/json": { "schema": schema_ref(name) } } }),
    )
}

fn ok_list(name: &str) -> (&'static str, Value) {
    let schema = json!({
        "type": "object",
        "required": ["data"],
        "properties": { "data": { "type": "array", "items": schema_ref(name) } }
    });
    ("200", json!({ "description": "OK", "content": { "application/json": { "schema": schema } } }))
}

fn path_param(name: &str, description: &str) -> Value {
    json!({ "name": name, "in": "path", "required": true, "description": description, "schema": { "type": "string" } })
}

fn path_param_enum(name: &str, values: &[&str]) -> Value {
    json!({ "name": name, "in": "path", "required": true, "schema": { "type": "string", "enum": values } })
}

fn query_param(name: &str, ty: &str, description: &str) -> Value {
    json!({ "name": name, "in": "query", "required": false, "description": description, "schema": { "type": ty } })
}

fn query_param_enum(name: &str, values: &[&str], description: &str) -> Value {
    json!({ "name": name, "in": "query", "required": false, "description": description, "schema": { "type": "string", "enum": values } })
}

/// The parameters of a usage report: its window (`since`, `until`), grouping,
/// SLO and filters.
fn usage_params(since: &str, until: &str) -> Vec<Value> {
    vec![
        time_param("since", since),
        time_param("until", until),
        query_param_enum(
            "by",
            &["user", "project", "model", "provider", "key"],
            "Grouping (default model; `key`: the gateway key's visible prefix).",
        ),
        query_param(
            "slo_ms",
            "integer",
            "Latency SLO in ms (default 5000; clamped to 500..60000).",
        ),
        query_param("user", "string", "Only this user id."),
        query_param("project", "string", "Only this project id."),
        query_param("model", "string", "Only this model (the resolved one, else as requested)."),
        query_param("provider", "string", "Only requests this provider served."),
    ]
}

fn time_param(name: &str, description: &str) -> Value {
    json!({
        "name": name, "in": "query", "required": false,
        "description": format!("{description} Unix milliseconds (1735689600000) or a duration before now: 500ms, 90s, 15m, 1h, 7d, 2w."),
        "schema": { "type": "string", "pattern": "^[0-9]+(ms|s|m|min|h|d|w)?$" }
    })
}

fn error_responses() -> Value {
    let e = |description: &str| json!({ "description": description, "content": { "application/json": { "schema": schema_ref("Error") } } });
    json!({
        "BadRequest": e("invalid_request: a malformed body, parameter or value"),
        "Unauthorized": e("missing_api_key / invalid_api_key: no key, or an unknown, revoked or expired one"),
        "Forbidden": e("admin_required: the key's user is not an admin"),
        "NotFound": e("not_found: the target (or a referenced user, project, group) does not exist"),
        "Conflict": e("conflict: a uniqueness rule (email, project/group/rule name)"),
        "Unavailable": e("storage_disabled (no database), byok_disabled (no gateway secret), storage_unavailable, auth_unavailable"),
    })
}

#[path = "openapi_schemas.rs"]
mod schemas;
use schemas::schemas;
