//! The log of workflows' finished executions. A webhook that answers when its last step is
//! done records its execution here instead of waiting for its own database write: one task
//! writes what has gathered in one transaction, so a busy webhook's records cost one commit per
//! batch rather than one per call (on SQLite, where writers take turns, this is most of a
//! call's cost). The log holds at most [`CAPACITY`] records and [`QUEUED_BYTES`] of them (a
//! kept record may be megabytes), and a batch at most [`BATCH`] records and [`BATCH_BYTES`].
//! When the log is full a call writes its record itself, so none is dropped;
//! readers of a workflow's executions [`ExecutionLog::flush`] first and see every call this
//! node has answered. What is lost in a crash is what was gathered and not yet written: the
//! records of calls answered in the last moment, never a call's effects.

use lector_core::Result;
use lector_store::{FinishedExecution, Store};
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

/// Records waiting for the writer, at most.
const CAPACITY: usize = 10_000;
/// Bytes of records waiting for the writer (or being written), at most.
const QUEUED_BYTES: usize = 64 * 1024 * 1024;
/// Records one transaction writes, at most.
const BATCH: usize = 500;
/// Bytes of records one transaction writes, at most (a record larger than this is written
/// alone).
const BATCH_BYTES: usize = 8 * 1024 * 1024;
/// What a record costs besides its error and data: its other columns, as bytes to count.
const RECORD_OVERHEAD_BYTES: usize = 256;

enum Message {
    /// A record, holding its bytes of the log's budget until it is written.
    Record(FinishedExecution, OwnedSemaphorePermit),
    Flush(oneshot::Sender<()>),
}

/// The node's execution log.
#[derive(Debug, Clone)]
pub struct ExecutionLog {
    sender: mpsc::Sender<Message>,
    /// The bytes the queued records may still take.
    bytes: Arc<Semaphore>,
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Message::Record(e, _) => write!(f, "Record(workflow {})", e.workflow_id),
            Message::Flush(_) => f.write_str("Flush"),
        }
    }
}

impl ExecutionLog {
    /// Starts the writer on the current runtime.
    pub fn start(store: Store) -> Self {
        let (log, receiver) = Self::with_limits(CAPACITY, QUEUED_BYTES);
        tokio::spawn(write_batches(store, receiver));
        log
    }

    /// A log of at most `records` and `bytes` waiting, and the writer's end of it.
    fn with_limits(records: usize, bytes: usize) -> (Self, mpsc::Receiver<Message>) {
        let (sender, receiver) = mpsc::channel(records);
        let bytes = Arc::new(Semaphore::new(bytes));
        (Self { sender, bytes }, receiver)
    }

    /// Hands a finished execution to the writer; writes it at once when the log is full.
    pub async fn record(&self, store: &Store, execution: FinishedExecution) -> Result<()> {
        match self.enqueue(execution) {
            None => Ok(()),
            Some(execution) => store.record_executions(&[execution]).await,
        }
    }

