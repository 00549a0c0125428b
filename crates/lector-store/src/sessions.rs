//! Labeling sessions: the documents they cover, the classes and labels they offer, the tags
//! annotators put on segments, and the marks that say a segment is annotated.
//!
//! A session's status and progress follow from its marks (see `lector_core::labeling`): every
//! write that can change them brings the counts on the session's row and its status up to date
//! in the same transaction (see `session_counts`).

use crate::documents::{NewDocument, insert_group, project_documents};
use crate::records::{
    CLASS_COLUMNS, Class, FromAnyRow, LABEL_COLUMNS, Label, Project, fetch_record, fetch_records, from_row,
};
use crate::session_counts::refresh_status;
use crate::tags::{LabeledTarget, NewTag, add_labeled, auto_tag};
use crate::{Param, Store, db};
use lector_core::labeling::{self, SessionMode, SessionStatus};
use lector_core::time::Timestamp;
use lector_core::{Action, Error, FieldError, ProjectType, Result, Scope};
use sqlx::{Any, Transaction};

/// Sessions one project may have.
pub const MAX_SESSIONS_PER_PROJECT: i64 = 1000;
/// Tags one segment may carry in one session.
pub const MAX_TAGS_PER_SEGMENT: i64 = 100;

/// A session with the counts its progress comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub id: i64,
    pub uuid: String,
    pub project_id: i64,
    pub workspace_id: i64,
    pub user_id: i64,
    pub name: String,
    pub description: String,
    pub mode: SessionMode,
    pub status: SessionStatus,
    pub document_group_id: Option<i64>,
    pub model_id: Option<i64>,
    pub created: Timestamp,
    pub finished: Option<Timestamp>,
    pub document_count: i64,
    pub segment_count: i64,
    pub annotated_count: i64,
    pub(crate) checked: crate::Checked,
}

impl Session {
    /// Annotated segments over all segments, in [0, 1].
    pub fn progress(&self) -> f64 {
        labeling::progress(self.annotated_count, self.segment_count)
    }
}

const SESSION_COLUMNS: &str = "s.id, s.uuid, s.project_id, p.workspace_id, s.user_id, s.name, s.description, \
     s.mode, s.status, s.document_group_id, s.model_id, s.created, s.finished, \
     s.document_count, s.segment_count, s.annotated_count";

from_row! {
    Session {
        id, uuid, project_id, workspace_id, user_id, name, description, mode, status,
        document_group_id, model_id, created, finished, document_count, segment_count,
        annotated_count,
    }; checked: crate::CHECKED
}

/// A new document that arrives with its tags: one list of tags per segment, and whether each
/// segment counts as annotated.
#[derive(Debug, Clone)]
pub struct LabeledDocument {
    pub document: NewDocument,
    pub tags: Vec<Vec<NewTag>>,
    pub annotated: Vec<bool>,
}

/// Everything a new session is made of.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    pub name: String,
    pub description: String,
    /// Class names the session offers; all of the project's when `None`.
    pub classes: Option<Vec<String>>,
    pub labels: Option<Vec<String>>,
    /// Existing documents of the project.
    pub document_ids: Option<Vec<i64>>,
    /// New documents with their tags, stored in a group named after the session.
    pub labeled: Vec<LabeledDocument>,
    /// Take a seeded random sample of this many of the existing documents.
    pub sample: Option<(usize, u64)>,
    /// Tag and mark documents whose attributes name the session's classes or labels.
    pub auto: bool,
}

/// Changes to a session; `None` leaves a field as it is. Documents are only ever added.
#[derive(Debug, Clone, Default)]
pub struct SessionChanges {
    pub name: Option<String>,
    pub description: Option<String>,
    pub classes: Option<Vec<String>>,
    pub labels: Option<Vec<String>>,
    pub document_ids: Vec<i64>,
    pub labeled: Vec<LabeledDocument>,
}

/// What to mark annotated within one document of a session.
#[derive(Debug, Clone, Copy)]
pub enum MarkTarget {
    Segment(i64),
    /// A page (from 0) of the document's text: pages are separated by form feeds.
    Page(i64),
    Document,
}

/// Which sessions to list.
#[derive(Debug, Clone, Default)]
pub struct SessionFilter {
    pub modes: Vec<SessionMode>,
    pub status: Option<SessionStatus>,
}

/// The classes and labels a session offers, with the project type that gives tags their shape.
#[derive(Debug, Clone)]
pub struct Vocabulary {
    pub kind: ProjectType,
    pub classes: Vec<Class>,
    pub labels: Vec<Label>,
}

