//! Workflows and their webhook registrations (their executions: `workflow_executions.rs`).
//!
//! A workflow belongs to a workspace: members read it, USERs and up change it. Its definition
//! is stored as the JSON `lector-workflow` checked; this module never looks inside it, and is
//! handed the (method, path) pairs the definition listens on.
//!
//! Registrations are the one place a path and method are claimed across the installation
//! (`webhook_registrations`, keyed by method and path): a workflow takes a row for its
//! production address while it is active and for its test address until the test window
//! closes. The claim is one `INSERT … ON CONFLICT … DO UPDATE … WHERE` per row, so two nodes
//! activating two workflows on one path at the same moment cannot both win. The webhook
//! lookups are the only readers here without a caller: a webhook address is public, and what
//! it may do is decided by the workflow it finds.

use crate::records::{FromAnyRow, fetch_record, from_row};
use crate::{Store, WorkspaceRef, db, numbered};
use lector_core::time::Timestamp;
use lector_core::{Action, Error, Result, Scope};
use sqlx::Row;

/// Workflows one workspace may hold.
pub const MAX_WORKFLOWS_PER_WORKSPACE: i64 = 200;
const WORKFLOW_COLUMNS: &str = "id, workspace_id, name, definition, auth_digest, keep_data, active, run_as, \
     test_run_as, created_by, created, updated";

/// A stored workflow.
#[derive(Clone, PartialEq)]
pub struct Workflow {
    pub id: i64,
    pub workspace_id: i64,
    pub name: String,
    /// The definition as JSON, without its secret.
    pub definition: String,
    /// The salted digest of the trigger's secret; never served.
    pub auth_digest: Option<String>,
    /// Whether production executions keep their data.
    pub keep_data: bool,
    pub active: bool,
    /// Whose role in the workspace the production address's steps run with: who activated it.
    pub run_as: Option<i64>,
    /// Whose role a test call's steps run with: who armed the test address (before migration
    /// 0027, none: `run_as`'s).
    pub test_run_as: Option<i64>,
    pub created_by: Option<i64>,
    pub created: Timestamp,
    pub updated: Timestamp,
}

impl std::fmt::Debug for Workflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workflow")
            .field("id", &self.id)
            .field("workspace_id", &self.workspace_id)
            .field("name", &self.name)
            .field("active", &self.active)
            .finish_non_exhaustive()
    }
}

from_row! {
    Workflow {
        id, workspace_id, name, definition, auth_digest, keep_data, active, run_as, test_run_as,
        created_by, created, updated,
    }
}

/// A workflow's fields as a create or an update writes them.
#[derive(Clone, PartialEq)]
pub struct NewWorkflow {
    pub name: String,
    pub definition: String,
    pub auth_digest: Option<String>,
    pub keep_data: bool,
    /// The (method, path) pairs the definition listens on.
    pub routes: Vec<(String, String)>,
}

impl std::fmt::Debug for NewWorkflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewWorkflow")
            .field("name", &self.name)
            .field("routes", &self.routes)
            .finish_non_exhaustive()
    }
}

/// What a webhook address leads to.
#[derive(Debug, Clone, PartialEq)]
pub enum WebhookTarget {
    /// The workflow registered for the method and path.
    Workflow(Box<Workflow>),
    /// The path is registered, for these methods only.
    OtherMethods(Vec<String>),
    NotFound,
}

/// Which address a registration is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Address {
    Production,
    Test { until: Timestamp },
}

type Tx = sqlx::Transaction<'static, sqlx::Any>;

impl Store {
    /// The workflows of the caller's workspaces (or of one), oldest first, a page at a time;
    /// answers whether more follow.
    pub async fn workflows(
        &self,
        scope: &Scope,
        workspace_id: Option<i64>,
        offset: i64,
        limit: i64,
    ) -> Result<(Vec<Workflow>, bool)> {
        if let Some(id) = workspace_id {
            self.workspace_access(scope, &WorkspaceRef::Id(id), Action::Read)
                .await?;
        }
        let ids: Vec<i64> = scope
            .workspaces
            .iter()
            .map(|w| w.workspace_id)
            .chain(workspace_id)
            .filter(|id| workspace_id.is_none_or(|wanted| wanted == *id))
            .collect();
        if ids.is_empty() {
            return Ok((Vec::new(), false));
        }
        let sql = format!(
            "SELECT {WORKFLOW_COLUMNS} FROM workflows WHERE workspace_id IN ({}) ORDER BY id LIMIT ${} OFFSET ${}",
            numbered(1, ids.len()),
            ids.len() + 1,
            ids.len() + 2
        );
        let mut query = sqlx::query(&sql);
        for id in &ids {
            query = query.bind(*id);
        }
        let rows = query
            .bind(limit + 1)
            .bind(offset)
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        let mut found = rows.iter().map(Workflow::decode).collect::<Result<Vec<_>>>()?;
        let more = found.len() as i64 > limit;
        found.truncate(limit as usize);
        Ok((found, more))
    }

