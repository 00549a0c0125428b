//! Who may do what: workspace roles, the actions they unlock, and the caller's [`Scope`].
//!
//! This is the one place authorisation is decided. Handlers name an [`Action`]; the store
//! resolves the workspace an object belongs to and asks [`Scope::authorize`]. A workspace the
//! caller cannot see answers 404 (the same as one that does not exist), a role that is too low
//! answers 403, and a read-only workspace refuses every write but stopping what runs, and
//! answers what writes nothing (reads, and using a model without storing anything).

use crate::{Error, ErrorCode, Result};
use serde::{Deserialize, Serialize};

/// A member's role in a workspace, ordered from least to most powerful.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Role {
    Viewer,
    Annotator,
    User,
    Manager,
    Admin,
}

crate::wire_enum!(Role { Viewer => "VIEWER", Annotator => "ANNOTATOR", User => "USER", Manager => "MANAGER", Admin => "ADMIN" });

/// What a request wants to do inside a workspace, from the policy's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Read projects, documents, models, analyses, sessions, members.
    Read,
    /// Tag segments, mark annotated, correct.
    Annotate,
    /// Create and change documents, groups, sessions, analyses; extraction; training.
    Edit,
    /// Stop what runs (deactivate a workflow): the role of [`Action::Edit`], and allowed in a
    /// read-only workspace, whose every other write is refused, so that nothing goes on acting
    /// there.
    Stop,
    /// Use what is there without writing anything (an ad-hoc analysis, answered within the
    /// request and stored nowhere): the role of [`Action::Edit`], and allowed in a read-only
    /// workspace, which refuses writes only.
    Use,
    /// Create, change, clone, transfer projects; classes, labels; HITL; models.
    Manage,
    /// Invite, add members, change roles (never above one's own).
    ManageMembers,
    /// See the pending invitations: a manager's read, so a read-only workspace answers it.
    ReadInvitations,
    /// Change or deactivate the workspace itself.
    Administer,
}

impl Action {
    /// The least role that may perform the action.
    pub fn min_role(self) -> Role {
        match self {
            Action::Read => Role::Viewer,
            Action::Annotate => Role::Annotator,
            Action::Edit | Action::Stop | Action::Use => Role::User,
            Action::Manage | Action::ManageMembers | Action::ReadInvitations => Role::Manager,
            Action::Administer => Role::Admin,
        }
    }

    /// Whether a read-only workspace refuses the action: every change but stopping (reads,
    /// a manager's included, and uses that store nothing are answered).
    pub fn is_write(self) -> bool {
        !matches!(
            self,
            Action::Read | Action::ReadInvitations | Action::Stop | Action::Use
        )
    }
}

/// The caller's access to one workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkspaceAccess {
    pub workspace_id: i64,
    pub role: Role,
}

/// Who is asking: passed to every store function so no read or write escapes tenancy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub user_id: i64,
    pub is_superuser: bool,
    pub workspaces: Vec<WorkspaceAccess>,
}

/// The facts about a workspace the policy needs besides the caller's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkspaceFacts {
    pub id: i64,
    pub is_active: bool,
    pub is_read_only: bool,
}

impl Scope {
    /// The caller's role in a workspace, if a member.
    pub fn role_in(&self, workspace_id: i64) -> Option<Role> {
        self.workspaces
            .iter()
            .find(|w| w.workspace_id == workspace_id)
            .map(|w| w.role)
    }

    /// Whether the caller may see the workspace at all.
    pub fn can_see(&self, workspace: WorkspaceFacts) -> bool {
        self.is_superuser || (workspace.is_active && self.role_in(workspace.id).is_some())
    }

    /// Decides whether the caller may perform `action` in `workspace`.
    ///
    /// Returns the caller's effective role (superusers act as ADMIN).
    pub fn authorize(&self, workspace: WorkspaceFacts, action: Action) -> Result<Role> {
        if !self.can_see(workspace) {
            return Err(Error::not_found("workspace"));
        }
        let role = if self.is_superuser {
            Role::Admin
        } else {
            self.role_in(workspace.id).unwrap_or(Role::Viewer)
        };
        if role < action.min_role() {
            return Err(Error::forbidden(format!(
                "this needs the role {} or higher in the workspace; yours is {role}",
                action.min_role()
            )));
        }
        if action.is_write() && workspace.is_read_only {
            return Err(Error::new(
                ErrorCode::WorkspaceReadOnly,
                "the workspace is read-only and refuses changes",
            ));
        }
        Ok(role)
    }

    /// Refuses a caller who holds the role `action` needs in no workspace: the first check of an
    /// operation whose workspace is known only later (an upload read before its target).
    pub fn may_somewhere(&self, action: Action) -> Result<()> {
        if self.is_superuser || self.workspaces.iter().any(|w| w.role >= action.min_role()) {
            Ok(())
        } else {
            Err(Error::forbidden(format!(
                "this needs the role {} or higher in a workspace",
                action.min_role()
            )))
        }
    }