impl Vocabulary {
    /// Resolves a tag's names to ids, checking it fits the project type and the session.
    pub(crate) fn resolve(&self, tag: &NewTag, field: &str) -> Result<(Option<i64>, Option<i64>)> {
        let invalid =
            |e: FieldError| Error::validation(vec![FieldError::new(format!("{field}.{}", e.field), e.message)]);
        labeling::check_tag(self.kind, tag.class.as_deref(), tag.label.as_deref()).map_err(invalid)?;
        let id_of = |name: Option<&str>, field: &str, known: &[(i64, &str)]| -> Result<Option<i64>> {
            let Some(name) = name else { return Ok(None) };
            match known.iter().find(|(_, n)| *n == name) {
                Some((id, _)) => Ok(Some(*id)),
                None => Err(invalid(FieldError::new(
                    field,
                    format!("the session has no {field} {name:?}"),
                ))),
            }
        };
        let classes: Vec<(i64, &str)> = self.classes.iter().map(|c| (c.id, c.name.as_str())).collect();
        let labels: Vec<(i64, &str)> = self.labels.iter().map(|l| (l.id, l.name.as_str())).collect();
        let class = id_of(tag.class.as_deref(), "class", &classes)?;
        let label = id_of(tag.label.as_deref(), "label", &labels)?;
        Ok((class, label))
    }

    pub(crate) fn class_names(&self) -> Vec<String> {
        self.classes.iter().map(|c| c.name.clone()).collect()
    }

    pub(crate) fn label_names(&self) -> Vec<String> {
        self.labels.iter().map(|l| l.name.clone()).collect()
    }
}

impl Store {
    /// Resolves a session of a project and checks the caller may perform `action` on it.
    async fn session_access(
        &self,
        scope: &Scope,
        project_id: i64,
        session_id: i64,
        action: Action,
    ) -> Result<(Project, Session)> {
        let (project, _) = self.project_access(scope, project_id, action).await?;
        let session = self.session_of(project.id, session_id).await?;
        Ok((project, session))
    }

    pub(crate) async fn session_of(&self, project_id: i64, session_id: i64) -> Result<Session> {
        session_in(&self.pool, project_id, session_id).await
    }

    pub async fn session(&self, scope: &Scope, project_id: i64, session_id: i64) -> Result<Session> {
        Ok(self
            .session_access(scope, project_id, session_id, Action::Read)
            .await?
            .1)
    }

    /// The classes and labels a session offers.
    pub async fn session_vocabulary(&self, session: &Session) -> Result<Vocabulary> {
        let kind = self.project_kind(session.project_id).await?;
        let classes = sqlx::query(&format!(
            "SELECT {CLASS_COLUMNS} FROM classes WHERE id IN \
             (SELECT class_id FROM session_classes WHERE session_id = $1) ORDER BY id"
        ))
        .bind(session.id)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        let labels = sqlx::query(&format!(
            "SELECT {LABEL_COLUMNS} FROM labels WHERE id IN \
             (SELECT label_id FROM session_labels WHERE session_id = $1) ORDER BY id"
        ))
        .bind(session.id)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        Ok(Vocabulary {
            kind,
            classes: classes.iter().map(Class::decode).collect::<Result<_>>()?,
            labels: labels.iter().map(Label::decode).collect::<Result<_>>()?,
        })
    }

    async fn project_kind(&self, project_id: i64) -> Result<ProjectType> {
        let kind: String = sqlx::query_scalar("SELECT type FROM projects WHERE id = $1")
            .bind(project_id)
            .fetch_one(&self.pool)
            .await
            .map_err(db)?;
        crate::parse_stored(&kind)
    }

