//! Workspaces and their members; invitations are in [`crate::invitations`].
//!
//! Every function resolves the workspace and asks the policy ([`Scope::authorize`]) before it
//! reads or writes anything, so a workspace the caller cannot see answers 404 like a missing one.

use crate::invitations::cancel_invitations_by;
use crate::records::{
    FromAnyRow, MEMBERSHIP_COLUMNS, Membership, MyWorkspace, WORKSPACE_COLUMNS, Workspace, fetch_record, fetch_records,
    flag,
};
use crate::{Param, Store, db, db_unique};
use lector_core::time::Timestamp;
use lector_core::{Action, Error, ErrorCode, Result, Role, Scope};
use sqlx::{Any, Transaction};

/// A workspace named in a path: by id, or by name (`{organization}` takes either).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkspaceRef {
    Id(i64),
    Name(String),
}

impl WorkspaceRef {
    /// Digits address a workspace by id; anything else by name.
    pub fn parse(text: &str) -> Self {
        match text.parse::<i64>() {
            Ok(id) => WorkspaceRef::Id(id),
            Err(_) => WorkspaceRef::Name(text.to_owned()),
        }
    }
}

/// Memberships of active workspaces a user may hold. (How fast one account creates workspaces
/// is bounded by `rate_limits.workspaces_per_hour`: deactivated ones do not count here.)
pub const MAX_WORKSPACES_PER_USER: i64 = 200;

/// Members a workspace may have: the whole membership list fits one page of `list_members`
/// (whose default limit it is), since the original client cannot ask for another page.
pub const MAX_MEMBERS_PER_WORKSPACE: i64 = 1000;

/// Workspace settings to change; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct WorkspaceChanges {
    pub name: Option<String>,
    pub description: Option<String>,
    pub is_read_only: Option<bool>,
    pub is_beta: Option<bool>,
}

impl Store {
    async fn find_workspace(&self, workspace: &WorkspaceRef) -> Result<Option<Workspace>> {
        let (filter, param) = match workspace {
            WorkspaceRef::Id(id) => ("w.id = $1", Param::Int(*id)),
            WorkspaceRef::Name(name) => ("w.name = $1", Param::Text(name.clone())),
        };
        let sql = format!("SELECT {WORKSPACE_COLUMNS} FROM workspaces w WHERE {filter}");
        let query = Param::bind_all(sqlx::query(&sql), vec![param]);
        let row = query.fetch_optional(&self.pool).await.map_err(db)?;
        row.as_ref().map(Workspace::decode).transpose()
    }

    /// Resolves a workspace and checks the caller may perform `action` in it.
    pub async fn workspace_access(
        &self,
        scope: &Scope,
        workspace: &WorkspaceRef,
        action: Action,
    ) -> Result<(Workspace, Role)> {
        let found = self
            .find_workspace(workspace)
            .await?
            .ok_or_else(|| Error::not_found("workspace"))?;
        let role = scope.authorize(found.facts(), action)?;
        Ok((found, role))
    }

    /// Creates a workspace with the caller as its ADMIN.
    pub async fn create_workspace(&self, scope: &Scope, name: &str, description: &str) -> Result<Workspace> {
        let mut tx = self.begin_write().await?;
        check_workspaces_held(&mut tx, scope.user_id).await?;
        let now = Timestamp::now().micros();
        let id: i64 =
            sqlx::query_scalar("INSERT INTO workspaces (name, description, created) VALUES ($1, $2, $3) RETURNING id")
                .bind(name)
                .bind(description)
                .bind(now)
                .fetch_one(&mut *tx)
                .await
                .map_err(db_unique("a workspace with this name exists"))?;
        // Read back as every workspace is read ([`WORKSPACE_COLUMNS`]), in the transaction.
        let sql = format!("SELECT {WORKSPACE_COLUMNS} FROM workspaces w WHERE w.id = $1");
        let workspace: Workspace = fetch_record(sqlx::query(&sql).bind(id), &mut *tx, "workspace").await?;
        insert_membership(&mut tx, workspace.id, scope.user_id, Role::Admin).await?;
        tx.commit().await.map_err(db)?;
        Ok(workspace)
    }

