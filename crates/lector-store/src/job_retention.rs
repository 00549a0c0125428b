//! How long a finished job is kept. Every import, training, analysis, mail and webhook leaves a
//! row in `jobs`; nothing reads most of them once they ended, and without pruning the table
//! grows with every request an installation ever served. [`Store::prune_finished_jobs`] deletes
//! the jobs that ended longer ago than the retention, except a job that a group, a model or an
//! analysis still names as its task: `get_project_task` answers for those as long as their
//! resource lives. The counts on `/metrics` come from `job_totals` and do not change.

use crate::{Store, db};
use lector_core::Result;
use lector_core::time::Timestamp;

/// Jobs deleted in one statement, so a first pruning of a large table never holds the write
/// lock for long.
const BATCH: i64 = 500;

impl Store {
    /// Deletes the jobs that ended more than `kept_secs` ago and that no group, model or
    /// analysis names as its task; answers how many went.
    pub async fn prune_finished_jobs(&self, kept_secs: i64) -> Result<u64> {
        let cutoff = Timestamp::now().plus_seconds(-kept_secs).micros();
        // On PostgreSQL a job another writer holds (a project's move updates all its jobs) is
        // left for the next pruning rather than waited for in an order of its own.
        let skip = match self.backend {
            crate::Backend::Postgres => " FOR UPDATE SKIP LOCKED",
            crate::Backend::Sqlite => "",
        };
        let sql = format!(
            "DELETE FROM jobs WHERE id IN (\
                SELECT j.id FROM jobs j WHERE j.finished IS NOT NULL AND j.finished < $1 \
                AND NOT EXISTS (SELECT 1 FROM document_groups g WHERE g.task_id = j.id) \
                AND NOT EXISTS (SELECT 1 FROM models m WHERE m.task_id = j.id) \
                AND NOT EXISTS (SELECT 1 FROM analyses a WHERE a.task_id = j.id) \
                ORDER BY j.id LIMIT $2{skip})"
        );
        let mut pruned = 0;
        loop {
            let mut tx = self.begin_write().await?;
            let deleted = sqlx::query(&sql)
                .bind(cutoff)
                .bind(BATCH)
                .execute(&mut *tx)
                .await
                .map_err(db)?
                .rows_affected();
            tx.commit().await.map_err(db)?;
            pruned += deleted;
            if deleted < BATCH as u64 {
                return Ok(pruned);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::training_tests::training_queued;
    use crate::{Backend, Failure, JobPayload, NewJob, Store};
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Serialize, Deserialize)]
    struct Chore {
        n: u32,
    }

    impl JobPayload for Chore {
        const KIND: &'static str = "chore";
        const MAX_ATTEMPTS: i64 = 1;

        fn failure(&self) -> Failure {
            Failure::of(None, "Chore failed", "A chore", "do it again")
        }
    }

    const MONTH: i64 = 30 * 24 * 3600;

    /// Claims the next job and ends it: done, or failed for good.
    async fn run_next(store: &Store, succeeds: bool) -> i64 {
        let lease = store.claim_job("worker", 60).await.unwrap().expect("a queued job");
        if succeeds {
            assert!(store.finish_job(&lease, serde_json::json!({}), None).await.unwrap());
        } else {
            assert!(store.fail_job(&lease, "broken", false).await.unwrap());
        }
        lease.job.id
    }

    async fn ended_days_ago(store: &Store, job_id: i64, days: i64) {
        sqlx::query("UPDATE jobs SET finished = finished - $1 WHERE id = $2")
            .bind(days * 24 * 3600 * 1_000_000)
            .bind(job_id)
            .execute(&store.pool)
            .await
            .unwrap();
    }

    async fn kept(store: &Store, job_id: i64) -> bool {
        store.job_by_id(job_id).await.unwrap().is_some()
    }

    /// Jobs that ended before the retention go, done or failed; a job still running or queued,
    /// one that ended lately, and a model's training job (its task) stay, the last until its
    /// model is deleted.
    async fn old_jobs_go_but_tasks_stay(backend: Backend) {
        let dir = tempfile::tempdir().unwrap();
        let Some((_database, store, scope, model)) = training_queued(backend, dir.path()).await else {
            return;
        };
        for n in 0..4 {
            store.enqueue(NewJob::of(&Chore { n }).unwrap()).await.unwrap();
        }
        // Its training failing marks the model FAILED, so it can be deleted below.
        let training = run_next(&store, false).await;
        let (old_done, old_failed, recent) = (
            run_next(&store, true).await,
            run_next(&store, false).await,
            run_next(&store, true).await,
        );
        let running = store
            .claim_job("worker", 60)
            .await
            .unwrap()
            .expect("the last chore")
            .job
            .id;
        for job in [training, old_done, old_failed] {
            ended_days_ago(&store, job, 31).await;
        }
        ended_days_ago(&store, recent, 29).await;

        assert_eq!(store.prune_finished_jobs(MONTH).await.unwrap(), 2);
        assert!(!kept(&store, old_done).await && !kept(&store, old_failed).await);
        for job in [training, recent, running] {
            assert!(kept(&store, job).await, "job {job} stays");
        }
        assert_eq!(store.prune_finished_jobs(MONTH).await.unwrap(), 0);

        store.delete_model(&scope, &model).await.unwrap();
        assert_eq!(store.prune_finished_jobs(MONTH).await.unwrap(), 1);
        assert!(!kept(&store, training).await, "a deleted model's training goes");
    }

    #[tokio::test]
    async fn old_jobs_go_but_tasks_stay_sqlite() {
        old_jobs_go_but_tasks_stay(Backend::Sqlite).await;
    }

    #[tokio::test]
    async fn old_jobs_go_but_tasks_stay_postgres() {
        old_jobs_go_but_tasks_stay(Backend::Postgres).await;
    }
}
