//! Tags and marks inside labeling sessions: what annotators put on segments (a class, a
//! label, or both, optionally on a part of the segment) and the marks that say a segment is
//! annotated, including the tags and marks that documents bring along when they arrive
//! labeled ([`add_labeled`]) or that their attributes imply ([`auto_tag`]). Every write that can change a session's progress recomputes its status in the
//! same transaction ([`crate::session_counts`]).

use crate::documents::insert_document;
use crate::records::{FromAnyRow, fetch_record, from_row};
use crate::session_counts::Counts;
use crate::sessions::{LabeledDocument, MAX_TAGS_PER_SEGMENT, MarkTarget, Session, Vocabulary, add_session_documents};
use crate::{Param, Store, db, numbered};
use lector_core::labeling::{self, TagNames};
use lector_core::time::Timestamp;
use lector_core::{Action, Error, ProjectType, Result, Scope};
use sqlx::any::AnyRow;
use sqlx::{Any, Row, Transaction};
use std::collections::HashMap;

/// A tag to put on a segment, by class and label name, optionally on a part of the segment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewTag {
    pub class: Option<String>,
    pub label: Option<String>,
    /// `[start, end)` in code points of the document text, inside the segment.
    pub part: Option<(i64, i64, String)>,
}

impl From<TagNames> for NewTag {
    fn from(t: TagNames) -> Self {
        Self {
            class: t.class,
            label: t.label,
            part: None,
        }
    }
}

/// A tag as stored, with its class and label names.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentTag {
    pub id: i64,
    pub session_id: i64,
    pub segment_id: i64,
    pub class: Option<String>,
    pub label: Option<String>,
    pub span: Option<(i64, i64)>,
    pub text: Option<String>,
    pub created: Timestamp,
    /// Correction sessions: the model's confidence in a tag it predicted.
    pub confidence: Option<f64>,
    /// Correction sessions: CORRECTING until a person confirms the tag READY.
    pub status: Option<String>,
}

const TAG_COLUMNS: &str = "t.id, t.session_id, t.segment_id, c.name AS class_name, l.name AS label_name, \
     t.span_start, t.span_end, t.text, t.created, t.confidence, t.status";
const TAG_JOINS: &str =
    "segment_tags t LEFT JOIN classes c ON c.id = t.class_id LEFT JOIN labels l ON l.id = t.label_id";

impl FromAnyRow for SegmentTag {
    fn from_row(row: &AnyRow) -> Result<Self, sqlx::Error> {
        let start: Option<i64> = row.try_get("span_start")?;
        let end: Option<i64> = row.try_get("span_end")?;
        Ok(Self {
            id: row.try_get("id")?,
            session_id: row.try_get("session_id")?,
            segment_id: row.try_get("segment_id")?,
            class: row.try_get("class_name")?,
            label: row.try_get("label_name")?,
            span: start.zip(end),
            text: row.try_get("text")?,
            created: Timestamp(row.try_get("created")?),
            confidence: row.try_get("confidence")?,
            status: row.try_get("status")?,
        })
    }
}

/// A segment marked annotated in a session.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentMark {
    pub session_id: i64,
    pub segment_id: i64,
    pub document_id: i64,
    pub name: String,
    pub created: Timestamp,
}

from_row! { SegmentMark { session_id, segment_id, document_id, name, created } }

impl Store {
    /// The tags on segments read through a scoped call: of one session, or of every session
    /// when `session` is `None`.
    pub async fn tags_of(&self, segments: &[crate::Segment], session: Option<&Session>) -> Result<Vec<SegmentTag>> {
        let ids: Vec<i64> = segments.iter().map(|s| s.id).collect();
        self.tags_by_segment_ids(&ids, session.map(|s| s.id)).await
    }

    /// The tags on segments whose ids the store has already checked.
    pub(crate) async fn tags_by_segment_ids(
        &self,
        segment_ids: &[i64],
        session_id: Option<i64>,
    ) -> Result<Vec<SegmentTag>> {
        let mut tags = Vec::new();
        for chunk in segment_ids.chunks(500) {
            let mut params: Vec<Param> = chunk.iter().map(|id| Param::Int(*id)).collect();
            let places = numbered(1, chunk.len());
            let mut sql = format!("SELECT {TAG_COLUMNS} FROM {TAG_JOINS} WHERE t.segment_id IN ({places})");
            if let Some(session_id) = session_id {
                params.push(Param::Int(session_id));
                sql.push_str(&format!(" AND t.session_id = ${}", params.len()));
            }
            sql.push_str(" ORDER BY t.segment_id, t.id");
            let rows = Param::bind_all(sqlx::query(&sql), params)
                .fetch_all(&self.pool)
                .await
                .map_err(db)?;
            for row in &rows {
                tags.push(SegmentTag::decode(row)?);
            }
        }
        Ok(tags)
    }