    /// One workflow, if the caller may do `action` in its workspace (else 404 or 403).
    pub async fn workflow(&self, scope: &Scope, id: i64, action: Action) -> Result<Workflow> {
        let workflow = self
            .workflow_by_id(id)
            .await?
            .ok_or_else(|| Error::not_found("workflow"))?;
        self.workspace_access(scope, &WorkspaceRef::Id(workflow.workspace_id), action)
            .await
            .map_err(|e| {
                if e.status() == 404 {
                    Error::not_found("workflow")
                } else {
                    e
                }
            })?;
        Ok(workflow)
    }

    async fn workflow_by_id(&self, id: i64) -> Result<Option<Workflow>> {
        let sql = format!("SELECT {WORKFLOW_COLUMNS} FROM workflows WHERE id = $1");
        let row = sqlx::query(&sql)
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        row.as_ref().map(Workflow::decode).transpose()
    }

    /// Adds an inactive workflow to a workspace (USER and up).
    pub async fn create_workflow(&self, scope: &Scope, workspace_id: i64, new: &NewWorkflow) -> Result<Workflow> {
        let (workspace, _) = self
            .workspace_access(scope, &WorkspaceRef::Id(workspace_id), Action::Edit)
            .await?;
        let mut tx = self.begin_write().await?;
        let held = crate::count_under_lock(
            &mut tx,
            ("workspaces", workspace.id),
            "SELECT COUNT(*) FROM workflows WHERE workspace_id = $1",
        )
        .await?;
        if held >= MAX_WORKFLOWS_PER_WORKSPACE {
            return Err(Error::conflict(format!(
                "a workspace has at most {MAX_WORKFLOWS_PER_WORKSPACE} workflows"
            )));
        }
        let now = Timestamp::now().micros();
        let sql = format!(
            "INSERT INTO workflows (workspace_id, name, definition, auth_digest, keep_data, active, created_by, \
             created, updated) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING {WORKFLOW_COLUMNS}"
        );
        let row = sqlx::query(&sql)
            .bind(workspace.id)
            .bind(&new.name)
            .bind(&new.definition)
            .bind(&new.auth_digest)
            .bind(new.keep_data)
            .bind(false)
            .bind(scope.user_id)
            .bind(now)
            .fetch_one(&mut *tx)
            .await
            .map_err(db)?;
        let created = Workflow::decode(&row)?;
        tx.commit().await.map_err(db)?;
        Ok(created)
    }

    /// Replaces a workflow's name and definition (USER and up). An active workflow takes its
    /// new path and methods at once: a conflict answers 409 and changes nothing.
    pub async fn update_workflow(&self, scope: &Scope, id: i64, new: &NewWorkflow) -> Result<Workflow> {
        let current = self.workflow(scope, id, Action::Edit).await?;
        let mut tx = self.begin_write().await?;
        let sql = format!(
            "UPDATE workflows SET name = $1, definition = $2, auth_digest = $3, keep_data = $4, updated = $5 \
             WHERE id = $6 RETURNING {WORKFLOW_COLUMNS}"
        );
        let query = sqlx::query(&sql)
            .bind(&new.name)
            .bind(&new.definition)
            .bind(&new.auth_digest)
            .bind(new.keep_data)
            .bind(Timestamp::now().micros())
            .bind(current.id);
        let updated: Workflow = fetch_record(query, &mut *tx, "workflow").await?;
        // A test address armed for the old definition closes: the next test arms the new one.
        release(&mut tx, id, Address::Test { until: Timestamp(0) }).await?;
        if updated.active {
            self.register(&mut tx, scope, id, &new.routes, Address::Production)
                .await?;
        }
        tx.commit().await.map_err(db)?;
        Ok(updated)
    }

