//! Uploaded files: a row per file (whose it is, its format and size, whether anything used it)
//! and its bytes in the blob store under `uploads/{id}`.
//!
//! A client uploads a file, reads the preview, then names the file by its uuid when it creates a
//! group or a labeling session; that marks it used. Files nothing used are swept after a while
//! (`uploads.unused_ttl_secs`), and so are the files of projects that no longer exist. An upload
//! is found only through its project, under the caller's scope: another workspace's uuid answers
//! 404 like a missing one.

use crate::blobs::Blobs;
use crate::jobs::Lease;
use crate::records::{FromAnyRow, fetch_record, from_row};
use crate::{Store, db};
use bytes::Bytes;
use futures_util::Stream;
use lector_core::time::Timestamp;
use lector_core::{Action, Error, Result, Scope};
use sqlx::{Any, Transaction};
use uuid::Uuid;

/// The folder of the blob store that holds uploaded files.
pub const UPLOAD_PREFIX: &str = "uploads";
/// Uploads the sweeper looks at per query.
const SWEEP_BATCH: i64 = 500;

/// An uploaded file.
#[derive(Debug, Clone, PartialEq)]
pub struct Upload {
    pub id: Uuid,
    pub workspace_id: i64,
    pub project_id: i64,
    pub user_id: Option<i64>,
    /// The name the client gave the file.
    pub file_name: String,
    /// The format it was detected as: csv, txt, json, jsonl or xlsx.
    pub format: String,
    pub byte_size: i64,
    /// The file's first row (its header when it has one), once the preview was read.
    pub columns: Option<Vec<String>>,
    /// The data rows the preview counted below that first row; an import that reads the first
    /// row as data has one more. None before the preview (or for a document file).
    pub data_rows: Option<i64>,
    pub created: Timestamp,
    /// When a group or session first used it; unused uploads are swept.
    pub used: Option<Timestamp>,
    pub(crate) checked: crate::Checked,
}

impl Upload {
    /// Where its bytes are in the blob store.
    pub fn blob_key(&self) -> String {
        blob_key(self.id)
    }
}

fn blob_key(id: Uuid) -> String {
    format!("{UPLOAD_PREFIX}/{id}")
}

const UPLOAD_COLUMNS: &str =
    "id, workspace_id, project_id, user_id, file_name, format, byte_size, columns, data_rows, created, used";

from_row! {
    Upload {
        id, workspace_id, project_id, user_id, file_name, format, byte_size, columns, data_rows, created, used,
    }; checked: crate::CHECKED
}

/// What an upload is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UploadFor {
    /// An import into a project the caller may edit.
    Project(i64),
    /// A batch analysis not made yet: the file belongs to its uploader (project 0) until
    /// `create_analysis` binds it to the model's project.
    Analysis,
}

impl Store {
    /// This store with a blob store for uploaded files.
    pub fn with_blobs(mut self, blobs: Blobs) -> Self {
        self.blobs = Some(blobs);
        self
    }

    /// The blob store; an installation that never set one cannot take files.
    pub fn blobs(&self) -> Result<&Blobs> {
        self.blobs.as_ref().ok_or_else(|| {
            tracing::error!("this store has no blob store (Store::with_blobs was not called)");
            Error::internal()
        })
    }

    /// Stores an uploaded file for a project the caller may edit (or, for a batch analysis, for
    /// the caller alone until the analysis names it): streams `chunks` into the blob
    /// store (413 past `max_bytes`, keeping nothing) and records it, unused.
    pub async fn save_upload<S>(
        &self,
        scope: &Scope,
        target: UploadFor,
        file_name: &str,
        format: &str,
        chunks: S,
        max_bytes: u64,
    ) -> Result<Upload>
    where
        S: Stream<Item = Result<Bytes>> + Unpin + Send,
    {
        let (workspace_id, project_id) = match target {
            UploadFor::Project(id) => {
                let (project, _) = self.project_access(scope, id, Action::Edit).await?;
                (project.workspace_id, project.id)
            }
            UploadFor::Analysis => {
                scope.may_somewhere(Action::Edit)?;
                (0, 0)
            }
        };
        let blobs = self.blobs()?;
        let id = Uuid::new_v4();
        let size = blobs.put_stream(&blob_key(id), chunks, max_bytes).await?;
        let sql = format!(
            "INSERT INTO uploads (id, workspace_id, project_id, user_id, file_name, format, byte_size, created) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING {UPLOAD_COLUMNS}"
        );
        let row = sqlx::query(&sql)
            .bind(id.to_string())
            .bind(workspace_id)
            .bind(project_id)
            .bind(scope.user_id)
            .bind(file_name)
            .bind(format)
            .bind(size as i64)
            .bind(Timestamp::now().micros())
            .fetch_one(&self.pool)
            .await;
        match row {
            Ok(row) => Upload::decode(&row),
            Err(e) => {
                let _ = blobs.delete(&blob_key(id)).await;
                Err(db(e))
            }
        }
    }