    /// The marks of a session on segments read through a scoped call.
    pub async fn marks_of(&self, session: &Session, segments: &[crate::Segment]) -> Result<Vec<SegmentMark>> {
        let ids: Vec<i64> = segments.iter().map(|s| s.id).collect();
        self.marks_by_segment_ids(session.id, &ids).await
    }

    /// The marks of a session on segments whose ids the store has already checked.
    pub(crate) async fn marks_by_segment_ids(&self, session_id: i64, segment_ids: &[i64]) -> Result<Vec<SegmentMark>> {
        let mut marks = Vec::new();
        for chunk in segment_ids.chunks(500) {
            let places = numbered(2, chunk.len());
            let sql = format!(
                "SELECT session_id, segment_id, document_id, name, created FROM segment_statuses \
                 WHERE session_id = $1 AND segment_id IN ({places}) ORDER BY segment_id"
            );
            let mut params = vec![Param::Int(session_id)];
            params.extend(chunk.iter().map(|id| Param::Int(*id)));
            let rows = Param::bind_all(sqlx::query(&sql), params)
                .fetch_all(&self.pool)
                .await
                .map_err(db)?;
            for row in &rows {
                marks.push(SegmentMark::decode(row)?);
            }
        }
        Ok(marks)
    }

    /// A segment of a document of a session, checked all the way down.
    async fn session_segment(
        &self,
        scope: &Scope,
        at: SegmentAt,
        action: Action,
    ) -> Result<(Session, crate::Document, crate::Segment)> {
        let (session, document) = self
            .session_document(scope, at.project_id, at.session_id, at.document_id, action)
            .await?;
        let segment = self
            .segments_by_document(&[document.id])
            .await?
            .into_iter()
            .find(|s| s.id == at.segment_id)
            .ok_or_else(|| Error::not_found("segment"))?;
        Ok((session, document, segment))
    }

    /// A segment's mark in its session (`None` while it is not marked), with the session as it
    /// now stands.
    pub async fn segment_mark(&self, scope: &Scope, at: SegmentAt) -> Result<(Session, Option<SegmentMark>)> {
        let (session, _, segment) = self.session_segment(scope, at, Action::Read).await?;
        let mark = self.marks_by_segment_ids(session.id, &[segment.id]).await?.pop();
        Ok((session, mark))
    }

    pub async fn segment_tags(&self, scope: &Scope, at: SegmentAt) -> Result<Vec<SegmentTag>> {
        let (session, _, segment) = self.session_segment(scope, at, Action::Read).await?;
        self.tags_by_segment_ids(&[segment.id], Some(session.id)).await
    }

    /// Puts a tag on a segment. The same tag twice, or a second label in a LABEL project, is a
    /// conflict. The segment is locked while its tags are checked and the new one is written, so
    /// concurrent requests cannot all find the segment free.
    pub async fn add_segment_tag(&self, scope: &Scope, at: SegmentAt, tag: NewTag) -> Result<SegmentTag> {
        let (session, _, segment) = self.session_segment(scope, at, Action::Annotate).await?;
        let vocabulary = self.session_vocabulary(&session).await?;
        let ids = vocabulary.resolve(&tag, "tag")?;
        let mut tx = self.begin_write().await?;
        crate::hold_project(&mut tx, session.project_id).await?;
        crate::lock_row(&mut tx, ("segments", segment.id)).await?;
        let id = insert_tag(
            &mut tx,
            session.id,
            segment.id,
            scope.user_id,
            ids,
            &tag,
            vocabulary.kind,
        )
        .await?;
        tx.commit().await.map_err(db)?;
        self.tag_by_id(session.id, segment.id, id).await
    }

