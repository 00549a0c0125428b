//! The three counts a session's progress and status come from (its documents, their segments,
//! and the segments marked annotated), kept on the session's row.
//!
//! Counted on every read, they made listing a project's sessions over 60,000 documents take
//! seconds and every tag or mark read them twice. Now every write that changes them brings the
//! row up to date in its own transaction:
//! - documents added to a session (new sessions, added or labeled documents, imports, clones):
//!   [`recount`], which counts again under the session's lock;
//! - marks: [`add_marks`], with the number of marks a write made (marks are never taken back
//!   one by one; they go with their segment or their session);
//! - a document's text replaced or the document deleted: [`DocumentSessions`] takes what the
//!   document brought out of each session it is in, before its segments go, and puts back what
//!   its new segments bring.
//!
//! On PostgreSQL the writers queue on row locks, always taken in the same order (a document's
//! row, then its sessions' rows in id order) before they count or add, so a count never misses
//! a mark committed meanwhile nor counts one that will be added again. A session's row is
//! locked `FOR NO KEY UPDATE`: writers of its counts queue behind each other, while the foreign
//! key checks of rows that refer to the session (tags, marks, its documents), which take a key
//! share lock, are neither held up nor hold it up (with `FOR UPDATE`, a tag written while its
//! document was edited, or two requests adding documents to one session, deadlocked). A
//! document's row is locked `FOR UPDATE` while its segments change, so a request adding it to a
//! session (a key share lock) waits for the edit, and an edit waits for such a request.
//!
//! The counts set a session's status only while it is CREATED, ANNOTATING or FINISHED: a
//! STARTED session is being filled by an import (deleting it is refused meanwhile), and a FAILED
//! one keeps saying so; an import's end gives its session its status ([`end_import_status`]).

use crate::{db, lock_row};
use lector_core::Result;
use lector_core::labeling::{self, SessionStatus};
use lector_core::time::Timestamp;
use sqlx::{Any, Row, Transaction};

/// A session's documents, their segments and its marks, counted (or what a write added).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub documents: i64,
    pub segments: i64,
    pub annotated: i64,
}

impl Counts {
    /// The counts of a row with the columns the session's row keeps them in.
    fn read(row: &sqlx::any::AnyRow) -> Result<Self> {
        Ok(Self {
            documents: row.try_get("document_count").map_err(db)?,
            segments: row.try_get("segment_count").map_err(db)?,
            annotated: row.try_get("annotated_count").map_err(db)?,
        })
    }
}

/// What the row's counts would be, counted from the rows themselves.
const COUNT_SQL: &str = "SELECT (SELECT COUNT(*) FROM session_documents WHERE session_id = $1) AS document_count, \
     (SELECT COUNT(*) FROM session_documents sd JOIN segments g ON g.document_id = sd.document_id \
      WHERE sd.session_id = $1) AS segment_count, \
     (SELECT COUNT(*) FROM segment_statuses WHERE session_id = $1) AS annotated_count";

/// Counts a session's documents, segments and marks again, under its lock, and stores them.
/// The status is left as it is (an import keeps its session STARTED while it fills it).
pub(crate) async fn recount(tx: &mut Transaction<'static, Any>, session_id: i64) -> Result<Counts> {
    lock_session(tx, session_id).await?;
    let counts = count(&mut **tx, session_id).await?;
    sqlx::query("UPDATE sessions SET document_count = $1, segment_count = $2, annotated_count = $3 WHERE id = $4")
        .bind(counts.documents)
        .bind(counts.segments)
        .bind(counts.annotated)
        .bind(session_id)
        .execute(&mut **tx)
        .await
        .map_err(db)?;
    Ok(counts)
}

/// Counts a session again and gives it the status its marks imply.
pub(crate) async fn refresh_status(tx: &mut Transaction<'static, Any>, session_id: i64) -> Result<()> {
    let counts = recount(tx, session_id).await?;
    set_status(tx, session_id, counts, Settled::Only).await
}

