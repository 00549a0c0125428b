//! Delivering HITL review events to their configuration's `webhook_url` (a `deliver_webhook`
//! job): the body `{id, type, created, data}` is signed when it is sent (`Lector-Signature`,
//! see `lector_core::webhook`), posted through the sources' guard against server-side request
//! forgery (every address checked, redirects checked again), and retried with backoff for about
//! a day until the receiver answers 2xx or the attempts run out (then the job, a task of the
//! project, fails with the last reason; it is no user's, so no notification is sent). The
//! address and secret are the configuration's when the event is sent: one whose webhook was
//! removed, or that was deleted, sends nothing.

use crate::runner::{Handler, JobContext, JobError, Outcome};
use lector_core::time::Timestamp;
use lector_core::webhook::{SIGNATURE_HEADER, signature};
use lector_sources::Sources;
use lector_store::WebhookPayload;
use std::sync::Arc;

/// Posts one review event.
#[derive(Debug)]
pub struct DeliverWebhook(pub Arc<Sources>);

impl Handler for DeliverWebhook {
    type Payload = WebhookPayload;

    async fn run(&self, job: JobContext<'_>, payload: WebhookPayload) -> Result<Outcome, JobError> {
        let JobContext { store, lease, .. } = job;
        let Some((url, secret)) = store
            .webhook_for_job(lease, payload.hitl_id)
            .await
            .map_err(JobError::from_store)?
        else {
            return Ok(Outcome {
                result: serde_json::json!({"event": payload.event_id, "sent": false}),
                notice: None,
            });
        };
        let data: serde_json::Value = store.job_input(lease).await.map_err(JobError::from_store)?;
        let body = serde_json::to_vec(&serde_json::json!({
            "id": payload.event_id,
            "type": payload.event_type,
            "created": payload.created,
            "data": data,
        }))
        .map_err(|e| JobError::fatal(format!("the event cannot be written: {e}")))?;
        let signed = signature(&secret, Timestamp::now().unix_seconds(), &body);
        let headers = [
            ("content-type", "application/json".to_owned()),
            (SIGNATURE_HEADER, signed),
            ("Lector-Event", payload.event_type.clone()),
            ("Lector-Delivery", payload.event_id.clone()),
        ];
        let status = self.0.post_webhook(&url, body, &headers).await.map_err(|e| {
            // The host only: the address's path or query may carry the receiver's key, and
            // this message is logged and kept with the job.
            let host = lector_sources::Sources::host_of(&url);
            JobError::transient(format!("posting to the webhook at {host}: {}", e.detail))
        })?;
        Ok(Outcome {
            result: serde_json::json!({"event": payload.event_id, "type": payload.event_type, "status": status}),
            notice: None,
        })
    }
}
