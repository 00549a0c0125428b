//! Cloning a project: a new project in a workspace of the caller's choice, filled by a job with
//! copies of the original's classes, labels, groups, documents, segments, labeling sessions,
//! tags and marks.
//!
//! Every copied group, document and session remembers its original (`cloned_from`), so rows
//! that refer to each other are joined up with plain `INSERT ... SELECT`. The job copies in
//! fenced steps that each skip what an earlier run copied: a killed worker's successor finishes
//! the copy without doubling anything.

use crate::jobs::{Lease, NewJob, check_fence_in_project, enqueue_in};
use crate::payloads::ClonePayload;
use crate::records::{FromAnyRow, PROJECT_COLUMNS, Project, Workspace};
use crate::{Store, db, db_unique};
use lector_core::time::Timestamp;
use lector_core::{Action, Error, Result, Scope};
use sqlx::{Any, Transaction};

/// Documents copied per transaction.
const CLONE_BATCH: i64 = 2000;

/// What a clone job copied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CloneCounts {
    pub documents: i64,
    pub sessions: i64,
}

impl Store {
    /// Creates the copy (CLONING) in `target` and the job that fills it, in one transaction.
    /// The caller manages projects in the original's workspace and in the target. Without a
    /// name the copy is called "NAME (copy)", numbered when that is taken.
    pub async fn start_clone(
        &self,
        scope: &Scope,
        project_id: i64,
        target: &Workspace,
        name: Option<String>,
    ) -> Result<(Project, i64)> {
        let (source, _) = self.project_access(scope, project_id, Action::Manage).await?;
        scope.authorize(target.facts(), Action::Manage)?;
        let name = match name {
            Some(name) => name,
            None => self.free_copy_name(target.id, &source.name).await?,
        };
        let mut tx = self.begin_write().await?;
        // The copy's job is the target's work; the user's and the target's rows are held first.
        crate::workspace_work::room_in(&mut tx, scope.user_id, target.id).await?;
        crate::projects::room_for_a_project(&mut tx, target.id).await?;
        let sql = format!(
            "INSERT INTO projects (workspace_id, name, type, status, language, created, external_id) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {}",
            PROJECT_COLUMNS.replace("p.", "")
        );
        let row = sqlx::query(&sql)
            .bind(target.id)
            .bind(&name)
            .bind(source.kind.as_str())
            .bind("CLONING")
            .bind(&source.language)
            .bind(Timestamp::now().micros())
            .bind(source.external_id)
            .fetch_one(&mut *tx)
            .await
            .map_err(db_unique("a project with this name exists in the workspace"))?;
        let copy = Project::decode(&row)?;
        // The vocabulary comes with the answer, whatever the job has done by then; the job
        // copies the rest (and finds the vocabulary there).
        copy_vocabulary(&mut tx, source.id, copy.id).await?;
        let payload = ClonePayload {
            source_project_id: source.id,
            project_id: copy.id,
        };
        let job = NewJob::of(&payload)?
            .owned_by(scope.user_id)
            .in_project(target.id, copy.id);
        let job = enqueue_in(&mut tx, job).await?;
        tx.commit().await.map_err(db)?;
        self.wake_workers();
        Ok((copy, job.id))
    }

