//! The worker loop: claim a job, heartbeat its lease while its handler runs, record the
//! outcome, and reap expired leases. Embedded in `lector serve` and run alone by
//! `lector worker`; any number of runners may share one database.
//!
//! A handler is registered for the [`JobPayload`] it reads (`Runner::new().with(handler)`); the
//! runner decodes each job's payload into that struct before the handler runs, and records
//! every way a job can end through the store's `finish_job` or `fail_job`. A handler runs as a
//! task of its own: its panic is a failed attempt (retried with backoff until the kind's cap,
//! then the job fails for good with its trace), and the worker goes on with the next job.
//!
//! Its workers claim only the kinds of job it has handlers for, and hand back a job a newer
//! Lector wrote, so that in a rolling upgrade such jobs wait for a newer worker (an hour from
//! when a worker first handed it back; see lector-store's `job_claims`). Likewise a job of a
//! kind no handler here knows, or whose handler says this worker lacks what it needs
//! ([`Retry::Elsewhere`]: a BASE model's files, installed per node), is handed back for a
//! worker that has it, and fails (with the handler's reason) an hour after the first
//! hand-back, or up to six while a worker of another process runs jobs of its kind.
//!
//! Besides its `workers` loops, a runner with handlers for mails or webhook posts keeps one
//! loop that claims only those, so that a password-reset mail is sent while every other loop
//! runs an hour-long training; which job each loop takes next (in the order jobs became
//! runnable, each job its workspace runs putting it half an hour later) is lector-store's
//! `job_claims`.
//!
//! At start, the reaper first hands back the leases of this host's workers that died (see
//! [`crate::owner`]), so a worker restarted after kill -9 resumes its jobs at once.
//!
//! [`Workers::stop`] stops the loops: no new claim, long handlers end at their next checkpoint
//! ([`Stopping`]), and after the grace every job still running is handed back to the queue
//! without using an attempt (see [`crate::shutdown`]).

use crate::owner::Process;
use crate::shutdown::{Phase, Stopping};
use lector_core::{ErrorCode, NotificationType};
use lector_store::{JobNotice, JobPayload, Lease, Store};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tracing::Instrument;

/// How long a claim lasts without a heartbeat, unless configured otherwise.
pub const LEASE_SECS: i64 = 30;
const IDLE_POLL: Duration = Duration::from_millis(200);
const REAP_EVERY: Duration = Duration::from_secs(5);
/// How long the loops have, once told to hand their jobs back, to do it and end.
const HAND_BACK_WAIT: Duration = Duration::from_secs(10);

/// What a handler reports when it ends.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub result: serde_json::Value,
    pub notice: Option<JobNotice>,
}

/// Why a handler stopped without a result. What the failure leaves behind (the resource
/// FAILED, one notification) is the payload's [`JobPayload::failure`], written by the store.
#[derive(Debug, Clone)]
pub struct JobError {
    pub message: String,
    /// What may still come of the job.
    pub retry: Retry,
}

/// What a failed attempt leaves of its job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Final (bad input): the job fails for good now.
    Never,
    /// A transient fault: another attempt after a back-off, until the kind's attempt cap.
    Later,
    /// This worker lacks what the job needs (a BASE model's files) and another may have it: the
    /// job goes back to the queue without counting the attempt, and fails for good once it has
    /// waited [`lector_store::UNHANDLED_JOB_GRACE_SECS`] from when a worker first could not run
    /// it (its wait in the queue before that does not count).
    Elsewhere,
    /// The process is stopping ([`crate::Stopping::requested`]): the handler ended at a
    /// checkpoint; the job goes back to the queue as it is, and this claim does not count as an
    /// attempt.
    Stopped,
}

