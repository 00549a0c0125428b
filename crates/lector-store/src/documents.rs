//! Documents, their segments, and document groups, including the fenced, idempotent batch
//! writes of the import job.
//!
//! Texts arrive here already normalised and segmented (by `lector-text`): the store keeps
//! what it is given. An imported document remembers its place in its group, so a re-run of an
//! import after a crash skips what the first run stored: nothing is lost or doubled.

use crate::bulk::insert_grouped_batch;
use crate::jobs::{Lease, NewJob, check_fence, enqueue_in, set_task};
use crate::payloads::{ImportOptions, ImportPayload, ImportedDocument};
use crate::records::{FromAnyRow, Project, fetch_record, fetch_records, from_row};
use crate::session_counts::DocumentSessions;
use crate::uploads::{Upload, mark_used_in};
use crate::{Backend, Store, db, numbered};
use lector_core::time::Timestamp;
use lector_core::{Action, Error, Result, Scope};
use sqlx::{Any, Transaction};

/// A document to store, with its segments (spans in code points).
#[derive(Debug, Clone)]
pub struct NewDocument {
    pub text: String,
    pub meta: serde_json::Value,
    pub language: String,
    pub segments: Vec<NewSegment>,
}

#[derive(Debug, Clone)]
pub struct NewSegment {
    pub text: String,
    pub start: i64,
    pub end: i64,
    /// For a page of a PDF or image: its words and their boxes, as JSON.
    pub layout: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub id: i64,
    pub project_id: i64,
    pub group_id: Option<i64>,
    pub text: String,
    pub meta: serde_json::Value,
    pub language: String,
    pub created: Timestamp,
    pub(crate) checked: crate::Checked,
}

pub(crate) const DOCUMENT_COLUMNS: &str = "d.id, d.project_id, d.group_id, d.text, d.meta, d.language, d.created";

from_row! {
    Document {
        id, project_id, group_id, text, meta, language, created,
    }; checked: crate::CHECKED
}

#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub id: i64,
    pub document_id: i64,
    pub position: i64,
    pub start: i64,
    pub end: i64,
    pub text: String,
    /// For a page of a PDF or image: its words and their boxes, as JSON.
    pub layout: Option<String>,
    pub(crate) checked: crate::Checked,
}

from_row! {
    Segment {
        id, document_id, position, start = "span_start", end = "span_end", text, layout,
    }; checked: crate::CHECKED
}

#[derive(Debug, Clone, PartialEq)]
pub struct DocumentGroup {
    pub id: i64,
    pub project_id: i64,
    pub name: String,
    pub source: String,
    /// PROCESSING while an import fills it, then CREATED (or FAILED).
    pub status: String,
    pub task_id: Option<i64>,
    pub document_count: i64,
    pub created: Timestamp,
}

const GROUP_COLUMNS: &str = "g.id, g.project_id, g.name, g.source, g.status, g.task_id, g.created, \
     (SELECT COUNT(*) FROM documents d WHERE d.group_id = g.id) AS document_count";

from_row! {
    DocumentGroup {
        id, project_id, name, source, status, task_id, document_count, created,
    }
}

impl Store {
    pub async fn create_document(
        &self,
        scope: &Scope,
        project_id: i64,
        document: NewDocument,
    ) -> Result<(Document, Vec<Segment>)> {
        let (project, _) = self.project_access(scope, project_id, Action::Edit).await?;
        let mut tx = self.begin_write().await?;
        let id = insert_document(&mut tx, project.id, None, &document)
            .await?
            .ok_or_else(Error::internal)?;
        tx.commit().await.map_err(db)?;
        self.document_with_segments(project.id, id).await
    }

    pub(crate) async fn document_with_segments(&self, project_id: i64, id: i64) -> Result<(Document, Vec<Segment>)> {
        let document = self.document_of(project_id, id).await?;
        let segments = self.segments_by_document(&[document.id]).await?;
        Ok((document, segments))
    }