    /// The caller's active workspaces with its role in each and which one is its default.
    pub async fn my_workspaces(&self, scope: &Scope) -> Result<Vec<MyWorkspace>> {
        let default = self.default_workspace_id(scope.user_id).await?;
        let sql = format!(
            "SELECT {WORKSPACE_COLUMNS}, m.role FROM workspaces w JOIN memberships m ON m.workspace_id = w.id \
             WHERE m.user_id = $1 AND w.is_active = $2 ORDER BY w.id"
        );
        let rows = sqlx::query(&sql)
            .bind(scope.user_id)
            .bind(true)
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        rows.iter()
            .map(|row| {
                let workspace = Workspace::decode(row)?;
                let role: String = sqlx::Row::try_get(row, "role").map_err(db)?;
                Ok(MyWorkspace {
                    is_default: Some(workspace.id) == default,
                    role: crate::parse_stored(&role)?,
                    workspace,
                })
            })
            .collect()
    }

    /// The default workspace: the chosen one while it is active and the user a member, else
    /// the personal one.
    pub async fn default_workspace_id(&self, user_id: i64) -> Result<Option<i64>> {
        sqlx::query_scalar(
            "SELECT COALESCE(( \
                 SELECT w.id FROM users u JOIN workspaces w ON w.id = u.default_workspace_id \
                 JOIN memberships m ON m.workspace_id = w.id AND m.user_id = u.id \
                 WHERE u.id = $1 AND w.is_active = $2), \
               (SELECT personal_workspace_id FROM users WHERE id = $1))",
        )
        .bind(user_id)
        .bind(true)
        .fetch_one(&self.pool)
        .await
        .map_err(db)
    }

    /// Changes a workspace. ADMINs may always change its settings, read-only or not, so that
    /// read-only can be lifted again, except when a superuser made it read-only: then only a
    /// superuser changes it. `is_beta` is for superusers. The workspace is read and written
    /// behind a lock on its row, so a change made meanwhile (a superuser's read-only lock, an
    /// ADMIN's description) is what this one starts from, never undone by it.
    pub async fn update_workspace(
        &self,
        scope: &Scope,
        workspace: &WorkspaceRef,
        changes: WorkspaceChanges,
    ) -> Result<Workspace> {
        let id = self
            .find_workspace(workspace)
            .await?
            .ok_or_else(|| Error::not_found("workspace"))?
            .id;
        let mut tx = self.begin_write().await?;
        // As `count_under_lock` takes it: writers of the workspace queue behind each other,
        // inserts that only refer to it do not.
        crate::lock_row_for_no_key_update(&mut tx, ("workspaces", id)).await?;
        let sql = format!("SELECT {WORKSPACE_COLUMNS}, w.read_only_by_superuser FROM workspaces w WHERE w.id = $1");
        let row = sqlx::query(&sql).bind(id).fetch_optional(&mut *tx).await.map_err(db)?;
        let row = row.ok_or_else(|| Error::not_found("workspace"))?;
        let found = Workspace::decode(&row)?;
        let locked = found.is_read_only && flag(&row, "read_only_by_superuser").map_err(db)?;
        let facts = lector_core::policy::WorkspaceFacts {
            is_read_only: locked && !scope.is_superuser,
            ..found.facts()
        };
        scope.authorize(facts, Action::Administer)?;
        if changes.is_beta.is_some() && !scope.is_superuser {
            return Err(Error::forbidden("only superusers change is_beta"));
        }
        let read_only = changes.is_read_only.unwrap_or(found.is_read_only);
        let locked = read_only && (locked || (scope.is_superuser && changes.is_read_only == Some(true)));
        let changed = Workspace {
            name: changes.name.unwrap_or(found.name),
            description: changes.description.unwrap_or(found.description),
            is_read_only: read_only,
            is_beta: changes.is_beta.unwrap_or(found.is_beta),
            ..found
        };
        sqlx::query(
            "UPDATE workspaces SET name = $1, description = $2, is_read_only = $3, is_beta = $4, \
             read_only_by_superuser = $5 WHERE id = $6",
        )
        .bind(&changed.name)
        .bind(&changed.description)
        .bind(changed.is_read_only)
        .bind(changed.is_beta)
        .bind(locked)
        .bind(changed.id)
        .execute(&mut *tx)
        .await
        .map_err(db_unique("a workspace with this name exists"))?;
        tx.commit().await.map_err(db)?;
        Ok(changed)
    }

