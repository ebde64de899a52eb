//! What a wire's model-list API is: where it is relative to the provider's
//! endpoint ([`ModelListing`]), how its pages follow one another ([`Paging`]),
//! and what one page says ([`ModelPage`], [`ListedModel`]). Each wire states
//! its own in its `WireBehaviour` (`model_listing`, `parse_models`,
//! `listed_id`); `switchyard-core`'s discovery asks it and compares the answer
//! with the catalog. Data and string building only: no IO.

/// Where a wire's provider lists the models it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelListing {
    /// `GET` at `path`, relative to the provider's endpoint like a generation
    /// (OpenAI's `/models`, Anthropic's `/v1/models`).
    Endpoint {
        /// The list's path (a query may follow it).
        path: &'static str,
        /// How further pages are asked for.
        paging: Paging,
    },
    /// `GET` at `path` on the endpoint's host, the endpoint's own path left
    /// out: a list that is not under the provider's base path (Vertex AI's
    /// publisher models, which are `v1beta1` and under no project).
    Host {
        /// The list's path from the host's root.
        path: &'static str,
        /// How further pages are asked for.
        paging: Paging,
    },
    /// `GET` at `path` on the service's control plane: the endpoint's host
    /// with its first label `from` replaced by `to` (Bedrock's runtime,
    /// `bedrock-runtime.{region}.amazonaws.com`, lists nothing; its control
    /// plane, `bedrock.{region}.amazonaws.com`, does). A host without that
    /// label (a proxy or a fake serving both) is asked as it is. Requests are
    /// signed as the wire's are: Bedrock's control plane signs as `bedrock`
    /// too.
    ControlPlane {
        /// The runtime's host label (`bedrock-runtime`).
        from: &'static str,
        /// The control plane's (`bedrock`).
        to: &'static str,
        /// The list's path from the control plane's root.
        path: &'static str,
        /// How further pages are asked for.
        paging: Paging,
    },
    /// The wire's provider has no list the gateway can ask: why.
    Unsupported(&'static str),
}

/// How a model list's further pages are asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paging {
    /// One answer holds the whole list.
    None,
    /// A page names the next one's cursor ([`ModelPage::next`]), asked for
    /// with the query parameter `param` (Anthropic's `after_id`, Gemini's
    /// `pageToken`).
    Cursor {
        /// The query parameter that carries the cursor.
        param: &'static str,
    },
}

/// One page of a model list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelPage {
    /// The models on it that generate through the wire, in the provider's
    /// order.
    pub models: Vec<ListedModel>,
    /// The next page's cursor ([`Paging::Cursor`]); `None` on the last page.
    pub next: Option<String>,
}

/// A model as the provider lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedModel {
    /// Its id as a deployment names it (Gemini's `models/` prefix taken off).
    pub id: String,
    /// Its name for people, where the list gives one.
    pub display_name: Option<String>,
    /// Where the provider marks it as on its way out (Bedrock's `LEGACY`, a
    /// deprecation date): what it says, for the operator to read.
    pub retiring: Option<String>,
    /// When the provider stops serving it (unix seconds), where the list says
    /// (Azure's `deprecation.inference`): stated for every model on some
    /// lists, so not by itself a sign of retiring.
    pub retires_at: Option<u64>,
}

impl ListedModel {
    /// A listed model with only its id.
    pub fn new(id: impl Into<String>) -> Self {
        ListedModel { id: id.into(), display_name: None, retiring: None, retires_at: None }
    }
}

impl ModelListing {
    /// The URL of the list's first page for a provider at `endpoint` (written
    /// without a trailing `/`); `Err`: why there is none.
    ///
    /// ```
    /// use switchyard_protocol::listing::{ModelListing, Paging};
    ///
    /// let bedrock = ModelListing::ControlPlane {
    ///     from: "bedrock-runtime",
    ///     to: "bedrock",
    ///     path: "/foundation-models",
    ///     paging: Paging::None,
    /// };
    /// assert_eq!(
    ///     bedrock.url("https://bedrock-runtime.eu-west-1.amazonaws.com").as_deref(),
    ///     Ok("https://bedrock.eu-west-1.amazonaws.com/foundation-models")
    /// );
    /// let vertex = ModelListing::Host { path: "/v1beta1/publishers/google/models", paging: Paging::None };
    /// assert_eq!(
    ///     vertex.url("https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5").as_deref(),
    ///     Ok("https://us-east5-aiplatform.googleapis.com/v1beta1/publishers/google/models")
    /// );
    /// ```
    pub fn url(&self, endpoint: &str) -> Result<String, &'static str> {
        match *self {
            ModelListing::Endpoint { path, .. } => Ok(format!("{endpoint}{path}")),
            ModelListing::Host { path, .. } => {
                let (scheme, host, _) = split(endpoint)?;
                Ok(format!("{scheme}://{host}{path}"))
            }
            ModelListing::ControlPlane { from, to, path, .. } => {
                let (scheme, host, _) = split(endpoint)?;
                // Userinfo, if any, stays where it was: only the host's first
                // label changes.
                let (userinfo, hostport) = match host.rsplit_once('@') {
                    Some((u, h)) => (Some(u), h),
                    None => (None, host),
                };
                let host = match hostport.split_once('.') {
                    Some((label, rest)) if label.eq_ignore_ascii_case(from) => {
                        format!("{to}.{rest}")
                    }
                    _ => hostport.to_owned(),
                };
                let host = userinfo.map_or_else(|| host.clone(), |u| format!("{u}@{host}"));
                Ok(format!("{scheme}://{host}{path}"))
            }
            ModelListing::Unsupported(why) => Err(why),
        }
    }

    /// How further pages are asked for (none where there is no list).
    pub fn paging(&self) -> Paging {
        match *self {
            ModelListing::Endpoint { paging, .. }
            | ModelListing::Host { paging, .. }
            | ModelListing::ControlPlane { paging, .. } => paging,
            ModelListing::Unsupported(_) => Paging::None,
        }
    }
}

/// `endpoint` as scheme, authority and path.
fn split(endpoint: &str) -> Result<(&str, &str, &str), &'static str> {
    let (scheme, rest) = endpoint.split_once("://").ok_or("the endpoint is not a URL")?;
    let (host, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    if host.is_empty() {
        return Err("the endpoint names no host");
    }
    Ok((scheme, host, path))
}

/// The body of a model list as a JSON object, or why it is not one.
pub(crate) fn object(
    body: &[u8],
) -> Result<serde_json::Map<String, serde_json::Value>, crate::ProtocolError> {
    match serde_json::from_slice(body) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(_) => Err(crate::ProtocolError::upstream("the model list is not a JSON object")),
        Err(e) => Err(crate::ProtocolError::upstream(format!("the model list is not JSON: {e}"))),
    }
}

/// The string at `key` of `value`, if it is one and not empty.
pub(crate) fn text<'a>(value: &'a serde_json::Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(serde_json::Value::as_str).filter(|s| !s.is_empty())
}

#[cfg(test)]
#[path = "listing_tests.rs"]
mod tests;
