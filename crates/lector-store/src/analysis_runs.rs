//! Batch analyses, the store's side: `create_analysis` checks its request and queues the
//! analysis (QUEUED) with its job in one transaction; the job (in `lector-jobs`) reads the
//! documents of the analysis's group in batches and writes the model's tags through the fenced
//! functions here, ANALYZING until FINISHED. A batch's tags and its documents' coverage are
//! written in one transaction, after deleting what an earlier run of the same batch left, so a
//! job that runs twice (its worker killed) stores each tag once.
//!
//! Readers take the caller's scope: an analysis is seen by the readers of its project.

use crate::analyses::{ANALYSIS_COLUMNS, Analysis};
use crate::batch_reads::{DocumentAsRead, Reread};
use crate::documents::{Document, import_group};
use crate::jobs::{NewJob, check_fence, enqueue_in, set_task};
use crate::models::Model;
use crate::records::fetch_records;
use crate::uploads::mark_used_in;
use crate::{AnalysisPayload, ImportOptions, ImportedDocument, Lease, Param, Store, Upload, db};
use lector_core::time::Timestamp;
use lector_core::{Action, Error, Result, Scope};
use std::collections::{HashMap, HashSet};

/// Where a batch analysis finds its texts.
#[derive(Debug, Clone)]
pub enum AnalysisSource {
    /// Texts sent with the request; they become documents of a group of the analysis's own.
    Documents(Vec<ImportedDocument>),
    /// An uploaded file and its text column; its rows become documents likewise.
    File {
        upload: Box<Upload>,
        column_index: Option<usize>,
        column_name: Option<String>,
        header_first: bool,
        max_bytes: u64,
        max_rows: u64,
    },
    /// An existing group of the model's project.
    Group(i64),
}

/// A `create_analysis` request, checked.
#[derive(Debug, Clone)]
pub struct NewBatchAnalysis {
    pub name: String,
    pub description: String,
    /// Split texts into sentences (documents of an existing group keep their segments).
    pub split: bool,
    pub source: AnalysisSource,
}

/// One tag the model gave a segment.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalysisTag {
    pub document_id: i64,
    pub segment_id: i64,
    pub class: Option<String>,
    pub label: Option<String>,
    pub confidence: f64,
}

/// A tag as stored: with the project's class and label it matched, and their names when the
/// analysis wrote it (the model's own where it matched none).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredAnalysisTag {
    pub segment_id: i64,
    pub class_id: Option<i64>,
    pub label_id: Option<i64>,
    pub class: Option<String>,
    pub label: Option<String>,
    pub confidence: f64,
}

/// How many of an analysis's tags name each class and each label, by the names they had when
/// it was written, most first: its distribution over all its documents, however many.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TagCounts {
    pub classes: Vec<(String, i64)>,
    pub labels: Vec<(String, i64)>,
}

/// A document to analyse and its segments' ids and texts.
#[derive(Debug, Clone)]
pub struct PendingDocument {
    pub id: i64,
    pub segments: Vec<(i64, String)>,
}

impl PendingDocument {
    /// The document as read, for the write that follows ([`Store::store_analysis_batch`]).
    pub fn as_read(&self) -> DocumentAsRead {
        DocumentAsRead {
            id: self.id,
            segment_ids: self.segments.iter().map(|(id, _)| *id).collect(),
        }
    }
}

