//! Writing an import's batches: as many at once as the store allows
//! ([`Store::import_streams`]: two on PostgreSQL, where the database stores one batch while the
//! next one's statements are sent; one on SQLite). Each batch is its own fenced transaction,
//! its documents' ids reserved in file order before it is written, so listings and downloads,
//! which follow the ids, read the import's order whichever batch commits first. Both imports
//! that fill a group (`ingest` from the request's documents, `file_import` from a file) write
//! through it.

use crate::runner::{JobError, panic_message};
use lector_store::{ImportPayload, Lease, NewDocument, Store};
use std::collections::VecDeque;
use tokio::task::JoinHandle;

/// The batches being written, oldest first. Dropped (an import that failed), it stops the
/// writes still under way; what they committed a re-run skips.
#[derive(Default)]
pub(crate) struct Writes(VecDeque<JoinHandle<lector_core::Result<usize>>>);

impl Writes {
    /// Reserves the batch's ids and starts writing it, its documents at their places.
    pub(crate) async fn start(
        &mut self,
        store: &Store,
        lease: &Lease,
        payload: &ImportPayload,
        documents: Vec<(i64, NewDocument)>,
    ) -> Result<(), JobError> {
        let ids = store.reserve_document_ids(documents.len()).await.map_err(transient)?;
        let (store, lease) = (store.clone(), lease.clone());
        let (project_id, group_id) = (payload.project_id, payload.group_id);
        self.0.push_back(tokio::spawn(async move {
            let placed: Vec<(i64, &NewDocument)> = documents.iter().map(|(p, d)| (*p, d)).collect();
            store.import_reserved(&lease, project_id, group_id, &placed, &ids).await
        }));
        Ok(())
    }

    /// Whether as many batches are being written as the store allows.
    pub(crate) fn full(&self, store: &Store) -> bool {
        self.0.len() >= store.import_streams()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Lets the writes under way end, whatever they answer: an import that stops between
    /// batches keeps what they store (its re-run skips it) instead of aborting them.
    pub(crate) async fn settle(&mut self) {
        while let Some(write) = self.0.pop_front() {
            let _ = write.await;
        }
    }

    /// Waits for the oldest write; answers how many documents it stored.
    pub(crate) async fn finish_oldest(&mut self) -> Result<usize, JobError> {
        let Some(write) = self.0.pop_front() else {
            return Ok(0);
        };
        match write.await {
            Ok(stored) => stored.map_err(transient),
            Err(e) => Err(JobError::transient(format!(
                "writing a batch failed: {}",
                panic_message(e)
            ))),
        }
    }
}

impl Drop for Writes {
    fn drop(&mut self) {
        for write in &self.0 {
            write.abort();
        }
    }
}

/// A store error met while importing: worth another attempt.
pub(crate) fn transient(error: lector_core::Error) -> JobError {
    JobError::transient(error.detail)
}
