//! What the jobs that read an uploaded file share: what filling a group from it stored, the
//! job error for a file looked up in vain, and a byte counter for their progress. A module of
//! its own so that the readers (`file_import`, `document_file`, `labeled_import`) and the job
//! that calls them (`ingest`) depend on it rather than on each other.

use crate::runner::JobError;
use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What filling a group stored.
#[derive(Debug, Clone, Copy, Default)]
pub struct Filled {
    /// Documents in the group.
    pub stored: u64,
    /// Rows of a file left out for an empty text.
    pub blank: u64,
    /// Documents this run stored (fewer than `stored` after a re-run).
    pub added: usize,
}

/// A lookup failure: final when the file is gone, worth another try otherwise.
pub(crate) fn gone(error: lector_core::Error) -> JobError {
    if error.code == lector_core::ErrorCode::NotFound {
        JobError::fatal("the uploaded file is gone")
    } else {
        JobError::transient(error.detail)
    }
}

/// Counts the bytes read, for the job's progress.
pub(crate) struct Counting<R> {
    pub(crate) inner: R,
    pub(crate) read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}
