//! What the store hands back: plain records, decoded from rows the same way on both backends.

use lector_core::time::Timestamp;
use lector_core::{NotificationType, Role};
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::parse_stored;

/// Reads a flag stored as BOOLEAN (PostgreSQL) or INTEGER 0/1 (SQLite).
pub(crate) fn flag(row: &AnyRow, column: &str) -> Result<bool, sqlx::Error> {
    row.try_get::<bool, _>(column)
        .or_else(|_| row.try_get::<i64, _>(column).map(|v| v != 0))
}

fn ts(row: &AnyRow, column: &str) -> Result<Timestamp, sqlx::Error> {
    row.try_get::<i64, _>(column).map(Timestamp)
}

fn opt_ts(row: &AnyRow, column: &str) -> Result<Option<Timestamp>, sqlx::Error> {
    Ok(row.try_get::<Option<i64>, _>(column)?.map(Timestamp))
}

/// Proof that a record came through a scoped read. Only this crate makes one, and the records
/// that carry it ([`Project`], [`crate::Document`], [`crate::Segment`], [`crate::Session`]) have
/// it as a private field, so code outside the store cannot build them from raw ids: a reader
/// that takes `&Project` instead of a project id cannot be handed another workspace's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked(());

pub(crate) const CHECKED: Checked = Checked(());

/// Decodes a record from a row; a row that does not fit is a 500, logged.
pub(crate) trait FromAnyRow: Sized {
    fn from_row(row: &AnyRow) -> Result<Self, sqlx::Error>;

    fn decode(row: &AnyRow) -> lector_core::Result<Self> {
        Self::from_row(row).map_err(crate::db)
    }
}

/// A statement with its parameters bound, ready to run.
pub(crate) type BoundQuery<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

/// The one record `query` selects (or an `UPDATE … RETURNING` answers) on `executor`; 404
/// naming `what` when there is none.
pub(crate) async fn fetch_record<'c, T: FromAnyRow>(
    query: BoundQuery<'_>,
    executor: impl sqlx::Executor<'c, Database = sqlx::Any>,
    what: &str,
) -> lector_core::Result<T> {
    let row = query.fetch_optional(executor).await.map_err(crate::db)?;
    row.as_ref()
        .map(T::decode)
        .transpose()?
        .ok_or_else(|| lector_core::Error::not_found(what))
}

/// Every record `query` selects on `executor`, in the order it selects them.
pub(crate) async fn fetch_records<'c, T: FromAnyRow>(
    query: BoundQuery<'_>,
    executor: impl sqlx::Executor<'c, Database = sqlx::Any>,
) -> lector_core::Result<Vec<T>> {
    let rows = query.fetch_all(executor).await.map_err(crate::db)?;
    rows.iter().map(T::decode).collect()
}

#[derive(Debug, Clone, PartialEq)]
pub struct User {
    pub id: i64,
    pub email: String,
    pub first_name: String,
    pub last_name: String,
    pub is_superuser: bool,
    pub is_betauser: bool,
    pub is_active: bool,
    pub token_version: i64,
    pub personal_workspace_id: Option<i64>,
    pub default_workspace_id: Option<i64>,
    pub created: Timestamp,
}

pub(crate) const USER_COLUMNS: &str = "id, email, first_name, last_name, is_superuser, is_betauser, is_active, \
     token_version, personal_workspace_id, default_workspace_id, created";

