//! Notifications: the internal [`Store::notify`] other parts call when long work ends, and the
//! caller's own list, read and unread. A user keeps the newest [`MAX_NOTIFICATIONS_PER_USER`],
//! trimmed as [`Store::notify`] writes one: a workflow's notify step, which any caller of its
//! webhook runs, grew the list without end.

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

/// The notifications a user keeps, the newest: older ones are deleted once there are
/// [`NOTIFICATIONS_TRIMMED_TOGETHER`] more, read or not, when [`Store::notify`] writes one
/// (a job's or a review's notice, written in its transaction, leaves the trimming to it).
pub const MAX_NOTIFICATIONS_PER_USER: i64 = 1_000;

/// Notifications past [`MAX_NOTIFICATIONS_PER_USER`] deleted together, so that a new one costs
/// one look at the user's index and a deletion only every so many.
const NOTIFICATIONS_TRIMMED_TOGETHER: i64 = 50;

/// The most notifications one trimming deletes: a list grown long before the limit loses its
/// backlog a batch at each later notification.
const MOST_NOTIFICATIONS_TRIMMED_AT_ONCE: i64 = 1_000;

/// Records a notification for a user as part of a larger write (a job's end, a review made or
/// handed over), so that it is written if and only if the rest is.
pub(crate) async fn notify_in(
    connection: &mut sqlx::AnyConnection,
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
        .execute(&mut *connection)
        .await
        .map_err(db)?;
    Ok(())
}

/// Deletes a user's notifications past the newest [`MAX_NOTIFICATIONS_PER_USER`], once there
/// are [`NOTIFICATIONS_TRIMMED_TOGETHER`] of them, at most [`MOST_NOTIFICATIONS_TRIMMED_AT_ONCE`].
/// Its own statements, outside any other write's transaction: rows it waits for are never held
/// by a writer that waits for it.
async fn trim(connection: &mut sqlx::AnyConnection, user_id: i64) -> Result<()> {
    let nth_newest = |n: i64| {
        sqlx::query_scalar::<_, i64>(
            "SELECT id FROM notifications WHERE user_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2",
        )
        .bind(user_id)
        .bind(n - 1)
    };
    let due = MAX_NOTIFICATIONS_PER_USER + NOTIFICATIONS_TRIMMED_TOGETHER;
    if nth_newest(due)
        .fetch_optional(&mut *connection)
        .await
        .map_err(db)?
        .is_none()
    {
        return Ok(());
    }
    let oldest_kept = nth_newest(MAX_NOTIFICATIONS_PER_USER)
        .fetch_one(&mut *connection)
        .await
        .map_err(db)?;
    sqlx::query(
        "DELETE FROM notifications WHERE id IN (SELECT id FROM notifications WHERE user_id = $1 AND id < $2 \
         ORDER BY id LIMIT $3)",
    )
    .bind(user_id)
    .bind(oldest_kept)
    .bind(MOST_NOTIFICATIONS_TRIMMED_AT_ONCE)
    .execute(&mut *connection)
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
        let mut connection = self.pool.acquire().await.map_err(db)?;
        let row = sqlx::query(&sql)
            .bind(user_id)
            .bind(kind.as_str())
            .bind(title)
            .bind(text)
            .bind(Timestamp::now().micros())
            .fetch_one(&mut *connection)
            .await
            .map_err(db)?;
        // Best effort: the notification is written; a failed trim is tried again by the next.
        if let Err(e) = trim(&mut connection, user_id).await {
            tracing::warn!(user.id = user_id, error = %e.detail, "cannot trim a user's notifications");
        }
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

#[cfg(test)]
mod tests {
    use super::{MAX_NOTIFICATIONS_PER_USER, NOTIFICATIONS_TRIMMED_TOGETHER};
    use crate::testing::{TestDatabase, owner};
    use crate::{Backend, Store};
    use lector_core::NotificationType;

    /// A user keeps the newest notifications: the older go, in a batch, once there are enough
    /// more; the newest stay in order.
    async fn a_user_keeps_the_newest_notifications(backend: Backend) {
        let Some(database) = TestDatabase::create(backend).await else {
            return;
        };
        let store = Store::open(&database.url, 4).await.expect("store");
        let (user, scope) = owner(&store).await;
        let count = || async {
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM notifications WHERE user_id = $1")
                .bind(user.id)
                .fetch_one(&store.pool)
                .await
                .unwrap()
        };
        let before = count().await;
        let due = MAX_NOTIFICATIONS_PER_USER + NOTIFICATIONS_TRIMMED_TOGETHER;
        for n in before..due - 1 {
            store
                .notify(user.id, NotificationType::Info, "Called", &format!("call {n}"))
                .await
                .unwrap();
        }
        assert_eq!(count().await, due - 1, "none deleted before the batch is due");
        store
            .notify(user.id, NotificationType::Info, "Called", "the last")
            .await
            .unwrap();
        assert_eq!(count().await, MAX_NOTIFICATIONS_PER_USER);
        let newest = store.notifications(&scope, user.id, 0, 2).await.unwrap();
        assert_eq!(newest[0].text, "the last");
        assert_eq!(newest[1].text, format!("call {}", due - 2));
    }

    #[tokio::test]
    async fn a_user_keeps_the_newest_notifications_sqlite() {
        a_user_keeps_the_newest_notifications(Backend::Sqlite).await;
    }

    #[tokio::test]
    async fn a_user_keeps_the_newest_notifications_postgres() {
        a_user_keeps_the_newest_notifications(Backend::Postgres).await;
    }
}
