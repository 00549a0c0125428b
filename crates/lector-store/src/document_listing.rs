//! Listing a project's documents: the filters every listing shares (text, group, labeling
//! session, analysis and the tags it found, coverage), one WHERE clause built for them, and
//! the page and count that use it.

use crate::document_pages::PageEnd;
use crate::documents::Document;
use crate::{Backend, Param, Store, db};
use lector_core::{Action, Result, Scope};

/// Which documents of a project to list.
#[derive(Debug, Clone, Default)]
pub struct DocumentFilter {
    /// Case-insensitive substring of the text (every letter, not only ASCII, on both backends);
    /// `%`, `_`, `*`, `?` and `[` match themselves.
    pub search: Option<String>,
    pub group_id: Option<i64>,
    /// Only documents in a group (`true`) or in none (`false`).
    pub grouped: Option<bool>,
    /// Only documents of this labeling session (which must belong to the project).
    pub session_id: Option<i64>,
    /// Only documents this analysis covers (which must belong to the project).
    pub analysis_id: Option<i64>,
    /// With `analysis_id`: only documents with a tag of the analysis whose class is one of
    /// these and (when given) whose label is one of `analysis_labels`: with both, one tag must
    /// match both (a pair type's "food, negative").
    pub analysis_classes: Vec<i64>,
    pub analysis_labels: Vec<i64>,
    /// Only documents some analysis covers (`true`) or none does (`false`).
    pub analysed: Option<bool>,
    /// Only documents after this id: the keyset of a reader that pages through every document
    /// (`WHERE id > last ORDER BY id`), whose cost does not grow with its position as an
    /// offset's does. Give it with offset 0.
    pub after: Option<i64>,
    /// Only these documents (at most 1,000 ids).
    pub ids: Option<Vec<i64>>,
}

impl Store {
    /// One page of a project's documents in id order, for a listing; answers the page and
    /// whether more follow. A page holding more than `MAX_LISTED_CHARS` characters of text is
    /// refused (400).
    pub async fn documents(
        &self,
        scope: &Scope,
        project_id: i64,
        filter: &DocumentFilter,
        offset: i64,
        limit: i64,
    ) -> Result<(Vec<Document>, bool)> {
        let page = (offset, limit, crate::MAX_LISTED_CHARS);
        let (documents, has_more, _) = self
            .documents_page(scope, project_id, filter, page, PageEnd::Refuse)
            .await?;
        Ok((documents, has_more))
    }

    /// The next documents of a project in id order for a reader that pages by keyset
    /// (`filter.after`): at most `limit`, ending early where they would hold more than
    /// `max_chars` characters of text (one document at least); and whether more follow. A page
    /// whose documents were all deleted before their text was read is passed over, not
    /// answered empty (which would end a reader early).
    pub async fn documents_to_read(
        &self,
        scope: &Scope,
        project_id: i64,
        filter: &DocumentFilter,
        (limit, max_chars): (i64, i64),
    ) -> Result<(Vec<Document>, bool)> {
        let mut filter = filter.clone();
        loop {
            let page = (0, limit, max_chars);
            let (documents, has_more, last) = self
                .documents_page(scope, project_id, &filter, page, PageEnd::Cut)
                .await?;
            match last {
                Some(last) if documents.is_empty() && has_more => filter.after = Some(last),
                _ => return Ok((documents, has_more)),
            }
        }
    }

    async fn documents_page(
        &self,
        scope: &Scope,
        project_id: i64,
        filter: &DocumentFilter,
        (offset, limit, max_chars): (i64, i64, i64),
        end: PageEnd,
    ) -> Result<(Vec<Document>, bool, Option<i64>)> {
        let (project, _) = self.project_access(scope, project_id, Action::Read).await?;
        let (conditions, params) = self.document_conditions(project.id, filter).await?;
        let picked = format!(
            "SELECT d.id, CAST(LENGTH(d.text) AS BIGINT) FROM documents d WHERE {conditions} \
             ORDER BY d.id LIMIT {} OFFSET {}",
            limit + 1,
            offset
        );
        self.documents_picked(&picked, params, (limit, max_chars), end).await
    }