impl JobError {
    /// A failure no retry can mend (bad input): the job fails for good now.
    pub fn fatal(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retry: Retry::Never,
        }
    }

    /// A fault worth another attempt, until the kind's attempt cap.
    pub fn transient(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retry: Retry::Later,
        }
    }

    /// This worker cannot run the job (it lacks files another worker may have): see
    /// [`Retry::Elsewhere`]. The message is the job's reason should it fail.
    pub fn elsewhere(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retry: Retry::Elsewhere,
        }
    }

    /// The process is stopping ([`crate::Stopping::requested`]): the handler ended at a
    /// checkpoint, and another worker takes the job up where its committed writes end.
    pub fn stopped() -> Self {
        Self {
            message: "the worker is stopping".into(),
            retry: Retry::Stopped,
        }
    }

    /// A store error: final when what the job needs is gone (404), transient otherwise.
    pub fn from_store(error: lector_core::Error) -> Self {
        if error.code == ErrorCode::NotFound {
            Self::fatal(error.detail)
        } else {
            Self::transient(error.detail)
        }
    }
}

/// A handler's run behind its kind, as the runner holds it.
type HandlerFuture<'a> = Pin<Box<dyn Future<Output = Result<Outcome, JobError>> + Send + 'a>>;

/// Runs one kind of job, the one whose payload is [`Handler::Payload`]. Its writes must be
/// idempotent and fenced by the lease. A handler that runs long looks at `stopping` between
/// its steps and answers [`JobError::stopped`] once the process is stopping. Implementations
/// write `async fn run(&self, job: JobContext<'_>, payload: …) -> Result<Outcome, JobError>`.
pub trait Handler: Send + Sync + 'static {
    type Payload: JobPayload;
    fn run(
        &self,
        job: JobContext<'_>,
        payload: Self::Payload,
    ) -> impl Future<Output = Result<Outcome, JobError>> + Send;
}

/// What a handler runs with besides its payload: the store, the lease that fences its writes
/// (and carries the job's row), and the process's stop signal.
#[derive(Debug, Clone, Copy)]
pub struct JobContext<'a> {
    pub store: &'a Store,
    pub lease: &'a Lease,
    pub stopping: &'a Stopping,
}

/// A handler behind its kind: decodes the payload, then runs the typed handler.
trait Erased: Send + Sync {
    fn run<'a>(&'a self, store: &'a Store, lease: &'a Lease, stopping: &'a Stopping) -> HandlerFuture<'a>;
    /// The payload version the handler reads.
    fn version(&self) -> u32;
}

struct Typed<H>(H);

impl<H: Handler> Erased for Typed<H> {
    fn run<'a>(&'a self, store: &'a Store, lease: &'a Lease, stopping: &'a Stopping) -> HandlerFuture<'a> {
        match lease.payload::<H::Payload>() {
            Ok(payload) => Box::pin(self.0.run(JobContext { store, lease, stopping }, payload)),
            Err(e) => Box::pin(async move { Err(JobError::fatal(e.detail)) }),
        }
    }

    fn version(&self) -> u32 {
        H::Payload::VERSION
    }
}

/// The handlers by job kind, and the loop that feeds them.
#[derive(Clone)]
pub struct Runner {
    handlers: HashMap<&'static str, Arc<dyn Erased>>,
    /// The kinds it has handlers for, the only ones its workers claim (until a job of another
    /// kind has waited [`lector_store::UNHANDLED_JOB_GRACE_SECS`] for a worker that has one).
    kinds: Vec<&'static str>,
    lease_secs: i64,
}

/// Which jobs a loop claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lane {
    /// Any the runner has a handler for (and any other once it waited long for one).
    Every,
    /// Mails and webhook posts only: one such loop per runner, so that trainings on every
    /// other loop never hold up a password-reset mail for an hour.
    Short,
}