impl Store {
    /// Queues a batch analysis with `model` (USER in the model's workspace; the model READY).
    pub async fn start_analysis(&self, scope: &Scope, model: &Model, new: NewBatchAnalysis) -> Result<Analysis> {
        let project_id = model.project_id.ok_or_else(|| {
            Error::validation(vec![lector_core::FieldError::new(
                "model_id",
                "this model belongs to no project; batch analyses run in a model's project",
            )])
        })?;
        if !scope.workspaces.iter().any(|w| w.workspace_id == model.workspace_id) && !scope.is_superuser {
            return Err(Error::forbidden(
                "batch analyses run in the model's own workspace; analyse texts with a published model through `analyze`",
            ));
        }
        let (project, _) = self.project_access(scope, project_id, Action::Edit).await?;
        let mut tx = self.begin_write().await?;
        crate::workspace_work::room_for_work(&mut tx, scope.user_id, &project).await?;
        // Texts sent with the request or in a file fill a group of the analysis's own.
        let options = |file| ImportOptions {
            language: model.language.clone(),
            split: new.split,
            file,
        };
        let (group_id, import, input) = match new.source {
            AnalysisSource::Group(id) => {
                // Locked as `delete_group` locks it, so that a deletion either waits for this
                // analysis (and then refuses) or goes first (and this one finds no group).
                crate::lock_row(&mut tx, ("document_groups", id)).await?;
                let status: Option<String> =
                    sqlx::query_scalar("SELECT status FROM document_groups WHERE id = $1 AND project_id = $2")
                        .bind(id)
                        .bind(project.id)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(db)?;
                match status.as_deref() {
                    None => return Err(Error::not_found("document group")),
                    Some("PROCESSING") => {
                        return Err(Error::conflict(format!(
                            "group {id} is still being imported; analyse it once it is CREATED"
                        )));
                    }
                    Some(_) => (id, None, None),
                }
            }
            AnalysisSource::Documents(documents) => {
                let import = import_group(&mut tx, project.id, &new.name, "analysis", options(None)).await?;
                (import.group_id, Some(import), Some(documents))
            }
            AnalysisSource::File {
                upload,
                column_index,
                column_name,
                header_first,
                max_bytes,
                max_rows,
            } => {
                adopt_upload(&mut tx, scope, &upload, project.workspace_id, project.id).await?;
                mark_used_in(&mut tx, upload.id).await?;
                let file = crate::FileSource {
                    upload_id: upload.id,
                    column_index,
                    column_name,
                    header_first,
                    max_bytes,
                    max_rows,
                };
                let import = import_group(&mut tx, project.id, &new.name, "analysis", options(Some(file))).await?;
                (import.group_id, Some(import), None)
            }
        };
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO analyses (uuid, project_id, model_id, user_id, name, description, status, type, created, \
             document_group_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
        )
        .bind(uuid::Uuid::new_v4().to_string())
        .bind(project.id)
        .bind(model.id)
        .bind(scope.user_id)
        .bind(&new.name)
        .bind(&new.description)
        .bind("QUEUED")
        .bind(model.kind.as_str())
        .bind(Timestamp::now().micros())
        .bind(group_id)
        .fetch_one(&mut *tx)
        .await
        .map_err(db)?;
        // After the project's rows are locked, as every writer of the project locks them.
        crate::models::model_still_there(&mut tx, model.id).await?;
        let payload = AnalysisPayload {
            analysis_id: id,
            analysis_name: new.name.clone(),
            model_id: model.id,
            project_id: project.id,
            group_id,
            import,
        };
        let mut job = NewJob::for_project(&payload, scope, &project)?;
        if let Some(documents) = &input {
            job = job.with_input(documents)?;
        }
        let job = enqueue_in(&mut tx, job).await?;
        set_task(&mut tx, "analyses", id, job.id).await?;
        if input.is_some() || payload.import.is_some() {
            set_task(&mut tx, "document_groups", group_id, job.id).await?;
        }
        // The answer is read in the transaction that queues the job, so it shows the analysis
        // QUEUED however soon a worker claims the job.
        let analysis = crate::analyses::analysis_in(&mut *tx, project.id, id).await?;
        tx.commit().await.map_err(db)?;
        self.wake_workers();
        Ok(analysis)
    }

    /// An analysis the caller may read (with `Action::Read`) or change; another workspace's
    /// answers 404 like a missing one.
    pub async fn analysis(&self, scope: &Scope, id: i64, action: Action) -> Result<Analysis> {
        let project_id: Option<i64> = sqlx::query_scalar("SELECT project_id FROM analyses WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        let project_id = project_id.ok_or_else(|| Error::not_found("analysis"))?;
        self.project_access(scope, project_id, action)
            .await
            .map_err(|e| match e.code {
                lector_core::ErrorCode::NotFound => Error::not_found("analysis"),
                _ => e,
            })?;
        self.analysis_of(project_id, id).await
    }

    /// A page of the analyses of the caller's workspaces, oldest first, optionally of one model.
    pub async fn analyses(
        &self,
        scope: &Scope,
        model_id: Option<i64>,
        offset: i64,
        limit: i64,
    ) -> Result<Vec<Analysis>> {
        let mut params = Vec::new();
        let mut conditions = Vec::new();
        if !scope.is_superuser {
            let ids: Vec<i64> = scope.workspaces.iter().map(|w| w.workspace_id).collect();
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            conditions.push(format!("p.workspace_id IN ({})", crate::numbered(1, ids.len())));
            params.extend(ids.into_iter().map(Param::Int));
        }
        if let Some(model_id) = model_id {
            params.push(Param::Int(model_id));
            conditions.push(format!("a.model_id = ${}", params.len()));
        }
        let filter = if conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", conditions.join(" AND "))
        };
        let sql = format!(
            "SELECT {ANALYSIS_COLUMNS} FROM analyses a JOIN projects p ON p.id = a.project_id {filter} \
             ORDER BY a.id LIMIT {limit} OFFSET {offset}"
        );
        fetch_records(Param::bind_all(sqlx::query(&sql), params), &self.pool).await
    }