    /// Changes a tag's class, label or part, checking it against the segment's other tags under
    /// the segment's lock as [`Store::add_segment_tag`] does (no duplicate; in a LABEL project,
    /// no whole-segment label beside another). A change loses the tag's confidence and status
    /// (a predicted tag's), which were the model's and a confirmation of what it said.
    pub async fn update_segment_tag(
        &self,
        scope: &Scope,
        at: SegmentAt,
        tag_id: i64,
        tag: NewTag,
    ) -> Result<SegmentTag> {
        let (session, _, segment) = self.session_segment(scope, at, Action::Annotate).await?;
        self.tag_by_id(session.id, segment.id, tag_id).await?;
        let vocabulary = self.session_vocabulary(&session).await?;
        let (class_id, label_id) = vocabulary.resolve(&tag, "tag")?;
        let mut tx = self.begin_write().await?;
        crate::hold_project(&mut tx, session.project_id).await?;
        crate::lock_row(&mut tx, ("segments", segment.id)).await?;
        let others = tags_beside(&mut tx, session.id, segment.id, Some(tag_id)).await?;
        may_stand_beside(&others, TagPlace::of((class_id, label_id), &tag), vocabulary.kind)?;
        let (start, end, text) = split_part(&tag.part);
        // A predicted tag (a correction session's) changed to say something else is the
        // person's, as one they add: the model's confidence and its confirmation no longer
        // hold for it. Every expression reads the row as it was.
        let unchanged = "COALESCE(class_id, -1) = COALESCE(CAST($1 AS BIGINT), -1) \
             AND COALESCE(label_id, -1) = COALESCE(CAST($2 AS BIGINT), -1) \
             AND COALESCE(span_start, -1) = COALESCE(CAST($3 AS BIGINT), -1) \
             AND COALESCE(span_end, -1) = COALESCE(CAST($4 AS BIGINT), -1)";
        let sql = format!(
            "UPDATE segment_tags SET confidence = CASE WHEN {unchanged} THEN confidence ELSE NULL END, \
             status = CASE WHEN {unchanged} THEN status ELSE NULL END, \
             class_id = $1, label_id = $2, span_start = $3, span_end = $4, text = $5 WHERE id = $6"
        );
        sqlx::query(&sql)
            .bind(class_id)
            .bind(label_id)
            .bind(start)
            .bind(end)
            .bind(text)
            .bind(tag_id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        self.tag_by_id(session.id, segment.id, tag_id).await
    }

    pub async fn delete_segment_tag(&self, scope: &Scope, at: SegmentAt, tag_id: i64) -> Result<SegmentTag> {
        let (session, _, segment) = self.session_segment(scope, at, Action::Annotate).await?;
        let tag = self.tag_by_id(session.id, segment.id, tag_id).await?;
        sqlx::query("DELETE FROM segment_tags WHERE id = $1")
            .bind(tag.id)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(tag)
    }

    async fn tag_by_id(&self, session_id: i64, segment_id: i64, tag_id: i64) -> Result<SegmentTag> {
        let sql = format!(
            "SELECT {TAG_COLUMNS} FROM {TAG_JOINS} WHERE t.id = $1 AND t.session_id = $2 AND t.segment_id = $3"
        );
        let query = sqlx::query(&sql).bind(tag_id).bind(session_id).bind(segment_id);
        fetch_record(query, &self.pool, "tag").await
    }

    /// Marks a segment, a page or a whole document of a session annotated; marking again keeps
    /// the first mark. Answers the marks of the target and the session as it now stands.
    pub async fn mark_annotated(
        &self,
        scope: &Scope,
        project_id: i64,
        session_id: i64,
        document_id: i64,
        target: MarkTarget,
    ) -> Result<(Vec<SegmentMark>, Session)> {
        let (session, document) = self
            .session_document(scope, project_id, session_id, document_id, Action::Annotate)
            .await?;
        let segments = self.segments_by_document(&[document.id]).await?;
        let chosen: Vec<i64> = match target {
            MarkTarget::Segment(id) => {
                let segment = segments
                    .iter()
                    .find(|s| s.id == id)
                    .ok_or_else(|| Error::not_found("segment"))?;
                vec![segment.id]
            }
            MarkTarget::Page(page) => {
                let pages = labeling::page_spans(&document.text);
                let (start, end) = usize::try_from(page)
                    .ok()
                    .and_then(|p| pages.get(p).copied())
                    .ok_or_else(|| Error::not_found("page"))?;
                // A blank page's segment is empty, at the page's place (a PDF's segment n is
                // its page n): it is that page's, though it overlaps nothing.
                let blank_page_segment = |s: &&crate::Segment| start == end && s.start == start && s.end == start;
                segments
                    .iter()
                    .filter(|s| (s.start < end.max(start + 1) && s.end > start) || blank_page_segment(s))
                    .map(|s| s.id)
                    .collect()
            }
            MarkTarget::Document => segments.iter().map(|s| s.id).collect(),
        };
        let mut tx = self.begin_write().await?;
        crate::session_counts::lock_session(&mut tx, session.id).await?;
        let added = mark_segments(&mut tx, session.id, document.id, scope.user_id, &chosen).await?;
        crate::session_counts::add_marks(&mut tx, session.id, added).await?;
        tx.commit().await.map_err(db)?;
        let marks = self.marks_by_segment_ids(session.id, &chosen).await?;
        let session = self.session_of(session.project_id, session.id).await?;
        Ok((marks, session))
    }
}

/// Where a segment sits: project, session, document and segment ids from a path.
#[derive(Debug, Clone, Copy)]
pub struct SegmentAt {
    pub project_id: i64,
    pub session_id: i64,
    pub document_id: i64,
    pub segment_id: i64,
}

fn split_part(part: &Option<(i64, i64, String)>) -> (Option<i64>, Option<i64>, Option<String>) {
    match part {
        Some((start, end, text)) => (Some(*start), Some(*end), Some(text.clone())),
        None => (None, None, None),
    }
}

/// What a tag names and the part of its segment it covers: what the rules of a segment's tags
/// compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TagPlace {
    class_id: Option<i64>,
    label_id: Option<i64>,
    start: Option<i64>,
    end: Option<i64>,
}