/// Counts a session an import has filled and gives it the status its marks imply, leaving
/// STARTED (the import's end).
pub(crate) async fn end_import_status(tx: &mut Transaction<'static, Any>, session_id: i64) -> Result<()> {
    let counts = recount(tx, session_id).await?;
    set_status(tx, session_id, counts, Settled::OrStarted).await
}

/// Adds what a write added (documents with their segments and marks) to the session's counts;
/// the status is left as it is. The caller took the session's lock before writing them.
pub(crate) async fn add_counts(tx: &mut Transaction<'static, Any>, session_id: i64, added: Counts) -> Result<()> {
    sqlx::query(
        "UPDATE sessions SET document_count = document_count + $1, segment_count = segment_count + $2, \
         annotated_count = annotated_count + $3 WHERE id = $4",
    )
    .bind(added.documents)
    .bind(added.segments)
    .bind(added.annotated)
    .bind(session_id)
    .execute(&mut **tx)
    .await
    .map_err(db)?;
    Ok(())
}

/// Locks a session's row for a writer of its counts (see the module's doc): `FOR NO KEY
/// UPDATE` on PostgreSQL; SQLite's write transactions hold the one write lock already.
pub(crate) async fn lock_session(tx: &mut Transaction<'static, Any>, session_id: i64) -> Result<()> {
    crate::lock_row_for_no_key_update(tx, ("sessions", session_id)).await
}

/// Adds the marks a write just made to the session's count and gives it the status they imply.
/// The caller took the session's lock before writing them.
pub(crate) async fn add_marks(tx: &mut Transaction<'static, Any>, session_id: i64, added: u64) -> Result<()> {
    let added = Counts {
        annotated: added as i64,
        ..Counts::default()
    };
    add_counts(tx, session_id, added).await?;
    settle(tx, session_id).await
}

/// The sessions a document is in, locked while its segments change, so their counts can follow.
pub(crate) struct DocumentSessions {
    document_id: i64,
    sessions: Vec<i64>,
}

impl DocumentSessions {
    /// Before a document's segments are replaced: locks it and its sessions, and takes its
    /// segments and marks out of their counts.
    pub(crate) async fn before_new_text(tx: &mut Transaction<'static, Any>, document_id: i64) -> Result<Self> {
        Self::withdraw(tx, document_id, false).await
    }

    /// Before a document is deleted: locks it and its sessions, and takes it, its segments and
    /// its marks out of their counts.
    pub(crate) async fn before_deletion(tx: &mut Transaction<'static, Any>, document_id: i64) -> Result<Self> {
        Self::withdraw(tx, document_id, true).await
    }

    async fn withdraw(tx: &mut Transaction<'static, Any>, document_id: i64, leaving: bool) -> Result<Self> {
        lock_row(tx, ("documents", document_id)).await?;
        let sessions: Vec<i64> =
            sqlx::query_scalar("SELECT session_id FROM session_documents WHERE document_id = $1 ORDER BY session_id")
                .bind(document_id)
                .fetch_all(&mut **tx)
                .await
                .map_err(db)?;
        for id in &sessions {
            lock_session(tx, *id).await?;
        }
        sqlx::query(
            "UPDATE sessions SET document_count = document_count - $2, \
             segment_count = segment_count - (SELECT COUNT(*) FROM segments WHERE document_id = $1), \
             annotated_count = annotated_count - (SELECT COUNT(*) FROM segment_statuses st \
              JOIN segments g ON g.id = st.segment_id WHERE st.session_id = sessions.id AND g.document_id = $1) \
             WHERE id IN (SELECT session_id FROM session_documents WHERE document_id = $1)",
        )
        .bind(document_id)
        .bind(i64::from(leaving))
        .execute(&mut **tx)
        .await
        .map_err(db)?;
        Ok(Self { document_id, sessions })
    }