    /// Renames or re-describes an analysis (USER).
    pub async fn update_analysis(
        &self,
        scope: &Scope,
        id: i64,
        name: Option<&str>,
        description: Option<&str>,
    ) -> Result<Analysis> {
        let analysis = self.analysis(scope, id, Action::Edit).await?;
        let mut tx = self.begin_write().await?;
        sqlx::query("UPDATE analyses SET name = $1, description = $2 WHERE id = $3")
            .bind(name.unwrap_or(&analysis.name))
            .bind(description.unwrap_or(&analysis.description))
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        self.analysis_of(analysis.project_id, id).await
    }

    /// Deletes an analysis and its tags (USER); its documents stay in their group. A running
    /// analysis is refused (409) until its job has ended.
    pub async fn delete_analysis(&self, scope: &Scope, id: i64) -> Result<Analysis> {
        let analysis = self.analysis(scope, id, Action::Edit).await?;
        if matches!(analysis.status.as_str(), "QUEUED" | "ANALYZING") {
            return Err(Error::conflict(format!(
                "analysis {id} is {}; delete it once it has finished or failed",
                analysis.status
            )));
        }
        let mut tx = self.begin_write().await?;
        for sql in [
            "DELETE FROM analysis_tags WHERE analysis_id = $1",
            "DELETE FROM analysis_documents WHERE analysis_id = $1",
            "DELETE FROM analyses WHERE id = $1",
        ] {
            sqlx::query(sql).bind(id).execute(&mut *tx).await.map_err(db)?;
        }
        tx.commit().await.map_err(db)?;
        Ok(analysis)
    }

    /// The tags of an analysis on these documents' segments, by segment id order.
    pub async fn analysis_tags_of(
        &self,
        analysis: &Analysis,
        documents: &[Document],
    ) -> Result<Vec<StoredAnalysisTag>> {
        if documents.is_empty() {
            return Ok(Vec::new());
        }
        let mut params = vec![Param::Int(analysis.id)];
        params.extend(documents.iter().map(|d| Param::Int(d.id)));
        let sql = format!(
            "SELECT segment_id, class_id, label_id, class_name, label_name, confidence FROM analysis_tags \
             WHERE analysis_id = $1 AND document_id IN ({}) ORDER BY segment_id, confidence DESC",
            crate::numbered(2, documents.len())
        );
        let rows = Param::bind_all(sqlx::query(&sql), params)
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        rows.iter()
            .map(|row| {
                use sqlx::Row;
                Ok(StoredAnalysisTag {
                    segment_id: row.try_get("segment_id").map_err(db)?,
                    class_id: row.try_get("class_id").map_err(db)?,
                    label_id: row.try_get("label_id").map_err(db)?,
                    class: row.try_get("class_name").map_err(db)?,
                    label: row.try_get("label_name").map_err(db)?,
                    confidence: row.try_get("confidence").map_err(db)?,
                })
            })
            .collect()
    }

    /// How many tags of the analysis name each class and each label ([`TagCounts`]).
    pub async fn analysis_tag_counts(&self, analysis: &Analysis) -> Result<TagCounts> {
        let mut counts = TagCounts::default();
        for (column, into) in [("class_name", &mut counts.classes), ("label_name", &mut counts.labels)] {
            let sql = format!(
                "SELECT {column} AS name, COUNT(*) AS n FROM analysis_tags \
                 WHERE analysis_id = $1 AND {column} IS NOT NULL GROUP BY {column} ORDER BY COUNT(*) DESC, {column}"
            );
            let rows = sqlx::query(&sql)
                .bind(analysis.id)
                .fetch_all(&self.pool)
                .await
                .map_err(db)?;
            for row in &rows {
                use sqlx::Row;
                into.push((row.try_get("name").map_err(db)?, row.try_get("n").map_err(db)?));
            }
        }
        Ok(counts)
    }

