//! `count_tokens`: the upstream's own count where it has one, else an estimate.

use super::*;

impl Snapshot {
    /// `POST /v1/messages/count_tokens`: forwarded to the first available Anthropic
    /// deployment of the model; otherwise estimated from the text. Answers in
    /// Anthropic's shape: `{"input_tokens": N}`.
    pub async fn count_tokens(&self, inbound: &Inbound) -> Result<Bytes, GatewayError> {
        let scope = Scope {
            project: inbound.project.as_deref(),
            project_name: inbound.project_name.as_deref(),
        };
        let plan = self.catalog.plan(&inbound.request.model, Date::today(), &scope)?;
        let anthropic = plan.candidates.iter().find(|c| {
            c.provider.wire() == Some(Wire::Anthropic) && c.provider.unavailable.is_none()
        });
        if let (Some(cand), Some(raw)) = (anthropic, inbound.raw.as_ref().and_then(RawBody::object))
            && let Some(rt) = self.runtimes.get(&cand.provider.name)
        {
            let mut body = raw.clone();
            body.insert("model".into(), Value::String(cand.upstream_model.clone()));
            let mut req = rt
                .client
                .post(format!("{}/v1/messages/count_tokens", cand.provider.endpoint))
                .header("content-type", "application/json")
                .header("anthropic-version", "2023-06-01");
            if let Some(k) = rt.pick_key(&cand.provider) {
                req = req.header("x-api-key", k.expose());
            }
            if let Some((_, beta)) =
                inbound.forward_headers.iter().find(|(k, _)| k == "anthropic-beta")
            {
                req = req.header("anthropic-beta", beta.as_str());
            }
            let timeout = self.catalog.settings.first_byte_timeout;
            let payload = serde_json::to_vec(&body).unwrap_or_default();
            let sent = tokio::time::timeout(timeout, req.body(payload).send()).await;
            if let Ok(Ok(resp)) = sent
                && resp.status().is_success()
                && let Ok(bytes) = resp.bytes().await
            {
                return Ok(bytes);
            }
            tracing::debug!(request_id = %inbound.id, "count_tokens upstream failed; estimating");
        }
        let n = estimate::input_tokens(&inbound.request);
        Ok(Bytes::from(serde_json::json!({ "input_tokens": n }).to_string()))
    }
}