    /// Queues a record within the log's records and bytes; answers it back when the log is
    /// full (or closed), for the caller to write.
    fn enqueue(&self, execution: FinishedExecution) -> Option<FinishedExecution> {
        let size = u32::try_from(record_bytes(&execution)).unwrap_or(u32::MAX);
        let Ok(permit) = self.bytes.clone().try_acquire_many_owned(size) else {
            return Some(execution);
        };
        match self.sender.try_send(Message::Record(execution, permit)) {
            Ok(()) => None,
            Err(mpsc::error::TrySendError::Full(Message::Record(execution, _)))
            | Err(mpsc::error::TrySendError::Closed(Message::Record(execution, _))) => Some(execution),
            Err(_) => None,
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

/// The bytes a record counts for in the log's budgets.
fn record_bytes(execution: &FinishedExecution) -> usize {
    let text = |value: &Option<String>| value.as_ref().map_or(0, String::len);
    RECORD_OVERHEAD_BYTES + execution.method.len() + text(&execution.end.error) + text(&execution.end.data)
}

/// How many of the records at the head of `sizes` (their bytes) one transaction writes: at
/// most `max_records`, and no more than `max_bytes` together, but always the first.
fn batch_len(sizes: &[usize], max_records: usize, max_bytes: usize) -> usize {
    let mut total = 0usize;
    let within = sizes.iter().take(max_records).take_while(|&&size| {
        total = total.saturating_add(size);
        total <= max_bytes
    });
    within.count().max(1).min(sizes.len())
}

async fn write_batches(store: Store, mut receiver: mpsc::Receiver<Message>) {
    let mut messages = Vec::with_capacity(BATCH);
    while receiver.recv_many(&mut messages, BATCH).await > 0 {
        let mut records = Vec::with_capacity(messages.len());
        let mut waiting = Vec::new();
        for message in messages.drain(..) {
            match message {
                Message::Record(execution, permit) => records.push((execution, permit)),
                Message::Flush(done) => waiting.push(done),
            }
        }
        while !records.is_empty() {
            let sizes: Vec<usize> = records.iter().map(|(e, _)| record_bytes(e)).collect();
            let rest = records.split_off(batch_len(&sizes, BATCH, BATCH_BYTES));
            // The permits go back once the batch is written: the budget counts it until then.
            let (batch, _permits): (Vec<_>, Vec<_>) = std::mem::replace(&mut records, rest).into_iter().unzip();
            // The store trims each workflow of the batch to its newest executions.
            if let Err(e) = store.record_executions(&batch).await {
                tracing::error!(error = %e, records = batch.len(), "workflow executions were not recorded");
            }
        }
        for done in waiting {
            let _ = done.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lector_core::time::Timestamp;
    use lector_store::ExecutionEnd;

    fn execution(data_bytes: usize) -> FinishedExecution {
        FinishedExecution {
            workflow_id: 1,
            mode: "test",
            method: "POST".into(),
            started: Timestamp::now(),
            finished: Some(Timestamp::now()),
            end: ExecutionEnd {
                status: "success",
                error: None,
                data: Some("x".repeat(data_bytes)),
            },
        }
    }

    #[tokio::test]
    async fn records_past_the_byte_budget_are_written_by_their_caller() {
        let (log, mut receiver) = ExecutionLog::with_limits(100, 10_000);
        assert!(log.enqueue(execution(20_000)).is_some(), "larger than the whole budget");
        assert!(log.enqueue(execution(6_000)).is_none());
        assert!(log.enqueue(execution(6_000)).is_some(), "the budget holds one of them");
        assert!(log.enqueue(execution(1_000)).is_none(), "a smaller one still fits");
        // A written record gives its bytes back.
        let Some(Message::Record(_, permit)) = receiver.recv().await else {
            panic!("a record was queued")
        };
        drop(permit);
        assert!(log.enqueue(execution(6_000)).is_none());
    }

    #[tokio::test]
    async fn records_past_the_count_are_written_by_their_caller() {
        let (log, _receiver) = ExecutionLog::with_limits(2, 1 << 20);
        assert!(log.enqueue(execution(10)).is_none());
        assert!(log.enqueue(execution(10)).is_none());
        assert!(log.enqueue(execution(10)).is_some());
    }

    #[test]
    fn a_batch_stops_at_its_records_or_its_bytes() {
        assert_eq!(batch_len(&[10; 8], 5, 1_000), 5, "the record limit");
        assert_eq!(
            batch_len(&[10, 20, 30, 40], 10, 60),
            3,
            "the byte limit, reached exactly"
        );
        assert_eq!(batch_len(&[10, 20, 30, 40], 10, 59), 2);
        assert_eq!(batch_len(&[500, 10], 10, 100), 1, "a record past the limit goes alone");
        assert_eq!(batch_len(&[10, 500], 10, 100), 1);
        assert_eq!(batch_len(&[], 10, 100), 0);
    }
}
