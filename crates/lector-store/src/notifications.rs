//! Notifications: the internal [`Store::notify`] other parts call when long work ends, and the
//! caller's own list, read and unread.

use crate::records::{FromAnyRow, NOTIFICATION_COLUMNS, Notification, fetch_record, fetch_records};
use crate::{Store, db};
use lector_core::time::Timestamp;
use lector_core::validate::{
    MAX_NOTIFICATION_TEXT_CHARS, MAX_NOTIFICATION_TITLE_CHARS, TextKind, shortened, without_forbidden,
};
use lector_core::{NotificationType, Result, Scope};

/// A notification's title and text as the service writes them: within what a client's update
/// may hold (their length, and no character it refuses: a workflow's notification made from a
/// webhook's body with a NUL in it failed on PostgreSQL), so that nothing the service writes is
/// more than its API accepts.
pub(crate) fn within_limits(title: &str, text: &str) -> (String, String) {
    let title = without_forbidden(title, TextKind::Short);
    let text = without_forbidden(text, TextKind::Free);
    (
        shortened(&title, MAX_NOTIFICATION_TITLE_CHARS).into_owned(),
        shortened(&text, MAX_NOTIFICATION_TEXT_CHARS).into_owned(),
    )
}

/// Records a notification for a user as part of a larger write (a job's end, a review made or
/// handed over), so that it is written if and only if the rest is.
pub(crate) async fn notify_in<'e>(
    executor: impl sqlx::Executor<'e, Database = sqlx::Any>,
    user_id: i64,
    kind: NotificationType,
    title: &str,
    text: &str,
) -> Result<()> {
    let (title, text) = within_limits(title, text);
    sqlx::query("INSERT INTO notifications (user_id, type, title, text, created) VALUES ($1, $2, $3, $4, $5)")
        .bind(user_id)
        .bind(kind.as_str())
        .bind(title)
        .bind(text)
        .bind(Timestamp::now().micros())
        .execute(executor)
        .await
        .map_err(db)?;
    Ok(())
}

impl Store {
    /// Records a notification for a user. This is the internal API jobs and handlers call.
    pub async fn notify(&self, user_id: i64, kind: NotificationType, title: &str, text: &str) -> Result<Notification> {
        let sql = format!(
            "INSERT INTO notifications (user_id, type, title, text, created) VALUES ($1, $2, $3, $4, $5) \
             RETURNING {NOTIFICATION_COLUMNS}"
        );
        let (title, text) = within_limits(title, text);
        let row = sqlx::query(&sql)
            .bind(user_id)
            .bind(kind.as_str())
            .bind(title)
            .bind(text)
            .bind(Timestamp::now().micros())
            .fetch_one(&self.pool)
            .await
            .map_err(db)?;
        Notification::decode(&row)
    }

    /// A user's notifications, newest first. Only the user itself or a superuser may list them.
    pub async fn notifications(
        &self,
        scope: &Scope,
        user_id: i64,
        offset: i64,
        limit: i64,
    ) -> Result<Vec<Notification>> {
        self.notifications_read(scope, user_id, None, offset, limit).await
    }

    /// [`Store::notifications`], only the read ones (`Some(true)`) or the unread ones
    /// (`Some(false)`) if asked.
    pub async fn notifications_read(
        &self,
        scope: &Scope,
        user_id: i64,
        read: Option<bool>,
        offset: i64,
        limit: i64,
    ) -> Result<Vec<Notification>> {
        crate::accounts::ensure_self_or_superuser(scope, user_id)?;
        let only = match read {
            None => "",
            Some(true) => "AND read IS NOT NULL",
            Some(false) => "AND read IS NULL",
        };
        let sql = format!(
            "SELECT {NOTIFICATION_COLUMNS} FROM notifications WHERE user_id = $1 {only} ORDER BY id DESC LIMIT $2 OFFSET $3"
        );
        fetch_records(sqlx::query(&sql).bind(user_id).bind(limit).bind(offset), &self.pool).await
    }

    pub async fn notification(&self, scope: &Scope, user_id: i64, id: i64) -> Result<Notification> {
        crate::accounts::ensure_self_or_superuser(scope, user_id)?;
        let sql = format!("SELECT {NOTIFICATION_COLUMNS} FROM notifications WHERE id = $1 AND user_id = $2");
        fetch_record(sqlx::query(&sql).bind(id).bind(user_id), &self.pool, "notification").await
    }

    /// Changes a notification (SPEC's "change a notification": title, text, created, type,
    /// read): each field given replaces the stored one; `read` given as `None` marks it unread.
    pub async fn change_notification(
        &self,
        scope: &Scope,
        user_id: i64,
        id: i64,
        changes: NotificationChanges,
    ) -> Result<Notification> {
        self.notification(scope, user_id, id).await?;
        sqlx::query(
            "UPDATE notifications SET title = COALESCE($1, title), text = COALESCE($2, text), \
             type = COALESCE($3, type), created = COALESCE($4, created), \
             read = CASE WHEN $5 = 1 THEN $6 ELSE read END WHERE id = $7 AND user_id = $8",
        )
        .bind(changes.title)
        .bind(changes.text)
        .bind(changes.kind.map(|k| k.as_str().to_owned()))
        .bind(changes.created.map(Timestamp::micros))
        .bind(i64::from(changes.read.is_some()))
        .bind(changes.read.flatten().map(Timestamp::micros))
        .bind(id)
        .bind(user_id)
        .execute(&self.pool)
        .await
        .map_err(db)?;
        self.notification(scope, user_id, id).await
    }
}

/// What [`Store::change_notification`] changes; `None` keeps a field.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NotificationChanges {
    pub title: Option<String>,
    pub text: Option<String>,
    pub kind: Option<NotificationType>,
    pub created: Option<Timestamp>,
    /// `Some(None)` marks the notification unread, `Some(Some(t))` read at `t`.
    pub read: Option<Option<Timestamp>>,
}