    /// Deactivates a workspace: it disappears for its members. Personal workspaces stay.
    /// Its workflows stop listening: their addresses are free for other workspaces, and none runs
    /// on for a workspace nobody can open.
    pub async fn deactivate_workspace(&self, scope: &Scope, workspace: &WorkspaceRef) -> Result<Workspace> {
        let (found, _) = self.workspace_access(scope, workspace, Action::Administer).await?;
        let personal: Option<i64> = sqlx::query_scalar("SELECT id FROM users WHERE personal_workspace_id = $1")
            .bind(found.id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        if personal.is_some() {
            return Err(Error::conflict("a personal workspace cannot be deactivated"));
        }
        let mut tx = self.begin_write().await?;
        sqlx::query("UPDATE workspaces SET is_active = $1 WHERE id = $2")
            .bind(false)
            .bind(found.id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        crate::workflows::deactivate_workflows_in(&mut tx, found.id).await?;
        cancel_invitations_by(&mut tx, found.id, None).await?;
        tx.commit().await.map_err(db)?;
        Ok(Workspace {
            is_active: false,
            ..found
        })
    }

    /// Makes a workspace the caller's default (`true`) or, if it is the default, returns the
    /// default to the personal workspace (`false`).
    pub async fn set_default_workspace(
        &self,
        scope: &Scope,
        workspace: &WorkspaceRef,
        default: bool,
    ) -> Result<MyWorkspace> {
        let (found, role) = self.workspace_access(scope, workspace, Action::Read).await?;
        if scope.role_in(found.id).is_none() {
            return Err(Error::conflict("only a member can make a workspace the default"));
        }
        let sql = if default {
            "UPDATE users SET default_workspace_id = $1 WHERE id = $2"
        } else {
            "UPDATE users SET default_workspace_id = personal_workspace_id WHERE id = $2 AND default_workspace_id = $1"
        };
        sqlx::query(sql)
            .bind(found.id)
            .bind(scope.user_id)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        let is_default = self.default_workspace_id(scope.user_id).await? == Some(found.id);
        Ok(MyWorkspace {
            workspace: found,
            role,
            is_default,
        })
    }

    /// One page of a workspace's members, oldest membership first.
    pub async fn members(
        &self,
        scope: &Scope,
        workspace: &WorkspaceRef,
        offset: i64,
        limit: i64,
    ) -> Result<Vec<Membership>> {
        let (found, _) = self.workspace_access(scope, workspace, Action::Read).await?;
        let sql = format!(
            "SELECT {MEMBERSHIP_COLUMNS} FROM memberships m JOIN users u ON u.id = m.user_id \
             WHERE m.workspace_id = $1 ORDER BY m.id LIMIT $2 OFFSET $3"
        );
        fetch_records(sqlx::query(&sql).bind(found.id).bind(limit).bind(offset), &self.pool).await
    }

    async fn membership(&self, workspace_id: i64, membership_id: i64) -> Result<Membership> {
        let sql = format!(
            "SELECT {MEMBERSHIP_COLUMNS} FROM memberships m JOIN users u ON u.id = m.user_id \
             WHERE m.workspace_id = $1 AND m.id = $2"
        );
        let query = sqlx::query(&sql).bind(workspace_id).bind(membership_id);
        fetch_record(query, &self.pool, "membership").await
    }

    /// Adds an existing user to a workspace with a role no higher than the caller's.
    ///
    /// The membership answer names the user's e-mail address, so a caller who is no superuser
    /// adds only a user they already share an active workspace with; anyone else is answered
    /// exactly like an unknown id, so trying ids reveals no address. Strangers are invited by
    /// e-mail. The added user's own limit ([`MAX_WORKSPACES_PER_USER`]) is counted in the
    /// transaction that adds them, so nobody fills another's quota.
    pub async fn add_member(
        &self,
        scope: &Scope,
        workspace: &WorkspaceRef,
        user_id: i64,
        role: Role,
    ) -> Result<Membership> {
        let (found, own) = self.workspace_access(scope, workspace, Action::ManageMembers).await?;
        scope.may_grant(own, role)?;
        let mut tx = self.begin_write().await?;
        if !may_add_user(&mut tx, scope, user_id).await? {
            return Err(if scope.is_superuser {
                Error::not_found("user")
            } else {
                Error::new(ErrorCode::NotFound, UNKNOWN_TO_CALLER)
            });
        }
        check_workspaces_held(&mut tx, user_id).await?;
        let id = insert_membership(&mut tx, found.id, user_id, role).await?;
        tx.commit().await.map_err(db)?;
        self.membership(found.id, id).await
    }

    /// Changes a member's role. Nobody changes the role of someone above them or grants a role
    /// above their own, and a workspace keeps at least one ADMIN.
    pub async fn update_member_role(
        &self,
        scope: &Scope,
        workspace: &WorkspaceRef,
        membership_id: i64,
        role: Role,
    ) -> Result<Membership> {
        let (found, own) = self.workspace_access(scope, workspace, Action::ManageMembers).await?;
        let target = self.membership(found.id, membership_id).await?;
        scope.may_grant(own, target.role)?;
        scope.may_grant(own, role)?;
        let mut tx = self.begin_write().await?;
        if role != Role::Admin {
            keep_an_admin(&mut tx, found.id, target.id).await?;
        }
        // The owner of a personal workspace, who may not leave it, is not put below its other
        // ADMINs either (nor by themselves): they could never take it back. A superuser could.
        if role < target.role && !scope.is_superuser && owns_as_personal(&mut tx, target.user_id, found.id).await? {
            return Err(Error::conflict(
                "the owner of a personal workspace keeps their role in it",
            ));
        }
        sqlx::query("UPDATE memberships SET role = $1 WHERE id = $2")
            .bind(role.as_str())
            .bind(target.id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        if role < Action::Annotate.min_role() {
            crate::hitl_reviews::unassign_reviews_in(&mut tx, found.id, target.user_id).await?;
        }
        // A member whose role is lowered loses the invitations they sent with the old one: an
        // invitation to their own second address would otherwise give the old role back.
        if role < target.role {
            cancel_invitations_by(&mut tx, found.id, Some(target.user_id)).await?;
        }
        tx.commit().await.map_err(db)?;
        self.membership(found.id, membership_id).await
    }

    /// Removes a member. Members may always leave; managers remove others up to their own role.
    pub async fn remove_member(
        &self,
        scope: &Scope,
        workspace: &WorkspaceRef,
        membership_id: i64,
    ) -> Result<Membership> {
        let (found, own) = self.workspace_access(scope, workspace, Action::Read).await?;
        let target = self.membership(found.id, membership_id).await?;
        if target.user_id != scope.user_id {
            scope.authorize(found.facts(), Action::ManageMembers)?;
            scope.may_grant(own, target.role)?;
        }
        let mut tx = self.begin_write().await?;
        keep_an_admin(&mut tx, found.id, target.id).await?;
        if owns_as_personal(&mut tx, target.user_id, found.id).await? {
            return Err(Error::conflict("nobody leaves their own personal workspace"));
        }
        sqlx::query("DELETE FROM memberships WHERE id = $1")
            .bind(target.id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        crate::hitl_reviews::unassign_reviews_in(&mut tx, found.id, target.user_id).await?;
        // What the member invited leaves with them: an invitation to their own second address
        // would otherwise bring them back.
        cancel_invitations_by(&mut tx, found.id, Some(target.user_id)).await?;
        tx.commit().await.map_err(db)?;
        Ok(target)
    }
}

/// What [`Store::add_member`] answers for an unknown user id and for a user the caller shares
/// no workspace with alike.
const UNKNOWN_TO_CALLER: &str = "no user with this id that you share a workspace with; invite them by e-mail instead";

/// Whether the caller may add `user_id` to a workspace: a superuser anyone who exists, anyone
/// else a user who is a member (in any role) of an active workspace the caller is a member of.
async fn may_add_user(tx: &mut Transaction<'static, Any>, scope: &Scope, user_id: i64) -> Result<bool> {
    let found: Option<i64> = if scope.is_superuser {
        sqlx::query_scalar("SELECT id FROM users WHERE id = $1")
            .bind(user_id)
            .fetch_optional(&mut **tx)
            .await
    } else {
        sqlx::query_scalar(
            "SELECT theirs.user_id FROM memberships mine \
             JOIN memberships theirs ON theirs.workspace_id = mine.workspace_id \
             JOIN workspaces w ON w.id = mine.workspace_id \
             WHERE mine.user_id = $1 AND theirs.user_id = $2 AND w.is_active = $3 LIMIT 1",
        )
        .bind(scope.user_id)
        .bind(user_id)
        .bind(true)
        .fetch_optional(&mut **tx)
        .await
    }
    .map_err(db)?;
    Ok(found.is_some())
}

/// Refuses one more membership for a user who holds [`MAX_WORKSPACES_PER_USER`] already
/// (counted behind a lock on the user, so memberships added at once cannot all pass at the edge).
/// Workspaces deactivated do not count: their member can neither see nor leave them, so
/// counting them would let whoever added someone to many and deactivated them lock that person
/// out of every other workspace.
pub(crate) async fn check_workspaces_held(tx: &mut Transaction<'static, Any>, user_id: i64) -> Result<()> {
    let held = crate::count_under_lock(
        tx,
        ("users", user_id),
        "SELECT COUNT(*) FROM memberships m JOIN workspaces w ON w.id = m.workspace_id \
         WHERE m.user_id = $1 AND w.is_active = TRUE",
    )
    .await?;
    if held >= MAX_WORKSPACES_PER_USER {
        return Err(Error::conflict(format!(
            "a user belongs to at most {MAX_WORKSPACES_PER_USER} workspaces"
        )));
    }
    Ok(())
}

/// Adds a membership, up to [`MAX_MEMBERS_PER_WORKSPACE`] (counted behind a lock on the
/// workspace, so members added at once cannot all pass at the edge).
pub(crate) async fn insert_membership(
    tx: &mut Transaction<'static, Any>,
    workspace_id: i64,
    user_id: i64,
    role: Role,
) -> Result<i64> {
    let members = crate::count_under_lock(
        tx,
        ("workspaces", workspace_id),
        "SELECT COUNT(*) FROM memberships WHERE workspace_id = $1",
    )
    .await?;
    if members >= MAX_MEMBERS_PER_WORKSPACE {
        return Err(Error::conflict(format!(
            "a workspace has at most {MAX_MEMBERS_PER_WORKSPACE} members"
        )));
    }
    sqlx::query_scalar(
        "INSERT INTO memberships (workspace_id, user_id, role, created) VALUES ($1, $2, $3, $4) RETURNING id",
    )
    .bind(workspace_id)
    .bind(user_id)
    .bind(role.as_str())
    .bind(Timestamp::now().micros())
    .fetch_one(&mut **tx)
    .await
    .map_err(db_unique("the user is a member of the workspace already"))
}

/// Refuses to take the ADMIN role from a membership (demoting or removing it) when it is the
/// workspace's last ADMIN. Counted in the transaction that writes, behind a lock on the
/// workspace, with the membership's role as that transaction sees it: two ADMINs demoting each
/// other, or both leaving, at the same moment cannot both pass.
async fn keep_an_admin(tx: &mut Transaction<'static, Any>, workspace_id: i64, membership_id: i64) -> Result<()> {
    let admin = Role::Admin.as_str();
    let admins = crate::count_under_lock(
        tx,
        ("workspaces", workspace_id),
        &format!("SELECT COUNT(*) FROM memberships WHERE workspace_id = $1 AND role = '{admin}'"),
    )
    .await?;
    let role: Option<String> = sqlx::query_scalar("SELECT role FROM memberships WHERE id = $1")
        .bind(membership_id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db)?;
    if role.as_deref() == Some(admin) && admins <= 1 {
        return Err(Error::conflict("a workspace keeps at least one ADMIN"));
    }
    Ok(())
}

/// Whether `workspace_id` is `user_id`'s personal workspace.
async fn owns_as_personal(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    user_id: i64,
    workspace_id: i64,
) -> Result<bool> {
    let personal: Option<i64> = sqlx::query_scalar("SELECT id FROM users WHERE id = $1 AND personal_workspace_id = $2")
        .bind(user_id)
        .bind(workspace_id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db)?;
    Ok(personal.is_some())
}
