//! A whole session read for a download, a page at a time. A page ends at a number of documents
//! or of characters, whichever comes first, so what it holds stays bounded however long the
//! documents: by documents alone, a page of 500 documents of a million characters each was
//! 500 MB of text, read twice (the documents and their segments).

use crate::{Segment, Session, Store, db};
use lector_core::Result;

impl Store {
    /// The segments of the documents of `session` (read through a scoped check) after the
    /// document `after` (keyset: `id > after`), in document and position order: at most
    /// `max_documents` documents holding at most `max_chars` characters of text, but always at
    /// least one document; and the keyset of the next page, `None` after the last.
    pub async fn session_segments_after(
        &self,
        session: &Session,
        after: i64,
        max_documents: i64,
        max_chars: i64,
    ) -> Result<(Vec<Segment>, Option<i64>)> {
        let documents: Vec<(i64, i64)> = sqlx::query_as(
            "SELECT d.id, CAST(LENGTH(d.text) AS BIGINT) FROM documents d \
             JOIN session_documents sd ON sd.document_id = d.id \
             WHERE sd.session_id = $1 AND d.id > $2 ORDER BY d.id LIMIT $3",
        )
        .bind(session.id)
        .bind(after)
        .bind(max_documents + 1)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        let taken = documents_within(&documents, max_documents, max_chars);
        let ids: Vec<i64> = documents[..taken].iter().map(|(id, _)| *id).collect();
        let next = ids.last().copied().filter(|_| taken < documents.len());
        Ok((self.segments_by_document(&ids).await?, next))
    }
}

/// How many of `documents` (id and characters, in page order) a page takes: at most
/// `max_documents`, holding at most `max_chars` characters, and at least one.
fn documents_within(documents: &[(i64, i64)], max_documents: i64, max_chars: i64) -> usize {
    let mut chars = 0;
    for (taken, (_, length)) in documents.iter().enumerate() {
        chars += length;
        if taken as i64 >= max_documents || (taken > 0 && chars > max_chars) {
            return taken;
        }
    }
    documents.len()
}

#[cfg(test)]
mod tests {
    use super::documents_within;

    #[test]
    fn a_page_ends_at_its_documents_or_its_characters() {
        let short = [(1, 10), (2, 10), (3, 10)];
        assert_eq!(documents_within(&short, 2, 1_000), 2);
        assert_eq!(documents_within(&short, 5, 1_000), 3);
        assert_eq!(documents_within(&short, 5, 25), 2);
        assert_eq!(documents_within(&short, 5, 20), 2, "the limit itself fits");
        let long = [(1, 5_000), (2, 10)];
        assert_eq!(
            documents_within(&long, 5, 1_000),
            1,
            "one document over the limit is a page"
        );
        assert_eq!(documents_within(&[], 5, 1_000), 0);
    }
}
