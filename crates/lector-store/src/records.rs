//! What the store hands back: plain records, decoded from rows the same way on both backends.

use lector_core::time::Timestamp;
use lector_core::{NotificationType, Role};
use sqlx::any::AnyRow;
use sqlx::{Row, ValueRef};

/// Reads a flag stored as BOOLEAN (PostgreSQL) or INTEGER 0/1 (SQLite).
pub(crate) fn flag(row: &AnyRow, column: &str) -> Result<bool, sqlx::Error> {
    row.try_get::<bool, _>(column)
        .or_else(|_| row.try_get::<i64, _>(column).map(|v| v != 0))
}

/// A field's type as read from its column, the same on both backends: numbers and text as
/// stored, flags by [`flag`], times as the epoch microseconds they are stored as, the
/// vocabulary's enums by their stored names, JSON from the text it is kept as, and NULL as
/// `None` of any of these.
pub(crate) trait Column: Sized {
    fn read(row: &AnyRow, column: &str) -> Result<Self, sqlx::Error>;
}

macro_rules! stored_as_is {
    ($($ty:ty),*) => {$(
        impl Column for $ty {
            fn read(row: &AnyRow, column: &str) -> Result<Self, sqlx::Error> {
                row.try_get(column)
            }
        }
    )*};
}

stored_as_is!(i64, f64, String);

macro_rules! stored_by_name {
    ($($ty:ty),*) => {$(
        impl Column for $ty {
            fn read(row: &AnyRow, column: &str) -> Result<Self, sqlx::Error> {
                let name: String = row.try_get(column)?;
                name.parse().map_err(|e: String| sqlx::Error::Decode(e.into()))
            }
        }
    )*};
}

stored_by_name!(
    Role,
    NotificationType,
    lector_core::ProjectType,
    lector_core::SourceKind,
    lector_core::labeling::SessionMode,
    lector_core::labeling::SessionStatus,
    InvitationStatus,
    crate::jobs::JobState
);

macro_rules! stored_as_json {
    ($($ty:ty),*) => {$(
        impl Column for $ty {
            fn read(row: &AnyRow, column: &str) -> Result<Self, sqlx::Error> {
                let text: String = row.try_get(column)?;
                serde_json::from_str(&text).map_err(|e| sqlx::Error::Decode(e.into()))
            }
        }
    )*};
}

stored_as_json!(serde_json::Value, Vec<String>);

impl Column for uuid::Uuid {
    fn read(row: &AnyRow, column: &str) -> Result<Self, sqlx::Error> {
        let text: String = row.try_get(column)?;
        uuid::Uuid::parse_str(&text).map_err(|e| sqlx::Error::Decode(e.into()))
    }
}

impl Column for bool {
    fn read(row: &AnyRow, column: &str) -> Result<Self, sqlx::Error> {
        flag(row, column)
    }
}

impl Column for Timestamp {
    fn read(row: &AnyRow, column: &str) -> Result<Self, sqlx::Error> {
        row.try_get::<i64, _>(column).map(Timestamp)
    }
}

impl<T: Column> Column for Option<T> {
    fn read(row: &AnyRow, column: &str) -> Result<Self, sqlx::Error> {
        if row.try_get_raw(column)?.is_null() {
            return Ok(None);
        }
        T::read(row, column).map(Some)
    }
}

/// Implements [`FromAnyRow`] for a record whose fields are each read by their type's
/// [`Column`] from the column of the field's name (or the one named after `=`); fields after
/// the `;` take the values given (the scoped-read proof, [`CHECKED`]). Invoked with braces
/// (`from_row! { Record { … } }`), which rustfmt leaves as written.
macro_rules! from_row {
    ($record:ty { $($field:ident $(= $column:literal)?),* $(,)? } $(; $($fixed:ident: $value:expr),* $(,)?)?) => {
        impl $crate::records::FromAnyRow for $record {
            fn from_row(row: &sqlx::any::AnyRow) -> Result<Self, sqlx::Error> {
                use $crate::records::Column;
                Ok(Self {
                    $($field: Column::read(row, $crate::records::from_row!(@column $field $($column)?))?,)*
                    $($($fixed: $value,)*)?
                })
            }
        }
    };
    (@column $field:ident $column:literal) => {
        $column
    };
    (@column $field:ident) => {
        stringify!($field)
    };
}

pub(crate) use from_row;

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

from_row! {
    User {
        id, email, first_name, last_name, is_superuser, is_betauser, is_active, token_version,
        personal_workspace_id, default_workspace_id, created,
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
    /// The user whose personal workspace it is (`users.personal_workspace_id`), who can neither
    /// leave it nor be put below its other ADMINs; `None` for every other workspace.
    pub owner_id: Option<i64>,
    pub(crate) checked: Checked,
}

/// [`Workspace`]'s columns of the table aliased `w`; the owner is looked up by the workspace's
/// id, so a statement that reads workspaces reads them through this list alone.
pub(crate) const WORKSPACE_COLUMNS: &str = "w.id, w.name, w.description, w.created, w.is_beta, w.is_read_only, \
     w.is_active, (SELECT u.id FROM users u WHERE u.personal_workspace_id = w.id) AS owner_id";

impl Workspace {
    pub fn facts(&self) -> lector_core::policy::WorkspaceFacts {
        lector_core::policy::WorkspaceFacts {
            id: self.id,
            is_active: self.is_active,
            is_read_only: self.is_read_only,
        }
    }
}

from_row! {
    Workspace {
        id, name, description, created, is_beta, is_read_only, is_active, owner_id,
    }; checked: CHECKED
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

from_row! { Membership { id, workspace_id, user_id, user_email, role, created } }

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

from_row! { Invitation { id, workspace_id, email, role, invited_by_id, status, created, expires } }

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

from_row! { ProductKey { id, user_id, name, prefix, created } }

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

from_row! { Notification { id, user_id, kind = "type", title, text, created, read } }

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

from_row! {
    Project {
        id, workspace_id, name, kind = "type", status, external_id, language, created,
    }; checked: CHECKED
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

from_row! { Class { id, project_id, name, example, description, created } }

#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub id: i64,
    pub project_id: i64,
    pub name: String,
    pub created: Timestamp,
}

pub(crate) const LABEL_COLUMNS: &str = "id, project_id, name, created";

from_row! { Label { id, project_id, name, created } }
