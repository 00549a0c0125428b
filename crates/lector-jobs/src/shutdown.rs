//! A process's stop as its job workers see it, in two steps. At the signal the workers take no
//! new job, and a long handler (training, analysis, imports) learns of it through
//! [`Stopping`] and ends at its next checkpoint with [`crate::JobError::stopped`]: its job goes
//! back to the queue without using an attempt, keeping what its fenced batches committed. A
//! job still running when the grace ends is cut off: its handler is aborted and its lease
//! handed back at once ([`crate::runner::Workers::stop`]), so the process can exit.
//!
//! It does not stop the process: `lector`'s `main` owns the signal and the runtime.

use tokio::sync::watch;

/// How far the stop has gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Phase {
    Running,
    /// Take no new job; long jobs end at their next checkpoint.
    Stopping,
    /// The grace is over: every job still running is handed back now.
    HandBack,
}

/// What a job's handler sees of its process's stop.
#[derive(Debug, Clone)]
pub struct Stopping(watch::Receiver<Phase>);

impl Stopping {
    pub(crate) fn new(phase: watch::Receiver<Phase>) -> Self {
        Self(phase)
    }

    /// A stop that never comes: for one job run outside a worker loop (tests, tools).
    pub fn never() -> Self {
        Self(watch::channel(Phase::Running).1)
    }

    /// Whether the process is stopping: a long handler ends at this checkpoint.
    pub fn requested(&self) -> bool {
        *self.0.borrow() >= Phase::Stopping
    }

    /// Completes once the process is stopping (never for [`Stopping::never`]).
    pub async fn requested_now(&self) {
        self.reached(Phase::Stopping).await;
    }

    /// Completes once the grace is over and running jobs are to be handed back.
    pub(crate) async fn hand_back_now(&self) {
        self.reached(Phase::HandBack).await;
    }

    async fn reached(&self, phase: Phase) {
        let mut receiver = self.0.clone();
        if receiver.wait_for(|now| *now >= phase).await.is_err() {
            // Nobody can stop it any more.
            std::future::pending::<()>().await;
        }
    }
}
