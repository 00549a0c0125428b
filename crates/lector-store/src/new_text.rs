//! A document's new text keeps what people said of the sentences it keeps.
//!
//! Editing a document re-splits its text. A segment whose text is still there (the same
//! characters, wherever it now stands) keeps its row, and with it the tags and marks sessions
//! gave it and what analyses and correction sessions predicted for it; its position, span and
//! layout follow the new text, and so do its tags' spans (offsets into the document's text).
//! The segments whose text is gone are deleted with everything said of them; the new ones come
//! without tags.

use crate::documents::{Document, NewDocument, NewSegment, Segment};
use crate::session_counts::DocumentSessions;
use crate::{Store, db};
use lector_core::{Action, Error, Result, Scope};
use sqlx::{Any, Transaction};
use std::collections::{HashMap, VecDeque};

/// A document's new text, and whether its meta and language were given with it or are the ones
/// it has. What was not given is not written back: a change of the meta made meanwhile stays.
#[derive(Debug, Clone)]
pub struct DocumentChange {
    pub document: NewDocument,
    /// False: the document keeps its meta as it is when the change is written.
    pub meta_given: bool,
    /// False: `document.language` is the one the document had when the change was prepared (its
    /// sentences were split in it); if another change set a different one meanwhile, this change
    /// is refused (409) rather than write sentences split in the wrong language.
    pub language_given: bool,
}

impl From<NewDocument> for DocumentChange {
    fn from(document: NewDocument) -> Self {
        DocumentChange {
            document,
            meta_given: true,
            language_given: true,
        }
    }
}

