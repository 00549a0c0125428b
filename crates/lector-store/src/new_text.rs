//! A document's new text keeps what people said of the sentences it keeps.
//!
//! Editing a document re-splits its text. A segment whose text is still there (the same
//! characters, wherever it now stands) keeps its row, and with it the tags and marks sessions
//! gave it and what analyses and correction sessions predicted for it; its position, span and
//! layout follow the new text, and so do its tags' spans (offsets into the document's text).
//! The segments whose text is gone are deleted with everything said of them; the new ones come
//! without tags.

use crate::db;
use crate::documents::NewSegment;
use sqlx::{Any, Transaction};
use std::collections::{HashMap, VecDeque};

/// Replaces the segments of `document_id` by `segments`, keeping the rows of unchanged ones.
/// The caller holds the document's sessions ([`crate::session_counts::DocumentSessions`]).
pub(crate) async fn replace_segments(
    tx: &mut Transaction<'static, Any>,
    document_id: i64,
    segments: &[NewSegment],
) -> crate::Result<()> {
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
}