impl Default for Runner {
    fn default() -> Self {
        Self {
            handlers: HashMap::new(),
            kinds: Vec::new(),
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

    /// Registers `handler` for the kind of job its payload is.
    pub fn with<H: Handler>(mut self, handler: H) -> Self {
        self.handlers.insert(H::Payload::KIND, Arc::new(Typed(handler)));
        self.kinds = self.handlers.keys().copied().collect();
        self
    }

    /// Starts `workers` loops and a reaper, until [`Workers::stop`]; with at least one loop, and
    /// handlers for mails or webhook posts, one loop more that runs those alone.
    pub fn spawn(&self, store: Store, workers: usize) -> Workers {
        let (phase, watched) = watch::channel(Phase::Running);
        let stopping = Stopping::new(watched);
        let mut tasks = Vec::with_capacity(workers + 2);
        tasks.push(tokio::spawn(reap(store.clone(), stopping.clone())));
        for n in 0..workers {
            tasks.push(self.spawn_loop(&store, &stopping, n, Lane::Every));
        }
        let short = self
            .kinds
            .iter()
            .any(|kind| lector_store::SHORT_JOB_KINDS.contains(kind));
        if workers > 0 && short {
            tasks.push(self.spawn_loop(&store, &stopping, workers, Lane::Short));
        }
        Workers { phase, tasks }
    }

    /// The `n`th loop: claims a job of its lane and runs it, until the stop.
    fn spawn_loop(&self, store: &Store, stopping: &Stopping, n: usize, lane: Lane) -> tokio::task::JoinHandle<()> {
        let (runner, store, stopping) = (self.clone(), store.clone(), stopping.clone());
        let owner = Process::current().owner(n);
        tokio::spawn(async move {
            while !stopping.requested() {
                let worked = match runner.run_next(&store, &owner, &stopping, lane).await {
                    Ok(worked) => worked,
                    Err(e) => {
                        tracing::error!(error = %e, "worker could not claim a job");
                        false
                    }
                };
                if !worked && idle(&store, &stopping).await {
                    break;
                }
            }
        })
    }

    /// Claims and runs one job; `false` when the queue had none. Everything the job logs
    /// (the runner, its heartbeat, its handler) is in a `job` span carrying `job.id`,
    /// `job.kind` and `job.attempt`.
    pub async fn run_one(&self, store: &Store, owner: &str) -> lector_core::Result<bool> {
        self.run_next(store, owner, &Stopping::never(), Lane::Every).await
    }

    async fn run_next(&self, store: &Store, owner: &str, stopping: &Stopping, lane: Lane) -> lector_core::Result<bool> {
        let claimed = match lane {
            Lane::Every => store.claim_job_of(owner, self.lease_secs, &self.kinds).await?,
            // The store takes the mails and webhook posts among them.
            Lane::Short => (store.claim_short_job(owner, self.lease_secs, &self.kinds)).await?,
        };
        let Some(lease) = claimed else {
            return Ok(false);
        };
        let span = tracing::info_span!(
            "job",
            job.id = lease.job.id,
            job.kind = %lease.job.kind,
            job.attempt = lease.job.attempts
        );
        self.run_claimed(store, lease, stopping).instrument(span).await
    }

    async fn run_claimed(&self, store: &Store, lease: Lease, stopping: &Stopping) -> lector_core::Result<bool> {
        let Some(handler) = self.handlers.get(lease.job.kind.as_str()).cloned() else {
            if !gave_up_on_a_worker(store, &lease).await {
                tracing::warn!("no handler for this kind of job here; handing it back for a worker that has one");
                store.hand_back_unrunnable(&lease).await?;
                return Ok(true);
            }
            tracing::error!("no handler for this kind of job");
            let cause = format!("this installation has no handler for jobs of kind {}", lease.job.kind);
            store.fail_job(&lease, &cause, false).await?;
            return Ok(true);
        };
        if lease.awaits_newer_worker(handler.version()) {
            tracing::warn!("a newer Lector queued this job; handing it back for a worker of that version");
            store.hand_back_unrunnable(&lease).await?;
            return Ok(true);
        }
        tracing::info!("job started");
        // The heartbeat runs beside the handler, never in its way: a heartbeat waiting for a
        // lock the handler's transaction holds must not stop that transaction from finishing.
        let (lost, mut lease_lost) = tokio::sync::oneshot::channel::<()>();
        let heartbeat = {
            let (store, lease, seconds) = (store.clone(), lease.clone(), self.lease_secs);
            tokio::spawn(
                async move {
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
                            Err(e) => tracing::warn!(error = %e, "heartbeat failed; retrying"),
                        }
                    }
                }
                .in_current_span(),
            )
        };
        // The handler runs as a task of its own, so a panic in it is a failed attempt of its
        // job (retried until the kind's cap) and never ends this worker loop.
        let mut task = {
            let (handler, store, lease, stopping) = (handler.clone(), store.clone(), lease.clone(), stopping.clone());
            tokio::spawn(async move { handler.run(&store, &lease, &stopping).await }.in_current_span())
        };
        let outcome = tokio::select! {
            joined = &mut task => Some(ended(joined)),
            _ = &mut lease_lost => {
                tracing::warn!("lease lost; abandoning the job");
                task.abort();
                None
            }
            () = stopping.hand_back_now() => {
                if task.is_finished() {
                    // It ended as the hand-back came: its outcome stands (a mail sent is not
                    // sent again).
                    Some(ended(task.await))
                } else {
                    // Handed back before the aborted task is waited for, so that the hand-back
                    // is done within the stop's own wait. What its fenced writes committed
                    // stays; the next claim bumps the token, so nothing this attempt left in
                    // flight can land after it.
                    task.abort();
                    heartbeat.abort();
                    let handed_back = store.hand_back_job(&lease, 0).await?;
                    tracing::warn!(handed_back, "the worker is stopping; the job goes back to the queue");
                    let _ = tokio::time::timeout(HAND_BACK_WAIT, task).await;
                    return Ok(true);
                }
            }
        };
        heartbeat.abort();
        match outcome {
            Some(Ok(outcome)) => {
                let finished = store.finish_job(&lease, outcome.result, outcome.notice).await?;
                tracing::info!(finished, "job ended");
            }
            Some(Err(e)) if e.retry == Retry::Stopped => {
                let handed_back = store.hand_back_job(&lease, 0).await?;
                tracing::warn!(handed_back, "the worker is stopping; the job goes back to the queue");
            }
            Some(Err(e)) if e.retry == Retry::Elsewhere && !gave_up_on_a_worker(store, &lease).await => {
                tracing::warn!(error = %e.message, "this worker cannot run the job; handing it back for another");
                if !store.hand_back_unrunnable(&lease).await? {
                    tracing::warn!("lease taken over; the job was not handed back");
                }
            }
            Some(Err(e)) => {
                let message = match e.retry {
                    Retry::Elsewhere => format!(
                        "it waited {} minutes for a worker that could run it: {}",
                        lease.minutes_waited_for_a_worker(),
                        e.message
                    ),
                    _ => e.message,
                };
                let retryable = e.retry == Retry::Later;
                tracing::warn!(error = %message, retryable, "job failed");
                if !store.fail_job(&lease, &message, retryable).await? {
                    tracing::warn!("lease taken over; this attempt's failure is not recorded");
                }
            }
            None => {}
        }
        Ok(true)
    }
}