    /// "NAME (copy)", or "NAME (copy N)" when that is taken, within a name's length (the
    /// original's name cut to make room for the suffix).
    async fn free_copy_name(&self, workspace_id: i64, original: &str) -> Result<String> {
        for n in 1..=100 {
            let suffix = if n == 1 {
                " (copy)".to_owned()
            } else {
                format!(" (copy {n})")
            };
            let room = lector_core::validate::MAX_NAME_CHARS.saturating_sub(suffix.chars().count());
            let kept: String = original.chars().take(room).collect();
            let name = format!("{}{suffix}", kept.trim_end());
            let taken: Option<i64> =
                sqlx::query_scalar("SELECT id FROM projects WHERE workspace_id = $1 AND name = $2")
                    .bind(workspace_id)
                    .bind(&name)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db)?;
            if taken.is_none() {
                return Ok(name);
            }
        }
        Err(Error::conflict("name the copy: every default name is taken"))
    }

    /// Copies the original's contents into the clone under the job's lease, reporting
    /// progress, and marks the clone CREATED. An original deleted while it was copied is 404
    /// at the last step, so the copy, which may be missing any part of it, fails instead of
    /// being announced ready (ids are never reused: an original still there at the last step
    /// was there for every step before it).
    pub async fn fill_clone(&self, lease: &Lease, source: i64, copy: i64) -> Result<CloneCounts> {
        self.clone_step(lease, |tx| Box::pin(copy_vocabulary_and_groups(tx, source, copy)))
            .await?;
        let total: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM documents WHERE project_id = $1")
            .bind(source)
            .fetch_one(&self.pool)
            .await
            .map_err(db)?;
        let mut done = 0;
        let mut after = 0;
        loop {
            let last: Option<i64> = sqlx::query_scalar(
                "SELECT MAX(id) FROM (SELECT id FROM documents WHERE project_id = $1 AND id > $2 ORDER BY id LIMIT $3) b",
            )
            .bind(source)
            .bind(after)
            .bind(CLONE_BATCH)
            .fetch_one(&self.pool)
            .await
            .map_err(db)?;
            let Some(last) = last else { break };
            let range = (after, last);
            done += self
                .clone_step(lease, |tx| Box::pin(copy_documents(tx, source, copy, range)))
                .await?;
            after = last;
            self.report_progress(lease, 0.9 * done as f64 / total.max(1) as f64)
                .await?;
        }
        let sessions: Vec<i64> = sqlx::query_scalar("SELECT id FROM sessions WHERE project_id = $1 ORDER BY id")
            .bind(source)
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        for session in &sessions {
            self.clone_step(lease, |tx| Box::pin(copy_session(tx, copy, *session)))
                .await?;
        }
        self.clone_step(lease, |tx| {
            Box::pin(async move {
                let original: Option<i64> = sqlx::query_scalar("SELECT id FROM projects WHERE id = $1")
                    .bind(source)
                    .fetch_optional(&mut **tx)
                    .await
                    .map_err(db)?;
                if original.is_none() {
                    return Err(Error::new(
                        lector_core::ErrorCode::NotFound,
                        format!("project {source} was deleted while it was copied"),
                    ));
                }
                sqlx::query("UPDATE projects SET status = 'CREATED' WHERE id = $1")
                    .bind(copy)
                    .execute(&mut **tx)
                    .await
                    .map_err(db)?;
                Ok(0)
            })
        })
        .await?;
        Ok(CloneCounts {
            documents: total,
            sessions: sessions.len() as i64,
        })
    }

    /// Runs one step of a clone in its own fenced transaction.
    async fn clone_step<F>(&self, lease: &Lease, step: F) -> Result<i64>
    where
        F: for<'t> FnOnce(
            &'t mut Transaction<'static, Any>,
        ) -> std::pin::Pin<Box<dyn Future<Output = Result<i64>> + Send + 't>>,
    {
        let mut tx = self.begin_write().await?;
        check_fence_in_project(&mut tx, lease).await?;
        let copied = step(&mut tx).await?;
        tx.commit().await.map_err(db)?;
        Ok(copied)
    }
}

async fn execute(tx: &mut Transaction<'static, Any>, sql: &str, binds: &[i64]) -> Result<u64> {
    let mut query = sqlx::query(sql);
    for value in binds {
        query = query.bind(*value);
    }
    Ok(query.execute(&mut **tx).await.map_err(db)?.rows_affected())
}