    /// Deletes a workflow with its registrations and executions (USER and up).
    pub async fn delete_workflow(&self, scope: &Scope, id: i64) -> Result<Workflow> {
        let workflow = self.workflow(scope, id, Action::Edit).await?;
        let mut tx = self.begin_write().await?;
        // The workflow's row before its registrations, as every writer of both takes them.
        crate::lock_row(&mut tx, ("workflows", id)).await?;
        for table in ["webhook_registrations", "workflow_executions"] {
            sqlx::query(&format!("DELETE FROM {table} WHERE workflow_id = $1"))
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        }
        sqlx::query("DELETE FROM workflows WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok(workflow)
    }

    /// Activates a workflow (USER and up): its production address listens on `routes` (those
    /// of the definition in `seen`) until it is deactivated, and its steps run with the
    /// caller's role. A path and method another workflow holds answers 409 naming it; so does
    /// a definition changed since `seen` was read, whose routes may differ.
    pub async fn activate_workflow(
        &self,
        scope: &Scope,
        seen: &Workflow,
        routes: &[(String, String)],
    ) -> Result<Workflow> {
        let id = seen.id;
        self.workflow(scope, id, Action::Edit).await?;
        let mut tx = self.begin_write().await?;
        unchanged_since(&mut tx, seen).await?;
        self.register(&mut tx, scope, id, routes, Address::Production).await?;
        let workflow = set_state(&mut tx, id, Some(true), scope.user_id).await?;
        tx.commit().await.map_err(db)?;
        Ok(workflow)
    }

    /// Deactivates a workflow (USER and up): its production address stops listening. A
    /// read-only workspace allows it ([`Action::Stop`]): it only stops the workflow.
    pub async fn deactivate_workflow(&self, scope: &Scope, id: i64) -> Result<Workflow> {
        self.workflow(scope, id, Action::Stop).await?;
        let mut tx = self.begin_write().await?;
        crate::lock_row_for_no_key_update(&mut tx, ("workflows", id)).await?;
        release(&mut tx, id, Address::Production).await?;
        let workflow = set_state(&mut tx, id, Some(false), scope.user_id).await?;
        tx.commit().await.map_err(db)?;
        Ok(workflow)
    }

    /// Arms a workflow's test address on `routes` (those of the definition in `seen`) until
    /// `until`, for one call (USER and up); the call runs with the caller's role, the
    /// production address's runs keep theirs. A path and method another workflow holds
    /// answers 409 naming it; so does a definition changed since `seen` was read.
    pub async fn arm_workflow_test(
        &self,
        scope: &Scope,
        seen: &Workflow,
        routes: &[(String, String)],
        until: Timestamp,
    ) -> Result<Workflow> {
        let id = seen.id;
        self.workflow(scope, id, Action::Edit).await?;
        let mut tx = self.begin_write().await?;
        unchanged_since(&mut tx, seen).await?;
        release(&mut tx, id, Address::Test { until: Timestamp(0) }).await?;
        self.register(&mut tx, scope, id, routes, Address::Test { until })
            .await?;
        let sql =
            format!("UPDATE workflows SET test_run_as = $1, updated = $2 WHERE id = $3 RETURNING {WORKFLOW_COLUMNS}");
        let query = sqlx::query(&sql)
            .bind(scope.user_id)
            .bind(Timestamp::now().micros())
            .bind(id);
        let workflow = fetch_record(query, &mut *tx, "workflow").await?;
        tx.commit().await.map_err(db)?;
        Ok(workflow)
    }

    /// Claims `routes` for a workflow's address; another workflow's live claim on one of them
    /// is a conflict that names it.
    async fn register(
        &self,
        tx: &mut Tx,
        scope: &Scope,
        id: i64,
        routes: &[(String, String)],
        address: Address,
    ) -> Result<()> {
        let now = Timestamp::now().micros();
        release(tx, id, address).await?;
        let (production, test_until) = match address {
            Address::Production => (true, None),
            Address::Test { until } => (false, Some(until.micros())),
        };
        // A row the workflow holds keeps its other address's claim; a row taken from nobody
        // starts clean.
        let keep = match address {
            Address::Production => {
                "production = $4, test_until = CASE WHEN webhook_registrations.workflow_id = excluded.workflow_id \
                 THEN webhook_registrations.test_until ELSE NULL END"
            }
            Address::Test { .. } => {
                "test_until = excluded.test_until, production = CASE WHEN webhook_registrations.workflow_id = \
                 excluded.workflow_id THEN webhook_registrations.production ELSE $6 END"
            }
        };
        let sql = format!(
            "INSERT INTO webhook_registrations (method, path, workflow_id, production, test_until) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (method, path) DO UPDATE SET {keep}, \
             workflow_id = excluded.workflow_id \
             WHERE webhook_registrations.workflow_id = excluded.workflow_id \
             OR (webhook_registrations.production = $6 AND (webhook_registrations.test_until IS NULL \
             OR webhook_registrations.test_until < $7))"
        );
        // In one order (bytes: `take_test_address` sorts by the "C" collation), so that two
        // workflows claiming the same routes do not each hold one.
        let mut routes = routes.to_vec();
        routes.sort();
        for (method, path) in &routes {
            let claimed = sqlx::query(&sql)
                .bind(method)
                .bind(path)
                .bind(id)
                .bind(production)
                .bind(test_until)
                .bind(false)
                .bind(now)
                .execute(&mut **tx)
                .await
                .map_err(db)?
                .rows_affected();
            if claimed == 0 {
                return Err(self.conflict(tx, scope, method, path).await);
            }
        }
        Ok(())
    }

    /// The 409 for a path and method another workflow holds: its id and name when the caller
    /// may see its workspace; otherwise only that another workspace holds it (an id the caller
    /// cannot read would tell them nothing they may use, and something of another tenant).
    async fn conflict(&self, tx: &mut Tx, scope: &Scope, method: &str, path: &str) -> Error {
        let holder = sqlx::query(
            "SELECT w.id, w.name, w.workspace_id FROM webhook_registrations r JOIN workflows w \
             ON w.id = r.workflow_id WHERE r.method = $1 AND r.path = $2",
        )
        .bind(method)
        .bind(path)
        .fetch_optional(&mut **tx)
        .await;
        let by = match holder {
            Ok(Some(row)) => {
                let id: i64 = row.try_get("id").unwrap_or_default();
                let name: String = row.try_get("name").unwrap_or_default();
                let workspace: i64 = row.try_get("workspace_id").unwrap_or_default();
                if scope.is_superuser || scope.role_in(workspace).is_some() {
                    format!("workflow {id} ({name})")
                } else {
                    "a workflow of another workspace".to_owned()
                }
            }
            _ => "another workflow".to_owned(),
        };
        Error::conflict(format!(
            "the path {path} and method {method} are in use by {by}; deactivate it or change the path or method"
        ))
    }

    /// What `method` on a webhook path leads to. A test address serves one call, taken with
    /// [`Store::take_test_address`] once the call is admitted (closing it on every method, so
    /// two calls racing for it cannot both run).
    pub async fn webhook_target(&self, method: &str, path: &str, test: bool) -> Result<WebhookTarget> {
        let now = Timestamp::now().micros();
        let found: Option<i64> = if test {
            sqlx::query_scalar(
                "SELECT workflow_id FROM webhook_registrations WHERE method = $1 AND path = $2 AND test_until >= $3",
            )
            .bind(method)
            .bind(path)
            .bind(now)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?
        } else {
            sqlx::query_scalar(
                "SELECT workflow_id FROM webhook_registrations WHERE method = $1 AND path = $2 AND production = $3",
            )
            .bind(method)
            .bind(path)
            .bind(true)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?
        };
        if let Some(workflow) = found.map(|id| self.workflow_by_id(id)) {
            return Ok(match workflow.await? {
                Some(workflow) => WebhookTarget::Workflow(Box::new(workflow)),
                None => WebhookTarget::NotFound,
            });
        }
        let query = if test {
            sqlx::query_scalar::<_, String>(
                "SELECT method FROM webhook_registrations WHERE path = $1 AND test_until >= $2 ORDER BY method",
            )
            .bind(path)
            .bind(now)
        } else {
            sqlx::query_scalar::<_, String>(
                "SELECT method FROM webhook_registrations WHERE path = $1 AND production = $2 ORDER BY method",
            )
            .bind(path)
            .bind(true)
        };
        let methods = query.fetch_all(&self.pool).await.map_err(db)?;
        Ok(if methods.is_empty() {
            WebhookTarget::NotFound
        } else {
            WebhookTarget::OtherMethods(methods)
        })
    }

    /// Takes the one call of `workflow_id`'s armed test address: false when it is no longer
    /// armed (another call took it, or its time ran out). [`Store::webhook_target`] only looks,
    /// so that a call refused before it runs (authentication, rate, body) leaves it armed.
    pub async fn take_test_address(&self, method: &str, path: &str, workflow_id: i64) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        // The workflow's row, then its registrations' rows in one order, before any is changed:
        // two calls taking the window of one workflow on two methods, or a call and the
        // workflow's re-arming, would otherwise each hold a row the other waits for (a
        // deadlock on PostgreSQL, answered 500).
        crate::lock_row_for_no_key_update(&mut tx, ("workflows", workflow_id)).await?;
        if self.backend == crate::Backend::Postgres {
            sqlx::query(
                "SELECT 1 FROM webhook_registrations WHERE workflow_id = $1 \
                 ORDER BY method COLLATE \"C\", path COLLATE \"C\" FOR UPDATE",
            )
            .bind(workflow_id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        }
        let taken: Option<i64> = sqlx::query_scalar(
            "UPDATE webhook_registrations SET test_until = NULL \
             WHERE method = $1 AND path = $2 AND workflow_id = $3 AND test_until >= $4 RETURNING workflow_id",
        )
        .bind(method)
        .bind(path)
        .bind(workflow_id)
        .bind(Timestamp::now().micros())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db)?;
        if let Some(id) = taken {
            release(&mut tx, id, Address::Test { until: Timestamp(0) }).await?;
        }
        tx.commit().await.map_err(db)?;
        Ok(taken.is_some())
    }
}