/// A runner's loops at work ([`Runner::spawn`]).
#[derive(Debug)]
pub struct Workers {
    phase: watch::Sender<Phase>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Workers {
    /// Stops the loops: none claims another job, and long jobs end at their next checkpoint;
    /// a job still running after `grace` is handed back to the queue at once. Either way a job
    /// cut short runs again on another worker without having used an attempt. Answers whether
    /// every job ended within the grace and no loop panicked.
    pub async fn stop(mut self, grace: Duration) -> bool {
        let _ = self.phase.send(Phase::Stopping);
        let mut clean = tokio::time::timeout(grace, join(&mut self.tasks))
            .await
            .unwrap_or(false);
        if !self.tasks.is_empty() {
            tracing::warn!(
                grace_secs = grace.as_secs(),
                "jobs still running after the grace; handing them back to the queue"
            );
            let _ = self.phase.send(Phase::HandBack);
            // Each loop hands its job back, then ends.
            if !tokio::time::timeout(HAND_BACK_WAIT, join(&mut self.tasks))
                .await
                .unwrap_or(false)
            {
                tracing::error!("worker loops did not end; their jobs return once their leases expire");
            }
            clean = false;
        }
        clean
    }
}

/// The reaper: first hands back the leases of this host's workers that died before this start
/// (nobody renews them), then every [`REAP_EVERY`] the expired leases, until the stop.
async fn reap(store: Store, stopping: Stopping) {
    let me = Process::current();
    match store
        .release_leases_of_gone_holders(|owner| me.holder_is_gone(owner))
        .await
    {
        Ok(0) => {}
        Ok(n) => tracing::warn!(jobs = n, "returned the jobs of a dead worker of this host to the queue"),
        Err(e) => tracing::error!(error = %e, "could not release the leases of dead workers"),
    }
    loop {
        match store.reap_expired_leases().await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(jobs = n, "returned jobs with expired leases to the queue"),
            Err(e) => tracing::error!(error = %e, "reaper failed"),
        }
        if wait_or_stop(&stopping, REAP_EVERY).await {
            break;
        }
    }
}

