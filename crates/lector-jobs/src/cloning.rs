//! The job that fills a cloned project with copies of the original's contents.

use crate::runner::{Handler, JobContext, JobError, Outcome, notice_for};
use lector_core::NotificationType;
use lector_store::ClonePayload;

/// Copies classes, labels, groups, documents, sessions, tags and marks into a clone.
#[derive(Debug, Default)]
pub struct CloneProject;

impl Handler for CloneProject {
    type Payload = ClonePayload;

    async fn run(&self, job: JobContext<'_>, payload: ClonePayload) -> Result<Outcome, JobError> {
        let JobContext { store, lease, .. } = job;
        let counts = store
            .fill_clone(lease, payload.source_project_id, payload.project_id)
            .await
            .map_err(JobError::from_store)?;
        let text = format!(
            "Project {} is ready: {} documents and {} labeling sessions copied.",
            payload.project_id, counts.documents, counts.sessions
        );
        Ok(Outcome {
            result: serde_json::json!({
                "project_id": payload.project_id,
                "documents": counts.documents,
                "sessions": counts.sessions,
            }),
            notice: notice_for(lease, NotificationType::Info, "Clone finished", text),
        })
    }
}
