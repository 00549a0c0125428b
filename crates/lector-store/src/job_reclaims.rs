//! Leases taken back and the queue at a glance. A lease whose holder died (a worker of this
//! host that was killed) or stopped renewing it returns its job to the queue; each such
//! reclaim is counted per kind in the database, so every node of an installation reports the
//! same count. [`Store::job_statistics`] reads the queue as operators watch it (`/metrics`).

use crate::jobs::JobState;
use crate::{Backend, Store, db};
use lector_core::Result;
use lector_core::time::Timestamp;
use sqlx::{Any, Row, Transaction};

/// How many jobs of one kind are in one state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobCount {
    pub kind: String,
    pub state: JobState,
    pub jobs: u64,
}

/// The queue at a glance ([`Store::job_statistics`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobStatistics {
    /// Jobs by kind and state: queued and running ones now, done and failed ones since the
    /// installation began (also those deleted since, with their project); kinds and states
    /// without jobs are absent.
    pub jobs: Vec<JobCount>,
    /// Per kind with a queued job whose time has come: seconds the oldest has waited since
    /// it became runnable (enqueued, or its retry delay ended) or was last put back (handed
    /// back, or taken back from a worker that died).
    pub oldest_queued_secs: Vec<(String, f64)>,
    /// Per kind: leases taken back from workers that stopped renewing them or died, since the
    /// installation began.
    pub lease_reclaims: Vec<(String, u64)>,
}

impl Store {
    /// Returns to the queue the running jobs whose lease holder `is_gone` says died (a worker
    /// of this host that was killed); answers how many. Their leases need not expire first:
    /// the next claim bumps the fencing token, so nothing the dead holder left half-written
    /// can land. Each counts as a reclaimed lease ([`Store::job_statistics`]).
    pub async fn release_leases_of_gone_holders(&self, is_gone: impl Fn(&str) -> bool) -> Result<u64> {
        let owners: Vec<String> =
            sqlx::query_scalar("SELECT DISTINCT lease_owner FROM jobs WHERE state = $1 AND lease_owner IS NOT NULL")
                .bind(JobState::Running.as_str())
                .fetch_all(&self.pool)
                .await
                .map_err(db)?;
        let mut released = 0;
        for owner in owners.iter().filter(|o| is_gone(o)) {
            released += self
                .requeue_running("state = $3 AND lease_owner = $4", Some(owner))
                .await?;
        }
        Ok(released)
    }

    /// Returns to the queue, in one transaction, the running jobs matching `condition` (`$3` the
    /// running state, `$4` the `owner` when given), backing each off and counting it as a
    /// reclaimed lease; answers how many.
    async fn requeue_running(&self, condition: &str, owner: Option<&str>) -> Result<u64> {
        let mut tx = self.begin_write().await?;
        let now = self.lease_clock().micros();
        let sql = self.requeue_sql(condition);
        let mut query = sqlx::query_as::<_, (i64, String, i64)>(&sql)
            .bind(JobState::Queued.as_str())
            .bind(now)
            .bind(JobState::Running.as_str());
        if let Some(owner) = owner {
            query = query.bind(owner);
        }
        let taken = query.fetch_all(&mut *tx).await.map_err(db)?;
        let kinds = back_off(&mut tx, now, &taken).await?;
        count_reclaims(&mut tx, &kinds).await?;
        tx.commit().await.map_err(db)?;
        Ok(kinds.len() as u64)
    }

    /// The statement that returns the running jobs matching `condition` to the queue,
    /// answering their ids, kinds and attempts (`$1` the queued state, `$2` now). They ran, so
    /// a wait for a worker that can run them starts anew (`unrunnable_since`). On PostgreSQL a job whose row
    /// another transaction holds is skipped, not waited for: a worker paused in the middle of
    /// a write (SIGSTOP, a frozen machine) holds its job's row until the server ends its idle
    /// transaction (`Store::connect`), and waiting for it would stall every node's reaper.
    /// The job is taken back on a later pass.
    fn requeue_sql(&self, condition: &str) -> String {
        let lock = match self.backend {
            Backend::Postgres => " FOR UPDATE SKIP LOCKED",
            Backend::Sqlite => "",
        };
        format!(
            "UPDATE jobs SET state = $1, lease_owner = NULL, lease_expires = NULL, updated = $2, \
             unrunnable_since = NULL WHERE id IN (SELECT id FROM jobs WHERE {condition}{lock}) RETURNING id, kind, attempts"
        )
    }

    /// Returns jobs whose lease expired to the queue, counting each as a reclaimed lease;
    /// answers how many.
    pub async fn reap_expired_leases(&self) -> Result<u64> {
        self.read_lease_clock().await?;
        self.requeue_running("state = $3 AND lease_expires < $2", None).await
    }