impl TagPlace {
    fn of((class_id, label_id): (Option<i64>, Option<i64>), tag: &NewTag) -> Self {
        let (start, end, _) = split_part(&tag.part);
        Self {
            class_id,
            label_id,
            start,
            end,
        }
    }
}

/// The class, label and span of the tags a segment carries in a session, but `except` (a tag
/// being changed).
async fn tags_beside(
    tx: &mut Transaction<'static, Any>,
    session_id: i64,
    segment_id: i64,
    except: Option<i64>,
) -> Result<Vec<TagPlace>> {
    let rows = sqlx::query(
        "SELECT class_id, label_id, span_start, span_end FROM segment_tags \
         WHERE session_id = $1 AND segment_id = $2 AND id <> $3",
    )
    .bind(session_id)
    .bind(segment_id)
    .bind(except.unwrap_or(0))
    .fetch_all(&mut **tx)
    .await
    .map_err(db)?;
    let place = |row: &AnyRow| -> std::result::Result<TagPlace, sqlx::Error> {
        Ok(TagPlace {
            class_id: row.try_get("class_id")?,
            label_id: row.try_get("label_id")?,
            start: row.try_get("span_start")?,
            end: row.try_get("span_end")?,
        })
    };
    rows.iter().map(|row| place(row).map_err(db)).collect()
}

/// Refuses `tag` beside the segment's `existing` tags (409): the same tag again, or in a LABEL
/// project a label of the whole segment beside any other, or a part's label beside a
/// whole-segment one (labels of parts, the fields of a page, may be many).
fn may_stand_beside(existing: &[TagPlace], tag: TagPlace, kind: ProjectType) -> Result<()> {
    if existing.contains(&tag) {
        return Err(Error::conflict("the segment carries this tag already"));
    }
    let clashes = match tag.start {
        // A whole-segment label: the segment's only label.
        None => !existing.is_empty(),
        // A label of a part: beside other parts' labels, never beside a whole-segment one.
        Some(_) => existing.iter().any(|other| other.start.is_none()),
    };
    if kind == ProjectType::Label && clashes {
        return Err(Error::conflict(
            "a segment of a LABEL project has one label; change its tag instead",
        ));
    }
    Ok(())
}

/// Refuses `tag` as a new tag of a segment that carries `existing` (409): past the segment's
/// limit of tags, or where it may not stand beside them ([`may_stand_beside`]).
fn may_join(existing: &[TagPlace], tag: TagPlace, kind: ProjectType) -> Result<()> {
    if existing.len() as i64 >= MAX_TAGS_PER_SEGMENT {
        return Err(Error::conflict(format!(
            "a segment carries at most {MAX_TAGS_PER_SEGMENT} tags"
        )));
    }
    may_stand_beside(existing, tag, kind)
}