/// Deactivates every workflow of a workspace being deactivated, and gives up all their
/// addresses (production and test).
pub(crate) async fn deactivate_workflows_in(tx: &mut Tx, workspace_id: i64) -> Result<()> {
    // Their rows before their registrations' (and in the order of their ids), as the writers of
    // one workflow take them.
    if tx.backend_name() == "PostgreSQL" {
        sqlx::query("SELECT id FROM workflows WHERE workspace_id = $1 ORDER BY id FOR NO KEY UPDATE")
            .bind(workspace_id)
            .execute(&mut **tx)
            .await
            .map_err(db)?;
    }
    sqlx::query(
        "DELETE FROM webhook_registrations WHERE workflow_id IN (SELECT id FROM workflows WHERE workspace_id = $1)",
    )
    .bind(workspace_id)
    .execute(&mut **tx)
    .await
    .map_err(db)?;
    sqlx::query("UPDATE workflows SET active = $1, updated = $2 WHERE workspace_id = $3 AND active = $4")
        .bind(false)
        .bind(Timestamp::now().micros())
        .bind(workspace_id)
        .bind(true)
        .execute(&mut **tx)
        .await
        .map_err(db)?;
    Ok(())
}

/// Locks a workflow's row for the transaction and checks that its definition is still the
/// one in `seen`: routes worked out from it are then the ones registered (a `PUT` that
/// commits first answers the caller 409 instead of leaving the old path listening).
async fn unchanged_since(tx: &mut Tx, seen: &Workflow) -> Result<()> {
    let locked = sqlx::query("UPDATE workflows SET updated = updated WHERE id = $1 AND definition = $2")
        .bind(seen.id)
        .bind(&seen.definition)
        .execute(&mut **tx)
        .await
        .map_err(db)?;
    if locked.rows_affected() == 0 {
        return Err(Error::conflict(format!(
            "workflow {} changed while this request was made; read it again and retry",
            seen.id
        )));
    }
    Ok(())
}