impl FromAnyRow for User {
    fn from_row(row: &AnyRow) -> Result<Self, sqlx::Error> {
        Ok(Self {
            id: row.try_get("id")?,
            email: row.try_get("email")?,
            first_name: row.try_get("first_name")?,
            last_name: row.try_get("last_name")?,
            is_superuser: flag(row, "is_superuser")?,
            is_betauser: flag(row, "is_betauser")?,
            is_active: flag(row, "is_active")?,
            token_version: row.try_get("token_version")?,
            personal_workspace_id: row.try_get("personal_workspace_id")?,
            default_workspace_id: row.try_get("default_workspace_id")?,
            created: ts(row, "created")?,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Workspace {
    pub id: i64,
    pub name: String,
    pub description: String,
    pub created: Timestamp,
    pub is_beta: bool,
    pub is_read_only: bool,
    pub is_active: bool,
    pub(crate) checked: Checked,
}

pub(crate) const WORKSPACE_COLUMNS: &str =
    "w.id, w.name, w.description, w.created, w.is_beta, w.is_read_only, w.is_active";

impl Workspace {
    pub fn facts(&self) -> lector_core::policy::WorkspaceFacts {
        lector_core::policy::WorkspaceFacts {
            id: self.id,
            is_active: self.is_active,
            is_read_only: self.is_read_only,
        }
    }
}

impl FromAnyRow for Workspace {
    fn from_row(row: &AnyRow) -> Result<Self, sqlx::Error> {
        Ok(Self {
            id: row.try_get("id")?,
            name: row.try_get("name")?,
            description: row.try_get("description")?,
            created: ts(row, "created")?,
            is_beta: flag(row, "is_beta")?,
            is_read_only: flag(row, "is_read_only")?,
            is_active: flag(row, "is_active")?,
            checked: CHECKED,
        })
    }
}

/// A workspace as one of the caller's: with the caller's role and whether it is the default.
#[derive(Debug, Clone, PartialEq)]
pub struct MyWorkspace {
    pub workspace: Workspace,
    pub role: Role,
    pub is_default: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Membership {
    pub id: i64,
    pub workspace_id: i64,
    pub user_id: i64,
    pub user_email: String,
    pub role: Role,
    pub created: Timestamp,
}

pub(crate) const MEMBERSHIP_COLUMNS: &str = "m.id, m.workspace_id, m.user_id, u.email AS user_email, m.role, m.created";

impl FromAnyRow for Membership {
    fn from_row(row: &AnyRow) -> Result<Self, sqlx::Error> {
        let role: String = row.try_get("role")?;
        Ok(Self {
            id: row.try_get("id")?,
            workspace_id: row.try_get("workspace_id")?,
            user_id: row.try_get("user_id")?,
            user_email: row.try_get("user_email")?,
            role: parse_stored(&role).map_err(|e| sqlx::Error::Decode(e.into()))?,
            created: ts(row, "created")?,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvitationStatus {
    Pending,
    Accepted,
    Cancelled,
}

lector_core::wire_enum!(InvitationStatus { Pending => "PENDING", Accepted => "ACCEPTED", Cancelled => "CANCELLED" });

#[derive(Debug, Clone, PartialEq)]
pub struct Invitation {
    pub id: i64,
    pub workspace_id: i64,
    pub email: String,
    pub role: Role,
    pub invited_by_id: i64,
    pub status: InvitationStatus,
    pub created: Timestamp,
    pub expires: Timestamp,
}

pub(crate) const INVITATION_COLUMNS: &str = "id, workspace_id, email, role, invited_by_id, status, created, expires";

impl FromAnyRow for Invitation {
    fn from_row(row: &AnyRow) -> Result<Self, sqlx::Error> {
        let role: String = row.try_get("role")?;
        let status: String = row.try_get("status")?;
        Ok(Self {
            id: row.try_get("id")?,
            workspace_id: row.try_get("workspace_id")?,
            email: row.try_get("email")?,
            role: parse_stored(&role).map_err(|e| sqlx::Error::Decode(e.into()))?,
            invited_by_id: row.try_get("invited_by_id")?,
            status: parse_stored(&status).map_err(|e| sqlx::Error::Decode(e.into()))?,
            created: ts(row, "created")?,
            expires: ts(row, "expires")?,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProductKey {
    pub id: i64,
    pub user_id: i64,
    pub name: String,
    /// The first characters of the token, enough to recognise it.
    pub prefix: String,
    pub created: Timestamp,
}

pub(crate) const PRODUCT_KEY_COLUMNS: &str = "id, user_id, name, prefix, created";

impl FromAnyRow for ProductKey {
    fn from_row(row: &AnyRow) -> Result<Self, sqlx::Error> {
        Ok(Self {
            id: row.try_get("id")?,
            user_id: row.try_get("user_id")?,
            name: row.try_get("name")?,
            prefix: row.try_get("prefix")?,
            created: ts(row, "created")?,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub id: i64,
    pub user_id: i64,
    pub kind: NotificationType,
    pub title: String,
    pub text: String,
    pub created: Timestamp,
    pub read: Option<Timestamp>,
}

pub(crate) const NOTIFICATION_COLUMNS: &str = "id, user_id, type, title, text, created, read";

impl FromAnyRow for Notification {
    fn from_row(row: &AnyRow) -> Result<Self, sqlx::Error> {
        let kind: String = row.try_get("type")?;
        Ok(Self {
            id: row.try_get("id")?,
            user_id: row.try_get("user_id")?,
            kind: parse_stored(&kind).map_err(|e| sqlx::Error::Decode(e.into()))?,
            title: row.try_get("title")?,
            text: row.try_get("text")?,
            created: ts(row, "created")?,
            read: opt_ts(row, "read")?,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Project {
    pub id: i64,
    pub workspace_id: i64,
    pub name: String,
    pub kind: lector_core::ProjectType,
    pub status: String,
    pub external_id: Option<i64>,
    /// en, de or ar: the sentence rules of its documents, unless a request names others.
    pub language: String,
    pub created: Timestamp,
    pub(crate) checked: Checked,
}

pub(crate) const PROJECT_COLUMNS: &str =
    "p.id, p.workspace_id, p.name, p.type, p.status, p.external_id, p.language, p.created";

impl FromAnyRow for Project {
    fn from_row(row: &AnyRow) -> Result<Self, sqlx::Error> {
        let kind: String = row.try_get("type")?;
        Ok(Self {
            id: row.try_get("id")?,
            workspace_id: row.try_get("workspace_id")?,
            name: row.try_get("name")?,
            kind: parse_stored(&kind).map_err(|e| sqlx::Error::Decode(e.into()))?,
            status: row.try_get("status")?,
            external_id: row.try_get("external_id")?,
            language: row.try_get("language")?,
            created: ts(row, "created")?,
            checked: CHECKED,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Class {
    pub id: i64,
    pub project_id: i64,
    pub name: String,
    pub example: String,
    pub description: String,
    pub created: Timestamp,
}

pub(crate) const CLASS_COLUMNS: &str = "id, project_id, name, example, description, created";

impl FromAnyRow for Class {
    fn from_row(row: &AnyRow) -> Result<Self, sqlx::Error> {
        Ok(Self {
            id: row.try_get("id")?,
            project_id: row.try_get("project_id")?,
            name: row.try_get("name")?,
            example: row.try_get("example")?,
            description: row.try_get("description")?,
            created: ts(row, "created")?,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub id: i64,
    pub project_id: i64,
    pub name: String,
    pub created: Timestamp,
}

pub(crate) const LABEL_COLUMNS: &str = "id, project_id, name, created";

impl FromAnyRow for Label {
    fn from_row(row: &AnyRow) -> Result<Self, sqlx::Error> {
        Ok(Self {
            id: row.try_get("id")?,
            project_id: row.try_get("project_id")?,
            name: row.try_get("name")?,
            created: ts(row, "created")?,
        })
    }
}