    // ---- the job's side ----

    /// The analysis a job works on (of the job's project).
    pub async fn analysis_for_job(&self, lease: &Lease, id: i64) -> Result<Analysis> {
        let project_id = lease.job.project_id.ok_or_else(|| Error::not_found("analysis"))?;
        self.analysis_of(project_id, id).await
    }

    /// Moves a QUEUED analysis to ANALYZING; answers its status after the move (FINISHED when an
    /// earlier run of the job completed it).
    pub async fn begin_analysis(&self, lease: &Lease, id: i64) -> Result<String> {
        let mut tx = self.begin_write().await?;
        check_fence(&mut tx, lease).await?;
        sqlx::query("UPDATE analyses SET status = $1 WHERE id = $2 AND status = $3")
            .bind("ANALYZING")
            .bind(id)
            .bind("QUEUED")
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let status: String = sqlx::query_scalar("SELECT status FROM analyses WHERE id = $1")
            .bind(id)
            .fetch_one(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok(status)
    }

    /// The status of a group of the job's project (PROCESSING while it is being filled).
    pub async fn group_status_for_job(&self, lease: &Lease, group_id: i64) -> Result<String> {
        let status: Option<String> =
            sqlx::query_scalar("SELECT status FROM document_groups WHERE id = $1 AND project_id = $2")
                .bind(group_id)
                .bind(lease.job.project_id.unwrap_or_default())
                .fetch_optional(&self.pool)
                .await
                .map_err(db)?;
        status.ok_or_else(|| Error::not_found("document group"))
    }

    /// How many documents the analysis's group holds, and how many the analysis covers already.
    pub async fn analysis_extent(&self, lease: &Lease, analysis_id: i64, group_id: i64) -> Result<(i64, i64)> {
        let project_id = lease.job.project_id.unwrap_or_default();
        let total: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM documents WHERE group_id = $1 AND project_id = $2")
            .bind(group_id)
            .bind(project_id)
            .fetch_one(&self.pool)
            .await
            .map_err(db)?;
        let done: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM analysis_documents WHERE analysis_id = $1")
            .bind(analysis_id)
            .fetch_one(&self.pool)
            .await
            .map_err(db)?;
        Ok((total, done))
    }

    /// The next documents of the group (ids above `after`) the analysis does not cover yet, with
    /// their segments: at most `max_documents` holding at most `max_chars` characters of text,
    /// but at least one (the batch's last id is where the next one starts).
    pub async fn pending_analysis_documents(
        &self,
        lease: &Lease,
        analysis_id: i64,
        group_id: i64,
        after: i64,
        (max_documents, max_chars): (i64, i64),
    ) -> Result<Vec<PendingDocument>> {
        let project_id = lease.job.project_id.unwrap_or_default();
        let documents: Vec<(i64, i64)> = sqlx::query_as(
            "SELECT d.id, CAST(LENGTH(d.text) AS BIGINT) FROM documents d WHERE d.group_id = $1 \
             AND d.project_id = $2 AND d.id > $3 \
             AND NOT EXISTS (SELECT 1 FROM analysis_documents ad WHERE ad.analysis_id = $4 AND ad.document_id = d.id) \
             ORDER BY d.id LIMIT $5",
        )
        .bind(group_id)
        .bind(project_id)
        .bind(after)
        .bind(analysis_id)
        .bind(max_documents)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        let taken = crate::document_pages::documents_within(&documents, max_documents, max_chars);
        self.with_segments(documents[..taken].iter().map(|(id, _)| *id).collect())
            .await
    }

    /// These documents with their segments, in the order given (a job's reader: the caller
    /// took the ids from the job's project).
    pub(crate) async fn with_segments(&self, ids: Vec<i64>) -> Result<Vec<PendingDocument>> {
        let segments = self.segments_by_document(&ids).await?;
        let mut by_document: HashMap<i64, Vec<(i64, String)>> = HashMap::with_capacity(ids.len());
        for segment in segments {
            by_document
                .entry(segment.document_id)
                .or_default()
                .push((segment.id, segment.text));
        }
        Ok(ids
            .into_iter()
            .map(|id| PendingDocument {
                id,
                segments: by_document.remove(&id).unwrap_or_default(),
            })
            .collect())
    }

    /// Stores the tags of a batch of documents and marks them covered, under the job's lease;
    /// what an earlier run stored for these documents is replaced. Raises the analysis's
    /// progress to `progress` (never lowers it). Only the documents still as the batch `read`
    /// them are written ([`crate::batch_reads`]): answers those edited since, to be read again
    /// (those deleted since are passed over).
    pub async fn store_analysis_batch(
        &self,
        lease: &Lease,
        analysis_id: i64,
        read: &[DocumentAsRead],
        tags: &[(AnalysisTag, Option<i64>, Option<i64>)],
        progress: f64,
    ) -> Result<Vec<i64>> {
        if read.is_empty() {
            return Ok(Vec::new());
        }
        let mut tx = self.begin_write().await?;
        check_fence(&mut tx, lease).await?;
        let Reread { unchanged, changed } = crate::batch_reads::reread(&mut tx, read).await?;
        let document_ids = &unchanged;
        for chunk in document_ids.chunks(1000) {
            let mut params = vec![Param::Int(analysis_id)];
            params.extend(chunk.iter().map(|id| Param::Int(*id)));
            let sql = format!(
                "DELETE FROM analysis_tags WHERE analysis_id = $1 AND document_id IN ({})",
                crate::numbered(2, chunk.len())
            );
            Param::bind_all(sqlx::query(&sql), params)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        }
        let written: HashSet<i64> = unchanged.iter().copied().collect();
        let rows = tags
            .iter()
            .filter(|(tag, _, _)| written.contains(&tag.document_id))
            .map(|(tag, class_id, label_id)| {
                vec![
                    Param::Int(analysis_id),
                    Param::Int(tag.document_id),
                    Param::Int(tag.segment_id),
                    Param::MaybeInt(*class_id),
                    Param::MaybeInt(*label_id),
                    Param::MaybeText(tag.class.clone()),
                    Param::MaybeText(tag.label.clone()),
                    Param::Float(tag.confidence),
                ]
            })
            .collect();
        crate::insert_many(
            &mut tx,
            "analysis_tags",
            &[
                "analysis_id",
                "document_id",
                "segment_id",
                "class_id",
                "label_id",
                "class_name",
                "label_name",
                "confidence",
            ],
            rows,
            "",
        )
        .await?;
        let covered = document_ids
            .iter()
            .map(|id| vec![Param::Int(analysis_id), Param::Int(*id)])
            .collect();
        crate::insert_many(
            &mut tx,
            "analysis_documents",
            &["analysis_id", "document_id"],
            covered,
            "ON CONFLICT DO NOTHING",
        )
        .await?;
        sqlx::query("UPDATE analyses SET progress = $1 WHERE id = $2 AND progress < $1")
            .bind(progress.clamp(0.0, 1.0))
            .bind(analysis_id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok(changed)
    }

    /// Marks the analysis FINISHED (progress 1) under the job's lease.
    pub async fn complete_analysis(&self, lease: &Lease, analysis_id: i64) -> Result<()> {
        let mut tx = self.begin_write().await?;
        check_fence(&mut tx, lease).await?;
        sqlx::query("UPDATE analyses SET status = $1, progress = 1, finished = $2 WHERE id = $3 AND status <> $1")
            .bind("FINISHED")
            .bind(Timestamp::now().micros())
            .bind(analysis_id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)
    }
}

/// Binds an upload made for an analysis (`upload_analysis_file`, no project yet) to the
/// analysis's project; an upload of another user, or of another project, is not found.
async fn adopt_upload(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    scope: &Scope,
    upload: &Upload,
    workspace_id: i64,
    project_id: i64,
) -> Result<()> {
    let done = sqlx::query(
        "UPDATE uploads SET workspace_id = $1, project_id = $2 WHERE id = $3 AND used IS NULL \
         AND ((project_id = 0 AND user_id = $4) OR project_id = $2)",
    )
    .bind(workspace_id)
    .bind(project_id)
    .bind(upload.id.to_string())
    .bind(scope.user_id)
    .execute(&mut **tx)
    .await
    .map_err(db)?;
    if done.rows_affected() == 1 {
        Ok(())
    } else {
        Err(Error::not_found("uploaded file"))
    }
}