/// Gives up a workflow's claims for one address; rows no address holds any more go.
async fn release(tx: &mut Tx, id: i64, address: Address) -> Result<()> {
    let released = match address {
        Address::Production => sqlx::query("UPDATE webhook_registrations SET production = $2 WHERE workflow_id = $1")
            .bind(id)
            .bind(false),
        Address::Test { .. } => {
            sqlx::query("UPDATE webhook_registrations SET test_until = NULL WHERE workflow_id = $1").bind(id)
        }
    };
    released.execute(&mut **tx).await.map_err(db)?;
    sqlx::query(
        "DELETE FROM webhook_registrations WHERE workflow_id = $1 AND production = $2 \
         AND (test_until IS NULL OR test_until < $3)",
    )
    .bind(id)
    .bind(false)
    .bind(Timestamp::now().micros())
    .execute(&mut **tx)
    .await
    .map_err(db)?;
    Ok(())
}

/// Sets a workflow's active flag (when given) and whose role it runs with.
async fn set_state(tx: &mut Tx, id: i64, active: Option<bool>, run_as: i64) -> Result<Workflow> {
    let sql = format!(
        "UPDATE workflows SET active = COALESCE($1, active), run_as = $2, updated = $3 WHERE id = $4 \
         RETURNING {WORKFLOW_COLUMNS}"
    );
    let query = sqlx::query(&sql)
        .bind(active)
        .bind(run_as)
        .bind(Timestamp::now().micros())
        .bind(id);
    fetch_record(query, &mut **tx, "workflow").await
}