    /// A project's sessions, oldest first.
    pub async fn sessions(&self, scope: &Scope, project_id: i64, filter: &SessionFilter) -> Result<Vec<Session>> {
        let (project, _) = self.project_access(scope, project_id, Action::Read).await?;
        let mut params = vec![Param::Int(project.id)];
        let mut conditions = vec!["s.project_id = $1".to_owned()];
        if !filter.modes.is_empty() {
            let mut places = Vec::new();
            for mode in &filter.modes {
                params.push(Param::Text(mode.as_str().into()));
                places.push(format!("${}", params.len()));
            }
            conditions.push(format!("s.mode IN ({})", places.join(", ")));
        }
        if let Some(status) = filter.status {
            params.push(Param::Text(status.as_str().into()));
            conditions.push(format!("s.status = ${}", params.len()));
        }
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s JOIN projects p ON p.id = s.project_id WHERE {} ORDER BY s.id",
            conditions.join(" AND ")
        );
        fetch_records(Param::bind_all(sqlx::query(&sql), params), &self.pool).await
    }

    /// Creates a labeling session with its documents, tags and marks, all in one transaction.
    pub async fn create_session(&self, scope: &Scope, project_id: i64, new: NewSession) -> Result<Session> {
        let (project, vocabulary) = self.session_plan(scope, project_id, &new).await?;
        let mut tx = self.begin_write().await?;
        let every_document = new.labeled.is_empty();
        let session_id = insert_session(&mut tx, scope, &project, &vocabulary, &new, every_document).await?;
        if !new.labeled.is_empty() {
            let group_id = session_group(&mut tx, project.id, session_id, &new.name, "CREATED").await?;
            let target = LabeledTarget {
                project_id: project.id,
                group_id,
                session_id,
                user_id: scope.user_id,
            };
            add_labeled(&mut tx, target, &vocabulary, None, &new.labeled).await?;
        }
        refresh_status(&mut tx, session_id).await?;
        tx.commit().await.map_err(db)?;
        self.session_of(project.id, session_id).await
    }

    /// Checks the caller may add a session to the project and resolves the vocabulary it offers.
    pub(crate) async fn session_plan(
        &self,
        scope: &Scope,
        project_id: i64,
        new: &NewSession,
    ) -> Result<(Project, Vocabulary)> {
        let (project, _) = self.project_access(scope, project_id, Action::Edit).await?;
        let vocabulary = Vocabulary {
            kind: project.kind,
            classes: pick(
                self.classes_of(&project).await?,
                new.classes.as_deref(),
                ("classes", "class"),
                |c| &c.name,
            )?,
            labels: pick(
                self.labels_of(&project).await?,
                new.labels.as_deref(),
                ("labels", "label"),
                |l| &l.name,
            )?,
        };
        Ok((project, vocabulary))
    }

    /// Renames a session, changes what it offers, and adds documents to it.
    pub async fn update_session(
        &self,
        scope: &Scope,
        project_id: i64,
        session_id: i64,
        changes: SessionChanges,
    ) -> Result<Session> {
        let (project, session) = self.session_access(scope, project_id, session_id, Action::Edit).await?;
        let current = self.session_vocabulary(&session).await?;
        let vocabulary = Vocabulary {
            kind: project.kind,
            classes: match &changes.classes {
                Some(names) => pick(
                    self.classes_of(&project).await?,
                    Some(names),
                    ("classes", "class"),
                    |c| &c.name,
                )?,
                None => current.classes,
            },
            labels: match &changes.labels {
                Some(names) => pick(self.labels_of(&project).await?, Some(names), ("labels", "label"), |l| {
                    &l.name
                })?,
                None => current.labels,
            },
        };
        let mut tx = self.begin_write().await?;
        crate::hold_project(&mut tx, project.id).await?;
        let reshapes = changes.classes.is_some()
            || changes.labels.is_some()
            || !changes.document_ids.is_empty()
            || !changes.labeled.is_empty();
        // The session as it is under its lock: a concurrent change may have given it a group.
        let mut group_now = session.document_group_id;
        if reshapes {
            // A job fills a STARTED or PREDICTING session; what it offers and holds waits for it.
            crate::session_counts::lock_session(&mut tx, session.id).await?;
            let now = session_in(&mut *tx, project.id, session.id).await?;
            group_now = now.document_group_id;
            if matches!(now.status, SessionStatus::Started | SessionStatus::Predicting) {
                return Err(Error::conflict(format!(
                    "session {} is being filled ({}); change its classes, labels or documents once \
                     it is done",
                    session.id,
                    now.status.as_str()
                )));
            }
        }
        if let Some(name) = &changes.name {
            sqlx::query("UPDATE sessions SET name = $1 WHERE id = $2")
                .bind(name)
                .bind(session.id)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        }
        if let Some(description) = &changes.description {
            sqlx::query("UPDATE sessions SET description = $1 WHERE id = $2")
                .bind(description)
                .bind(session.id)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        }
        if changes.classes.is_some() || changes.labels.is_some() {
            set_vocabulary(&mut tx, session.id, &vocabulary).await?;
        }
        if !changes.document_ids.is_empty() {
            let ids = project_documents(&mut tx, project.id, Some(&changes.document_ids)).await?;
            add_session_documents(&mut tx, session.id, &ids).await?;
        }
        if !changes.labeled.is_empty() {
            let group_id = match group_now {
                Some(id) => id,
                None => session_group(&mut tx, project.id, session.id, &session.name, "CREATED").await?,
            };
            let target = LabeledTarget {
                project_id: project.id,
                group_id,
                session_id: session.id,
                user_id: scope.user_id,
            };
            add_labeled(&mut tx, target, &vocabulary, None, &changes.labeled).await?;
        }
        refresh_status(&mut tx, session.id).await?;
        tx.commit().await.map_err(db)?;
        self.session_of(project.id, session.id).await
    }

    /// Deletes a session with its tags and marks; its documents stay in the project.
    pub async fn delete_session(&self, scope: &Scope, project_id: i64, session_id: i64) -> Result<Session> {
        let (_, session) = self.session_access(scope, project_id, session_id, Action::Edit).await?;
        let mut tx = self.begin_write().await?;
        // Taken (and on PostgreSQL locked) only while no import fills it: the import's job finds
        // its group through the session, and would leave the group PROCESSING for good.
        let idle = sqlx::query("UPDATE sessions SET status = status WHERE id = $1 AND status <> $2")
            .bind(session.id)
            .bind(SessionStatus::Started.as_str())
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        if idle.rows_affected() == 0 {
            return Err(Error::conflict(format!(
                "session {} is being filled by an import of labeled data; delete it once the import has \
                 finished or failed",
                session.id
            )));
        }
        for table in [
            "segment_tags",
            "segment_statuses",
            "session_documents",
            "session_classes",
            "session_labels",
        ] {
            sqlx::query(&format!("DELETE FROM {table} WHERE session_id = $1"))
                .bind(session.id)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        }
        sqlx::query("DELETE FROM sessions WHERE id = $1")
            .bind(session.id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok(session)
    }

    /// One page of a session's documents in id order, and whether more follow.
    pub async fn session_documents(
        &self,
        scope: &Scope,
        project_id: i64,
        session_id: i64,
        offset: i64,
        limit: i64,
    ) -> Result<(Session, Vec<crate::Document>, bool)> {
        let (_, session) = self.session_access(scope, project_id, session_id, Action::Read).await?;
        // Pages by offset keep a correction session's order (least sure first).
        let (documents, has_more) = self
            .documents_of_session(
                &session,
                "CASE WHEN sd.position IS NULL THEN 1 ELSE 0 END, sd.position, d.id",
                None,
                offset,
                limit,
            )
            .await?;
        Ok((session, documents, has_more))
    }

    async fn documents_of_session(
        &self,
        session: &Session,
        order: &str,
        after: Option<i64>,
        offset: i64,
        limit: i64,
    ) -> Result<(Vec<crate::Document>, bool)> {
        let picked = format!(
            "SELECT d.id, CAST(LENGTH(d.text) AS BIGINT) FROM documents d \
             JOIN session_documents sd ON sd.document_id = d.id \
             WHERE sd.session_id = $1 AND d.id > $2 ORDER BY {order} LIMIT {} OFFSET {}",
            limit + 1,
            offset
        );
        let params = vec![Param::Int(session.id), Param::Int(after.unwrap_or(i64::MIN))];
        let (documents, has_more, _) = self
            .documents_picked(
                &picked,
                params,
                (limit, crate::MAX_LISTED_CHARS),
                crate::document_pages::PageEnd::Refuse,
            )
            .await?;
        Ok((documents, has_more))
    }

    /// One document of a session (404 when the session does not cover it).
    pub async fn session_document(
        &self,
        scope: &Scope,
        project_id: i64,
        session_id: i64,
        document_id: i64,
        action: Action,
    ) -> Result<(Session, crate::Document)> {
        let (project, session) = self.session_access(scope, project_id, session_id, action).await?;
        let covered: Option<i64> =
            sqlx::query_scalar("SELECT document_id FROM session_documents WHERE session_id = $1 AND document_id = $2")
                .bind(session.id)
                .bind(document_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db)?;
        if covered.is_none() {
            return Err(Error::not_found("document"));
        }
        let document = self.document_of(project.id, document_id).await?;
        Ok((session, document))
    }
}