    /// An upload of a project the caller may read; 404 for another project's or workspace's.
    pub async fn upload(&self, scope: &Scope, project_id: i64, id: Uuid) -> Result<Upload> {
        let (project, _) = self.project_access(scope, project_id, Action::Read).await?;
        self.upload_of(project.id, id).await
    }

    /// A file the caller uploaded for a batch analysis and has not used yet; anyone else's is
    /// not found.
    pub async fn analysis_upload(&self, scope: &Scope, id: Uuid) -> Result<Upload> {
        let sql = format!(
            "SELECT {UPLOAD_COLUMNS} FROM uploads WHERE id = $1 AND project_id = 0 AND user_id = $2 AND used IS NULL"
        );
        let query = sqlx::query(&sql).bind(id.to_string()).bind(scope.user_id);
        fetch_record(query, &self.pool, "uploaded file").await
    }

    /// The upload a job works on: one of the job's own project.
    pub async fn upload_for_job(&self, lease: &Lease, id: Uuid) -> Result<Upload> {
        let project_id = lease.job.project_id.ok_or_else(|| Error::not_found("uploaded file"))?;
        self.upload_of(project_id, id).await
    }

    async fn upload_of(&self, project_id: i64, id: Uuid) -> Result<Upload> {
        let sql = format!("SELECT {UPLOAD_COLUMNS} FROM uploads WHERE id = $1 AND project_id = $2");
        let query = sqlx::query(&sql).bind(id.to_string()).bind(project_id);
        fetch_record(query, &self.pool, "uploaded file").await
    }

    /// Opens an upload's bytes for reading (see [`Blobs::open_file`]).
    pub async fn open_upload(&self, upload: &Upload) -> Result<std::fs::File> {
        self.blobs()?.open_file(&upload.blob_key()).await
    }

    /// Records an upload's first row and the data rows below it (from its preview), for
    /// checking column choices and the row limit when an import is asked for.
    pub async fn set_upload_columns(
        &self,
        upload: &Upload,
        columns: &[String],
        data_rows: Option<i64>,
    ) -> Result<Upload> {
        let text = serde_json::to_string(columns).map_err(|_| Error::internal())?;
        sqlx::query("UPDATE uploads SET columns = $1, data_rows = $2 WHERE id = $3")
            .bind(text)
            .bind(data_rows)
            .bind(upload.id.to_string())
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(Upload {
            columns: Some(columns.to_vec()),
            data_rows,
            ..upload.clone()
        })
    }

    /// Marks an upload used, so the sweeper keeps it; 404 when it was swept meanwhile.
    pub async fn mark_upload_used(&self, upload: &Upload) -> Result<()> {
        let mut tx = self.begin_write().await?;
        mark_used_in(&mut tx, upload.id).await?;
        tx.commit().await.map_err(db)
    }

    /// Deletes an upload and its bytes (a file whose preview failed, for example).
    pub async fn discard_upload(&self, upload: &Upload) -> Result<()> {
        // One a group or session took meanwhile (a request that failed after its commit) stays.
        let deleted = sqlx::query("DELETE FROM uploads WHERE id = $1 AND used IS NULL")
            .bind(upload.id.to_string())
            .execute(&self.pool)
            .await
            .map_err(db)?;
        if deleted.rows_affected() == 0 {
            return Ok(());
        }
        self.blobs()?.delete(&upload.blob_key()).await
    }