/// Copies the classes and labels in their order (bounded by the per-project limits); a second
/// run adds nothing.
async fn copy_vocabulary(tx: &mut Transaction<'static, Any>, source: i64, copy: i64) -> Result<()> {
    execute(
        tx,
        "INSERT INTO classes (project_id, name, example, description, created) \
         SELECT $1, name, example, description, created FROM classes WHERE project_id = $2 ORDER BY id \
         ON CONFLICT (project_id, name) DO NOTHING",
        &[copy, source],
    )
    .await?;
    execute(
        tx,
        "INSERT INTO labels (project_id, name, created) SELECT $1, name, created FROM labels WHERE project_id = $2 \
         ORDER BY id ON CONFLICT (project_id, name) DO NOTHING",
        &[copy, source],
    )
    .await?;
    Ok(())
}

/// Copies the project's classes, labels and groups. A group still being filled (PROCESSING) is
/// copied FAILED, as a session is: no job fills the copy, which would otherwise stay
/// PROCESSING, refusing to be deleted or analysed, for good.
async fn copy_vocabulary_and_groups(tx: &mut Transaction<'static, Any>, source: i64, copy: i64) -> Result<i64> {
    copy_vocabulary(tx, source, copy).await?;
    let groups = execute(
        tx,
        "INSERT INTO document_groups (project_id, name, source, status, created, cloned_from) \
         SELECT $1, g.name, g.source, CASE WHEN g.status = 'PROCESSING' THEN 'FAILED' ELSE g.status END, g.created, g.id \
         FROM document_groups g WHERE g.project_id = $2 \
         AND NOT EXISTS (SELECT 1 FROM document_groups c WHERE c.project_id = $1 AND c.cloned_from = g.id)",
        &[copy, source],
    )
    .await?;
    Ok(groups as i64)
}

/// Copies the documents with ids in `(after, last]` and their segments.
async fn copy_documents(
    tx: &mut Transaction<'static, Any>,
    source: i64,
    copy: i64,
    (after, last): (i64, i64),
) -> Result<i64> {
    let documents = execute(
        tx,
        "INSERT INTO documents (project_id, group_id, group_position, text, meta, language, created, cloned_from) \
         SELECT $1, g.id, d.group_position, d.text, d.meta, d.language, d.created, d.id FROM documents d \
         LEFT JOIN document_groups g ON g.project_id = $1 AND g.cloned_from = d.group_id \
         WHERE d.project_id = $2 AND d.id > $3 AND d.id <= $4 \
         AND NOT EXISTS (SELECT 1 FROM documents c WHERE c.project_id = $1 AND c.cloned_from = d.id)",
        &[copy, source, after, last],
    )
    .await?;
    execute(
        tx,
        "INSERT INTO segments (document_id, position, span_start, span_end, text, layout) \
         SELECT c.id, s.position, s.span_start, s.span_end, s.text, s.layout FROM documents c \
         JOIN segments s ON s.document_id = c.cloned_from \
         WHERE c.project_id = $1 AND c.cloned_from > $2 AND c.cloned_from <= $3 \
         ON CONFLICT (document_id, position) DO NOTHING",
        &[copy, after, last],
    )
    .await?;
    Ok(documents as i64)
}

