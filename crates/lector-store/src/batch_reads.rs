//! A job reads documents in batches, works on them outside any transaction (a model predicts
//! their segments), and writes what it found later. A person may edit or delete a document
//! meanwhile: its segments are then other rows, and what the job found for the old ones would
//! be written for segments that are gone, next to none for the new ones. So the writing
//! transaction first holds the documents (a share lock on PostgreSQL: an edit or a deletion,
//! which lock the document's row before anything else, `session_counts::DocumentSessions`,
//! waits for it or is waited for whole), then compares each document's segments with those the
//! batch read.

use crate::db;
use crate::id_lists::{ids_where_in_held, rows_where_in};
use lector_core::Result;
use sqlx::{Any, Row, Transaction};
use std::collections::HashMap;

/// A document as a batch read it: its id and its segments' ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentAsRead {
    pub id: i64,
    pub segment_ids: Vec<i64>,
}

/// The documents of a batch as they are now, in the writing transaction.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Reread {
    /// Still as the batch read them: what was found for them may be written.
    pub unchanged: Vec<i64>,
    /// Edited since: their segments differ, to be read again.
    pub changed: Vec<i64>,
}

/// Holds the documents `read` names and sorts them by what became of them; those deleted
/// since are in neither list.
pub(crate) async fn reread(tx: &mut Transaction<'static, Any>, read: &[DocumentAsRead]) -> Result<Reread> {
    let ids: Vec<i64> = read.iter().map(|d| d.id).collect();
    let existing = ids_where_in_held(tx, "SELECT id FROM documents WHERE id", &ids).await?;
    let select = "SELECT id, document_id FROM segments WHERE document_id";
    let mut segments: HashMap<i64, Vec<i64>> = existing.iter().map(|id| (*id, Vec::new())).collect();
    for row in rows_where_in(tx, select, None, &existing).await? {
        let document: i64 = row.try_get("document_id").map_err(db)?;
        segments
            .entry(document)
            .or_default()
            .push(row.try_get("id").map_err(db)?);
    }
    let mut out = Reread::default();
    for document in read {
        let Some(now) = segments.get_mut(&document.id) else {
            continue;
        };
        now.sort_unstable();
        let mut then = document.segment_ids.clone();
        then.sort_unstable();
        if *now == then {
            out.unchanged.push(document.id);
        } else {
            out.changed.push(document.id);
        }
    }
    Ok(out)
}
