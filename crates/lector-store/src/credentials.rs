//! Credentials of external sources. Each belongs to one workspace; MANAGERs create and delete
//! them, every member may list them and use them (USER and up) to fetch from a source. The
//! secret is stored sealed by the caller (lector-sources) and never leaves through a listing:
//! records carry it only for the fetch, and never print it.

use crate::records::{FromAnyRow, Workspace, fetch_record, fetch_records, from_row};
use crate::{Store, WorkspaceRef, db, db_unique};
use lector_core::time::Timestamp;
use lector_core::{Action, Error, Result, Scope, SourceKind};
use std::fmt;

/// Credentials one workspace may hold.
pub const MAX_CREDENTIALS_PER_WORKSPACE: i64 = 100;

const CREDENTIAL_COLUMNS: &str = "id, workspace_id, name, source, sealed_secret, created, created_by";

/// A stored credential. `sealed_secret` is ciphertext; it is never served.
#[derive(Clone, PartialEq)]
pub struct Credential {
    pub id: i64,
    pub workspace_id: i64,
    pub name: String,
    pub source: SourceKind,
    pub sealed_secret: String,
    pub created: Timestamp,
    pub created_by: Option<i64>,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("id", &self.id)
            .field("workspace_id", &self.workspace_id)
            .field("name", &self.name)
            .field("source", &self.source)
            .field("sealed_secret", &"[redacted]")
            .finish()
    }
}

from_row! { Credential { id, workspace_id, name, source, sealed_secret, created, created_by } }

/// A credential to store; the secret is already sealed for the workspace.
#[derive(Clone)]
pub struct NewCredential {
    pub name: String,
    pub source: SourceKind,
    pub sealed_secret: String,
}

impl fmt::Debug for NewCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NewCredential {{ name: {:?}, source: {} }}", self.name, self.source)
    }
}

impl Store {
    /// The credentials of a workspace, oldest first (any member).
    pub async fn credentials(&self, scope: &Scope, workspace: &WorkspaceRef) -> Result<Vec<Credential>> {
        let (found, _) = self.workspace_access(scope, workspace, Action::Read).await?;
        let sql = format!("SELECT {CREDENTIAL_COLUMNS} FROM credentials WHERE workspace_id = $1 ORDER BY id");
        fetch_records(sqlx::query(&sql).bind(found.id), &self.pool).await
    }

    /// Stores a credential in a workspace where the caller is MANAGER or above.
    pub async fn create_credential(
        &self,
        scope: &Scope,
        workspace: &Workspace,
        credential: NewCredential,
    ) -> Result<Credential> {
        scope.authorize(workspace.facts(), Action::Manage)?;
        let mut tx = self.begin_write().await?;
        let held = crate::count_under_lock(
            &mut tx,
            ("workspaces", workspace.id),
            "SELECT COUNT(*) FROM credentials WHERE workspace_id = $1",
        )
        .await?;
        if held >= MAX_CREDENTIALS_PER_WORKSPACE {
            return Err(Error::conflict(format!(
                "a workspace has at most {MAX_CREDENTIALS_PER_WORKSPACE} credentials"
            )));
        }
        let sql = format!(
            "INSERT INTO credentials (workspace_id, name, source, sealed_secret, created, created_by) \
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING {CREDENTIAL_COLUMNS}"
        );
        let row = sqlx::query(&sql)
            .bind(workspace.id)
            .bind(&credential.name)
            .bind(credential.source.as_str())
            .bind(&credential.sealed_secret)
            .bind(Timestamp::now().micros())
            .bind(scope.user_id)
            .fetch_one(&mut *tx)
            .await
            .map_err(db_unique("a credential with this name exists in the workspace"))?;
        let created = Credential::decode(&row)?;
        tx.commit().await.map_err(db)?;
        Ok(created)
    }

    /// Deletes a credential (MANAGER); answers what was deleted.
    pub async fn delete_credential(&self, scope: &Scope, workspace: &WorkspaceRef, id: i64) -> Result<Credential> {
        let (found, _) = self.workspace_access(scope, workspace, Action::Manage).await?;
        let credential = self.credential_in(found.id, id).await?;
        sqlx::query("DELETE FROM credentials WHERE id = $1 AND workspace_id = $2")
            .bind(credential.id)
            .bind(found.id)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(credential)
    }

    /// A credential of a workspace for a fetch, sealed secret included: the caller must be
    /// allowed to create documents and sessions there (USER and up). One of another workspace
    /// answers 404 like a missing one.
    pub async fn credential_for_use(&self, scope: &Scope, workspace_id: i64, id: i64) -> Result<Credential> {
        let (found, _) = self
            .workspace_access(scope, &WorkspaceRef::Id(workspace_id), Action::Edit)
            .await?;
        self.credential_in(found.id, id).await
    }

    async fn credential_in(&self, workspace_id: i64, id: i64) -> Result<Credential> {
        let sql = format!("SELECT {CREDENTIAL_COLUMNS} FROM credentials WHERE id = $1 AND workspace_id = $2");
        fetch_record(sqlx::query(&sql).bind(id).bind(workspace_id), &self.pool, "credential").await
    }
}
