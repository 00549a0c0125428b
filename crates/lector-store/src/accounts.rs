//! Users: registration (with the personal workspace), look-ups for authentication, profile and
//! permission changes.

use crate::records::{FromAnyRow, USER_COLUMNS, User};
use crate::{Store, db, db_unique, parse_stored};
use lector_core::policy::WorkspaceAccess;
use lector_core::time::Timestamp;
use lector_core::{Error, Result, Role, Scope};
use sqlx::{Any, Row, Transaction};

/// A user to create; the password hash is computed by the caller.
#[derive(Debug, Clone)]
pub struct NewUser {
    pub email: String,
    pub first_name: String,
    pub last_name: String,
    pub password_hash: Option<String>,
    pub is_superuser: bool,
}

/// Profile fields to change; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct UserChanges {
    pub email: Option<String>,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub password_hash: Option<String>,
}

impl Store {
    /// Creates a user, its personal workspace (the user is its ADMIN) and makes that the default.
    pub async fn create_user(&self, new: NewUser) -> Result<User> {
        let mut tx = self.begin_write().await?;
        let user = insert_user(&mut tx, &new).await?;
        tx.commit().await.map_err(db)?;
        Ok(user)
    }

    /// The user and the stored password hash for a login attempt (system look-up, no scope).
    pub async fn login_candidate(&self, email: &str) -> Result<Option<(User, Option<String>)>> {
        let sql = format!("SELECT {USER_COLUMNS}, password_hash FROM users WHERE email = $1");
        let row = sqlx::query(&sql)
            .bind(email)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        row.map(|r| Ok((User::decode(&r)?, r.try_get("password_hash").map_err(db)?)))
            .transpose()
    }

    /// Replaces a password's hash by one of the same password made with other parameters, unless
    /// the password was changed meanwhile (the stored hash is no longer `old`). Tokens stay valid.
    pub async fn rehash_password(&self, user_id: i64, old: &str, new: &str) -> Result<()> {
        sqlx::query("UPDATE users SET password_hash = $1 WHERE id = $2 AND password_hash = $3")
            .bind(new)
            .bind(user_id)
            .bind(old)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }

    /// The user behind a verified token, with the workspaces it may act in.
    pub async fn principal(&self, user_id: i64) -> Result<Option<(User, Scope)>> {
        self.principal_unless_revoked(user_id, "").await
    }

    /// The user behind a verified token whose id is `jti`, with the workspaces it may act in;
    /// `None` when the user is gone or the token was revoked. One query, as it runs on every
    /// request: the user's row once per active membership (or once with none).
    pub async fn principal_unless_revoked(&self, user_id: i64, jti: &str) -> Result<Option<(User, Scope)>> {
        let sql = format!(
            "SELECT {USER_COLUMNS}, \
                    CAST(CASE WHEN EXISTS (SELECT 1 FROM revoked_tokens r WHERE r.jti = $3) THEN 1 ELSE 0 END AS BIGINT) AS revoked, \
                    ms.workspace_id AS member_of, ms.role AS member_role \
             FROM users u LEFT JOIN ( \
                 SELECT m.user_id, m.workspace_id, m.role FROM memberships m \
                 JOIN workspaces w ON w.id = m.workspace_id WHERE w.is_active = $2 \
             ) ms ON ms.user_id = u.id \
             WHERE u.id = $1 ORDER BY ms.workspace_id",
            USER_COLUMNS = qualified_user_columns()
        );
        let rows = sqlx::query(&sql)
            .bind(user_id)
            .bind(true)
            .bind(jti)
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        let Some(first) = rows.first() else {
            return Ok(None);
        };
        if first.try_get::<i64, _>("revoked").map_err(db)? != 0 {
            return Ok(None);
        }
        let user = User::decode(first)?;
        let mut workspaces = Vec::with_capacity(rows.len());
        for row in &rows {
            let Some(workspace_id) = row.try_get::<Option<i64>, _>("member_of").map_err(db)? else {
                continue;
            };
            let role: String = row.try_get("member_role").map_err(db)?;
            workspaces.push(WorkspaceAccess {
                workspace_id,
                role: parse_stored::<Role>(&role)?,
            });
        }
        let scope = Scope {
            user_id,
            is_superuser: user.is_superuser,
            workspaces,
        };
        Ok(Some((user, scope)))
    }

    pub(crate) async fn user_by_id(&self, user_id: i64) -> Result<Option<User>> {
        let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE id = $1");
        let row = sqlx::query(&sql)
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        row.as_ref().map(User::decode).transpose()
    }

    /// A user as the caller may see it: itself, or anyone for a superuser.
    pub async fn user(&self, scope: &Scope, user_id: i64) -> Result<User> {
        ensure_self_or_superuser(scope, user_id)?;
        self.user_by_id(user_id).await?.ok_or_else(|| Error::not_found("user"))
    }

