//! The log of workflows' finished executions. A webhook that answers when its last step is
//! done records its execution here instead of waiting for its own database write: one task
//! writes what has gathered in one transaction, so a busy webhook's records cost one commit per
//! batch rather than one per call (on SQLite, where writers take turns, this is most of a
//! call's cost). When the log is full a call writes its record itself, so none is dropped;
//! readers of a workflow's executions [`ExecutionLog::flush`] first and see every call this
//! node has answered. What is lost in a crash is what was gathered and not yet written: the
//! records of calls answered in the last moment, never a call's effects.

use lector_core::Result;
use lector_store::{FinishedExecution, Store};
use std::collections::BTreeSet;
use tokio::sync::{mpsc, oneshot};

/// Records waiting for the writer, at most.
const CAPACITY: usize = 10_000;
/// Records one transaction writes, at most.
const BATCH: usize = 500;
/// Records written between two trims of the workflows that had them.
const TRIM_EVERY: usize = 500;

enum Message {
    Record(FinishedExecution),
    Flush(oneshot::Sender<()>),
}

/// The node's execution log.
#[derive(Debug, Clone)]
pub struct ExecutionLog {
    sender: mpsc::Sender<Message>,
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Message::Record(e) => write!(f, "Record(workflow {})", e.workflow_id),
            Message::Flush(_) => f.write_str("Flush"),
        }
    }
}

impl ExecutionLog {
    /// Starts the writer on the current runtime.
    pub fn start(store: Store) -> Self {
        let (sender, receiver) = mpsc::channel(CAPACITY);
        tokio::spawn(write_batches(store, receiver));
        Self { sender }
    }

    /// Hands a finished execution to the writer; writes it at once when the log is full.
    pub async fn record(&self, store: &Store, execution: FinishedExecution) -> Result<()> {
        match self.sender.try_send(Message::Record(execution)) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(Message::Record(execution)))
            | Err(mpsc::error::TrySendError::Closed(Message::Record(execution))) => {
                store.record_executions(&[execution], &[]).await
            }
            Err(_) => Ok(()),
        }
    }

    /// Waits until everything handed over before this call is written.
    pub async fn flush(&self) {
        let (done, written) = oneshot::channel();
        if self.sender.send(Message::Flush(done)).await.is_ok() {
            let _ = written.await;
        }
    }
}

async fn write_batches(store: Store, mut receiver: mpsc::Receiver<Message>) {
    let mut messages = Vec::with_capacity(BATCH);
    let (mut since_trim, mut touched) = (0, BTreeSet::new());
    while receiver.recv_many(&mut messages, BATCH).await > 0 {
        let mut records = Vec::with_capacity(messages.len());
        let mut waiting = Vec::new();
        for message in messages.drain(..) {
            match message {
                Message::Record(execution) => records.push(execution),
                Message::Flush(done) => waiting.push(done),
            }
        }
        since_trim += records.len();
        touched.extend(records.iter().map(|r| r.workflow_id));
        let trim: Vec<i64> = if since_trim >= TRIM_EVERY {
            since_trim = 0;
            std::mem::take(&mut touched).into_iter().collect()
        } else {
            Vec::new()
        };
        if !records.is_empty()
            && let Err(e) = store.record_executions(&records, &trim).await
        {
            tracing::error!(error = %e, records = records.len(), "workflow executions were not recorded");
        }
        for done in waiting {
            let _ = done.send(());
        }
    }
}