/// Waits for the tasks, removing each as it ends (so a timeout may call it again); answers
/// whether none panicked.
async fn join(tasks: &mut Vec<tokio::task::JoinHandle<()>>) -> bool {
    let mut clean = true;
    while let Some(task) = tasks.last_mut() {
        clean &= task.await.is_ok();
        tasks.pop();
    }
    clean
}

/// Whether a job no worker here can run has waited long enough for one that can: handed back
/// first [`lector_store::UNHANDLED_JOB_GRACE_SECS`] ago, and no worker of another process runs
/// a job of its kind now (one that does may be the one it waits for, busy), or
/// [`lector_store::BUSY_WORKER_GRACE_SECS`] ago whatever runs. A failed look counts as a worker running one: the job is
/// handed back, not failed for the database's hiccup.
async fn gave_up_on_a_worker(store: &Store, lease: &Lease) -> bool {
    if !lease.waited_for_a_worker() {
        return false;
    }
    lease.waited_past_busy_workers() || !store.kind_runs_elsewhere(lease).await.unwrap_or(true)
}

/// A handler's task as it ended: its outcome, or a panic as a failed attempt.
fn ended(joined: Result<Result<Outcome, JobError>, tokio::task::JoinError>) -> Result<Outcome, JobError> {
    joined.unwrap_or_else(|e| {
        let message = panic_message(e);
        tracing::error!(panic = %message, "the job's handler panicked");
        Err(JobError::transient(message))
    })
}

/// What a task that did not finish says about it: "the job panicked: <its message>".
pub fn panic_message(error: tokio::task::JoinError) -> String {
    if !error.is_panic() {
        return "the job was cancelled".into();
    }
    let payload = error.into_panic();
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into());
    format!("the job panicked: {text}")
}

/// An idle worker's wait: until this process queues a job, the next poll, or the stop; answers
/// whether to stop.
async fn idle(store: &Store, stopping: &Stopping) -> bool {
    tokio::select! {
        () = store.jobs_queued() => stopping.requested(),
        stop = wait_or_stop(stopping, IDLE_POLL) => stop,
    }
}

/// Sleeps for `pause` unless told to stop; answers whether to stop.
async fn wait_or_stop(stopping: &Stopping, pause: Duration) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(pause) => stopping.requested(),
        () = stopping.requested_now() => true,
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