    /// Changes a profile. A new password bumps the token version, so earlier tokens stop working,
    /// and uses up the user's unused one-time tokens (see [`Store::reset_password`]); so does a
    /// new e-mail address, since those tokens were mailed to the old one.
    /// Only the fields given are written, and the address is compared with the one stored
    /// behind a lock on the user's row: a change read before another committed must not write
    /// that one's fields back.
    pub async fn update_user(&self, scope: &Scope, user_id: i64, changes: UserChanges) -> Result<User> {
        ensure_self_or_superuser(scope, user_id)?;
        let bump = i64::from(changes.password_hash.is_some());
        let mut tx = self.begin_write().await?;
        crate::lock_row_for_no_key_update(&mut tx, ("users", user_id)).await?;
        let stored: String = sqlx::query_scalar("SELECT email FROM users WHERE id = $1")
            .bind(user_id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
            .ok_or_else(|| Error::not_found("user"))?;
        let moved = changes.email.as_ref().is_some_and(|e| *e != stored);
        sqlx::query(
            "UPDATE users SET email = COALESCE($1, email), first_name = COALESCE($2, first_name), \
             last_name = COALESCE($3, last_name), password_hash = COALESCE($4, password_hash), \
             token_version = token_version + $5 WHERE id = $6",
        )
        .bind(changes.email)
        .bind(changes.first_name)
        .bind(changes.last_name)
        .bind(changes.password_hash)
        .bind(bump)
        .bind(user_id)
        .execute(&mut *tx)
        .await
        .map_err(db_unique("a user with this e-mail exists"))?;
        if bump == 1 || moved {
            use_up_one_time_tokens(&mut tx, user_id).await?;
        }
        tx.commit().await.map_err(db)?;
        self.user(scope, user_id).await
    }

    /// Sets a new password for the user whose password-reset token `token_hash` is, using the
    /// token in the same transaction (a failure keeps it for another try; `None`: unknown, used
    /// or expired, nothing written); revokes earlier access tokens, uses up the user's other
    /// unused one-time tokens (a second reset mail, a first-login link) and deletes the user's
    /// product keys, so none of them opens the account after its password changed. A reset is
    /// how the owner of an address takes the account back from whoever registered it first,
    /// and that person's keys must not outlive it.
    pub async fn reset_password(&self, token_hash: &str, password_hash: &str) -> Result<Option<i64>> {
        let purpose = crate::TokenPurpose::PasswordReset;
        let Some(owner) = self.one_time_token_user(purpose, token_hash).await? else {
            return Ok(None);
        };
        let mut tx = self.begin_write().await?;
        // The user's row before its tokens, as a password or e-mail change takes them.
        crate::lock_row_for_no_key_update(&mut tx, ("users", owner)).await?;
        let now = Timestamp::now().micros();
        let user_id: Option<i64> = sqlx::query_scalar(
            "UPDATE one_time_tokens SET used = $1 WHERE token_hash = $2 AND purpose = $3 AND used IS NULL \
             AND expires > $1 RETURNING user_id",
        )
        .bind(now)
        .bind(token_hash)
        .bind(purpose.as_str())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db)?;
        let Some(user_id) = user_id else {
            return Ok(None);
        };
        sqlx::query("UPDATE users SET password_hash = $1, token_version = token_version + 1 WHERE id = $2")
            .bind(password_hash)
            .bind(user_id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        use_up_one_time_tokens(&mut tx, user_id).await?;
        sqlx::query("DELETE FROM product_keys WHERE user_id = $1")
            .bind(user_id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok(Some(user_id))
    }

    /// Changes `is_superuser` and `is_betauser`; only superusers may, and the installation keeps
    /// at least one superuser (only `lector user create` could make one again).
    pub async fn set_permissions(
        &self,
        scope: &Scope,
        user_id: i64,
        is_superuser: Option<bool>,
        is_betauser: Option<bool>,
    ) -> Result<User> {
        if !scope.is_superuser {
            return Err(Error::forbidden("only superusers change permissions"));
        }
        let current = self.user(scope, user_id).await?;
        let mut tx = self.begin_write().await?;
        if current.is_superuser && is_superuser == Some(false) {
            // Behind a lock on every superuser, so two demoting each other at once cannot both.
            let sql = match tx.backend_name() {
                "PostgreSQL" => "SELECT id FROM users WHERE is_superuser = $1 AND is_active = $1 FOR UPDATE",
                _ => "SELECT id FROM users WHERE is_superuser = $1 AND is_active = $1",
            };
            let superusers: Vec<i64> = sqlx::query_scalar(sql)
                .bind(true)
                .fetch_all(&mut *tx)
                .await
                .map_err(db)?;
            if superusers.iter().all(|id| *id == user_id) {
                return Err(Error::conflict(
                    "the installation keeps at least one superuser: make another one a superuser first",
                ));
            }
        }
        // Only the flags given are written: one read before another superuser's change
        // committed must not write that flag back.
        sqlx::query(
            "UPDATE users SET is_superuser = COALESCE($1, is_superuser), \
             is_betauser = COALESCE($2, is_betauser) WHERE id = $3",
        )
        .bind(is_superuser)
        .bind(is_betauser)
        .bind(user_id)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        tx.commit().await.map_err(db)?;
        self.user(scope, user_id).await
    }
}

/// Marks every unused one-time token of a user used.
async fn use_up_one_time_tokens(tx: &mut Transaction<'static, Any>, user_id: i64) -> Result<()> {
    sqlx::query("UPDATE one_time_tokens SET used = $1 WHERE user_id = $2 AND used IS NULL")
        .bind(Timestamp::now().micros())
        .bind(user_id)
        .execute(&mut **tx)
        .await
        .map_err(db)?;
    Ok(())
}

pub(crate) fn ensure_self_or_superuser(scope: &Scope, user_id: i64) -> Result<()> {
    if scope.user_id == user_id || scope.is_superuser {
        Ok(())
    } else {
        Err(Error::forbidden("only the user itself or a superuser may do this"))
    }
}

/// Inserts the user, its personal workspace and its ADMIN membership in the caller's transaction.
pub(crate) async fn insert_user(tx: &mut Transaction<'static, Any>, new: &NewUser) -> Result<User> {
    let now = Timestamp::now().micros();
    let taken: Option<i64> = sqlx::query_scalar("SELECT id FROM users WHERE email = $1")
        .bind(&new.email)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db)?;
    if taken.is_some() {
        return Err(Error::conflict("a user with this e-mail exists"));
    }
    let workspace_id = insert_personal_workspace(tx, &new.first_name, now).await?;
    let sql = format!(
        "INSERT INTO users (email, first_name, last_name, password_hash, is_superuser, \
         personal_workspace_id, default_workspace_id, created) VALUES ($1, $2, $3, $4, $5, $6, $6, $7) \
         RETURNING {USER_COLUMNS}"
    );
    let row = sqlx::query(&sql)
        .bind(&new.email)
        .bind(&new.first_name)
        .bind(&new.last_name)
        .bind(new.password_hash.as_deref())
        .bind(new.is_superuser)
        .bind(workspace_id)
        .bind(now)
        .fetch_one(&mut **tx)
        .await
        .map_err(db_unique("a user with this e-mail exists"))?;
    let user = User::decode(&row)?;
    sqlx::query("INSERT INTO memberships (workspace_id, user_id, role, created) VALUES ($1, $2, $3, $4)")
        .bind(workspace_id)
        .bind(user.id)
        .bind(Role::Admin.as_str())
        .bind(now)
        .execute(&mut **tx)
        .await
        .map_err(db)?;
    Ok(user)
}

/// The personal workspace is named after the first name, never the e-mail: a workspace name is
/// visible to anyone who tries to create one of the same name (409), so an e-mail there would
/// tell strangers who is registered. A taken name gets a number, then a random suffix.
///
/// Each name is tried by an insert that yields to a taken one (`ON CONFLICT DO NOTHING`), never
/// by a look-up first: registrations at once would all see the same name free, and on
/// PostgreSQL all but one would then fail on it.
async fn insert_personal_workspace(tx: &mut Transaction<'static, Any>, first_name: &str, now: i64) -> Result<i64> {
    let first: String = first_name.trim().chars().take(PERSONAL_NAME_CHARS).collect();
    let base = if first.is_empty() {
        "Personal workspace".to_owned()
    } else {
        format!("Personal workspace of {first}")
    };
    let numbered = (2..10).map(|n| format!("{base} ({n})"));
    let random = (0..5).map(|_| format!("{base} ({})", &uuid::Uuid::new_v4().simple().to_string()[..8]));
    for name in std::iter::once(base.clone()).chain(numbered).chain(random) {
        let inserted: Option<i64> = sqlx::query_scalar(
            "INSERT INTO workspaces (name, description, created) VALUES ($1, $2, $3) \
             ON CONFLICT (name) DO NOTHING RETURNING id",
        )
        .bind(&name)
        .bind("Personal workspace")
        .bind(now)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db)?;
        if let Some(id) = inserted {
            return Ok(id);
        }
    }
    Err(Error::conflict("no free name for a personal workspace"))
}

/// The most of a first name a personal workspace's name takes, so the name stays within
/// `MAX_NAME_CHARS` with its prefix and suffix.
const PERSONAL_NAME_CHARS: usize = 80;

/// [`USER_COLUMNS`] of the table aliased `u`.
fn qualified_user_columns() -> &'static str {
    static COLUMNS: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    COLUMNS.get_or_init(|| {
        USER_COLUMNS
            .split(',')
            .map(|c| format!("u.{}", c.trim()))
            .collect::<Vec<_>>()
            .join(", ")
    })
}