    pub(crate) async fn document_of(&self, project_id: i64, id: i64) -> Result<Document> {
        let sql = format!("SELECT {DOCUMENT_COLUMNS} FROM documents d WHERE d.project_id = $1 AND d.id = $2");
        fetch_record(sqlx::query(&sql).bind(project_id).bind(id), &self.pool, "document").await
    }

    pub async fn document(&self, scope: &Scope, project_id: i64, id: i64) -> Result<Document> {
        let (project, _) = self.project_access(scope, project_id, Action::Read).await?;
        self.document_of(project.id, id).await
    }

    /// The segments of documents read through a scoped call, in document and text order.
    pub async fn segments_of(&self, documents: &[Document]) -> Result<Vec<Segment>> {
        let ids: Vec<i64> = documents.iter().map(|d| d.id).collect();
        self.segments_by_document(&ids).await
    }

    /// The segments of documents whose ids the store has already checked.
    pub(crate) async fn segments_by_document(&self, document_ids: &[i64]) -> Result<Vec<Segment>> {
        let mut segments = Vec::new();
        for chunk in document_ids.chunks(500) {
            let placeholders = numbered(1, chunk.len());
            let sql = format!(
                "SELECT id, document_id, position, span_start, span_end, text, layout FROM segments \
                 WHERE document_id IN ({placeholders}) ORDER BY document_id, position"
            );
            let mut query = sqlx::query(&sql);
            for id in chunk {
                query = query.bind(*id);
            }
            for row in query.fetch_all(&self.pool).await.map_err(db)? {
                segments.push(Segment::decode(&row)?);
            }
        }
        Ok(segments)
    }