/// Inserts one tag after checking it is new on the segment (and, in a LABEL project, that a
/// label of the whole segment is its only one; labels of parts, the fields of a page, may be
/// many) and that the segment is under the per-segment limit. The checks hold only if no other
/// transaction tags the segment meanwhile: the caller locks the segment
/// ([`crate::lock_row`]) or tags a session or segments its own transaction has just made.
pub(crate) async fn insert_tag(
    tx: &mut Transaction<'static, Any>,
    session_id: i64,
    segment_id: i64,
    user_id: i64,
    (class_id, label_id): (Option<i64>, Option<i64>),
    tag: &NewTag,
    kind: ProjectType,
) -> Result<i64> {
    let existing = tags_beside(tx, session_id, segment_id, None).await?;
    may_join(&existing, TagPlace::of((class_id, label_id), tag), kind)?;
    let (start, end, text) = split_part(&tag.part);
    sqlx::query_scalar(
        "INSERT INTO segment_tags (session_id, segment_id, class_id, label_id, span_start, span_end, text, user_id, created) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
    )
    .bind(session_id)
    .bind(segment_id)
    .bind(class_id)
    .bind(label_id)
    .bind(start)
    .bind(end)
    .bind(text)
    .bind(user_id)
    .bind(Timestamp::now().micros())
    .fetch_one(&mut **tx)
    .await
    .map_err(db)
}

/// Marks segments annotated in a session, keeping a mark that is there already. Answers how many
/// marks are new.
pub(crate) async fn mark_segments(
    tx: &mut Transaction<'static, Any>,
    session_id: i64,
    document_id: i64,
    user_id: i64,
    segment_ids: &[i64],
) -> Result<u64> {
    let now = Timestamp::now().micros();
    let rows = segment_ids
        .iter()
        .map(|id| {
            vec![
                Param::Int(session_id),
                Param::Int(*id),
                Param::Int(document_id),
                Param::Text(labeling::ANNOTATED.into()),
                Param::Int(user_id),
                Param::Int(now),
            ]
        })
        .collect();
    crate::insert_many(
        tx,
        "segment_statuses",
        &["session_id", "segment_id", "document_id", "name", "user_id", "created"],
        rows,
        "ON CONFLICT (session_id, segment_id) DO NOTHING",
    )
    .await
}

/// Where labeled documents go: their project and group, the session, and who labeled them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LabeledTarget {
    pub project_id: i64,
    pub group_id: i64,
    pub session_id: i64,
    pub user_id: i64,
}

/// Stores new documents with their tags and marks, as part of a session. With `first_position`
/// the documents take consecutive places in the group from there, and a document whose place
/// is taken (stored by an earlier run of the same import) is skipped with its tags. Answers
/// what the session gained: the new documents, their segments and their marks.
pub(crate) async fn add_labeled(
    tx: &mut Transaction<'static, Any>,
    target: LabeledTarget,
    vocabulary: &Vocabulary,
    first_position: Option<i64>,
    labeled: &[LabeledDocument],
) -> Result<Counts> {
    let mut added = Counts::default();
    let (mut tags, now) = (Vec::new(), Timestamp::now().micros());
    for (i, item) in labeled.iter().enumerate() {
        let position = first_position.map(|first| first + i as i64);
        let inserted =
            insert_document(tx, target.project_id, Some((target.group_id, position)), &item.document).await?;
        let document_id = match (inserted, position) {
            (Some(id), _) => id,
            (None, Some(_)) => continue,
            (None, None) => return Err(Error::internal()),
        };
        let session_id = target.session_id;
        add_session_documents(tx, session_id, &[document_id]).await?;
        let segment_ids: Vec<i64> =
            sqlx::query_scalar("SELECT id FROM segments WHERE document_id = $1 ORDER BY position")
                .bind(document_id)
                .fetch_all(&mut **tx)
                .await
                .map_err(db)?;
        let mut annotated = Vec::new();
        let field = format!("documents[{}].tags", position.unwrap_or(i as i64));
        for (at, segment_id) in segment_ids.iter().enumerate() {
            // The document was made in this transaction, so its segments carry only the tags
            // put on them here: checked in memory, written many to a statement.
            let mut placed = Vec::new();
            for tag in item.tags.get(at).map(Vec::as_slice).unwrap_or_default() {
                let ids = vocabulary.resolve(tag, &field)?;
                let place = TagPlace::of(ids, tag);
                // Tags of the input that clash are a fault of the input (422), not of the
                // session's state (409). Named by the document, with its segment's place: a
                // document's own tags stand on each of its segments, given or not.
                may_join(&placed, place, vocabulary.kind).map_err(|e| {
                    let document = format!("documents[{}]", position.unwrap_or(i as i64));
                    let detail = format!("the tags of its segment {at} (from 0): {}", e.detail);
                    Error::validation(vec![lector_core::FieldError::new(document, detail)])
                })?;
                placed.push(place);
                tags.push(tag_row(target, *segment_id, place, tag, now));
            }
            if item.annotated.get(at).copied().unwrap_or(false) {
                annotated.push(*segment_id);
            }
        }
        if tags.len() >= TAG_ROWS_PER_WRITE {
            insert_tags(tx, std::mem::take(&mut tags)).await?;
        }
        let marked = mark_segments(tx, session_id, document_id, target.user_id, &annotated).await?;
        added.documents += 1;
        added.segments += segment_ids.len() as i64;
        added.annotated += marked as i64;
    }
    insert_tags(tx, tags).await?;
    Ok(added)
}

