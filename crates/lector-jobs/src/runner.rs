//! The worker loop: claim a job, heartbeat its lease while its handler runs, record the
//! outcome, and reap expired leases. Embedded in `lector serve` and run alone by
//! `lector worker`; any number of runners may share one database.

use lector_core::NotificationType;
use lector_store::{JobNotice, Lease, Store};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How long a claim lasts without a heartbeat, unless configured otherwise.
pub const LEASE_SECS: i64 = 30;
const IDLE_POLL: Duration = Duration::from_millis(200);
const REAP_EVERY: Duration = Duration::from_secs(5);

/// What a handler reports when it ends.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub result: serde_json::Value,
    pub notice: Option<JobNotice>,
}

/// Why a handler stopped without a result.
#[derive(Debug, Clone)]
pub struct JobError {
    pub message: String,
    /// Worth another attempt (a transient fault), or final (bad input).
    pub retryable: bool,
    pub notice: Option<JobNotice>,
}

impl JobError {
    pub fn fatal(message: impl Into<String>, notice: Option<JobNotice>) -> Self {
        Self {
            message: message.into(),
            retryable: false,
            notice,
        }
    }

    pub fn transient(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retryable: true,
            notice: None,
        }
    }
}

pub type HandlerFuture<'a> = Pin<Box<dyn Future<Output = Result<Outcome, JobError>> + Send + 'a>>;

/// Runs one kind of job. Its writes must be idempotent and fenced by the lease.
pub trait Handler: Send + Sync {
    fn run<'a>(&'a self, store: &'a Store, lease: &'a Lease) -> HandlerFuture<'a>;
}

/// The handlers by job kind, and the loop that feeds them.
#[derive(Clone)]
pub struct Runner {
    handlers: HashMap<&'static str, Arc<dyn Handler>>,
    lease_secs: i64,
}

impl Default for Runner {
    fn default() -> Self {
        Self {
            handlers: HashMap::new(),
            lease_secs: LEASE_SECS,
        }
    }
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("kinds", &self.handlers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Runner {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the lease; workers heartbeat three times per lease.
    pub fn lease_secs(mut self, seconds: i64) -> Self {
        self.lease_secs = seconds.max(1);
        self
    }

    pub fn with(mut self, kind: &'static str, handler: impl Handler + 'static) -> Self {
        self.handlers.insert(kind, Arc::new(handler));
        self
    }

    /// Starts `workers` loops and a reaper; they stop when `stop` turns true.
    pub fn spawn(&self, store: Store, workers: usize, stop: watch::Receiver<bool>) -> Vec<tokio::task::JoinHandle<()>> {
        let mut tasks = Vec::with_capacity(workers + 1);
        let reaper_store = store.clone();
        let mut reaper_stop = stop.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                match reaper_store.reap_expired_leases().await {
                    Ok(0) => {}
                    Ok(n) => tracing::warn!(jobs = n, "returned jobs with expired leases to the queue"),
                    Err(e) => tracing::error!(error = %e, "reaper failed"),
                }
                if wait_or_stop(&mut reaper_stop, REAP_EVERY).await {
                    break;
                }
            }
        }));
        for n in 0..workers {
            let runner = self.clone();
            let store = store.clone();
            let mut stop = stop.clone();
            let owner = format!("{}-{n}", uuid::Uuid::new_v4());
            tasks.push(tokio::spawn(async move {
                loop {
                    let worked = match runner.run_one(&store, &owner).await {
                        Ok(worked) => worked,
                        Err(e) => {
                            tracing::error!(error = %e, "worker could not claim a job");
                            false
                        }
                    };
                    if *stop.borrow() || (!worked && wait_or_stop(&mut stop, IDLE_POLL).await) {
                        break;
                    }
                }
            }));
        }
        tasks
    }

    /// Claims and runs one job; `false` when the queue had none.
    pub async fn run_one(&self, store: &Store, owner: &str) -> lector_core::Result<bool> {
        let Some(lease) = store.claim_job(owner, self.lease_secs).await? else {
            return Ok(false);
        };
        let job_id = lease.job.id;
        let Some(handler) = self.handlers.get(lease.job.kind.as_str()).cloned() else {
            tracing::error!(job.id = job_id, kind = %lease.job.kind, "no handler for this kind of job");
            store
                .fail_job(
                    &lease,
                    "this installation has no handler for the job's kind",
                    false,
                    None,
                )
                .await?;
            return Ok(true);
        };
        tracing::info!(job.id = job_id, kind = %lease.job.kind, attempt = lease.job.attempts, "job started");
        // The heartbeat runs beside the handler, never in its way: a heartbeat waiting for a
        // lock the handler's transaction holds must not stop that transaction from finishing.
        let (lost, mut lease_lost) = tokio::sync::oneshot::channel::<()>();
        let heartbeat = {
            let (store, lease, seconds) = (store.clone(), lease.clone(), self.lease_secs);
            tokio::spawn(async move {
                let mut beat = tokio::time::interval(Duration::from_millis(seconds as u64 * 1000 / 3));
                beat.tick().await;
                loop {
                    beat.tick().await;
                    match store.heartbeat(&lease, seconds).await {
                        Ok(true) => {}
                        Ok(false) => {
                            let _ = lost.send(());
                            break;
                        }
                        Err(e) => tracing::warn!(job.id = lease.job.id, error = %e, "heartbeat failed; retrying"),
                    }
                }
            })
        };
        let outcome = tokio::select! {
            outcome = handler.run(store, &lease) => Some(outcome),
            _ = &mut lease_lost => {
                tracing::warn!(job.id = job_id, "lease lost; abandoning the job");
                None
            }
        };
        heartbeat.abort();
        match outcome {
            Some(Ok(outcome)) => {
                let finished = store.finish_job(&lease, outcome.result, outcome.notice).await?;
                tracing::info!(job.id = job_id, finished, "job ended");
            }
            Some(Err(e)) => {
                tracing::warn!(job.id = job_id, error = %e.message, retryable = e.retryable, "job failed");
                store.fail_job(&lease, &e.message, e.retryable, e.notice).await?;
            }
            None => {}
        }
        Ok(true)
    }
}

/// Sleeps for `pause` unless told to stop; answers whether to stop.
async fn wait_or_stop(stop: &mut watch::Receiver<bool>, pause: Duration) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(pause) => *stop.borrow(),
        changed = stop.changed() => changed.is_err() || *stop.borrow(),
    }
}

/// A notice for the user a job belongs to, if it has one.
pub fn notice_for(
    lease: &Lease,
    kind: NotificationType,
    title: impl Into<String>,
    text: impl Into<String>,
) -> Option<JobNotice> {
    lease.job.user_id.map(|user_id| JobNotice {
        user_id,
        kind,
        title: title.into(),
        text: text.into(),
    })
}
