//! The admin HTTP API under `/admin`: users, projects, groups, gateway keys,
//! stored access rules, BYOK provider credentials, usage and request records, and
//! an OpenAPI description of itself (`/admin/openapi.json`).
//!
//! * **Who may call.** Every route needs a key whose role is `admin` (the bootstrap
//!   admin key or a stored key of an admin user): no or a bad key is 401, any other
//!   role 403 `admin_required`. Authentication runs before anything else, so an
//!   unauthenticated caller learns nothing about the install.
//! * **Storage.** Everything but the OpenAPI document and `/admin/destinations`
//!   (this instance's memory) needs the database; without
//!   one the routes answer 503 `storage_disabled`. Writing credentials also needs
//!   the gateway secret (503 `byok_disabled`).
//! * **Errors** use the OpenAI error shape with stable codes: `invalid_request`
//!   (400), `not_found` (404), `conflict` (409, a uniqueness rule),
//!   `storage_unavailable` (503), `internal_error` (500).
//! * **Secrets never leave.** Listings show a key's prefix and metadata, never its
//!   secret or hash; the secret is returned once, by `POST /admin/keys`. Provider
//!   keys are write-only: responses carry their fingerprint. Nothing secret is
//!   logged; admin changes are logged (target `switchyard::admin`) with ids only.
//! * **Taking effect.** Changes that affect authentication (revoking a key,
//!   disabling a user, memberships, credentials, a key's limits) clear this
//!   instance's key cache; rule changes reload the stored rules into the running
//!   gateway. Other instances pick them up when their cache entries expire
//!   (rules: on restart).

pub(crate) mod access;
mod destinations;
pub(crate) mod directory;
mod openapi;
pub(crate) mod reports;
mod tenancy;

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use serde::de::DeserializeOwned;
use switchyard_core::GatewayError;
use switchyard_core::access::CallerRole;
use switchyard_protocol::{ClientFormat, ErrorCode};
use switchyard_store::{Store, StoreError};

use crate::{AppState, ids};

/// The admin routes, to be nested under `/admin`.
pub fn router() -> Router<Arc<AppState>> {
    Router::new()
        .route("/users", get(tenancy::list_users).post(tenancy::create_user))
        .route("/users/{id}", get(tenancy::get_user).patch(tenancy::patch_user))
        .route("/projects", get(tenancy::list_projects).post(tenancy::create_project))
        .route("/projects/{id}", axum::routing::patch(tenancy::patch_project))
        .route("/projects/{id}/members", post(tenancy::add_project_member))
        .route("/groups", get(tenancy::list_groups).post(tenancy::create_group))
        .route("/groups/{id}/members", post(tenancy::add_group_member))
        .route("/keys", get(tenancy::list_keys).post(tenancy::create_key))
        .route("/keys/{id}", delete(tenancy::revoke_key).patch(tenancy::patch_key))
        .route("/rules", get(access::list_rules).post(access::create_rule))
        .route("/rules/{name_or_id}", delete(access::delete_rule))
        .route("/credentials", put(access::put_credential).get(access::list_credentials))
        .route("/credentials/{owner_kind}/{owner_id}/{provider}", delete(access::delete_credential))
        .route("/usage", get(reports::usage))
        .route("/analytics", get(reports::analytics))
        .route("/budgets", get(reports::budgets))
        .route("/destinations", get(destinations::list))
        .route("/requests", get(reports::list_requests))
        .route("/requests/{id}", get(reports::get_request))
        .route("/openapi.json", get(openapi::document))
        // Admin answers (a key's one-time secret above all) must not be cached.
        .layer(axum::middleware::map_response(no_store))
}