    /// Now, by the clock leases are written and judged by: on PostgreSQL the database's (as
    /// last read when the store connected and by [`Store::reap_expired_leases`], every few
    /// seconds on every node), so that
    /// nodes whose clocks disagree by more than a lease neither take each other's live jobs
    /// back nor write leases that have already run out; on SQLite, one process's own.
    pub(crate) fn lease_clock(&self) -> Timestamp {
        let offset = self.clock_offset.load(std::sync::atomic::Ordering::Relaxed);
        Timestamp(Timestamp::now().micros().saturating_add(offset))
    }

    /// Reads the database's clock (PostgreSQL) into [`Store::lease_clock`]'s offset.
    pub(crate) async fn read_lease_clock(&self) -> Result<()> {
        if self.backend != Backend::Postgres {
            return Ok(());
        }
        // Timed around the query alone, not the wait for a connection.
        let mut connection = self.pool.acquire().await.map_err(db)?;
        let before = Timestamp::now().micros();
        let database: i64 =
            sqlx::query_scalar("SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)")
                .fetch_one(&mut *connection)
                .await
                .map_err(db)?;
        let after = Timestamp::now().micros();
        let offset = database - before / 2 - after / 2;
        self.clock_offset.store(offset, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// The queue as operators watch it (`/metrics`): jobs by kind and state, how long the
    /// oldest runnable queued job of each kind has waited, and the leases reclaimed per kind
    /// since the installation began. System look-up, no scope; it reads every job row, so it
    /// is meant for a scrape every few seconds, not for every request.
    pub async fn job_statistics(&self) -> Result<JobStatistics> {
        let now = Timestamp::now().micros();
        // Queued and running jobs are counted live (few, and found through the queue's index);
        // ended ones were counted as they ended (`job_totals`). A job's wait starts when it
        // became runnable, or when it was last put back (a job handed back keeps its
        // `run_after`, its place in the queue, and its run is no wait).
        let rows = sqlx::query(
            "SELECT kind, state, COUNT(*) AS jobs, \
             MIN(CASE WHEN state = $1 AND run_after <= $2 THEN \
             CASE WHEN updated > run_after THEN updated ELSE run_after END END) AS oldest \
             FROM jobs WHERE state IN ($1, $3) GROUP BY kind, state \
             UNION ALL SELECT kind, state, jobs, NULL AS oldest FROM job_totals \
             ORDER BY kind, state",
        )
        .bind(JobState::Queued.as_str())
        .bind(now)
        .bind(JobState::Running.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        let mut statistics = JobStatistics::default();
        for row in &rows {
            let kind: String = row.try_get("kind").map_err(db)?;
            let state: String = row.try_get("state").map_err(db)?;
            let jobs: i64 = row.try_get("jobs").map_err(db)?;
            if let Some(oldest) = row.try_get::<Option<i64>, _>("oldest").map_err(db)? {
                let waited = (now - oldest).max(0) as f64 / 1e6;
                statistics.oldest_queued_secs.push((kind.clone(), waited));
            }
            statistics.jobs.push(JobCount {
                kind,
                state: crate::parse_stored(&state)?,
                jobs: jobs.max(0) as u64,
            });
        }
        let reclaims = sqlx::query("SELECT kind, reclaims FROM job_lease_reclaims ORDER BY kind")
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        for row in &reclaims {
            let kind: String = row.try_get("kind").map_err(db)?;
            let count: i64 = row.try_get("reclaims").map_err(db)?;
            statistics.lease_reclaims.push((kind, count.max(0) as u64));
        }
        Ok(statistics)
    }
}

/// Delays the jobs just taken back (`(id, kind, attempts)`) as a failed attempt is delayed,
/// except after their first attempt, which resumes at once (a worker restarted after a crash
/// picks its job up again); answers their kinds. A job whose worker dies every time (out of
/// memory) so waits longer each time until its attempts are used and its next claim fails
/// it (`Store::claim_job`).
async fn back_off(tx: &mut Transaction<'static, Any>, now: i64, taken: &[(i64, String, i64)]) -> Result<Vec<String>> {
    for (id, kind, attempts) in taken.iter().filter(|(_, _, attempts)| *attempts > 1) {
        sqlx::query("UPDATE jobs SET run_after = $1 WHERE id = $2")
            .bind(now + crate::jobs::retry_delay_secs(kind, *attempts) * 1_000_000)
            .bind(id)
            .execute(&mut **tx)
            .await
            .map_err(db)?;
    }
    Ok(taken.iter().map(|(_, kind, _)| kind.clone()).collect())
}

/// Adds one reclaimed lease per entry of `kinds` (the kinds of the jobs taken back).
async fn count_reclaims(tx: &mut Transaction<'static, Any>, kinds: &[String]) -> Result<()> {
    let mut per_kind = std::collections::BTreeMap::<&str, i64>::new();
    for kind in kinds {
        *per_kind.entry(kind).or_default() += 1;
    }
    for (kind, count) in per_kind {
        sqlx::query(
            "INSERT INTO job_lease_reclaims (kind, reclaims) VALUES ($1, $2) \
             ON CONFLICT (kind) DO UPDATE SET reclaims = job_lease_reclaims.reclaims + excluded.reclaims",
        )
        .bind(kind)
        .bind(count)
        .execute(&mut **tx)
        .await
        .map_err(db)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::jobs::check_fence;
    use crate::testing::TestDatabase;
    use crate::{Backend, Failure, JobPayload, NewJob, Store};
    use serde::{Deserialize, Serialize};
    use std::time::Duration;

    #[derive(Debug, Serialize, Deserialize)]
    struct Nap {
        minutes: u32,
    }

    impl JobPayload for Nap {
        const KIND: &'static str = "nap";
        const MAX_ATTEMPTS: i64 = 3;

        fn failure(&self) -> Failure {
            Failure::of(None, "Nap failed", "A nap", "sleep again")
        }
    }

    /// A worker paused (SIGSTOP) inside a write transaction holds its job's row. On PostgreSQL
    /// the reaper must neither wait for it (every node's reaper would stall) nor leave the job
    /// with it for good: the server ends the idle transaction and the job is taken back.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_paused_writer_neither_stalls_the_reaper_nor_keeps_its_job() {
        let Some(database) = TestDatabase::create(Backend::Postgres).await else {
            return;
        };
        let store = Store::open_with(&database.url, 4, Duration::from_millis(1500))
            .await
            .unwrap();
        let queued = store.enqueue(NewJob::of(&Nap { minutes: 1 }).unwrap()).await.unwrap();
        // The lease has run out at once, as a paused worker's does.
        let paused = store.claim_job("paused", -1).await.unwrap().expect("claimed");
        let mut write = store.begin_write().await.unwrap();
        check_fence(&mut write, &paused).await.unwrap();

        let reaped = tokio::time::timeout(Duration::from_secs(5), store.reap_expired_leases())
            .await
            .expect("the reaper does not wait for the paused writer")
            .unwrap();
        assert_eq!(reaped, 0, "the held row is left for a later pass");

        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert_eq!(
            store.reap_expired_leases().await.unwrap(),
            1,
            "taken back once the server ended the write"
        );
        assert!(write.commit().await.is_err(), "the paused write never lands");
        let next = store.claim_job("next", 30).await.unwrap().expect("claimed again");
        assert_eq!(next.job.id, queued.id);
        assert!(next.token > paused.token);
    }

    /// Nodes whose clocks disagree by more than a lease: on PostgreSQL leases are written and
    /// judged by the database's clock, so a node whose own clock runs two minutes ahead does not
    /// take back a live job (before, it took every other node's jobs back on every pass).
    #[tokio::test]
    async fn a_node_whose_clock_runs_ahead_leaves_live_jobs_alone() {
        let Some(database) = TestDatabase::create(Backend::Postgres).await else {
            return;
        };
        let store = Store::open(&database.url, 4).await.unwrap();
        let ahead = Store::open(&database.url, 4).await.unwrap();
        store.enqueue(NewJob::of(&Nap { minutes: 1 }).unwrap()).await.unwrap();
        let live = store.claim_job("live", 30).await.unwrap().expect("claimed");
        // As if its clock ran two minutes ahead and it had read nothing yet.
        ahead
            .clock_offset
            .store(120_000_000, std::sync::atomic::Ordering::Relaxed);
        assert!(ahead.lease_clock().micros() > lector_core::time::Timestamp::now().micros() + 100_000_000);
        assert_eq!(ahead.reap_expired_leases().await.unwrap(), 0);
        assert!(
            store.heartbeat(&live, 30).await.unwrap(),
            "the lease is still the worker's"
        );
        // An expired lease is still taken back.
        assert!(store.finish_job(&live, serde_json::json!({}), None).await.unwrap());
        store.enqueue(NewJob::of(&Nap { minutes: 2 }).unwrap()).await.unwrap();
        store.claim_job("gone", -1).await.unwrap().expect("claimed");
        assert_eq!(ahead.reap_expired_leases().await.unwrap(), 1);
    }
}
