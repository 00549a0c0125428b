//! Invitations to a workspace: made by its managers, listed, cancelled, mailed again with a
//! fresh token, and accepted once (by a new account or an existing one). The mails and tokens
//! are the API's (`lector-api/src/accounts.rs`); this is what is stored and who may.

use crate::accounts::{NewUser, insert_user};
use crate::records::{
    FromAnyRow, INVITATION_COLUMNS, Invitation, InvitationStatus, User, Workspace, fetch_record, fetch_records,
};
use crate::workspaces::{WorkspaceRef, check_workspaces_held, insert_membership};
use crate::{Store, db};
use lector_core::time::Timestamp;
use lector_core::{Action, Error, Result, Role, Scope};
use sqlx::{Any, Row, Transaction};

/// Pending invitations a workspace may have: the unpaged `list_invitations` answers them all.
pub const MAX_PENDING_INVITATIONS: i64 = 1000;

/// Who accepts an invitation: a user that exists, or one to create.
#[derive(Debug, Clone)]
pub enum Invitee {
    Existing(i64),
    New(NewUser),
}

impl Store {
    /// Why an address cannot be invited to a workspace now, if it cannot.
    pub async fn invitation_obstacle(&self, workspace: &Workspace, email: &str) -> Result<Option<&'static str>> {
        let workspace_id = workspace.id;
        let member: Option<i64> = sqlx::query_scalar(
            "SELECT m.id FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 AND u.email = $2",
        )
        .bind(workspace_id)
        .bind(email)
        .fetch_optional(&self.pool)
        .await
        .map_err(db)?;
        if member.is_some() {
            return Ok(Some("already a member of the workspace"));
        }
        let invited: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM invitations WHERE workspace_id = $1 AND email = $2 AND status = $3 AND expires > $4",
        )
        .bind(workspace_id)
        .bind(email)
        .bind(InvitationStatus::Pending.as_str())
        .bind(Timestamp::now().micros())
        .fetch_optional(&self.pool)
        .await
        .map_err(db)?;
        Ok(invited.map(|_| "already invited"))
    }

    /// Records an invitation; the caller has checked access, the role and the obstacles. Past
    /// [`MAX_PENDING_INVITATIONS`] (counted behind a lock on the workspace, so invitations made
    /// at once cannot all pass at the edge) it is refused as a conflict.
    pub async fn create_invitation(
        &self,
        scope: &Scope,
        workspace_id: i64,
        email: &str,
        role: Role,
        token_hash: &str,
        expires: Timestamp,
    ) -> Result<Invitation> {
        let sql = format!(
            "INSERT INTO invitations (workspace_id, email, role, invited_by_id, token_hash, status, created, expires) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING {INVITATION_COLUMNS}"
        );
        let now = Timestamp::now().micros();
        let mut tx = self.begin_write().await?;
        room_for_a_pending_invitation(&mut tx, workspace_id).await?;
        let row = sqlx::query(&sql)
            .bind(workspace_id)
            .bind(email)
            .bind(role.as_str())
            .bind(scope.user_id)
            .bind(token_hash)
            .bind(InvitationStatus::Pending.as_str())
            .bind(now)
            .bind(expires.micros())
            .fetch_one(&mut *tx)
            .await
            .map_err(db)?;
        let invitation = Invitation::decode(&row)?;
        tx.commit().await.map_err(db)?;
        Ok(invitation)
    }

    /// Pending invitations of a workspace, oldest first: for its managers, read-only or not.
    pub async fn pending_invitations(&self, scope: &Scope, workspace: &WorkspaceRef) -> Result<Vec<Invitation>> {
        let (found, _) = self.workspace_access(scope, workspace, Action::ReadInvitations).await?;
        let sql = format!(
            "SELECT {INVITATION_COLUMNS} FROM invitations WHERE workspace_id = $1 AND status = $2 AND expires > $3 ORDER BY id"
        );
        fetch_records(
            sqlx::query(&sql)
                .bind(found.id)
                .bind(InvitationStatus::Pending.as_str())
                .bind(Timestamp::now().micros()),
            &self.pool,
        )
        .await
    }

    /// A pending invitation of a workspace, for a caller who manages its members and may grant
    /// its role, with the caller's own role there.
    pub async fn pending_invitation(
        &self,
        scope: &Scope,
        workspace: &WorkspaceRef,
        id: i64,
    ) -> Result<(Invitation, Role)> {
        let (found, own) = self.workspace_access(scope, workspace, Action::ManageMembers).await?;
        let sql = format!("SELECT {INVITATION_COLUMNS} FROM invitations WHERE workspace_id = $1 AND id = $2");
        let invitation: Invitation =
            fetch_record(sqlx::query(&sql).bind(found.id).bind(id), &self.pool, "invitation").await?;
        if invitation.status != InvitationStatus::Pending {
            return Err(Error::conflict(format!(
                "the invitation is {}",
                invitation.status.as_str().to_lowercase()
            )));
        }
        scope.may_grant(own, invitation.role)?;
        Ok((invitation, own))
    }

    pub async fn cancel_invitation(&self, scope: &Scope, workspace: &WorkspaceRef, id: i64) -> Result<Invitation> {
        let (invitation, _) = self.pending_invitation(scope, workspace, id).await?;
        sqlx::query("UPDATE invitations SET status = $1 WHERE id = $2")
            .bind(InvitationStatus::Cancelled.as_str())
            .bind(invitation.id)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(Invitation {
            status: InvitationStatus::Cancelled,
            ..invitation
        })
    }

    /// Gives a pending invitation a fresh token and expiry (the old token stops working).
    pub async fn renew_invitation(
        &self,
        scope: &Scope,
        workspace: &WorkspaceRef,
        id: i64,
        token_hash: &str,
        expires: Timestamp,
    ) -> Result<Invitation> {
        let (invitation, _) = self.pending_invitation(scope, workspace, id).await?;
        let mut tx = self.begin_write().await?;
        // An expired invitation renewed counts as pending again.
        if invitation.expires <= Timestamp::now() {
            room_for_a_pending_invitation(&mut tx, invitation.workspace_id).await?;
        }
        sqlx::query("UPDATE invitations SET token_hash = $1, expires = $2 WHERE id = $3")
            .bind(token_hash)
            .bind(expires.micros())
            .bind(invitation.id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok(Invitation { expires, ..invitation })
    }

    /// The pending, unexpired invitation a token belongs to (system look-up, no scope).
    pub async fn invitation_by_token(&self, token_hash: &str) -> Result<Option<Invitation>> {
        let sql = format!(
            "SELECT {INVITATION_COLUMNS} FROM invitations WHERE token_hash = $1 AND status = $2 AND expires > $3 \
             AND workspace_id IN (SELECT id FROM workspaces WHERE is_active = $4)"
        );
        let row = sqlx::query(&sql)
            .bind(token_hash)
            .bind(InvitationStatus::Pending.as_str())
            .bind(Timestamp::now().micros())
            .bind(true)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        row.as_ref().map(Invitation::decode).transpose()
    }

    /// Accepts an invitation once: creates the user if needed and adds the membership, all in
    /// one transaction. A second acceptance of the same invitation finds it gone (404).
    ///
    /// A read-only workspace refuses the acceptance (403), as it refuses every other change.
    ///
    /// An invitation gives no more than its sender may still give: when the sender is no longer
    /// a superuser nor a member with at least the invited role (demoted, removed, or their flag
    /// taken away after inviting, or while inviting), the invitation is cancelled and answered
    /// like an unknown one (404).
    ///
    /// Rows are locked in the order every writer of memberships takes them: the user, the
    /// workspace, then the invitation (the first two as `count_under_lock` takes them, so an
    /// insert that only refers to them does not wait). Claiming the invitation first
    /// deadlocked on PostgreSQL with a removal, demotion or deactivation, which lock the
    /// workspace and then cancel its pending invitations.
    pub async fn accept_invitation(&self, invitation: &Invitation, invitee: Invitee) -> Result<User> {
        let mut tx = self.begin_write().await?;
        if let Invitee::Existing(user_id) = &invitee {
            crate::lock_row_for_no_key_update(&mut tx, ("users", *user_id)).await?;
        }
        crate::lock_row_for_no_key_update(&mut tx, ("workspaces", invitation.workspace_id)).await?;
        // A read-only workspace takes no new members, by invitation as by an ADMIN's addition;
        // the invitation stays pending for when the workspace is writable again.
        let read_only: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM workspaces WHERE id = $1 AND is_read_only = $2")
            .bind(invitation.workspace_id)
            .bind(true)
            .fetch_one(&mut *tx)
            .await
            .map_err(db)?;
        if read_only > 0 {
            return Err(Error::new(
                lector_core::ErrorCode::WorkspaceReadOnly,
                "the workspace is read-only and takes no new members; ask its owner to make it writable",
            ));
        }
        let claimed = sqlx::query("UPDATE invitations SET status = $1 WHERE id = $2 AND status = $3")
            .bind(InvitationStatus::Accepted.as_str())
            .bind(invitation.id)
            .bind(InvitationStatus::Pending.as_str())
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        if claimed.rows_affected() != 1 {
            return Err(Error::not_found("invitation"));
        }
        if !sender_may_still_grant(&mut tx, invitation).await? {
            sqlx::query("UPDATE invitations SET status = $1 WHERE id = $2")
                .bind(InvitationStatus::Cancelled.as_str())
                .bind(invitation.id)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
            tx.commit().await.map_err(db)?;
            return Err(Error::not_found(
                "invitation (cancelled: whoever sent it may no longer grant its role)",
            ));
        }
        let user_id = match invitee {
            Invitee::Existing(id) => id,
            Invitee::New(new) => insert_user(&mut tx, &new).await?.id,
        };
        let already: Option<i64> =
            sqlx::query_scalar("SELECT id FROM memberships WHERE workspace_id = $1 AND user_id = $2")
                .bind(invitation.workspace_id)
                .bind(user_id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db)?;
        if already.is_none() {
            check_workspaces_held(&mut tx, user_id).await?;
            insert_membership(&mut tx, invitation.workspace_id, user_id, invitation.role).await?;
        }
        tx.commit().await.map_err(db)?;
        self.user_by_id(user_id).await?.ok_or_else(|| Error::not_found("user"))
    }
}

