//! An import that fails for good leaves nothing of itself behind. Its batches commit as they
//! go (so a re-run after a crash skips what is stored), which left the documents of the rows
//! before the bad one in a FAILED group: uploading the corrected file, as the failure's
//! notice advises, stored them twice, and deleting the FAILED group kept them in the project,
//! ungrouped, with no way to tell them from the rest. The job's terminal failure
//! (`job_failures::mark_failed`, in the transaction that ends the job) now removes them.

use crate::db;
use crate::session_counts::{lock_session, refresh_status};
use lector_core::Result;
use sqlx::{Any, Transaction};

/// Deletes the documents the failed import placed in `group_id` (a document moved or added
/// into the group by a person has no place there, and stays), with what was said of them
/// (tags, marks, predictions), and recounts the sessions that held any of them. Answers how
/// many documents went.
///
/// Rows are taken in the order a document's own deletion takes them: the documents (in id
/// order, which also keeps a session from taking one of them meanwhile), then their sessions,
/// then what hangs off them.
pub(crate) async fn remove_failed_import(tx: &mut Transaction<'static, Any>, group_id: i64) -> Result<u64> {
    let lock = if tx.backend_name() == "PostgreSQL" {
        " FOR UPDATE"
    } else {
        ""
    };
    let placed: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM (SELECT id FROM documents WHERE group_id = $1 AND group_position IS NOT NULL \
         ORDER BY id{lock}) AS held"
    ))
    .bind(group_id)
    .fetch_one(&mut **tx)
    .await
    .map_err(db)?;
    if placed == 0 {
        return Ok(0);
    }
    let sessions: Vec<i64> = sqlx::query_scalar(
        "SELECT DISTINCT sd.session_id FROM session_documents sd JOIN documents d ON d.id = sd.document_id \
         WHERE d.group_id = $1 AND d.group_position IS NOT NULL ORDER BY sd.session_id",
    )
    .bind(group_id)
    .fetch_all(&mut **tx)
    .await
    .map_err(db)?;
    for session_id in &sessions {
        lock_session(tx, *session_id).await?;
    }
    // What names segments without a foreign key to them goes first; the rest goes with the
    // documents (their segments, tags, marks and places in sessions).
    sqlx::query(
        "DELETE FROM correction_predictions WHERE segment_id IN (SELECT s.id FROM segments s \
         JOIN documents d ON d.id = s.document_id WHERE d.group_id = $1 AND d.group_position IS NOT NULL)",
    )
    .bind(group_id)
    .execute(&mut **tx)
    .await
    .map_err(db)?;
    let removed = sqlx::query("DELETE FROM documents WHERE group_id = $1 AND group_position IS NOT NULL")
        .bind(group_id)
        .execute(&mut **tx)
        .await
        .map_err(db)?
        .rows_affected();
    for session_id in sessions {
        refresh_status(tx, session_id).await?;
    }
    Ok(removed)
}

/// The group `job_id` is filling (an import's, a labeled import's or an analysis's own group,
/// PROCESSING until the job ends it), if any.
pub(crate) async fn group_being_filled(tx: &mut Transaction<'static, Any>, job_id: i64) -> Result<Option<i64>> {
    sqlx::query_scalar("SELECT id FROM document_groups WHERE task_id = $1 AND status = 'PROCESSING'")
        .bind(job_id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db)
}