/// Keeps the named items (all when `names` is `None`), refusing names the project lacks.
fn pick<T>(
    all: Vec<T>,
    names: Option<&[String]>,
    (field, what): (&str, &str),
    name_of: impl Fn(&T) -> &String,
) -> Result<Vec<T>> {
    let Some(names) = names else { return Ok(all) };
    let missing: Vec<FieldError> = names
        .iter()
        .filter(|n| !all.iter().any(|item| name_of(item) == *n))
        .map(|n| FieldError::new(field, format!("the project has no {what} named {n:?}")))
        .collect();
    if !missing.is_empty() {
        return Err(Error::validation(missing));
    }
    Ok(all.into_iter().filter(|item| names.contains(name_of(item))).collect())
}

async fn set_vocabulary(tx: &mut Transaction<'static, Any>, session_id: i64, vocabulary: &Vocabulary) -> Result<()> {
    for (table, column, ids) in [
        (
            "session_classes",
            "class_id",
            vocabulary.classes.iter().map(|c| c.id).collect::<Vec<_>>(),
        ),
        (
            "session_labels",
            "label_id",
            vocabulary.labels.iter().map(|l| l.id).collect(),
        ),
    ] {
        sqlx::query(&format!("DELETE FROM {table} WHERE session_id = $1"))
            .bind(session_id)
            .execute(&mut **tx)
            .await
            .map_err(db)?;
        let rows = ids
            .iter()
            .map(|id| vec![Param::Int(session_id), Param::Int(*id)])
            .collect();
        crate::insert_many(tx, table, &["session_id", column], rows, "").await?;
    }
    Ok(())
}