impl Store {
    /// Replaces a document's text and segments, and its meta and language when given. A segment
    /// whose text the new one keeps keeps its tags, marks and predictions; what was said of the
    /// others goes with them.
    pub async fn update_document(
        &self,
        scope: &Scope,
        project_id: i64,
        id: i64,
        change: impl Into<DocumentChange>,
    ) -> Result<(Document, Vec<Segment>)> {
        let change = change.into();
        let document = &change.document;
        let (project, _) = self.project_access(scope, project_id, Action::Edit).await?;
        let current = self.document_of(project.id, id).await?;
        let mut tx = self.begin_write().await?;
        crate::hold_project(&mut tx, project.id).await?;
        let sessions = DocumentSessions::before_new_text(&mut tx, current.id).await?;
        let same_language = if change.language_given {
            ""
        } else {
            " AND language = $3"
        };
        let sql = format!(
            "UPDATE documents SET text = $1, meta = COALESCE($2, meta), language = $3 WHERE id = $4{same_language}"
        );
        let written = sqlx::query(&sql)
            .bind(&document.text)
            .bind(change.meta_given.then(|| document.meta.to_string()))
            .bind(&document.language)
            .bind(current.id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        if written.rows_affected() == 0 {
            // Deleted meanwhile, or (a language not given) its language changed.
            let there: Option<i64> = sqlx::query_scalar("SELECT id FROM documents WHERE id = $1")
                .bind(current.id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db)?;
            return Err(match there {
                None => Error::not_found("document"),
                Some(_) => {
                    Error::conflict("the document's language was changed while this change was prepared; send it again")
                }
            });
        }
        replace_segments(&mut tx, current.id, &document.segments).await?;
        sessions.restore(&mut tx).await?;
        tx.commit().await.map_err(db)?;
        self.document_with_segments(project.id, id).await
    }
}

/// Replaces the segments of `document_id` by `segments`, keeping the rows of unchanged ones.
/// The caller holds the document's sessions ([`crate::session_counts::DocumentSessions`]).
pub(crate) async fn replace_segments(
    tx: &mut Transaction<'static, Any>,
    document_id: i64,
    segments: &[NewSegment],
) -> Result<()> {
    let old: Vec<(i64, i64, String)> =
        sqlx::query_as("SELECT id, span_start, text FROM segments WHERE document_id = $1 ORDER BY position")
            .bind(document_id)
            .fetch_all(&mut **tx)
            .await
            .map_err(db)?;
    let old_texts: Vec<&str> = old.iter().map(|(_, _, text)| text.as_str()).collect();
    let new_texts: Vec<&str> = segments.iter().map(|s| s.text.as_str()).collect();
    let kept = kept_segments(&old_texts, &new_texts);
    // A kept segment first takes the negative of its new place (-1 - position), which no
    // segment holds, so (document_id, position) stays unique while the others go.
    for (position, (segment, old_index)) in segments.iter().zip(&kept).enumerate() {
        let Some(old_index) = old_index else { continue };
        let (id, old_start, _) = &old[*old_index];
        sqlx::query("UPDATE segments SET position = $2, span_start = $3, span_end = $4, layout = $5 WHERE id = $1")
            .bind(id)
            .bind(-1 - position as i64)
            .bind(segment.start)
            .bind(segment.end)
            .bind(&segment.layout)
            .execute(&mut **tx)
            .await
            .map_err(db)?;
        if segment.start != *old_start {
            sqlx::query(
                "UPDATE segment_tags SET span_start = span_start + $2, span_end = span_end + $2 WHERE segment_id = $1",
            )
            .bind(id)
            .bind(segment.start - old_start)
            .execute(&mut **tx)
            .await
            .map_err(db)?;
        }
    }
    // What is left at a place of its own is gone from the text, with what was said of it; the
    // kept ones then take their places.
    crate::documents::remove_placed_segments(tx, document_id).await?;
    sqlx::query("UPDATE segments SET position = -1 - position WHERE document_id = $1")
        .bind(document_id)
        .execute(&mut **tx)
        .await
        .map_err(db)?;
    for (position, (segment, old_index)) in segments.iter().zip(&kept).enumerate() {
        if old_index.is_none() {
            crate::documents::insert_segment(tx, document_id, position as i64, segment).await?;
        }
    }
    Ok(())
}

/// For each new segment, the old segment it keeps: one with the same text, each old one kept
/// at most once, in the order both stand (a sentence said twice keeps its first row first).
fn kept_segments(old: &[&str], new: &[&str]) -> Vec<Option<usize>> {
    let mut by_text: HashMap<&str, VecDeque<usize>> = HashMap::new();
    for (index, text) in old.iter().enumerate() {
        by_text.entry(text).or_default().push_back(index);
    }
    new.iter()
        .map(|text| by_text.get_mut(text).and_then(VecDeque::pop_front))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::kept_segments;

    #[test]
    fn the_same_text_keeps_its_segment_once_in_order() {
        let old = ["A.", "B.", "A.", "C."];
        let new = ["Z.", "A.", "C.", "A.", "A.", "B. changed"];
        assert_eq!(kept_segments(&old, &new), [None, Some(0), Some(3), Some(2), None, None]);
    }

    #[test]
    fn nothing_is_kept_of_a_new_text_or_for_an_empty_one() {
        assert_eq!(kept_segments(&["A."], &["B."]), [None]);
        assert!(kept_segments(&["A."], &[]).is_empty());
        assert_eq!(kept_segments(&[], &["A."]), [None]);
    }

    use crate::testing::{TestDatabase, one_segment_document, owner_with_project};
    use crate::{Backend, DocumentChange, Store};
    use lector_core::ProjectType;
    use serde_json::json;

    /// A change prepared from a document read before another change of its meta or language:
    /// the meta it did not give is the newer one, and a language it did not give but split
    /// its sentences in is refused once another change set a different one.
    async fn a_change_keeps_what_it_did_not_give(backend: Backend) {
        let Some(database) = TestDatabase::create(backend).await else {
            return;
        };
        let store = Store::open(&database.url, 4).await.expect("store");
        let (scope, _, project) = owner_with_project(&store, "Texts", ProjectType::Class).await;
        let mut original = one_segment_document("First text.");
        original.meta = json!({"external_id": "a-1"});
        let (read, _) = store
            .create_document(&scope, project.id, original)
            .await
            .expect("a document");

        // Meanwhile another client sets the meta.
        let mut with_meta = one_segment_document("First text.");
        with_meta.meta = json!({"external_id": "a-2"});
        store
            .update_document(&scope, project.id, read.id, with_meta)
            .await
            .expect("meta");

        // The text-only change, prepared from what was read first, keeps the newer meta.
        let mut text_only = one_segment_document("Second text.");
        text_only.meta = read.meta.clone();
        let change = DocumentChange {
            document: text_only,
            meta_given: false,
            language_given: false,
        };
        let (now, segments) = store
            .update_document(&scope, project.id, read.id, change)
            .await
            .expect("text");
        assert_eq!(
            (now.text.as_str(), now.meta.clone()),
            ("Second text.", json!({"external_id": "a-2"}))
        );
        assert_eq!(segments.len(), 1);

        // Another client sets the language; a change split in the old one is refused, unwritten.
        let mut german = one_segment_document("Zweiter Text.");
        german.language = "de".into();
        store
            .update_document(&scope, project.id, read.id, german)
            .await
            .expect("language");
        let stale = DocumentChange {
            document: one_segment_document("Third text."),
            meta_given: false,
            language_given: false,
        };
        let refused = store
            .update_document(&scope, project.id, read.id, stale)
            .await
            .unwrap_err();
        assert_eq!(refused.status(), 409, "{}", refused.detail);
        let kept = store.document(&scope, project.id, read.id).await.expect("the document");
        assert_eq!((kept.text.as_str(), kept.language.as_str()), ("Zweiter Text.", "de"));
    }

    #[tokio::test]
    async fn a_change_keeps_what_it_did_not_give_sqlite() {
        a_change_keeps_what_it_did_not_give(Backend::Sqlite).await;
    }

    #[tokio::test]
    async fn a_change_keeps_what_it_did_not_give_postgres() {
        a_change_keeps_what_it_did_not_give(Backend::Postgres).await;
    }
}
