//! Pages of documents held to a number of characters as well as of documents, so what a page
//! holds stays bounded however long the documents: by documents alone, a page of a download
//! (500) or of a listing (up to 1,000) of documents of a million characters each was 0.5 to
//! 1 GB of text, read twice (the documents and their segments).
//!
//! A reader's page (a download's, read by keyset) ends where the characters run out
//! ([`PageEnd::Cut`]); a listing's page, whose client asked for `limit` documents from
//! `offset`, is refused instead (400 naming the limit that fits, [`PageEnd::Refuse`]), as a
//! shorter page would make a client that steps by its limit skip documents.

use crate::documents::{DOCUMENT_COLUMNS, Document};
use crate::records::FromAnyRow;
use crate::{Param, Segment, Session, Store, db, numbered};
use lector_core::{Error, ErrorCode, Result};
use sqlx::Row;
use std::collections::HashMap;

/// Characters of text a page of a document listing may hold (a document holds at most
/// `MAX_DOCUMENT_CHARS`, a million).
pub const MAX_LISTED_CHARS: i64 = 32 << 20;

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

impl Store {
    /// Fails (404) once `session` was deleted: a reader paging through it (a download) checks
    /// before each page, so a deletion midway ends the file with an error, not as if complete.
    pub async fn session_still_readable(&self, session: &Session) -> Result<()> {
        let found: Option<i64> = sqlx::query_scalar("SELECT id FROM sessions WHERE id = $1 AND project_id = $2")
            .bind(session.id)
            .bind(session.project_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        found
            .map(|_| ())
            .ok_or_else(|| Error::not_found("labeling session (deleted while it was read)"))
    }

    /// The status of a group of the caller's project (PROCESSING while an import fills it), or
    /// 404 once it was deleted; cheaper than [`Store::group`], which counts its documents, for
    /// a reader that checks before each page.
    pub async fn group_status(&self, scope: &lector_core::Scope, project_id: i64, group_id: i64) -> Result<String> {
        let (project, _) = self
            .project_access(scope, project_id, lector_core::Action::Read)
            .await?;
        let status: Option<String> =
            sqlx::query_scalar("SELECT status FROM document_groups WHERE id = $1 AND project_id = $2")
                .bind(group_id)
                .bind(project.id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db)?;
        status.ok_or_else(|| Error::not_found("document group"))
    }
}

/// What a page of documents does when its documents hold more characters than it may (for a
/// listing, [`MAX_LISTED_CHARS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PageEnd {
    /// Refused (400, naming the limit that fits): a listing asked for `limit` from `offset`.
    Refuse,
    /// Ends before the document that would pass it (one document at least), and says more
    /// follow: a reader paging by keyset (`after`) goes on from the last document it got.
    Cut,
}

impl Store {
    /// The documents a listing or reader picked, in its order: `picked` selects their ids and
    /// lengths (`SELECT d.id, CAST(LENGTH(d.text) AS BIGINT) … LIMIT limit + 1 OFFSET …`) with
    /// `params`; answers the page of at most `limit`, whether more follow, and the last id the
    /// page picked (a reader goes on after it even when those documents were deleted before
    /// their text was read). A page holding more than `max_chars` characters is refused or cut
    /// short (`end`) before any text is read.
    pub(crate) async fn documents_picked(
        &self,
        picked: &str,
        params: Vec<Param>,
        (limit, max_chars): (i64, i64),
        end: PageEnd,
    ) -> Result<(Vec<Document>, bool, Option<i64>)> {
        let rows = Param::bind_all(sqlx::query(picked), params)
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        let mut page = Vec::with_capacity(rows.len());
        for row in &rows {
            page.push((
                row.try_get::<i64, _>(0).map_err(db)?,
                row.try_get::<i64, _>(1).map_err(db)?,
            ));
        }
        let mut has_more = page.len() as i64 > limit;
        page.truncate(limit.max(0) as usize);
        let chars: i64 = page.iter().map(|(_, length)| length).sum();
        if chars > max_chars && end == PageEnd::Cut {
            page.truncate(documents_within(&page, limit, max_chars));
            has_more = true;
        } else if chars > max_chars {
            let fits = documents_within(&page, limit, max_chars);
            return Err(Error::new(
                ErrorCode::InvalidParameter,
                format!(
                    "the {} documents of this page hold {chars} characters of text, more than the \
                     {max_chars} a page may hold: ask for at most {fits} with limit",
                    page.len()
                ),
            ));
        }
        let mut found: HashMap<i64, Document> = HashMap::with_capacity(page.len());
        for chunk in page.chunks(500) {
            let sql = format!(
                "SELECT {DOCUMENT_COLUMNS} FROM documents d WHERE d.id IN ({})",
                numbered(1, chunk.len())
            );
            let ids = chunk.iter().map(|(id, _)| Param::Int(*id)).collect();
            for row in Param::bind_all(sqlx::query(&sql), ids)
                .fetch_all(&self.pool)
                .await
                .map_err(db)?
            {
                let document = Document::decode(&row)?;
                found.insert(document.id, document);
            }
        }
        // A document deleted between the two reads is left out of the page.
        let last_picked = page.last().map(|(id, _)| *id);
        let documents = page.iter().filter_map(|(id, _)| found.remove(id)).collect();
        Ok((documents, has_more, last_picked))
    }
}

/// How many of `documents` (id and characters, in page order) a page takes: at most
/// `max_documents`, holding at most `max_chars` characters, and at least one.
pub(crate) fn documents_within(documents: &[(i64, i64)], max_documents: i64, max_chars: i64) -> usize {
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
