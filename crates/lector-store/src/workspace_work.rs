//! A workspace's share of the workers. Trainings, analyses, corrections and clones are the
//! long jobs a request can queue for little effort; workers take jobs oldest first, whoever
//! queued them, so one workspace queueing thousands would hold up everybody else's work, mails
//! included. A workspace may have at most [`MAX_WORK_PER_WORKSPACE`] of them waiting or
//! running; past it, a request that would queue another answers 409 until some end. They are
//! counted in the transaction that queues the next, behind a lock on the workspace's row, so
//! requests sent at once cannot all pass.

use crate::jobs::JobState;
use crate::records::Project;
use crate::{ANALYSIS_JOB, CLONE_JOB, CORRECTION_JOB, TRAINING_JOB, db, lock_row_for_no_key_update};
use lector_core::{Error, Result};
use sqlx::{Any, Transaction};

/// Most trainings, analyses, corrections and clones one workspace may have queued or running.
pub const MAX_WORK_PER_WORKSPACE: i64 = 20;

/// Before a long job of `project` is queued: holds its workspace's row, then its own (as a move
/// takes them: workspace, then project), checks the project is still in that workspace
/// ([`crate::projects::project_stays_put`]) and that the workspace has room for the job.
pub(crate) async fn room_for_work(tx: &mut Transaction<'static, Any>, project: &Project) -> Result<()> {
    lock_row_for_no_key_update(tx, ("workspaces", project.workspace_id)).await?;
    crate::projects::project_stays_put(tx, project).await?;
    room_in_locked(tx, project.workspace_id).await
}

/// [`room_for_work`] for a caller that holds the workspace's row already.
pub(crate) async fn room_in_locked(tx: &mut Transaction<'static, Any>, workspace_id: i64) -> Result<()> {
    let waiting: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM jobs WHERE workspace_id = $1 AND state IN ($2, $3) AND kind IN ($4, $5, $6, $7)",
    )
    .bind(workspace_id)
    .bind(JobState::Queued.as_str())
    .bind(JobState::Running.as_str())
    .bind(TRAINING_JOB)
    .bind(ANALYSIS_JOB)
    .bind(CORRECTION_JOB)
    .bind(CLONE_JOB)
    .fetch_one(&mut **tx)
    .await
    .map_err(db)?;
    if waiting >= MAX_WORK_PER_WORKSPACE {
        return Err(Error::conflict(format!(
            "the workspace has {MAX_WORK_PER_WORKSPACE} trainings, analyses, corrections and copies waiting \
             or running, the most it may; queue more once some have ended"
        )));
    }
    Ok(())
}