    pub async fn delete_document(&self, scope: &Scope, project_id: i64, id: i64) -> Result<Document> {
        let (project, _) = self.project_access(scope, project_id, Action::Edit).await?;
        let document = self.document_of(project.id, id).await?;
        let mut tx = self.begin_write().await?;
        crate::hold_project(&mut tx, project.id).await?;
        crate::document_guards::documents_not_being_imported(&mut tx, project.id, &[document.id]).await?;
        let sessions = DocumentSessions::before_deletion(&mut tx, document.id).await?;
        remove_placed_segments(&mut tx, document.id).await?;
        sqlx::query("DELETE FROM documents WHERE id = $1")
            .bind(document.id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        sessions.restore(&mut tx).await?;
        tx.commit().await.map_err(db)?;
        Ok(document)
    }

    /// Creates a group from documents given whole, in one transaction.
    pub async fn create_group(
        &self,
        scope: &Scope,
        project_id: i64,
        name: &str,
        documents: Vec<NewDocument>,
    ) -> Result<DocumentGroup> {
        let (project, _) = self.project_access(scope, project_id, Action::Edit).await?;
        let mut tx = self.begin_write().await?;
        let group_id = insert_group(&mut tx, project.id, name, "api", "CREATED").await?;
        let placed: Vec<(i64, &NewDocument)> = documents
            .iter()
            .enumerate()
            .map(|(position, document)| (position as i64, document))
            .collect();
        insert_grouped_batch(&mut tx, self.backend, project.id, group_id, &placed, &[]).await?;
        tx.commit().await.map_err(db)?;
        self.group_of(project.id, group_id).await
    }

    /// Creates a group in PROCESSING and the job that will fill it with `documents`, in one
    /// transaction.
    pub async fn start_import(
        &self,
        scope: &Scope,
        project_id: i64,
        name: &str,
        source: &str,
        options: ImportOptions,
        documents: &[ImportedDocument],
    ) -> Result<DocumentGroup> {
        let (project, _) = self.project_access(scope, project_id, Action::Edit).await?;
        let mut tx = self.begin_write().await?;
        let group_id = queue_import(&mut tx, scope, &project, name, source, options, Some(documents)).await?;
        let group = group_in(&mut *tx, project.id, group_id).await?;
        tx.commit().await.map_err(db)?;
        self.wake_workers();
        Ok(group)
    }

    /// Creates a group in PROCESSING and the job that will fill it from an uploaded file of the
    /// project (`options.file`), marking the file used, in one transaction.
    pub async fn start_file_import(
        &self,
        scope: &Scope,
        project_id: i64,
        name: &str,
        upload: &Upload,
        options: ImportOptions,
    ) -> Result<DocumentGroup> {
        let (project, _) = self.project_access(scope, project_id, Action::Edit).await?;
        if upload.project_id != project.id || options.file.as_ref().is_none_or(|f| f.upload_id != upload.id) {
            return Err(Error::not_found("uploaded file"));
        }
        let mut tx = self.begin_write().await?;
        // The project's row before the file's: a move of the project takes them in that order.
        crate::hold_project(&mut tx, project.id).await?;
        mark_used_in(&mut tx, upload.id).await?;
        let group_id = queue_import(&mut tx, scope, &project, name, "file", options, None).await?;
        let group = group_in(&mut *tx, project.id, group_id).await?;
        tx.commit().await.map_err(db)?;
        self.wake_workers();
        Ok(group)
    }

    /// Stores one batch of an import under the job's lease, each document at its place in the
    /// group (ascending; an import from a file places each document at its row, so skipped rows
    /// leave gaps). Places the import filled before (a re-run) are skipped; answers how many
    /// documents were new.
    pub async fn import_placed(
        &self,
        lease: &Lease,
        project_id: i64,
        group_id: i64,
        documents: &[(i64, &NewDocument)],
    ) -> Result<usize> {
        self.import_reserved(lease, project_id, group_id, documents, &[]).await
    }

    /// How many batches of one import may be written at once: two on PostgreSQL, where the
    /// database stores one batch while the next one's statements are built and sent (each in
    /// its own transaction, with ids from [`Store::reserve_document_ids`]); one on SQLite, which
    /// has a single writer.
    pub fn import_streams(&self) -> usize {
        match self.backend {
            Backend::Sqlite => 1,
            Backend::Postgres => 2,
        }
    }

    /// `n` new document ids in ascending order, taken before their batch is written so that
    /// batches written at once still number their documents in file order (PostgreSQL: from
    /// the documents' id sequence; an id taken and not used leaves a gap). Empty on SQLite,
    /// where batches are written one after the other and the database numbers them.
    pub async fn reserve_document_ids(&self, n: usize) -> Result<Vec<i64>> {
        if self.backend == Backend::Sqlite || n == 0 {
            return Ok(Vec::new());
        }
        let mut ids: Vec<i64> =
            sqlx::query_scalar("SELECT nextval(pg_get_serial_sequence('documents', 'id')) FROM generate_series(1, $1)")
                .bind(n as i64)
                .fetch_all(&self.pool)
                .await
                .map_err(db)?;
        ids.sort_unstable();
        Ok(ids)
    }

    /// [`Store::import_placed`] with the documents' ids reserved beforehand (one per document,
    /// in order; [`Store::reserve_document_ids`]), or none for the database to assign them.
    pub async fn import_reserved(
        &self,
        lease: &Lease,
        project_id: i64,
        group_id: i64,
        documents: &[(i64, &NewDocument)],
        ids: &[i64],
    ) -> Result<usize> {
        let (Some((first, _)), Some((last, _))) = (documents.first(), documents.last()) else {
            return Ok(0);
        };
        if !ids.is_empty() && ids.len() != documents.len() {
            // One reserved id per document, or none: anything else is a caller's mistake.
            return Err(Error::internal());
        }
        // A batch lost in a crash of the database is stored again by the job's next run.
        let mut tx = self.begin_redoable_write().await?;
        // A re-run finds the places an earlier run filled and skips them (their reserved ids
        // stay unused).
        let stored: Vec<i64> = sqlx::query_scalar(
            "SELECT group_position FROM documents WHERE group_id = $1 AND group_position >= $2 AND group_position <= $3",
        )
        .bind(group_id)
        .bind(*first)
        .bind(*last)
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?;
        let stored: std::collections::HashSet<i64> = stored.into_iter().collect();
        let free = |(position, _): &&(i64, &NewDocument)| !stored.contains(position);
        let fresh: Vec<(i64, &NewDocument)> = documents.iter().filter(free).copied().collect();
        // Without reserved ids (`ids` empty) the zip gives none.
        let fresh_ids: Vec<i64> = documents
            .iter()
            .zip(ids)
            .filter(|(d, _)| free(d))
            .map(|(_, &id)| id)
            .collect();
        let added = insert_grouped_batch(&mut tx, self.backend, project_id, group_id, &fresh, &fresh_ids).await?;
        // The fence last: it locks the job's row until the commit, and a batch written beside
        // this one (`import_streams`) waits there only for the commit, not for the inserts.
        // A worker whose lease was taken over rolls back what it inserted.
        check_fence(&mut tx, lease).await?;
        tx.commit().await.map_err(db)?;
        Ok(added)
    }

    /// Sets the state of the group an import fills, under the job's lease.
    pub async fn set_import_status(&self, lease: &Lease, group_id: i64, status: &str) -> Result<()> {
        let mut tx = self.begin_write().await?;
        check_fence(&mut tx, lease).await?;
        sqlx::query("UPDATE document_groups SET status = $1 WHERE id = $2")
            .bind(status)
            .bind(group_id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)
    }

    /// A page of a project's groups, oldest first.
    /// A page of a project's groups, oldest first, and whether more follow it.
    pub async fn groups(
        &self,
        scope: &Scope,
        project_id: i64,
        offset: i64,
        limit: i64,
    ) -> Result<(Vec<DocumentGroup>, bool)> {
        let (project, _) = self.project_access(scope, project_id, Action::Read).await?;
        let sql = format!(
            "SELECT {GROUP_COLUMNS} FROM document_groups g WHERE g.project_id = $1 ORDER BY g.id LIMIT $2 OFFSET $3"
        );
        let query = sqlx::query(&sql).bind(project.id).bind(limit + 1).bind(offset);
        let mut groups: Vec<DocumentGroup> = fetch_records(query, &self.pool).await?;
        let has_more = groups.len() as i64 > limit;
        groups.truncate(limit as usize);
        Ok((groups, has_more))
    }

    pub async fn group(&self, scope: &Scope, project_id: i64, group_id: i64) -> Result<DocumentGroup> {
        let (project, _) = self.project_access(scope, project_id, Action::Read).await?;
        self.group_of(project.id, group_id).await
    }

    async fn group_of(&self, project_id: i64, group_id: i64) -> Result<DocumentGroup> {
        group_in(&self.pool, project_id, group_id).await
    }

    /// Renames a group and adds documents to it: existing ones by id, new ones whole.
    pub async fn update_group(
        &self,
        scope: &Scope,
        project_id: i64,
        group_id: i64,
        name: Option<&str>,
        document_ids: &[i64],
        documents: Vec<NewDocument>,
    ) -> Result<DocumentGroup> {
        let (project, _) = self.project_access(scope, project_id, Action::Edit).await?;
        let group = self.group_of(project.id, group_id).await?;
        let mut tx = self.begin_write().await?;
        crate::hold_project(&mut tx, project.id).await?;
        if let Some(name) = name {
            sqlx::query("UPDATE document_groups SET name = $1 WHERE id = $2")
                .bind(name)
                .bind(group.id)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        }
        if !document_ids.is_empty() || !documents.is_empty() {
            // Not into a group an import is filling: what it places there goes if it fails.
            crate::document_guards::group_not_being_filled(&mut tx, group.id, "add documents to it").await?;
        }
        crate::document_guards::documents_not_analysed_elsewhere(&mut tx, group.id, document_ids).await?;
        crate::document_guards::documents_not_being_imported(&mut tx, project.id, document_ids).await?;
        // In the order of their ids, as an analysis's batch holds them (`batch_reads`): two
        // writers taking rows in different orders can each wait for the other.
        let mut in_order = document_ids.to_vec();
        in_order.sort_unstable();
        in_order.dedup();
        for id in &in_order {
            let moved = sqlx::query(
                "UPDATE documents SET group_id = $1, group_position = NULL WHERE id = $2 AND project_id = $3",
            )
            .bind(group.id)
            .bind(*id)
            .bind(project.id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
            if moved.rows_affected() != 1 {
                return Err(Error::not_found(&format!("document {id}")));
            }
        }
        for document in &documents {
            let id = insert_document(&mut tx, project.id, Some((group.id, None)), document).await?;
            id.ok_or_else(Error::internal)?;
        }
        tx.commit().await.map_err(db)?;
        self.group_of(project.id, group.id).await
    }

    /// Deletes a group; its documents stay in the project, ungrouped.
    pub async fn delete_group(&self, scope: &Scope, project_id: i64, group_id: i64) -> Result<DocumentGroup> {
        let (project, _) = self.project_access(scope, project_id, Action::Edit).await?;
        let group = self.group_of(project.id, group_id).await?;
        let mut tx = self.begin_write().await?;
        crate::hold_project(&mut tx, project.id).await?;
        // Only while no import fills it: the import's job would write into a group that is gone.
        crate::document_guards::group_not_being_filled(&mut tx, group.id, "delete it").await?;
        // An analysis of the group reads its documents by the group: with the group gone it
        // would find none and finish as if it had analysed them all.
        let analysis: Option<i64> =
            sqlx::query_scalar("SELECT MIN(id) FROM analyses WHERE document_group_id = $1 AND status IN ($2, $3)")
                .bind(group.id)
                .bind(crate::models::ANALYSIS_RUNNING[0])
                .bind(crate::models::ANALYSIS_RUNNING[1])
                .fetch_one(&mut *tx)
                .await
                .map_err(db)?;
        if let Some(analysis) = analysis {
            return Err(Error::conflict(format!(
                "analysis {analysis} is analysing group {}; delete the group once the analysis has finished or failed",
                group.id
            )));
        }
        sqlx::query("UPDATE documents SET group_id = NULL, group_position = NULL WHERE group_id = $1")
            .bind(group.id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        sqlx::query("DELETE FROM document_groups WHERE id = $1")
            .bind(group.id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok(group)
    }
}

/// The group in PROCESSING and its import job, inside the caller's transaction.
async fn queue_import(
    tx: &mut Transaction<'static, Any>,
    scope: &Scope,
    project: &Project,
    name: &str,
    source: &str,
    options: ImportOptions,
    documents: Option<&[ImportedDocument]>,
) -> Result<i64> {
    let payload = import_group(tx, project.id, name, source, options).await?;
    let mut job = NewJob::for_project(&payload, scope, project)?;
    if let Some(documents) = documents {
        job = job.with_input(&documents)?;
    }
    let job = enqueue_in(tx, job).await?;
    set_task(tx, "document_groups", payload.group_id, job.id).await?;
    Ok(payload.group_id)
}

/// A group in PROCESSING, named `name` and coming from `source`, and the import that fills it
/// as `options` say, inside the caller's transaction (the import's job is the caller's).
pub(crate) async fn import_group(
    tx: &mut Transaction<'static, Any>,
    project_id: i64,
    name: &str,
    source: &str,
    options: ImportOptions,
) -> Result<ImportPayload> {
    let group_id = insert_group(tx, project_id, name, source, "PROCESSING").await?;
    Ok(ImportPayload {
        project_id,
        group_id,
        language: options.language,
        split: options.split,
        file: options.file,
    })
}

pub(crate) async fn insert_group(
    tx: &mut Transaction<'static, Any>,
    project_id: i64,
    name: &str,
    source: &str,
    status: &str,
) -> Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO document_groups (project_id, name, source, status, created) VALUES ($1, $2, $3, $4, $5) RETURNING id",
    )
    .bind(project_id)
    .bind(name)
    .bind(source)
    .bind(status)
    .bind(Timestamp::now().micros())
    .fetch_one(&mut **tx)
    .await
    .map_err(db)
}

/// Inserts a document with its segments; `None` when its group place is taken already.
pub(crate) async fn insert_document(
    tx: &mut Transaction<'static, Any>,
    project_id: i64,
    group: Option<(i64, Option<i64>)>,
    document: &NewDocument,
) -> Result<Option<i64>> {
    let (group_id, position) = group.map_or((None, None), |(g, p)| (Some(g), p));
    let id: Option<i64> = sqlx::query_scalar(
        "INSERT INTO documents (project_id, group_id, group_position, text, meta, language, created) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (group_id, group_position) DO NOTHING RETURNING id",
    )
    .bind(project_id)
    .bind(group_id)
    .bind(position)
    .bind(&document.text)
    .bind(document.meta.to_string())
    .bind(&document.language)
    .bind(Timestamp::now().micros())
    .fetch_optional(&mut **tx)
    .await
    .map_err(db)?;
    if let Some(id) = id {
        for (position, segment) in document.segments.iter().enumerate() {
            insert_segment(tx, id, position as i64, segment).await?;
        }
    }
    Ok(id)
}

/// Writes one segment of a document at `position`.
pub(crate) async fn insert_segment(
    tx: &mut Transaction<'static, Any>,
    document_id: i64,
    position: i64,
    segment: &NewSegment,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO segments (document_id, position, span_start, span_end, text, layout) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(document_id)
    .bind(position)
    .bind(segment.start)
    .bind(segment.end)
    .bind(&segment.text)
    .bind(&segment.layout)
    .execute(&mut **tx)
    .await
    .map_err(db)?;
    Ok(())
}

/// The ids of a project's documents: all of them, or the given ones (each must exist).
pub(crate) async fn project_documents(
    tx: &mut Transaction<'static, Any>,
    project_id: i64,
    ids: Option<&[i64]>,
) -> Result<Vec<i64>> {
    let Some(ids) = ids else {
        return sqlx::query_scalar("SELECT id FROM documents WHERE project_id = $1 ORDER BY id")
            .bind(project_id)
            .fetch_all(&mut **tx)
            .await
            .map_err(db);
    };
    let found = documents_among(tx, project_id, ids).await?;
    if let Some(missing) = ids.iter().find(|id| found.binary_search(id).is_err()) {
        return Err(Error::validation(vec![lector_core::FieldError::new(
            "document_ids",
            format!("the project has no document {missing}"),
        )]));
    }
    Ok(found)
}

/// Which of `ids` are the project's documents, sorted, each once.
pub(crate) async fn documents_among(
    tx: &mut Transaction<'static, Any>,
    project_id: i64,
    ids: &[i64],
) -> Result<Vec<i64>> {
    let select = "SELECT id FROM documents WHERE project_id = $1 AND id";
    let mut found = crate::id_lists::ids_where_in(tx, select, Some(project_id), ids).await?;
    found.sort_unstable();
    found.dedup();
    Ok(found)
}

/// A group of the project as `executor` sees it: read in the transaction that queues its
/// import, it shows the group PROCESSING however soon a worker takes the job.
async fn group_in<'c>(
    executor: impl sqlx::Executor<'c, Database = sqlx::Any>,
    project_id: i64,
    group_id: i64,
) -> Result<DocumentGroup> {
    let sql = format!("SELECT {GROUP_COLUMNS} FROM document_groups g WHERE g.project_id = $1 AND g.id = $2");
    let query = sqlx::query(&sql).bind(project_id).bind(group_id);
    fetch_record(query, executor, "document group").await
}

/// Removes a document's segments that stand at a place (`position >= 0`: all of them, but for
/// those a new text keeps, which [`crate::new_text`] has moved aside), with what analyses and
/// correction sessions predicted for them: those rows name a segment without a foreign key
/// (they outlive a renamed class), so they would otherwise point at segments that are gone, and
/// an analysis filtered by class would still list the document for a tag none of its segments
/// carries. Their tags and marks go by the foreign keys' cascade.
pub(crate) async fn remove_placed_segments(tx: &mut Transaction<'static, Any>, document_id: i64) -> Result<()> {
    for sql in [
        "DELETE FROM correction_predictions WHERE segment_id IN \
         (SELECT id FROM segments WHERE document_id = $1 AND position >= 0)",
        "DELETE FROM analysis_tags WHERE document_id = $1 AND segment_id IN \
         (SELECT id FROM segments WHERE document_id = $1 AND position >= 0)",
        "DELETE FROM segments WHERE document_id = $1 AND position >= 0",
    ] {
        sqlx::query(sql)
            .bind(document_id)
            .execute(&mut **tx)
            .await
            .map_err(db)?;
    }
    Ok(())
}
