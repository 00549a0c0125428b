//! A workspace's and a user's share of the workers. Trainings, analyses, corrections and
//! clones are the long jobs a request can queue for little effort, and workers take them
//! oldest first, whoever queued them (mails and webhook posts go first: `job_claims.rs`). A
//! workspace may have at most [`MAX_WORK_PER_WORKSPACE`] of them waiting or running, and a user
//! at most [`MAX_WORK_PER_USER`] across their workspaces; past either, a request that would
//! queue another answers 409 until some end. They are counted in the transaction that queues
//! the next, behind locks on the user's row and then the workspace's (the order in which
//! creating a workspace or adding a member takes them), so requests sent at once cannot all
//! pass.

use crate::jobs::JobState;
use crate::records::Project;
use crate::{ANALYSIS_JOB, CLONE_JOB, CORRECTION_JOB, TRAINING_JOB, db, lock_row_for_no_key_update};
use lector_core::{Error, Result};
use sqlx::{Any, Transaction};

/// Most trainings, analyses, corrections and clones one workspace may have queued or running.
pub const MAX_WORK_PER_WORKSPACE: i64 = 20;
/// Most of them one user may have queued or running, in all their workspaces.
pub const MAX_WORK_PER_USER: i64 = 40;

/// The long jobs waiting or running among the jobs `filter` (an SQL condition on `$1`) selects.
const LONG_JOBS: &str = "SELECT COUNT(*) FROM jobs WHERE state IN ($2, $3) AND kind IN ($4, $5, $6, $7) AND ";

/// Before a long job of `project` is queued by `user_id`: [`room_in`] its workspace, then holds
/// the project's row and checks it is still in that workspace
/// ([`crate::projects::project_stays_put`]).
pub(crate) async fn room_for_work(tx: &mut Transaction<'static, Any>, user_id: i64, project: &Project) -> Result<()> {
    room_in(tx, user_id, project.workspace_id).await?;
    crate::projects::project_stays_put(tx, project).await
}

/// Holds the user's row, then the workspace's, and refuses (409) when either has its most long
/// jobs waiting or running already.
pub(crate) async fn room_in(tx: &mut Transaction<'static, Any>, user_id: i64, workspace_id: i64) -> Result<()> {
    lock_row_for_no_key_update(tx, ("users", user_id)).await?;
    lock_row_for_no_key_update(tx, ("workspaces", workspace_id)).await?;
    if long_jobs(tx, "workspace_id = $1", workspace_id).await? >= MAX_WORK_PER_WORKSPACE {
        return Err(full(&format!("the workspace has {MAX_WORK_PER_WORKSPACE}")));
    }
    if long_jobs(tx, "user_id = $1", user_id).await? >= MAX_WORK_PER_USER {
        return Err(full(&format!("you have {MAX_WORK_PER_USER}")));
    }
    Ok(())
}

/// Before `project` moves into `target`, whose row the caller holds: refuses (409) when its
/// long jobs would take the target past [`MAX_WORK_PER_WORKSPACE`].
pub(crate) async fn room_for_moved_work(
    tx: &mut Transaction<'static, Any>,
    target: i64,
    project_id: i64,
) -> Result<()> {
    let moving = long_jobs(tx, "project_id = $1", project_id).await?;
    if moving > 0 && long_jobs(tx, "workspace_id = $1", target).await? + moving > MAX_WORK_PER_WORKSPACE {
        return Err(full(&format!(
            "the project's {moving} would give the target workspace more than {MAX_WORK_PER_WORKSPACE}"
        )));
    }
    Ok(())
}

async fn long_jobs(tx: &mut Transaction<'static, Any>, filter: &str, id: i64) -> Result<i64> {
    sqlx::query_scalar(&format!("{LONG_JOBS}{filter}"))
        .bind(id)
        .bind(JobState::Queued.as_str())
        .bind(JobState::Running.as_str())
        .bind(TRAINING_JOB)
        .bind(ANALYSIS_JOB)
        .bind(CORRECTION_JOB)
        .bind(CLONE_JOB)
        .fetch_one(&mut **tx)
        .await
        .map_err(db)
}

fn full(who: &str) -> Error {
    Error::conflict(format!(
        "{who} trainings, analyses, corrections and copies waiting or running, the most allowed; \
         queue more once some have ended"
    ))
}