async fn no_store(mut resp: Response) -> Response {
    resp.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

// ------------------------------------------------------------------ errors

/// An admin error, rendered in the OpenAI error shape.
#[derive(Debug)]
pub(crate) struct ApiError(GatewayError);

impl ApiError {
    pub(crate) fn invalid(message: impl Into<String>) -> ApiError {
        ApiError(GatewayError::new(ErrorCode::InvalidRequest, message))
    }

    pub(crate) fn not_found(message: impl Into<String>) -> ApiError {
        ApiError(GatewayError::new(ErrorCode::NotFound, message))
    }

    pub(crate) fn conflict(message: impl Into<String>) -> ApiError {
        ApiError(GatewayError::new(ErrorCode::Conflict, message))
    }

    pub(crate) fn internal(message: impl Into<String>) -> ApiError {
        ApiError(GatewayError::new(ErrorCode::InternalError, message))
    }

    /// An outage answer; `code` is one of the 503 codes (`storage_unavailable`, …).
    fn unavailable(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError(GatewayError::new(code, message))
    }
}

impl ApiError {
    /// The error as the caller is answered with it.
    pub(crate) fn error(&self) -> &GatewayError {
        &self.0
    }
}

impl From<GatewayError> for ApiError {
    fn from(e: GatewayError) -> Self {
        ApiError(e)
    }
}

/// Store errors carry no secrets (the store's contract), so their messages may be
/// shown; database failures are logged and answered without detail.
impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match &e {
            StoreError::Conflict(_) => ApiError::conflict(e.to_string()),
            StoreError::NotFound { .. } => ApiError::not_found(e.to_string()),
            StoreError::Invalid(m) => ApiError::invalid(m.clone()),
            StoreError::Database(_) => {
                tracing::error!(target: "switchyard::admin", "store: {e}");
                ApiError::unavailable(
                    ErrorCode::StorageUnavailable,
                    "the database is unavailable; try again",
                )
            }
            StoreError::Corrupt(_) | StoreError::Random(_) | StoreError::Migrate(_) => {
                tracing::error!(target: "switchyard::admin", "store: {e}");
                ApiError::internal("the store failed; see the server log")
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        crate::http::error_response(ClientFormat::OpenAiChat, &self.0, &ids::request_id())
    }
}

pub(crate) type ApiResult = Result<Response, ApiError>;

/// A JSON answer with a status.
pub(crate) fn reply(status: StatusCode, body: impl serde::Serialize) -> ApiResult {
    Ok((status, axum::Json(body)).into_response())
}

pub(crate) fn ok(body: impl serde::Serialize) -> ApiResult {
    reply(StatusCode::OK, body)
}

/// `{"data": [...]}`: every listing's shape.
pub(crate) fn list<T: serde::Serialize>(items: Vec<T>) -> ApiResult {
    ok(serde_json::json!({ "data": items }))
}

// -------------------------------------------------------------- extractors

/// An authenticated admin caller. Listed first among a handler's arguments, so it
/// runs before the path, query and body are looked at.
pub(crate) struct Admin {
    /// Who is acting, for the change log (a user id, or `bootstrap-admin`).
    pub actor: String,
}

impl FromRequestParts<Arc<AppState>> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        let caller = state.identity.authenticate(&parts.headers).await?;
        if caller.principal.role != Some(CallerRole::Admin) {
            return Err(ApiError(GatewayError::new(
                ErrorCode::AdminRequired,
                "the admin API needs a key of a user with the admin role",
            )));
        }
        let actor = caller.principal.user_id.unwrap_or_else(|| "admin".to_owned());
        Ok(Admin { actor })
    }
}

/// An admin caller and the database (503 `storage_disabled` without one), checked
/// before the path, query and body.
pub(crate) struct Db {
    pub store: Store,
    pub actor: String,
}

impl FromRequestParts<Arc<AppState>> for Db {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        let Admin { actor } = Admin::from_request_parts(parts, state).await?;
        Ok(Db { store: store(state)?.clone(), actor })
    }
}

/// The database, or 503 `storage_disabled`.
fn store(state: &AppState) -> Result<&Store, ApiError> {
    state.identity.store().ok_or_else(|| {
        ApiError::unavailable(
            ErrorCode::StorageDisabled,
            "no database is configured (storage.url: none); the admin API needs one",
        )
    })
}

/// A JSON request body; a malformed one is 400 `invalid_request`.
pub(crate) struct Body<T>(pub T);

impl<T: DeserializeOwned> FromRequest<Arc<AppState>> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &Arc<AppState>) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            // The rejection's own status (413 for too large, 400 unreadable).
            ApiError(
                GatewayError::new(ErrorCode::InvalidRequest, e.body_text())
                    .with_status(e.status().as_u16()),
            )
        })?;
        serde_json::from_slice(&bytes)
            .map(Body)
            .map_err(|e| ApiError::invalid(format!("invalid request body: {e}")))
    }
}

/// Query parameters; unknown or malformed ones are 400 `invalid_request`.
pub(crate) struct Params<T>(pub T);

impl<T: DeserializeOwned + Send> FromRequestParts<Arc<AppState>> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(q)| Params(q))
            .map_err(|e| ApiError::invalid(e.body_text()))
    }
}

/// Path parameters; a malformed one is 400 `invalid_request`.
pub(crate) struct Segments<T>(pub T);

impl<T: DeserializeOwned + Send> FromRequestParts<Arc<AppState>> for Segments<T> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(p)| Segments(p))
            .map_err(|e| ApiError::invalid(e.body_text()))
    }
}

/// An optional query string value, `None` when empty.
pub(crate) fn given(v: Option<String>) -> Option<String> {
    v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}