    /// Adds the document's segments and the marks they kept to the counts of its sessions
    /// (none when it was deleted) and gives each session the status its marks now imply.
    pub(crate) async fn restore(self, tx: &mut Transaction<'static, Any>) -> Result<()> {
        sqlx::query(
            "UPDATE sessions SET segment_count = segment_count + (SELECT COUNT(*) FROM segments WHERE document_id = $1), \
             annotated_count = annotated_count + (SELECT COUNT(*) FROM segment_statuses st \
              JOIN segments g ON g.id = st.segment_id WHERE st.session_id = sessions.id AND g.document_id = $1) \
             WHERE id IN (SELECT session_id FROM session_documents WHERE document_id = $1)",
        )
        .bind(self.document_id)
        .execute(&mut **tx)
        .await
        .map_err(db)?;
        for id in self.sessions {
            settle(tx, id).await?;
        }
        Ok(())
    }
}

/// Gives a session the status the counts on its row imply (a session deleted meanwhile is
/// left alone).
async fn settle(tx: &mut Transaction<'static, Any>, session_id: i64) -> Result<()> {
    let row = sqlx::query("SELECT document_count, segment_count, annotated_count FROM sessions WHERE id = $1")
        .bind(session_id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db)?;
    let Some(row) = row else { return Ok(()) };
    set_status(tx, session_id, Counts::read(&row)?, Settled::Only).await
}

/// Which statuses the counts may replace: those they imply, or those and STARTED.
#[derive(Debug, Clone, Copy)]
enum Settled {
    Only,
    OrStarted,
}

/// Writes the status `counts` imply over a status the counts set (see the module's doc).
async fn set_status(tx: &mut Transaction<'static, Any>, session_id: i64, counts: Counts, from: Settled) -> Result<()> {
    let status = labeling::status_for(counts.annotated, counts.segments);
    let mut replaced = vec![
        SessionStatus::Created,
        SessionStatus::Annotating,
        SessionStatus::Finished,
    ];
    if let Settled::OrStarted = from {
        replaced.push(SessionStatus::Started);
    }
    let replaced = replaced
        .iter()
        .map(|s| format!("'{}'", s.as_str()))
        .collect::<Vec<_>>()
        .join(", ");
    // `finished` is stamped when the session first finishes, and cleared when it no longer is.
    sqlx::query(&format!(
        "UPDATE sessions SET status = $1, \
         finished = CASE WHEN $1 = '{}' THEN COALESCE(finished, $2) ELSE NULL END \
         WHERE id = $3 AND status IN ({replaced})",
        SessionStatus::Finished.as_str()
    ))
    .bind(status.as_str())
    .bind(Timestamp::now().micros())
    .bind(session_id)
    .execute(&mut **tx)
    .await
    .map_err(db)?;
    Ok(())
}

/// A session's counts as its rows give them, read through `executor`.
pub(crate) async fn count<'c>(executor: impl sqlx::Executor<'c, Database = Any>, session_id: i64) -> Result<Counts> {
    let row = sqlx::query(COUNT_SQL)
        .bind(session_id)
        .fetch_one(executor)
        .await
        .map_err(db)?;
    Counts::read(&row)
}

#[cfg(any(test, feature = "testing"))]
impl crate::Store {
    /// The sessions whose counts differ from what their rows give (`session 7: stored … counted
    /// …`): none, whatever was written. The API tests' teardown checks it after every test.
    pub async fn miscounted_sessions(&self) -> Result<Vec<String>> {
        let rows = sqlx::query("SELECT id, document_count, segment_count, annotated_count FROM sessions ORDER BY id")
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        let mut wrong = Vec::new();
        for row in rows {
            let id: i64 = row.try_get("id").map_err(db)?;
            let stored = Counts::read(&row)?;
            let counted = count(&self.pool, id).await?;
            if stored != counted {
                wrong.push(format!("session {id}: stored {stored:?}, counted {counted:?}"));
            }
        }
        Ok(wrong)
    }
}
