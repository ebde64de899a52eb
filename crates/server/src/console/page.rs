//! What every page shares: the frame around it (who is signed in, the
//! navigation, the CSRF token its forms carry), rendering, and the error page.

use askama::Template;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};

use super::session::Signed;

/// The frame of a page: its title, the navigation with the current entry
/// marked, and who is signed in.
pub(crate) struct Chrome {
    pub title: String,
    /// The navigation entry to mark (its path under `/console`).
    pub active: &'static str,
    pub who: String,
    pub role: &'static str,
    pub is_admin: bool,
    /// Every form of the page carries it back.
    pub csrf: String,
}

impl Chrome {
    pub(crate) fn new(signed: &Signed, active: &'static str, title: impl Into<String>) -> Self {
        Chrome {
            title: title.into(),
            active,
            who: signed.who.clone(),
            role: signed.role.as_str(),
            is_admin: signed.is_admin(),
            csrf: signed.session.csrf.clone(),
        }
    }

    /// The navigation: (path under `/console`, label).
    pub(crate) fn nav(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("overview", "Overview"),
            ("providers", "Providers"),
            ("routes", "Routes"),
            ("models", "Models"),
            ("requests", "Requests"),
            ("analytics", "Analytics"),
            ("keys", "Keys"),
            ("people", "People"),
            ("rules", "Rules"),
            ("sessions", "Sessions"),
        ]
    }
}

/// A rendered page, or the error page when the template fails (it cannot:
/// templates are checked at build time; only a writer error remains).
pub(crate) fn render(t: &impl Template) -> Response {
    match t.render() {
        Ok(body) => {
            ([(header::CACHE_CONTROL, "no-store"), (header::X_FRAME_OPTIONS, "DENY")], Html(body))
                .into_response()
        }
        Err(e) => PageError::internal(format!("rendering the page failed: {e}")).into_response(),
    }
}

/// A form that carries nothing but the session's CSRF token (a button).
#[derive(serde::Deserialize)]
pub(crate) struct CsrfForm {
    pub csrf: String,
}

/// Why a page is not shown.
#[derive(Debug)]
pub(crate) enum PageError {
    /// Not signed in (or no longer): to the sign-in page, then back here.
    SignIn { back: String },
    /// Shown as a page with this status.
    Status { status: StatusCode, message: String },
}

impl PageError {
    pub(crate) fn sign_in(back: &str) -> Self {
        PageError::SignIn { back: back.to_owned() }
    }

    pub(crate) fn forbidden(message: impl Into<String>) -> Self {
        PageError::Status { status: StatusCode::FORBIDDEN, message: message.into() }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        PageError::Status { status: StatusCode::BAD_REQUEST, message: message.into() }
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        PageError::Status { status: StatusCode::NOT_FOUND, message: message.into() }
    }

    pub(crate) fn unavailable(message: impl Into<String>) -> Self {
        PageError::Status { status: StatusCode::SERVICE_UNAVAILABLE, message: message.into() }
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        PageError::Status { status: StatusCode::INTERNAL_SERVER_ERROR, message: message.into() }
    }
}

impl From<switchyard_store::StoreError> for PageError {
    fn from(e: switchyard_store::StoreError) -> Self {
        match e {
            switchyard_store::StoreError::Invalid(m) => PageError::invalid(m),
            other => {
                tracing::warn!(error = %other, "console: the database failed");
                PageError::unavailable("the database did not answer; try again")
            }
        }
    }
}

#[derive(Template)]
#[template(path = "console/error.html")]
struct ErrorPage<'a> {
    status: u16,
    reason: &'a str,
    message: &'a str,
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        match self {
            PageError::SignIn { back } => {
                let back = super::signin::safe_back(&back);
                let to = format!("/console/sign-in?next={}", encode_query(back));
                Redirect::to(&to).into_response()
            }
            PageError::Status { status, message } => {
                let page = ErrorPage {
                    status: status.as_u16(),
                    reason: status.canonical_reason().unwrap_or(""),
                    message: &message,
                };
                let body = page.render().unwrap_or(message);
                (status, [(header::CACHE_CONTROL, "no-store")], Html(body)).into_response()
            }
        }
    }
}

/// A value percent-encoded for a query string (unreserved characters kept).
pub(crate) fn encode_query(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The admin API's refusals (the directory's checks) as pages.
impl From<crate::admin::ApiError> for PageError {
    fn from(e: crate::admin::ApiError) -> Self {
        let status =
            StatusCode::from_u16(e.error().status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        PageError::Status { status, message: e.error().body().message.clone() }
    }
}