/// How many tags of labeled documents are gathered before they are written: a few statements'
/// worth, so that the rows waiting in memory stay few however many tags a request brings.
const TAG_ROWS_PER_WRITE: usize = 10_000;

/// A new tag of `segment_id`, by `target`'s user, as [`insert_tags`] writes it.
fn tag_row(target: LabeledTarget, segment_id: i64, place: TagPlace, tag: &NewTag, now: i64) -> Vec<Param> {
    let (_, _, text) = split_part(&tag.part);
    vec![
        Param::Int(target.session_id),
        Param::Int(segment_id),
        Param::MaybeInt(place.class_id),
        Param::MaybeInt(place.label_id),
        Param::MaybeInt(place.start),
        Param::MaybeInt(place.end),
        Param::MaybeText(text),
        Param::Int(target.user_id),
        Param::Int(now),
    ]
}

/// Writes tags checked already ([`tag_row`]), many to a statement.
async fn insert_tags(tx: &mut Transaction<'static, Any>, rows: Vec<Vec<Param>>) -> Result<()> {
    let columns = [
        "session_id",
        "segment_id",
        "class_id",
        "label_id",
        "span_start",
        "span_end",
        "text",
        "user_id",
        "created",
    ];
    crate::insert_many(tx, "segment_tags", &columns, rows, "").await?;
    Ok(())
}

/// Tags and marks the documents whose attributes name the session's classes or labels.
pub(crate) async fn auto_tag(
    tx: &mut Transaction<'static, Any>,
    session_id: i64,
    user_id: i64,
    vocabulary: &Vocabulary,
    document_ids: &[i64],
) -> Result<()> {
    let (classes, labels) = (vocabulary.class_names(), vocabulary.label_names());
    for chunk in document_ids.chunks(500) {
        let places = numbered(1, chunk.len());
        let sql = format!("SELECT id, meta FROM documents WHERE id IN ({places})");
        let params = chunk.iter().map(|id| Param::Int(*id)).collect();
        let rows = Param::bind_all(sqlx::query(&sql), params)
            .fetch_all(&mut **tx)
            .await
            .map_err(db)?;
        for row in rows {
            let id: i64 = row.try_get("id").map_err(db)?;
            let meta: String = row.try_get("meta").map_err(db)?;
            let meta: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&meta).unwrap_or_default();
            let tags = labeling::implied_tags(vocabulary.kind, &meta, &classes, &labels);
            if tags.is_empty() {
                continue;
            }
            let segment_ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM segments WHERE document_id = $1")
                .bind(id)
                .fetch_all(&mut **tx)
                .await
                .map_err(db)?;
            for segment_id in &segment_ids {
                for tag in &tags {
                    let tag = NewTag::from(tag.clone());
                    let ids = vocabulary.resolve(&tag, "auto")?;
                    insert_tag(tx, session_id, *segment_id, user_id, ids, &tag, vocabulary.kind).await?;
                }
            }
            mark_segments(tx, session_id, id, user_id, &segment_ids).await?;
        }
    }
    Ok(())
}

/// Groups tags by segment id, for shaping answers.
pub fn tags_by_segment(tags: Vec<SegmentTag>) -> HashMap<i64, Vec<SegmentTag>> {
    let mut map: HashMap<i64, Vec<SegmentTag>> = HashMap::new();
    for tag in tags {
        map.entry(tag.segment_id).or_default().push(tag);
    }
    map
}
