//! The runs of `immediately` workflows this node has going: at most
//! `workflows.max_background_runs` at once, each recorded as a running execution that the node
//! keeps alive while the run lasts ([`tend`]). At shutdown the node waits for them, within a
//! bound, after its open requests have drained ([`BackgroundRuns::wait`]), and records the runs
//! it gives up as errors. Runs of a node that went away without that (kill -9, a lost machine)
//! stop being renewed, and any serving node records them as errors once their liveness runs out.
//!
//! The runs of `last_step` workflows answer their callers, but run on a task of their own, so
//! a caller who stops waiting does not cut a run short ([`RunPlaces`]): they are bounded
//! by `http.max_connections` whether their callers still wait or not, and waited for at
//! shutdown within the same bound.
//!
//! It does not run the steps: that is `workflow_runs`.

use crate::state::AppState;
use lector_store::EXECUTION_ALIVE_SECS;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a stopping node waits for its background runs once its requests have drained.
pub const BACKGROUND_RUNS_GRACE: Duration = Duration::from_secs(30);
/// How often a node ends the executions no live node renews (every node; the update finds the
/// running rows through their index).
const SWEEP_EVERY: u32 = 3;

/// This node's background runs.
#[derive(Debug)]
pub struct BackgroundRuns {
    places: RunPlaces,
    /// The executions of the runs going on.
    running: Arc<Mutex<HashSet<i64>>>,
}

/// One run's place among the node's background runs, given back when dropped (its run ended).
#[derive(Debug)]
pub struct RunSlot {
    _permit: OwnedSemaphorePermit,
    running: Arc<Mutex<HashSet<i64>>>,
    execution: Option<i64>,
}

impl RunSlot {
    /// The run's execution is recorded: the node keeps it alive until the slot is dropped.
    pub fn running(&mut self, execution: i64) {
        lock(&self.running).insert(execution);
        self.execution = Some(execution);
    }
}

impl Drop for RunSlot {
    fn drop(&mut self) {
        if let Some(execution) = self.execution {
            lock(&self.running).remove(&execution);
        }
    }
}

fn lock(running: &Mutex<HashSet<i64>>) -> std::sync::MutexGuard<'_, HashSet<i64>> {
    running.lock().unwrap_or_else(|e| e.into_inner())
}

impl BackgroundRuns {
    pub fn new(capacity: usize) -> Self {
        Self {
            places: RunPlaces::new(capacity),
            running: Arc::default(),
        }
    }

    /// A place for one more run; `None` when the node has as many as it may.
    pub fn try_start(&self) -> Option<RunSlot> {
        let permit = self.places.try_start()?;
        Some(RunSlot {
            _permit: permit,
            running: self.running.clone(),
            execution: None,
        })
    }

    /// The executions of the runs going on.
    fn executions(&self) -> Vec<i64> {
        lock(&self.running).iter().copied().collect()
    }

    /// Waits until every run has ended, at most `bound`; answers the executions of the runs
    /// still going then.
    pub async fn wait(&self, bound: Duration) -> Vec<i64> {
        match self.places.wait(bound).await {
            0 => Vec::new(),
            _ => self.executions(),
        }
    }
}

/// Keeps this node's running executions alive, and now and then records as errors those no
/// live node renews; runs until aborted.
pub async fn tend(state: AppState) {
    let mut every = tokio::time::interval(Duration::from_secs(EXECUTION_ALIVE_SECS as u64 / 3));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut ticks = 0u32;
    loop {
        every.tick().await;
        let ours = state.background_runs.executions();
        if let Err(e) = state.store.keep_executions_alive(&ours).await {
            tracing::warn!(error = %e.detail, "could not keep the background runs' executions alive");
        }
        if ticks.is_multiple_of(SWEEP_EVERY) {
            end_abandoned(&state, &[]).await;
        }
        ticks = ticks.wrapping_add(1);
    }
}

/// Records as errors the executions no live node renews, and `given_up` (this node's, as it
/// stops).
pub async fn end_abandoned(state: &AppState, given_up: &[i64]) {
    match state.store.end_abandoned_executions(given_up).await {
        Ok(0) => {}
        Ok(n) => tracing::warn!(executions = n, "recorded workflow runs whose server stopped as errors"),
        Err(e) => tracing::warn!(error = %e.detail, "could not end the executions of stopped runs"),
    }
}

/// At most `capacity` runs going on at once, and a wait for them to end: the places of the
/// background runs, and those of the `last_step` runs (at most as many as the node serves
/// connections, whether their callers still wait or have gone, so callers who leave at once
/// cannot pile up runs, and the data each holds, beyond what waiting callers could).
#[derive(Debug)]
pub struct RunPlaces {
    permits: Arc<Semaphore>,
    capacity: u32,
}

impl RunPlaces {
    pub fn new(capacity: usize) -> Self {
        let capacity = u32::try_from(capacity).unwrap_or(u32::MAX >> 3);
        Self {
            permits: Arc::new(Semaphore::new(capacity as usize)),
            capacity,
        }
    }

    /// A place for one more run, held until dropped; `None` when the node has as many as it may.
    pub fn try_start(&self) -> Option<OwnedSemaphorePermit> {
        self.permits.clone().try_acquire_owned().ok()
    }

    /// Waits until every run has ended, at most `bound`; answers how many were still going.
    pub async fn wait(&self, bound: Duration) -> usize {
        match tokio::time::timeout(bound, self.permits.acquire_many(self.capacity)).await {
            Ok(_) => 0,
            Err(_) => self.capacity as usize - self.permits.available_permits(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn run_places_are_bounded_and_waited_for() {
        let runs = RunPlaces::new(2);
        let first = runs.try_start().expect("a place");
        let second = runs.try_start().expect("a place");
        assert!(runs.try_start().is_none(), "two at the most");
        drop(first);
        assert_eq!(runs.wait(Duration::from_millis(20)).await, 1, "one still going");
        drop(second);
        assert_eq!(runs.wait(Duration::from_millis(20)).await, 0);
    }
}
