//! Blobs that no row references. A blob is written before the row that names it (an upload's
//! bytes before its `uploads` row, a model's artifact before the `models` row points at it), and
//! deleted after the row goes; a crash, a failed commit or a failed delete in between leaves
//! bytes behind that nothing will ever read. [`Store::sweep_orphan_blobs`] finds them by walking
//! the blob store a page at a time and asking the database about each page, and deletes those
//! older than a grace period, so a blob whose row is being written is never taken.
//!
//! Only keys of the shapes this store writes are considered (`uploads/{uuid}`,
//! `models/{uuid}/{origin}.lector-model`); anything else in the bucket is left alone. Files a
//! local write left half-done (`key#N`, which a crash leaves and listings skip) go too.

use crate::uploads::UPLOAD_PREFIX;
use crate::{Store, StoredBlob, db, numbered};
use futures_util::TryStreamExt;
use lector_core::Result;
use lector_core::time::Timestamp;
use std::collections::HashSet;

/// The folder of the blob store that holds model artifacts.
const MODEL_PREFIX: &str = "models";
/// Blobs asked about in one query.
const PAGE: usize = 500;
/// The shortest grace period, whatever the caller asks: a blob is written (and a local one
/// renamed from its `key#N`) before its row commits, and a write can wait on a busy database or
/// a slow client that long; a shorter grace could take a blob whose row is about to name it.
pub const MIN_ORPHAN_GRACE_SECS: i64 = 3600;

impl Store {
    /// Deletes the blobs no row references that were last written more than `grace_secs` ago
    /// (an hour at least, [`MIN_ORPHAN_GRACE_SECS`]). Answers how many went.
    pub async fn sweep_orphan_blobs(&self, grace_secs: i64) -> Result<u64> {
        let cutoff = Timestamp::now().plus_seconds(-grace_secs.max(MIN_ORPHAN_GRACE_SECS));
        let mut swept = 0;
        for prefix in [UPLOAD_PREFIX, MODEL_PREFIX] {
            let mut listed = self.blobs()?.list(prefix).try_chunks(PAGE);
            while let Some(page) = listed.try_next().await.map_err(|e| e.1)? {
                let candidates: Vec<StoredBlob> = page
                    .into_iter()
                    .filter(|blob| blob.modified < cutoff && row_of(&blob.key).is_some())
                    .collect();
                for key in self.unreferenced(&candidates).await? {
                    self.blobs()?.delete(&key).await?;
                    tracing::info!(blob = %key, "deleted a blob no row references");
                    swept += 1;
                }
            }
            // What a write left half-done is read by nothing, whether or not its row exists.
            for (key, file) in self.blobs()?.staged_before(prefix, cutoff).await? {
                if row_of(&key).is_some() && tokio::fs::remove_file(&file).await.is_ok() {
                    tracing::info!(blob = %key, file = %file.display(), "deleted a half-written blob");
                    swept += 1;
                }
            }
        }
        Ok(swept)
    }

    /// The keys among `blobs` whose row does not exist.
    async fn unreferenced(&self, blobs: &[StoredBlob]) -> Result<Vec<String>> {
        let mut gone = Vec::new();
        for (table, column) in [("uploads", "id"), ("models", "artifact_key")] {
            let asked: Vec<(&str, String)> = blobs
                .iter()
                .filter_map(|b| {
                    row_of(&b.key)
                        .filter(|r| r.table == table)
                        .map(|r| (b.key.as_str(), r.value))
                })
                .collect();
            if asked.is_empty() {
                continue;
            }
            let sql = format!(
                "SELECT {column} FROM {table} WHERE {column} IN ({})",
                numbered(1, asked.len())
            );
            let mut query = sqlx::query_scalar::<_, String>(&sql);
            for (_, value) in &asked {
                query = query.bind(value.clone());
            }
            let found: HashSet<String> = query.fetch_all(&self.pool).await.map_err(db)?.into_iter().collect();
            gone.extend(
                asked
                    .into_iter()
                    .filter(|(_, value)| !found.contains(value))
                    .map(|(key, _)| key.to_owned()),
            );
        }
        Ok(gone)
    }
}

/// The row a blob key belongs to: its table and the value of the column that names the blob.
#[derive(Debug, PartialEq, Eq)]
struct RowOf {
    table: &'static str,
    value: String,
}

/// Which row would reference `key`, for the key shapes this store writes; `None` for any other.
fn row_of(key: &str) -> Option<RowOf> {
    let parts: Vec<&str> = key.split('/').collect();
    match parts.as_slice() {
        [UPLOAD_PREFIX, id] if uuid::Uuid::parse_str(id).is_ok() => Some(RowOf {
            table: "uploads",
            value: (*id).to_owned(),
        }),
        [MODEL_PREFIX, uuid, file]
            if uuid::Uuid::parse_str(uuid).is_ok() && file.ends_with(".lector-model") && file.len() > 13 =>
        {
            Some(RowOf {
                table: "models",
                value: key.to_owned(),
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_shapes_this_store_writes_are_considered() {
        let id = "6f1c1f0e-5b7e-4c43-a7a5-0d8f5e0f9a11";
        assert_eq!(
            row_of(&format!("uploads/{id}")),
            Some(RowOf {
                table: "uploads",
                value: id.into()
            })
        );
        let artifact = format!("models/{id}/job-12.lector-model");
        assert_eq!(row_of(&artifact).map(|r| r.table), Some("models"));
        for other in [
            "uploads/notes.txt",
            "uploads/a/b",
            &format!("models/{id}/.lector-model"),
            &format!("models/{id}/weights.bin"),
            "models/x/job-1.lector-model",
            "backups/2026.tar",
            "",
        ] {
            assert_eq!(row_of(other), None, "{other}");
        }
    }
}