/// Whether the sender of an invitation may still grant its role in its workspace: an active
/// superuser, or an active member who may still invite (a manager) and whose role is at least
/// the invited one. Read in the
/// accepting transaction, after the invitation's row was claimed.
async fn sender_may_still_grant(tx: &mut Transaction<'static, Any>, invitation: &Invitation) -> Result<bool> {
    let row = sqlx::query(
        "SELECT CAST(CASE WHEN u.is_superuser THEN 1 ELSE 0 END AS BIGINT) AS is_superuser, m.role \
         FROM users u LEFT JOIN memberships m ON m.user_id = u.id AND m.workspace_id = $2 \
         WHERE u.id = $1 AND u.is_active = $3",
    )
    .bind(invitation.invited_by_id)
    .bind(invitation.workspace_id)
    .bind(true)
    .fetch_optional(&mut **tx)
    .await
    .map_err(db)?;
    let Some(row) = row else {
        return Ok(false);
    };
    if row.try_get::<i64, _>("is_superuser").map_err(db)? == 1 {
        return Ok(true);
    }
    let role: Option<String> = row.try_get("role").map_err(db)?;
    match role {
        // Inviting at all takes a manager, whatever the role given.
        Some(role) => Ok(crate::parse_stored::<Role>(&role)? >= invitation.role.max(Action::ManageMembers.min_role())),
        None => Ok(false),
    }
}