    /// Nobody grants a role above their own; superusers grant any.
    pub fn may_grant(&self, own_role: Role, granted: Role) -> Result<()> {
        if self.is_superuser || granted <= own_role {
            Ok(())
        } else {
            Err(Error::forbidden(format!(
                "a {own_role} cannot grant the role {granted}"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WS: WorkspaceFacts = WorkspaceFacts {
        id: 7,
        is_active: true,
        is_read_only: false,
    };

    fn member(role: Role) -> Scope {
        Scope {
            user_id: 1,
            is_superuser: false,
            workspaces: vec![WorkspaceAccess { workspace_id: 7, role }],
        }
    }

    const ACTIONS: [Action; 9] = [
        Action::Read,
        Action::Annotate,
        Action::Edit,
        Action::Stop,
        Action::Use,
        Action::Manage,
        Action::ManageMembers,
        Action::ReadInvitations,
        Action::Administer,
    ];

    #[test]
    fn a_role_somewhere_is_enough_and_none_is_not() {
        assert!(member(Role::Manager).may_somewhere(Action::Manage).is_ok());
        assert!(member(Role::User).may_somewhere(Action::Manage).is_err());
        assert!(member(Role::User).may_somewhere(Action::Edit).is_ok());
        let nobody = Scope {
            user_id: 2,
            is_superuser: false,
            workspaces: Vec::new(),
        };
        assert!(nobody.may_somewhere(Action::Read).is_err());
        let superuser = Scope {
            is_superuser: true,
            ..nobody
        };
        assert!(superuser.may_somewhere(Action::Administer).is_ok());
    }

    #[test]
    fn every_role_against_every_action() {
        // Rows follow DESIGN.md section 4: which actions each role may take.
        let table = [
            (
                Role::Viewer,
                [true, false, false, false, false, false, false, false, false],
            ),
            (
                Role::Annotator,
                [true, true, false, false, false, false, false, false, false],
            ),
            (Role::User, [true, true, true, true, true, false, false, false, false]),
            (Role::Manager, [true, true, true, true, true, true, true, true, false]),
            (Role::Admin, [true, true, true, true, true, true, true, true, true]),
        ];
        for (role, allowed) in table {
            for (action, allowed) in ACTIONS.iter().zip(allowed) {
                let outcome = member(role).authorize(WS, *action);
                assert_eq!(outcome.is_ok(), allowed, "{role} {action:?}");
                if !allowed {
                    assert_eq!(outcome.unwrap_err().code, ErrorCode::Forbidden);
                }
            }
        }
    }

    #[test]
    fn strangers_get_not_found_and_superusers_pass() {
        let stranger = Scope {
            user_id: 2,
            is_superuser: false,
            workspaces: vec![],
        };
        assert_eq!(
            stranger.authorize(WS, Action::Read).unwrap_err().code,
            ErrorCode::NotFound
        );
        let root = Scope {
            is_superuser: true,
            ..stranger
        };
        assert_eq!(root.authorize(WS, Action::Administer), Ok(Role::Admin));
    }

    #[test]
    fn read_only_and_inactive_workspaces() {
        let ro = WorkspaceFacts {
            is_read_only: true,
            ..WS
        };
        assert!(member(Role::Admin).authorize(ro, Action::Read).is_ok());
        assert!(member(Role::Manager).authorize(ro, Action::ReadInvitations).is_ok());
        let err = member(Role::User).authorize(ro, Action::ReadInvitations).unwrap_err();
        assert_eq!(err.code, ErrorCode::Forbidden);
        let err = member(Role::Admin).authorize(ro, Action::Edit).unwrap_err();
        assert_eq!(err.code, ErrorCode::WorkspaceReadOnly);
        // Stopping what runs is no change a read-only workspace refuses; the role still counts.
        assert!(member(Role::User).authorize(ro, Action::Stop).is_ok());
        assert!(member(Role::Annotator).authorize(ro, Action::Stop).is_err());
        // Neither is a use that stores nothing (an ad-hoc analysis): a USER's, read-only or not.
        assert_eq!(member(Role::User).authorize(ro, Action::Use), Ok(Role::User));
        let err = member(Role::Annotator).authorize(ro, Action::Use).unwrap_err();
        assert_eq!(err.code, ErrorCode::Forbidden);
        assert!(!Action::Use.is_write() && Action::Edit.is_write());
        let gone = WorkspaceFacts { is_active: false, ..WS };
        assert_eq!(
            member(Role::Admin).authorize(gone, Action::Read).unwrap_err().code,
            ErrorCode::NotFound
        );
    }

    #[test]
    fn nobody_grants_above_their_own_role() {
        let m = member(Role::Manager);
        assert!(m.may_grant(Role::Manager, Role::Manager).is_ok());
        assert!(m.may_grant(Role::Manager, Role::Admin).is_err());
        assert!(Role::Viewer < Role::Annotator && Role::User < Role::Manager);
    }
}
