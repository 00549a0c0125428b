//! Documents a job is working through, which a person's change must not pull from under it:
//! an analysis reads its group's documents as it goes, and an import fills its group's places
//! (a re-run after a crash fills every place still empty). Each check answers 409 naming the
//! document and what to wait for.

use crate::id_lists::ids_where_in;
use lector_core::{Error, Result};
use sqlx::{Any, Transaction};

/// Takes a group's row (locked on PostgreSQL) only while no import fills it (PROCESSING);
/// otherwise refuses (409) to `what` ("delete it") until the import has finished or failed.
pub(crate) async fn group_not_being_filled(
    tx: &mut Transaction<'static, Any>,
    group_id: i64,
    what: &str,
) -> Result<()> {
    let idle = sqlx::query("UPDATE document_groups SET status = status WHERE id = $1 AND status <> $2")
        .bind(group_id)
        .bind("PROCESSING")
        .execute(&mut **tx)
        .await
        .map_err(crate::db)?;
    if idle.rows_affected() == 0 {
        return Err(Error::conflict(format!(
            "group {group_id} is being filled by an import; {what} once the import has finished or failed"
        )));
    }
    Ok(())
}

/// Refuses (409) to move into group `group_id` a document of its project from another group
/// that an analysis is reading (QUEUED or ANALYZING): it reads its group's documents as it goes, and would miss
/// the document without a word.
pub(crate) async fn documents_not_analysed_elsewhere(
    tx: &mut Transaction<'static, Any>,
    group_id: i64,
    document_ids: &[i64],
) -> Result<()> {
    let [queued, analysing] = crate::models::ANALYSIS_RUNNING;
    let select = format!(
        "SELECT d.id FROM documents d JOIN analyses a ON a.document_group_id = d.group_id \
         WHERE a.status IN ('{queued}', '{analysing}') AND d.group_id <> $1 \
         AND d.project_id = (SELECT project_id FROM document_groups WHERE id = $1) AND d.id"
    );
    let read = ids_where_in(tx, &select, Some(group_id), document_ids).await?;
    match read.first() {
        Some(id) => Err(Error::conflict(format!(
            "document {id} is in a group an analysis is reading; move it once the analysis has finished or failed"
        ))),
        None => Ok(()),
    }
}

/// Refuses (409) to move or delete a document of a group an import is filling (PROCESSING): its
/// place would be empty again, and the import, run again after a crash or a restart, would fill
/// it with the document once more.
pub(crate) async fn documents_not_being_imported(
    tx: &mut Transaction<'static, Any>,
    project_id: i64,
    document_ids: &[i64],
) -> Result<()> {
    // Of the project only: another project's document is answered as not found, later.
    let select = "SELECT d.id FROM documents d JOIN document_groups g ON g.id = d.group_id \
                  WHERE d.project_id = $1 AND g.status = 'PROCESSING' AND d.id";
    let filled = ids_where_in(tx, select, Some(project_id), document_ids).await?;
    match filled.first() {
        Some(id) => Err(Error::conflict(format!(
            "document {id} is in a group an import is filling; move or delete it once the import has finished or failed"
        ))),
        None => Ok(()),
    }
}
