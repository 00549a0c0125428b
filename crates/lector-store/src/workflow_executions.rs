//! The executions of workflows: one row per run, recorded as it starts (for a webhook that
//! answers before its steps finish) or in batches by the service's execution log, kept to the
//! newest 1,000 per workflow, and read a page at a time by the workflow's members.
//!
//! A run recorded as it starts is alive until `alive_until`, which its node renews while the
//! run lasts ([`Store::keep_executions_alive`]); one whose node is gone (killed, lost, stopped
//! before the run ended) is recorded as an error by [`Store::end_abandoned_executions`], on any
//! node, so that no execution stays running for ever and no live node's run is touched.

use crate::records::FromAnyRow;
use crate::records::from_row;
use crate::{Store, db, numbered};
use lector_core::time::Timestamp;
use lector_core::{Action, Result, Scope};

/// Executions a workflow keeps; older ones are deleted as new ones are recorded.
pub const MAX_EXECUTIONS_PER_WORKFLOW: i64 = 1000;

/// Executions a workflow may hold past [`MAX_EXECUTIONS_PER_WORKFLOW`] before they are deleted,
/// together: one delete every so many records instead of one with each.
pub(crate) const EXECUTIONS_PRUNED_TOGETHER: i64 = 50;

/// How long a running execution counts as alive after its node last renewed it; nodes renew
/// their runs every third of it.
pub const EXECUTION_ALIVE_SECS: i64 = 60;

/// How long an execution recorded as running by a Lector that did not renew executions (before
/// migration 0023) counts as alive after its start.
const UNRENEWED_ALIVE_SECS: i64 = 3600;

/// The error of an execution whose node went away before the run ended.
pub const ABANDONED_EXECUTION: &str = "the server running this workflow stopped before the run ended";

/// The most bytes of kept data one page of executions carries (a kept record holds up to
/// 4 MiB, and a listing parses each into a tree many times its size): past it, the page's
/// later executions come without their data, which a smaller page from there gives. Counted
/// with `octet_length`, which both backends answer from the value's header, not its content.
pub const MAX_EXECUTION_PAGE_DATA_BYTES: i64 = 4 << 20;

/// The most executions one trimming deletes: a workflow never trimmed before (stored before
/// trimming was per workflow) loses its backlog a batch at each later execution, not all at
/// once in the call that records one.
const MOST_EXECUTIONS_TRIMMED_AT_ONCE: i64 = 1_000;

/// A recorded execution.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    pub id: i64,
    pub workflow_id: i64,
    /// test or production.
    pub mode: String,
    pub method: String,
    /// running, success or error.
    pub status: String,
    pub started: Timestamp,
    pub finished: Option<Timestamp>,
    pub error: Option<String>,
    /// JSON: what each step made, when kept.
    pub data: Option<String>,
    /// Kept, but left out of this page, whose data had reached
    /// [`MAX_EXECUTION_PAGE_DATA_BYTES`] before it.
    pub data_left_out: bool,
}

from_row! { Execution { id, workflow_id, mode, method, status, started, finished, error, data, data_left_out } }

/// An execution's end, as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionEnd {
    pub status: &'static str,
    pub error: Option<String>,
    pub data: Option<String>,
}

/// A finished execution the service's log writes with others.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedExecution {
    pub workflow_id: i64,
    /// test or production.
    pub mode: &'static str,
    pub method: String,
    pub started: Timestamp,
    pub finished: Option<Timestamp>,
    pub end: ExecutionEnd,
}

type Tx = sqlx::Transaction<'static, sqlx::Any>;

impl Store {
    /// Records an execution that has started (for a webhook that answers before its steps
    /// finish); [`Store::finish_execution`] records its end.
    pub async fn start_execution(&self, workflow_id: i64, mode: &str, method: &str) -> Result<i64> {
        let now = Timestamp::now();
        let id = sqlx::query_scalar(
            "INSERT INTO workflow_executions (workflow_id, mode, method, status, started, alive_until) \
             VALUES ($1, $2, $3, 'running', $4, $5) RETURNING id",
        )
        .bind(workflow_id)
        .bind(mode)
        .bind(method)
        .bind(now.micros())
        .bind(now.plus_seconds(EXECUTION_ALIVE_SECS).micros())
        .fetch_one(&self.pool)
        .await
        .map_err(db)?;
        self.prune_executions(workflow_id).await;
        Ok(id)
    }

    pub async fn finish_execution(&self, id: i64, end: &ExecutionEnd) -> Result<()> {
        sqlx::query("UPDATE workflow_executions SET status = $1, finished = $2, error = $3, data = $4 WHERE id = $5")
            .bind(end.status)
            .bind(Timestamp::now().micros())
            .bind(&end.error)
            .bind(&end.data)
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }

    /// Keeps these running executions alive for [`EXECUTION_ALIVE_SECS`] more: their node is
    /// still running them.
    pub async fn keep_executions_alive(&self, ids: &[i64]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "UPDATE workflow_executions SET alive_until = $1 WHERE status = 'running' AND id IN ({})",
            numbered(2, ids.len())
        );
        let mut query = sqlx::query(&sql).bind(Timestamp::now().plus_seconds(EXECUTION_ALIVE_SECS).micros());
        for id in ids {
            query = query.bind(id);
        }
        query.execute(&self.pool).await.map_err(db)?;
        Ok(())
    }

    /// Records as errors ([`ABANDONED_EXECUTION`]) the executions still running whose node
    /// stopped renewing them, and those in `ids` (runs this node gives up as it stops); answers
    /// how many. A run that ends after all (its node was only paused) records its end over this.
    pub async fn end_abandoned_executions(&self, ids: &[i64]) -> Result<u64> {
        let now = Timestamp::now();
        let given_up = match ids.len() {
            0 => String::new(),
            n => format!(" OR id IN ({})", numbered(4, n)),
        };
        // The literal 'running' lets both databases use the partial index of running rows.
        let sql = format!(
            "UPDATE workflow_executions SET status = 'error', finished = $1, error = $2 \
             WHERE status = 'running' AND (COALESCE(alive_until, started + $3) < $1{given_up})"
        );
        let mut query = sqlx::query(&sql)
            .bind(now.micros())
            .bind(ABANDONED_EXECUTION)
            .bind(UNRENEWED_ALIVE_SECS * 1_000_000);
        for id in ids {
            query = query.bind(id);
        }
        let done = query.execute(&self.pool).await.map_err(db)?;
        Ok(done.rows_affected())
    }

    /// Records finished executions in one transaction (the service's execution log gathers
    /// them, or a call writes its own), then trims each of their workflows to its newest 1,000.
    /// The records of workflows deleted meanwhile are dropped, not written: one of them would
    /// otherwise fail the whole batch on its foreign key.
    pub async fn record_executions(&self, executions: &[FinishedExecution]) -> Result<()> {
        let mut tx = self.begin_write().await?;
        let existing = existing_workflows(&mut tx, executions, self.backend).await?;
        let (executions, dropped): (Vec<&FinishedExecution>, Vec<&FinishedExecution>) =
            executions.iter().partition(|e| existing.contains(&e.workflow_id));
        if !dropped.is_empty() {
            let workflows: std::collections::BTreeSet<i64> = dropped.iter().map(|e| e.workflow_id).collect();
            tracing::info!(
                records = dropped.len(),
                ?workflows,
                "executions of deleted workflows were not recorded"
            );
        }
        let now = Timestamp::now().micros();
        for chunk in executions.chunks(100) {
            let rows = (0..chunk.len())
                .map(|i| format!("({})", numbered(i * 8 + 1, 8)))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = format!(
                "INSERT INTO workflow_executions (workflow_id, mode, method, status, started, finished, error, data) \
                 VALUES {rows}"
            );
            let mut query = sqlx::query(&sql);
            for e in chunk {
                query = query
                    .bind(e.workflow_id)
                    .bind(e.mode)
                    .bind(e.method.clone())
                    .bind(e.end.status)
                    .bind(e.started.micros())
                    .bind(e.finished.map_or(now, Timestamp::micros))
                    .bind(e.end.error.clone())
                    .bind(e.end.data.clone());
            }
            query.execute(&mut *tx).await.map_err(db)?;
        }
        tx.commit().await.map_err(db)?;
        let workflows: std::collections::BTreeSet<i64> = executions.iter().map(|e| e.workflow_id).collect();
        for workflow_id in workflows {
            self.prune_executions(workflow_id).await;
        }
        Ok(())
    }

    /// Deletes a workflow's executions beyond its newest [`MAX_EXECUTIONS_PER_WORKFLOW`] once
    /// it holds [`EXECUTIONS_PRUNED_TOGETHER`] more: a condition on the workflow's own rows
    /// (ids are shared by every workflow, so a rule on the new row's id could skip one
    /// workflow for ever). The check reads the workflow's newest ids in its index only; at most
    /// [`MOST_EXECUTIONS_TRIMMED_AT_ONCE`] go in one call. Best effort, after the recording it
    /// follows has committed: a failure is logged, and the next execution trims again.
    async fn prune_executions(&self, workflow_id: i64) {
        if let Err(e) = self.try_prune_executions(workflow_id).await {
            tracing::warn!(workflow.id = workflow_id, error = %e.detail, "cannot trim a workflow's executions");
        }
    }

    async fn try_prune_executions(&self, workflow_id: i64) -> Result<()> {
        let past_kept: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM workflow_executions WHERE workflow_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2",
        )
        .bind(workflow_id)
        .bind(MAX_EXECUTIONS_PER_WORKFLOW + EXECUTIONS_PRUNED_TOGETHER - 1)
        .fetch_optional(&self.pool)
        .await
        .map_err(db)?;
        if past_kept.is_none() {
            return Ok(());
        }
        sqlx::query(
            "DELETE FROM workflow_executions WHERE id IN (SELECT id FROM workflow_executions \
             WHERE workflow_id = $1 AND id < (SELECT MIN(id) FROM (SELECT id FROM workflow_executions \
             WHERE workflow_id = $1 ORDER BY id DESC LIMIT $2) AS kept) ORDER BY id LIMIT $3)",
        )
        .bind(workflow_id)
        .bind(MAX_EXECUTIONS_PER_WORKFLOW)
        .bind(MOST_EXECUTIONS_TRIMMED_AT_ONCE)
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(())
    }

    /// A workflow's newest [`MAX_EXECUTIONS_PER_WORKFLOW`] executions, newest first, a page at a
    /// time (any member); answers whether more follow. Older rows, which trimming deletes in
    /// batches, are never listed. The page carries the executions' data up to
    /// [`MAX_EXECUTION_PAGE_DATA_BYTES`] in all (the first execution's always).
    pub async fn workflow_executions(
        &self,
        scope: &Scope,
        workflow_id: i64,
        offset: i64,
        limit: i64,
    ) -> Result<(Vec<Execution>, bool)> {
        let workflow = self.workflow(scope, workflow_id, Action::Read).await?;
        let limit = limit.min(MAX_EXECUTIONS_PER_WORKFLOW - offset);
        if limit <= 0 {
            return Ok((Vec::new(), false));
        }
        // The data each row's page holds with it, summed over the page alone (newest first).
        // The page's rows are sized first (no value read) and joined back for the data carried.
        let sql = "SELECT e.id, e.workflow_id, e.mode, e.method, e.status, e.started, e.finished, e.error, \
             CASE WHEN w.carried <= $4 OR w.first = 1 THEN e.data END AS data, \
             CASE WHEN e.data IS NOT NULL AND w.carried > $4 AND w.first = 0 THEN 1 ELSE 0 END AS data_left_out \
             FROM (SELECT p.id, SUM(p.size) OVER (ORDER BY p.id DESC ROWS UNBOUNDED PRECEDING) AS carried, \
             CASE WHEN ROW_NUMBER() OVER (ORDER BY p.id DESC) = 1 THEN 1 ELSE 0 END AS first \
             FROM (SELECT id, COALESCE(OCTET_LENGTH(data), 0) AS size FROM workflow_executions \
             WHERE workflow_id = $1 ORDER BY id DESC LIMIT $2 OFFSET $3) p) w \
             JOIN workflow_executions e ON e.id = w.id ORDER BY e.id DESC";
        let rows = sqlx::query(sql)
            .bind(workflow.id)
            .bind(limit + 1)
            .bind(offset)
            .bind(MAX_EXECUTION_PAGE_DATA_BYTES)
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        let mut found = rows.iter().map(Execution::decode).collect::<Result<Vec<_>>>()?;
        let more = found.len() as i64 > limit && offset + limit < MAX_EXECUTIONS_PER_WORKFLOW;
        found.truncate(limit as usize);
        Ok((found, more))
    }
}

/// Which of the executions' workflows still exist, read in the transaction that records them;
/// on PostgreSQL their rows are held (`FOR KEY SHARE`) so none is deleted before it commits.
async fn existing_workflows(
    tx: &mut Tx,
    executions: &[FinishedExecution],
    backend: crate::Backend,
) -> Result<std::collections::HashSet<i64>> {
    let ids: std::collections::BTreeSet<i64> = executions.iter().map(|e| e.workflow_id).collect();
    if ids.is_empty() {
        return Ok(Default::default());
    }
    let lock = match backend {
        crate::Backend::Postgres => " FOR KEY SHARE",
        crate::Backend::Sqlite => "",
    };
    let sql = format!(
        "SELECT id FROM workflows WHERE id IN ({}){lock}",
        numbered(1, ids.len())
    );
    let mut query = sqlx::query_scalar(&sql);
    for id in ids {
        query = query.bind(id);
    }
    let found: Vec<i64> = query.fetch_all(&mut **tx).await.map_err(db)?;
    Ok(found.into_iter().collect())
}