pub(crate) async fn add_session_documents(
    tx: &mut Transaction<'static, Any>,
    session_id: i64,
    ids: &[i64],
) -> Result<()> {
    let rows = ids
        .iter()
        .map(|id| vec![Param::Int(session_id), Param::Int(*id)])
        .collect();
    crate::insert_many(
        tx,
        "session_documents",
        &["session_id", "document_id"],
        rows,
        "ON CONFLICT (session_id, document_id) DO NOTHING",
    )
    .await?;
    Ok(())
}

/// Inserts a session (CREATED) with its vocabulary and its existing documents: the given ones,
/// a sample of them, or, with `every_document` and none given, all of the project's. The
/// project's sessions are counted here, in the writing transaction behind a lock on the
/// project, so concurrent requests at the limit cannot all pass.
pub(crate) async fn insert_session(
    tx: &mut Transaction<'static, Any>,
    scope: &Scope,
    project: &Project,
    vocabulary: &Vocabulary,
    new: &NewSession,
    every_document: bool,
) -> Result<i64> {
    let held = crate::count_under_lock(
        tx,
        ("projects", project.id),
        "SELECT COUNT(*) FROM sessions WHERE project_id = $1",
    )
    .await?;
    if held >= MAX_SESSIONS_PER_PROJECT {
        return Err(Error::conflict(format!(
            "a project has at most {MAX_SESSIONS_PER_PROJECT} sessions; delete one first"
        )));
    }
    let session_id: i64 = sqlx::query_scalar(
        "INSERT INTO sessions (uuid, project_id, user_id, name, description, mode, status, created) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
    )
    .bind(uuid::Uuid::new_v4().to_string())
    .bind(project.id)
    .bind(scope.user_id)
    .bind(&new.name)
    .bind(&new.description)
    .bind(SessionMode::Annotation.as_str())
    .bind(SessionStatus::Created.as_str())
    .bind(Timestamp::now().micros())
    .fetch_one(&mut **tx)
    .await
    .map_err(db)?;
    set_vocabulary(tx, session_id, vocabulary).await?;
    let existing = match (&new.document_ids, every_document) {
        (Some(ids), _) => project_documents(tx, project.id, Some(ids)).await?,
        (None, true) => project_documents(tx, project.id, None).await?,
        (None, false) => Vec::new(),
    };
    let existing = match new.sample {
        Some((size, seed)) => labeling::sample(&existing, size, seed),
        None => existing,
    };
    add_session_documents(tx, session_id, &existing).await?;
    if new.auto {
        auto_tag(tx, session_id, scope.user_id, vocabulary, &existing).await?;
    }
    Ok(session_id)
}

/// Creates the document group a session's new documents go into.
pub(crate) async fn session_group(
    tx: &mut Transaction<'static, Any>,
    project_id: i64,
    session_id: i64,
    name: &str,
    status: &str,
) -> Result<i64> {
    let group_id = insert_group(tx, project_id, name, "session", status).await?;
    sqlx::query("UPDATE sessions SET document_group_id = $1 WHERE id = $2")
        .bind(group_id)
        .bind(session_id)
        .execute(&mut **tx)
        .await
        .map_err(db)?;
    Ok(group_id)
}

/// A session of the project as `executor` sees it (a transaction sees its own writes).
pub(crate) async fn session_in<'c>(
    executor: impl sqlx::Executor<'c, Database = sqlx::Any>,
    project_id: i64,
    session_id: i64,
) -> Result<Session> {
    let sql = format!(
        "SELECT {SESSION_COLUMNS} FROM sessions s JOIN projects p ON p.id = s.project_id \
         WHERE s.project_id = $1 AND s.id = $2"
    );
    let query = sqlx::query(&sql).bind(project_id).bind(session_id);
    fetch_record(query, executor, "labeling session").await
}
