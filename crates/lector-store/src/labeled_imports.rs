//! Labeling sessions filled from a labeled-data file by a job (`import_labeled`, see
//! `lector-jobs`' `labeled_import`): the request creates the session in STARTED with its group
//! in PROCESSING and queues the job; the job stores the file's documents in fenced batches, each
//! document at its place in the group, so a run that starts again skips what an earlier run
//! stored; its end turns the group CREATED and gives the session the status its marks imply.
//!
//! Reading and parsing the file is the job's; nothing here touches the blob store.

use crate::jobs::{Lease, NewJob, check_fence, check_fence_in_project, enqueue_in, set_task};
use crate::payloads::{LabeledColumns, LabeledImportPayload};
use crate::session_counts::{add_counts, end_import_status, lock_session, recount};
use crate::sessions::{insert_session, session_group};
use crate::tags::{LabeledTarget, add_labeled};
use crate::uploads::{Upload, mark_used_in};
use crate::{LabeledDocument, NewSession, Session, Store, db};
use lector_core::labeling::SessionStatus;
use lector_core::{Error, Result, Scope};

/// How a labeled-data file is read: the language of its texts, its columns, the reader's limits.
#[derive(Debug, Clone)]
pub struct LabeledFile {
    pub language: String,
    pub columns: LabeledColumns,
    pub max_bytes: u64,
    pub max_rows: u64,
}

impl Store {
    /// Creates a session (STARTED) with the existing documents `new` names, its document group
    /// (PROCESSING) and the job that fills both from `upload`, marking the file used, in one
    /// transaction. Answers the session and the job's id.
    pub async fn start_labeled_import(
        &self,
        scope: &Scope,
        project_id: i64,
        new: NewSession,
        upload: &Upload,
        file: LabeledFile,
    ) -> Result<(Session, i64)> {
        let (project, vocabulary) = self.session_plan(scope, project_id, &new).await?;
        if upload.project_id != project.id {
            return Err(Error::not_found("uploaded file"));
        }
        let mut tx = self.begin_write().await?;
        // The project's row before the file's: a move of the project takes them in that order.
        crate::hold_project(&mut tx, project.id).await?;
        mark_used_in(&mut tx, upload.id).await?;
        let session_id = insert_session(&mut tx, scope, &project, &vocabulary, &new, false).await?;
        sqlx::query("UPDATE sessions SET status = $1 WHERE id = $2")
            .bind(SessionStatus::Started.as_str())
            .bind(session_id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        recount(&mut tx, session_id).await?;
        let group_id = session_group(&mut tx, project.id, session_id, &new.name, "PROCESSING").await?;
        let payload = LabeledImportPayload {
            project_id: project.id,
            session_id,
            group_id,
            user_id: scope.user_id,
            upload_id: upload.id,
            language: file.language,
            columns: file.columns,
            max_bytes: file.max_bytes,
            max_rows: file.max_rows,
        };
        let job = NewJob::for_project(&payload, scope, &project)?;
        let job = enqueue_in(&mut tx, job).await?;
        set_task(&mut tx, "document_groups", group_id, job.id).await?;
        // Read in the transaction that queues the job: the session shows STARTED however soon a
        // worker takes it.
        let session = crate::sessions::session_in(&mut *tx, project.id, session_id).await?;
        tx.commit().await.map_err(db)?;
        self.wake_workers();
        Ok((session, job.id))
    }

    /// Stores one batch of a labeled import under the job's lease: the documents at consecutive
    /// places of the session's group from `first_position`, with their tags and marks. Documents
    /// an earlier run stored are skipped; answers how many were new.
    pub async fn import_labeled(
        &self,
        lease: &Lease,
        payload: &LabeledImportPayload,
        first_position: i64,
        documents: &[LabeledDocument],
    ) -> Result<usize> {
        let session = self.session_of(payload.project_id, payload.session_id).await?;
        let vocabulary = self.session_vocabulary(&session).await?;
        let target = LabeledTarget {
            project_id: payload.project_id,
            group_id: payload.group_id,
            session_id: session.id,
            user_id: payload.user_id,
        };
        let mut tx = self.begin_write().await?;
        check_fence_in_project(&mut tx, lease).await?;
        lock_session(&mut tx, session.id).await?;
        let added = add_labeled(&mut tx, target, &vocabulary, Some(first_position), documents).await?;
        // The session shows the import's progress; its status stays STARTED until the end.
        add_counts(&mut tx, session.id, added).await?;
        tx.commit().await.map_err(db)?;
        Ok(added.documents as usize)
    }

    /// Ends a labeled import under the job's lease: the group turns CREATED and the session
    /// takes the status its marks imply. Answers the session.
    pub async fn finish_labeled_import(&self, lease: &Lease, payload: &LabeledImportPayload) -> Result<Session> {
        let mut tx = self.begin_write().await?;
        check_fence(&mut tx, lease).await?;
        sqlx::query("UPDATE document_groups SET status = $1 WHERE id = $2")
            .bind("CREATED")
            .bind(payload.group_id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        end_import_status(&mut tx, payload.session_id).await?;
        tx.commit().await.map_err(db)?;
        self.session_of(payload.project_id, payload.session_id).await
    }
}