    /// The WHERE clause of a document listing and its parameters (`$1` is the project).
    async fn document_conditions(&self, project_id: i64, filter: &DocumentFilter) -> Result<(String, Vec<Param>)> {
        let mut params = vec![Param::Int(project_id)];
        let mut conditions = vec!["d.project_id = $1".to_owned()];
        if let Some(search) = &filter.search {
            conditions.push(contains_any_case(self.backend, &["d.text"], search, &mut params));
        }
        if let Some(group_id) = filter.group_id {
            // A group of another project (or none) is not found, as a session or analysis is.
            let found: Option<i64> =
                sqlx::query_scalar("SELECT id FROM document_groups WHERE id = $1 AND project_id = $2")
                    .bind(group_id)
                    .bind(project_id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db)?;
            found.ok_or_else(|| lector_core::Error::not_found("document group"))?;
            params.push(Param::Int(group_id));
            conditions.push(format!("d.group_id = ${}", params.len()));
        }
        if let Some(session_id) = filter.session_id {
            self.session_of(project_id, session_id).await?;
            params.push(Param::Int(session_id));
            conditions.push(format!(
                "d.id IN (SELECT document_id FROM session_documents WHERE session_id = ${})",
                params.len()
            ));
        }
        if let Some(analysis_id) = filter.analysis_id {
            self.analysis_of(project_id, analysis_id).await?;
            params.push(Param::Int(analysis_id));
            let analysis = params.len();
            conditions.push(format!(
                "d.id IN (SELECT document_id FROM analysis_documents WHERE analysis_id = ${analysis})"
            ));
            let mut tagged = Vec::new();
            for (column, ids) in [
                ("class_id", &filter.analysis_classes),
                ("label_id", &filter.analysis_labels),
            ] {
                if ids.is_empty() {
                    continue;
                }
                let first = params.len() + 1;
                params.extend(ids.iter().map(|id| Param::Int(*id)));
                tagged.push(format!("t.{column} IN ({})", crate::numbered(first, ids.len())));
            }
            if !tagged.is_empty() {
                // Not correlated with `d`: the tagged documents are found once, through the
                // class or label index. A correlated EXISTS let SQLite walk every tag of the
                // class for every document (minutes for an analysis of 30,000 documents).
                conditions.push(format!(
                    "d.id IN (SELECT t.document_id FROM analysis_tags t WHERE t.analysis_id = ${analysis} \
                     AND {})",
                    tagged.join(" AND ")
                ));
            }
        }
        if let Some(ids) = &filter.ids {
            if ids.is_empty() {
                conditions.push("1 = 0".into());
            } else {
                let first = params.len() + 1;
                params.extend(ids.iter().map(|id| Param::Int(*id)));
                conditions.push(format!("d.id IN ({})", crate::numbered(first, ids.len())));
            }
        }
        if let Some(after) = filter.after {
            params.push(Param::Int(after));
            conditions.push(format!("d.id > ${}", params.len()));
        }
        let covered = "EXISTS (SELECT 1 FROM analysis_documents ad WHERE ad.document_id = d.id)";
        match filter.analysed {
            Some(true) => conditions.push(covered.into()),
            Some(false) => conditions.push(format!("NOT {covered}")),
            None => {}
        }
        match filter.grouped {
            Some(true) => conditions.push("d.group_id IS NOT NULL".into()),
            Some(false) => conditions.push("d.group_id IS NULL".into()),
            None => {}
        }
        Ok((conditions.join(" AND "), params))
    }
}

/// The condition that one of `columns` contains `search` in any case of its letters, binding
/// its pattern as the next parameter. PostgreSQL compares `LOWER(column)` (Unicode-aware in a
/// UTF-8 database) with the search lowered here. SQLite's `LOWER` and `LIKE` fold ASCII
/// letters only, so "Ärger" would never be found by "ärger"; there the search becomes a GLOB
/// pattern in which each letter of the lowered search is a set of itself and its capital
/// (`[äÄ][rR]...`), matched against the text as stored: the same matches for every letter
/// whose capital is one letter.
pub(crate) fn contains_any_case(backend: Backend, columns: &[&str], search: &str, params: &mut Vec<Param>) -> String {
    let lowered = search.to_lowercase();
    let (pattern, compare) = match backend {
        Backend::Postgres => (
            format!("%{}%", escape_like(&lowered)),
            "LOWER({column}) LIKE {p} ESCAPE '\\'",
        ),
        Backend::Sqlite => (format!("*{}*", glob_any_case(&lowered)), "{column} GLOB {p}"),
    };
    params.push(Param::Text(pattern));
    let p = format!("${}", params.len());
    let each: Vec<String> = columns
        .iter()
        .map(|column| compare.replace("{column}", column).replace("{p}", &p))
        .collect();
    format!("({})", each.join(" OR "))
}

/// A GLOB pattern matching `lowered` with each letter in either case: a letter with a one-letter
/// capital becomes the set of both, and `*`, `?` and `[` a set of themselves, which matches
/// them literally.
fn glob_any_case(lowered: &str) -> String {
    let mut out = String::with_capacity(lowered.len() * 4);
    for c in lowered.chars() {
        let mut upper = c.to_uppercase();
        match (upper.next(), upper.next()) {
            (Some(u), None) if u != c => {
                out.extend(['[', c, u, ']']);
            }
            _ if matches!(c, '*' | '?' | '[') => out.extend(['[', c, ']']),
            _ => out.push(c),
        }
    }
    out
}

/// `%`, `_` and `\` match themselves in a LIKE pattern with `ESCAPE '\'`.
fn escape_like(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