/// Copies one session with its documents, classes, labels, tags and marks, unless an earlier
/// run did; a correction session with its model (in the same workspace), its documents' order,
/// its tags' confidences and statuses, and what the model predicted. A session still being
/// filled (an import's STARTED, a correction's PREDICTING) is copied FAILED: no job fills the
/// copy, and what it holds is only what was there when the clone read it.
async fn copy_session(tx: &mut Transaction<'static, Any>, copy: i64, original: i64) -> Result<i64> {
    let done: Option<i64> = sqlx::query_scalar("SELECT id FROM sessions WHERE project_id = $1 AND cloned_from = $2")
        .bind(copy)
        .bind(original)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db)?;
    if done.is_some() {
        return Ok(0);
    }
    let session: i64 = sqlx::query_scalar(
        "INSERT INTO sessions (uuid, project_id, user_id, name, description, mode, status, document_group_id, \
         model_id, created, finished, cloned_from) \
         SELECT $1, $2, s.user_id, s.name, s.description, s.mode, \
         CASE WHEN s.status IN ('STARTED', 'PREDICTING') THEN 'FAILED' ELSE s.status END, g.id, \
         CASE WHEN np.workspace_id = op.workspace_id THEN s.model_id END, s.created, s.finished, s.id \
         FROM sessions s LEFT JOIN document_groups g ON g.project_id = $2 AND g.cloned_from = s.document_group_id \
         JOIN projects op ON op.id = s.project_id JOIN projects np ON np.id = $2 \
         WHERE s.id = $3 RETURNING id",
    )
    .bind(uuid::Uuid::new_v4().to_string())
    .bind(copy)
    .bind(original)
    .fetch_one(&mut **tx)
    .await
    .map_err(db)?;
    let ids = [session, copy, original];
    execute(
        tx,
        "INSERT INTO session_documents (session_id, document_id, position) SELECT $1, c.id, sd.position \
         FROM session_documents sd \
         JOIN documents c ON c.project_id = $2 AND c.cloned_from = sd.document_id WHERE sd.session_id = $3",
        &ids,
    )
    .await?;
    for (table, column, vocabulary) in [
        ("session_classes", "class_id", "classes"),
        ("session_labels", "label_id", "labels"),
    ] {
        execute(
            tx,
            &format!(
                "INSERT INTO {table} (session_id, {column}) SELECT $1, n.id FROM {table} x \
                 JOIN {vocabulary} o ON o.id = x.{column} JOIN {vocabulary} n ON n.project_id = $2 AND n.name = o.name \
                 WHERE x.session_id = $3"
            ),
            &ids,
        )
        .await?;
    }
    // The copy of a segment is the segment at the same position of the copied document.
    let segment_map = "JOIN segments os ON os.id = x.segment_id \
         JOIN documents c ON c.project_id = $2 AND c.cloned_from = os.document_id \
         JOIN segments ns ON ns.document_id = c.id AND ns.position = os.position";
    // Its tags, its marks, and what the model of a correction session predicted (which its
    // predicted score compares the corrections with), each on the copy of its segment.
    let per_segment = [
        "INSERT INTO segment_tags (session_id, segment_id, class_id, label_id, span_start, span_end, text, user_id, \
         created, confidence, status) \
         SELECT $1, ns.id, nc.id, nl.id, x.span_start, x.span_end, x.text, x.user_id, x.created, x.confidence, x.status \
         FROM segment_tags x {segment_map} \
         LEFT JOIN classes oc ON oc.id = x.class_id LEFT JOIN classes nc ON nc.project_id = $2 AND nc.name = oc.name \
         LEFT JOIN labels ol ON ol.id = x.label_id LEFT JOIN labels nl ON nl.project_id = $2 AND nl.name = ol.name \
         WHERE x.session_id = $3",
        "INSERT INTO segment_statuses (session_id, segment_id, document_id, name, user_id, created) \
         SELECT $1, ns.id, c.id, x.name, x.user_id, x.created FROM segment_statuses x {segment_map} \
         WHERE x.session_id = $3",
        "INSERT INTO correction_predictions (session_id, segment_id, class_name, label_name, confidence, class_id, \
         label_id) \
         SELECT $1, ns.id, x.class_name, x.label_name, x.confidence, nc.id, nl.id FROM correction_predictions x \
         {segment_map} \
         LEFT JOIN classes oc ON oc.id = x.class_id LEFT JOIN classes nc ON nc.project_id = $2 AND nc.name = oc.name \
         LEFT JOIN labels ol ON ol.id = x.label_id LEFT JOIN labels nl ON nl.project_id = $2 AND nl.name = ol.name \
         WHERE x.session_id = $3",
    ];
    for sql in per_segment {
        execute(tx, &sql.replace("{segment_map}", segment_map), &ids).await?;
    }
    // The copy keeps the original's status; its counts are its own rows'.
    crate::session_counts::recount(tx, session).await?;
    Ok(1)
}