/// Cancels the pending invitations of a workspace that `inviter` sent (every one, for `None`).
pub(crate) async fn cancel_invitations_by(
    tx: &mut Transaction<'static, Any>,
    workspace_id: i64,
    inviter: Option<i64>,
) -> Result<()> {
    sqlx::query(
        "UPDATE invitations SET status = $1 WHERE workspace_id = $2 AND status = $3 \
         AND ($4 IS NULL OR invited_by_id = $4)",
    )
    .bind(InvitationStatus::Cancelled.as_str())
    .bind(workspace_id)
    .bind(InvitationStatus::Pending.as_str())
    .bind(inviter)
    .execute(&mut **tx)
    .await
    .map_err(db)?;
    Ok(())
}

/// Refuses (409) one more pending invitation in a workspace that has
/// [`MAX_PENDING_INVITATIONS`] unexpired ones, counted behind a lock on the workspace so that
/// invitations made at once cannot all pass at the edge.
async fn room_for_a_pending_invitation(tx: &mut Transaction<'static, Any>, workspace_id: i64) -> Result<()> {
    let pending = crate::count_under_lock(
        tx,
        ("workspaces", workspace_id),
        &format!(
            "SELECT COUNT(*) FROM invitations WHERE workspace_id = $1 AND status = '{}' AND expires > {}",
            InvitationStatus::Pending.as_str(),
            Timestamp::now().micros()
        ),
    )
    .await?;
    if pending >= MAX_PENDING_INVITATIONS {
        return Err(Error::conflict(format!(
            "a workspace has at most {MAX_PENDING_INVITATIONS} pending invitations"
        )));
    }
    Ok(())
}