    /// Deletes uploads nothing used within `unused_for_secs` of their arrival, and every upload
    /// of a project that no longer exists, bytes first claimed by deleting the row. Answers how
    /// many went.
    pub async fn sweep_uploads(&self, unused_for_secs: i64) -> Result<u64> {
        let blobs = self.blobs()?;
        let cutoff = Timestamp::now().micros() - unused_for_secs.saturating_mul(1_000_000);
        // Project 0 is no project: a batch analysis's file waits there, under its user, until
        // the analysis adopts it, and goes only when unused for long.
        let stale = "((used IS NULL AND created < $1) \
             OR (uploads.project_id <> 0 AND NOT EXISTS (SELECT 1 FROM projects p WHERE p.id = uploads.project_id)))";
        let mut swept = 0;
        loop {
            let ids: Vec<String> = sqlx::query_scalar(&format!(
                "SELECT id FROM uploads WHERE {stale} ORDER BY created LIMIT {SWEEP_BATCH}"
            ))
            .bind(cutoff)
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
            for id in &ids {
                // Deleting the row claims the upload: a create_group marking it used at the same
                // moment either wins (and the row stays) or finds it gone (404).
                let deleted = sqlx::query(&format!("DELETE FROM uploads WHERE id = $2 AND {stale}"))
                    .bind(cutoff)
                    .bind(id)
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                if deleted.rows_affected() == 1 {
                    blobs.delete(&format!("{UPLOAD_PREFIX}/{id}")).await?;
                    swept += 1;
                }
            }
            if (ids.len() as i64) < SWEEP_BATCH {
                break;
            }
        }
        Ok(swept)
    }
}

/// Marks an upload used inside a caller's transaction; 404 when it is gone.
pub(crate) async fn mark_used_in(tx: &mut Transaction<'static, Any>, id: Uuid) -> Result<()> {
    let updated = sqlx::query("UPDATE uploads SET used = COALESCE(used, $1) WHERE id = $2")
        .bind(Timestamp::now().micros())
        .bind(id.to_string())
        .execute(&mut **tx)
        .await
        .map_err(db)?;
    if updated.rows_affected() == 1 {
        Ok(())
    } else {
        Err(Error::not_found("uploaded file"))
    }
}

#[cfg(test)]
mod tests {
    use super::UploadFor;
    use crate::testing::{TestDatabase, owner_with_project};
    use crate::{Backend, Blobs, Store};
    use lector_core::ProjectType;

    async fn save(store: &Store, scope: &lector_core::Scope, target: UploadFor) -> super::Upload {
        let chunks = futures_util::stream::iter(vec![Ok(bytes::Bytes::from_static(b"text\nhello\n"))]);
        store
            .save_upload(scope, target, "texts.csv", "csv", chunks, 1 << 20)
            .await
            .expect("an upload")
    }

    /// A batch analysis's file (kept under project 0 until the analysis names it) lives as long
    /// as any unused upload; a project's upload goes with its project.
    async fn analysis_uploads_wait_like_any_other(backend: Backend) {
        let Some(database) = TestDatabase::create(backend).await else {
            return;
        };
        let dir = tempfile::tempdir().expect("a directory");
        let blobs = Blobs::open(dir.path().to_str().unwrap()).expect("blobs");
        let store = Store::open(&database.url, 4).await.expect("store").with_blobs(blobs);
        let (scope, _, project) = owner_with_project(&store, "Texts", ProjectType::Class).await;
        let fresh = save(&store, &scope, UploadFor::Analysis).await;
        let stale = save(&store, &scope, UploadFor::Analysis).await;
        let orphan = save(&store, &scope, UploadFor::Project(project.id)).await;
        let day = 24 * 3600;
        sqlx::query("UPDATE uploads SET created = created - $1 WHERE id = $2")
            .bind((day + 60) * 1_000_000)
            .bind(stale.id.to_string())
            .execute(&store.pool)
            .await
            .unwrap();
        store.delete_project(&scope, project.id).await.expect("deleted");

        assert_eq!(store.sweep_uploads(day).await.unwrap(), 2);
        let kept = store
            .analysis_upload(&scope, fresh.id)
            .await
            .expect("the fresh one stays");
        store.open_upload(&kept).await.expect("with its bytes");
        assert_eq!(store.analysis_upload(&scope, stale.id).await.unwrap_err().status(), 404);
        let gone: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM uploads WHERE id = $1")
            .bind(orphan.id.to_string())
            .fetch_one(&store.pool)
            .await
            .unwrap();
        assert_eq!(gone, 0);
        assert_eq!(store.sweep_uploads(day).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn analysis_uploads_wait_like_any_other_sqlite() {
        analysis_uploads_wait_like_any_other(Backend::Sqlite).await;
    }

    #[tokio::test]
    async fn analysis_uploads_wait_like_any_other_postgres() {
        analysis_uploads_wait_like_any_other(Backend::Postgres).await;
    }
}
