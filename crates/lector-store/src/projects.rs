//! Projects and their classes and labels.
//!
//! A project belongs to one workspace; every function resolves it together with its workspace
//! and asks the policy, so a project of another workspace answers 404 like a missing one.
//! ABSA projects keep exactly the labels positive, negative and neutral.

use crate::records::{
    CLASS_COLUMNS, Class, FromAnyRow, PROJECT_COLUMNS, Project, Workspace, fetch_record, fetch_records,
};
use crate::{Store, count_under_lock, db, db_unique, numbered};
use lector_core::time::Timestamp;
use lector_core::{Action, Error, ErrorCode, ModelStatus, ProjectType, Result, Role, Scope};
use sqlx::{Any, Transaction};

/// Classes one project may have.
pub const MAX_CLASSES_PER_PROJECT: i64 = 1000;
/// Labels one project may have.
pub const MAX_LABELS_PER_PROJECT: i64 = 1000;
/// Projects one workspace may have.
pub const MAX_PROJECTS_PER_WORKSPACE: i64 = 10_000;

/// The fields of a project a client sets.
#[derive(Debug, Clone)]
pub struct ProjectFields {
    pub name: String,
    pub kind: ProjectType,
    pub external_id: Option<i64>,
    /// en, de or ar.
    pub language: String,
}

/// Project fields to change; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct ProjectChanges {
    pub name: Option<String>,
    pub kind: Option<ProjectType>,
    pub external_id: Option<i64>,
    pub language: Option<String>,
}

/// The fields of a class a client sets.
#[derive(Debug, Clone, Default)]
pub struct ClassFields {
    pub name: String,
    pub example: String,
    pub description: String,
}

/// A change of a class: `None` keeps the field as it is when the change is written.
#[derive(Debug, Clone, Default)]
pub struct ClassChanges {
    pub name: Option<String>,
    pub example: Option<String>,
    pub description: Option<String>,
}

impl Store {
    /// Resolves a project and checks the caller may perform `action` in its workspace.
    pub async fn project_access(&self, scope: &Scope, project_id: i64, action: Action) -> Result<(Project, Role)> {
        let sql = format!(
            "SELECT {PROJECT_COLUMNS}, w.is_active, w.is_read_only FROM projects p \
             JOIN workspaces w ON w.id = p.workspace_id WHERE p.id = $1"
        );
        let row = sqlx::query(&sql)
            .bind(project_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        let Some(row) = row else {
            return Err(Error::not_found("project"));
        };
        let project = Project::decode(&row)?;
        let facts = lector_core::policy::WorkspaceFacts {
            id: project.workspace_id,
            is_active: crate::records::flag(&row, "is_active").map_err(db)?,
            is_read_only: crate::records::flag(&row, "is_read_only").map_err(db)?,
        };
        let role = scope.authorize(facts, action).map_err(|e| match e.code {
            ErrorCode::NotFound => Error::not_found("project"),
            _ => e,
        })?;
        Ok((project, role))
    }

    /// Projects of the caller's workspaces (or of one of them, which answers 404 when the
    /// caller may not read it, as its other objects do), oldest first.
    pub async fn projects(&self, scope: &Scope, workspace_id: Option<i64>) -> Result<Vec<Project>> {
        if let Some(id) = workspace_id {
            self.workspace_access(scope, &crate::WorkspaceRef::Id(id), Action::Read)
                .await?;
        }
        // A superuser reads a workspace it is no member of.
        let ids: Vec<i64> = scope
            .workspaces
            .iter()
            .map(|w| w.workspace_id)
            .chain(workspace_id)
            .filter(|id| workspace_id.is_none_or(|wanted| wanted == *id))
            .collect();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders = numbered(1, ids.len());
        let sql =
            format!("SELECT {PROJECT_COLUMNS} FROM projects p WHERE p.workspace_id IN ({placeholders}) ORDER BY p.id");
        let mut query = sqlx::query(&sql);
        for id in ids {
            query = query.bind(id);
        }
        fetch_records(query, &self.pool).await
    }

    /// Creates a project in a workspace where the caller may manage projects.
    pub async fn create_project(&self, scope: &Scope, workspace: &Workspace, fields: ProjectFields) -> Result<Project> {
        scope.authorize(workspace.facts(), Action::Manage)?;
        let mut tx = self.begin_write().await?;
        room_for_a_project(&mut tx, workspace.id).await?;
        let sql = format!(
            "INSERT INTO projects (workspace_id, name, type, status, external_id, language, created) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) \
             RETURNING {}",
            PROJECT_COLUMNS.replace("p.", "")
        );
        let row = sqlx::query(&sql)
            .bind(workspace.id)
            .bind(&fields.name)
            .bind(fields.kind.as_str())
            .bind("CREATED")
            .bind(fields.external_id)
            .bind(&fields.language)
            .bind(Timestamp::now().micros())
            .fetch_one(&mut *tx)
            .await
            .map_err(db_unique("a project with this name exists in the workspace"))?;
        let project = Project::decode(&row)?;
        if project.kind == ProjectType::Absa {
            insert_absa_labels(&mut tx, project.id).await?;
        }
        tx.commit().await.map_err(db)?;
        Ok(project)
    }

    /// Renames a project or changes its type. The type changes only while the project has no
    /// classes and no labels of its own (an ABSA project's fixed labels go and come with it).
    /// The project's row is held first and what is not changed is not written, so two changes
    /// at once (a rename, a new language) both stay, and a type is judged as it is then.
    pub async fn update_project(&self, scope: &Scope, project_id: i64, changes: ProjectChanges) -> Result<Project> {
        let (project, _) = self.project_access(scope, project_id, Action::Manage).await?;
        let mut tx = self.begin_write().await?;
        // FOR UPDATE, not NO KEY UPDATE: a rename changes a unique key, and upgrading to that
        // lock later would wait for a key-share holder waiting for this one (a deadlock).
        crate::lock_row(&mut tx, ("projects", project.id)).await?;
        let (kind_now, status): (String, String) = sqlx::query_as("SELECT type, status FROM projects WHERE id = $1")
            .bind(project.id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
            .ok_or_else(|| Error::not_found("project"))?;
        let kind_now: ProjectType = kind_now.parse().map_err(|_| Error::internal())?;
        if changes.kind.is_some_and(|kind| kind != kind_now) && status == "CLONING" {
            return Err(Error::conflict(
                "the project is being filled as a copy; change its type once it is CREATED",
            ));
        }
        let kind = changes.kind.unwrap_or(kind_now);
        if kind != kind_now {
            let (classes, labels): (i64, i64) = sqlx::query_as(
                "SELECT (SELECT COUNT(*) FROM classes WHERE project_id = $1), \
                 (SELECT COUNT(*) FROM labels WHERE project_id = $1)",
            )
            .bind(project.id)
            .fetch_one(&mut *tx)
            .await
            .map_err(db)?;
            let own_labels = if kind_now == ProjectType::Absa { 0 } else { labels };
            if classes > 0 || own_labels > 0 {
                return Err(Error::conflict(
                    "the type of a project with classes or labels cannot change",
                ));
            }
            sqlx::query("DELETE FROM labels WHERE project_id = $1")
                .bind(project.id)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
            if kind == ProjectType::Absa {
                insert_absa_labels(&mut tx, project.id).await?;
            }
        }
        sqlx::query(
            "UPDATE projects SET name = COALESCE($1, name), type = $2, external_id = COALESCE($3, external_id), \
             language = COALESCE($4, language) WHERE id = $5",
        )
        .bind(changes.name)
        .bind(kind.as_str())
        .bind(changes.external_id)
        .bind(changes.language)
        .bind(project.id)
        .execute(&mut *tx)
        .await
        .map_err(db_unique("a project with this name exists in the workspace"))?;
        tx.commit().await.map_err(db)?;
        Ok(self.project_access(scope, project.id, Action::Read).await?.0)
    }

    /// Deletes a project with its classes and labels; answers what was deleted.
    pub async fn delete_project(&self, scope: &Scope, project_id: i64) -> Result<Project> {
        let (project, _) = self.project_access(scope, project_id, Action::Manage).await?;
        let mut tx = self.begin_write().await?;
        // The project's row first: a job queued for it meanwhile waits, then finds it gone.
        // Then its jobs, before the rows their writes touch (models, classes): a job's write
        // holds its job's row first (`check_fence`), or the project's row and then its job's
        // when it adds rows to the project (`check_fence_in_project`), so this waits for one
        // under way instead of each waiting for the other.
        crate::lock_row(&mut tx, ("projects", project.id)).await?;
        end_jobs_of_project(&mut tx, project.id).await?;
        models_not_bases_in_training(&mut tx, project.id).await?;
        // The models go with the project (ON DELETE CASCADE); their artifacts after the commit.
        let artifacts: Vec<String> =
            sqlx::query_scalar("SELECT artifact_key FROM models WHERE project_id = $1 AND artifact_key IS NOT NULL")
                .bind(project.id)
                .fetch_all(&mut *tx)
                .await
                .map_err(db)?;
        for table in ["classes", "labels"] {
            sqlx::query(&format!("DELETE FROM {table} WHERE project_id = $1"))
                .bind(project.id)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        }
        sqlx::query("DELETE FROM projects WHERE id = $1")
            .bind(project.id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        for key in artifacts {
            // Nothing refers to the blob any more; a failure leaves an orphan only.
            if let Err(e) = self.blobs()?.delete(&key).await {
                tracing::warn!(project.id = project.id, error = %e.detail, "cannot delete a model artifact");
            }
        }
        Ok(project)
    }

    /// Moves a project, with everything in it, to another workspace. The caller manages
    /// projects in both. The rows that carry a workspace of their own besides the project
    /// (its models, which are authorized by it; its uploads; its jobs) move in the same
    /// transaction; a model whose name the target workspace already uses answers 409 naming
    /// it, and nothing moves. Its HITL configurations and waiting reviews stop waiting for
    /// users who may not review in the target.
    pub async fn transfer_project(&self, scope: &Scope, project_id: i64, target: &Workspace) -> Result<Project> {
        let (project, _) = self.project_access(scope, project_id, Action::Manage).await?;
        scope.authorize(target.facts(), Action::Manage)?;
        if target.id == project.workspace_id {
            return Ok(project);
        }
        let mut tx = self.begin_write().await?;
        room_for_a_project(&mut tx, target.id).await?;
        crate::workspace_work::room_for_moved_work(&mut tx, target.id, project.id).await?;
        // A copy still being filled (CLONING) stays where its clone job writes it.
        let moved = sqlx::query("UPDATE projects SET workspace_id = $1 WHERE id = $2 AND status <> 'CLONING'")
            .bind(target.id)
            .bind(project.id)
            .execute(&mut *tx)
            .await
            .map_err(db_unique("a project with this name exists in the target workspace"))?;
        if moved.rows_affected() == 0 {
            return Err(Error::conflict(
                "the project is still being copied; move it once its copy is ready",
            ));
        }
        let clash: Option<String> = sqlx::query_scalar(
            "SELECT m.name FROM models m WHERE m.project_id = $1 AND EXISTS \
             (SELECT 1 FROM models t WHERE t.workspace_id = $2 AND t.name = m.name) ORDER BY m.id LIMIT 1",
        )
        .bind(project.id)
        .bind(target.id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db)?;
        if let Some(name) = clash {
            return Err(Error::conflict(format!(
                "the target workspace already has a model named {name:?}; rename the project's model first"
            )));
        }
        // Jobs before models: a training job's worker holds its job row, then writes its model.
        for table in ["jobs", "models", "uploads"] {
            sqlx::query(&format!("UPDATE {table} SET workspace_id = $1 WHERE project_id = $2"))
                .bind(target.id)
                .bind(project.id)
                .execute(&mut *tx)
                .await
                .map_err(db_unique("a model of the project has a name the target workspace uses"))?;
        }
        crate::hitl_reviews::unassign_outsiders(&mut tx, project.id, target.id).await?;
        tx.commit().await.map_err(db)?;
        Ok(Project {
            workspace_id: target.id,
            ..project
        })
    }

    pub async fn classes(&self, scope: &Scope, project_id: i64) -> Result<Vec<Class>> {
        let (project, _) = self.project_access(scope, project_id, Action::Read).await?;
        self.classes_of(&project).await
    }

    /// The classes of a project read through a scoped call.
    pub async fn classes_of(&self, project: &Project) -> Result<Vec<Class>> {
        let project_id = project.id;
        let sql = format!("SELECT {CLASS_COLUMNS} FROM classes WHERE project_id = $1 ORDER BY id");
        fetch_records(sqlx::query(&sql).bind(project_id), &self.pool).await
    }

    pub async fn class(&self, scope: &Scope, project_id: i64, class_id: i64) -> Result<Class> {
        let (project, _) = self.project_access(scope, project_id, Action::Read).await?;
        self.class_of(project.id, class_id).await
    }

    async fn class_of(&self, project_id: i64, class_id: i64) -> Result<Class> {
        let sql = format!("SELECT {CLASS_COLUMNS} FROM classes WHERE project_id = $1 AND id = $2");
        fetch_record(sqlx::query(&sql).bind(project_id).bind(class_id), &self.pool, "class").await
    }

    /// Adds classes in one transaction: all or none.
    pub async fn add_classes(&self, scope: &Scope, project_id: i64, classes: Vec<ClassFields>) -> Result<Vec<Class>> {
        let (project, _) = self.project_access(scope, project_id, Action::Manage).await?;
        let mut tx = self.begin_write().await?;
        let held = count_under_lock(
            &mut tx,
            ("projects", project.id),
            "SELECT COUNT(*) FROM classes WHERE project_id = $1",
        )
        .await?;
        if held + classes.len() as i64 > MAX_CLASSES_PER_PROJECT {
            return Err(Error::conflict(format!(
                "a project has at most {MAX_CLASSES_PER_PROJECT} classes"
            )));
        }
        let sql = format!(
            "INSERT INTO classes (project_id, name, example, description, created) VALUES ($1, $2, $3, $4, $5) \
             RETURNING {CLASS_COLUMNS}"
        );
        let mut added = Vec::with_capacity(classes.len());
        for class in classes {
            let row = sqlx::query(&sql)
                .bind(project.id)
                .bind(&class.name)
                .bind(&class.example)
                .bind(&class.description)
                .bind(Timestamp::now().micros())
                .fetch_one(&mut *tx)
                .await
                .map_err(|e| db_unique_named(e, "class", &class.name))?;
            added.push(Class::decode(&row)?);
        }
        tx.commit().await.map_err(db)?;
        Ok(added)
    }

    pub async fn update_class(
        &self,
        scope: &Scope,
        project_id: i64,
        class_id: i64,
        changes: ClassChanges,
    ) -> Result<Class> {
        let (project, _) = self.project_access(scope, project_id, Action::Manage).await?;
        let class = self.class_of(project.id, class_id).await?;
        // Each field as given or as it is then: two changes of different fields both stay.
        let sql = format!(
            "UPDATE classes SET name = COALESCE($1, name), example = COALESCE($2, example), \
             description = COALESCE($3, description) WHERE id = $4 RETURNING {CLASS_COLUMNS}"
        );
        let query = sqlx::query(&sql)
            .bind(&changes.name)
            .bind(&changes.example)
            .bind(&changes.description)
            .bind(class.id);
        let name = changes.name.as_deref().unwrap_or(&class.name);
        let row = query
            .fetch_one(&self.pool)
            .await
            .map_err(|e| db_unique_named(e, "class", name))?;
        Class::decode(&row)
    }

    pub async fn delete_class(&self, scope: &Scope, project_id: i64, class_id: i64) -> Result<Class> {
        let (project, _) = self.project_access(scope, project_id, Action::Manage).await?;
        let class = self.class_of(project.id, class_id).await?;
        sqlx::query("DELETE FROM classes WHERE id = $1")
            .bind(class.id)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(class)
    }
}

pub(crate) fn db_unique_named(e: sqlx::Error, what: &str, name: &str) -> Error {
    match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => {
            Error::conflict(format!("the {what} {name:?} exists already"))
        }
        // Deleted since it was read (an UPDATE … RETURNING that found no row).
        sqlx::Error::RowNotFound => Error::not_found(what),
        _ => db(e),
    }
}

/// Refuses a new project in a full workspace: counted in the transaction that adds it, behind a
/// lock on the workspace, so concurrent additions at the edge cannot all pass.
pub(crate) async fn room_for_a_project(tx: &mut Transaction<'static, Any>, workspace_id: i64) -> Result<()> {
    let held = count_under_lock(
        tx,
        ("workspaces", workspace_id),
        "SELECT COUNT(*) FROM projects WHERE workspace_id = $1",
    )
    .await?;
    if held >= MAX_PROJECTS_PER_WORKSPACE {
        return Err(Error::conflict(format!(
            "a workspace has at most {MAX_PROJECTS_PER_WORKSPACE} projects"
        )));
    }
    Ok(())
}

/// Holds `project`'s row until the commit and checks it is still in the workspace it was
/// authorized in: a write that records the project's workspace beside it (a model, a job) must
/// not race a move, which would leave the new row in the old workspace. The row is locked as a
/// move locks it (on PostgreSQL `FOR NO KEY UPDATE`; SQLite's write transactions take turns),
/// so a move waits for this transaction, or this one sees the moved project: 409.
pub(crate) async fn project_stays_put(tx: &mut Transaction<'static, Any>, project: &Project) -> Result<()> {
    let sql = if tx.backend_name() == "PostgreSQL" {
        "SELECT workspace_id FROM projects WHERE id = $1 FOR NO KEY UPDATE"
    } else {
        "SELECT workspace_id FROM projects WHERE id = $1"
    };
    let now: Option<i64> = sqlx::query_scalar(sql)
        .bind(project.id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db)?;
    match now {
        None => Err(Error::not_found("project")),
        Some(workspace_id) if workspace_id != project.workspace_id => Err(Error::conflict(
            "the project moved to another workspace meanwhile; try again",
        )),
        Some(_) => Ok(()),
    }
}

async fn insert_absa_labels(tx: &mut Transaction<'static, Any>, project_id: i64) -> Result<()> {
    let now = Timestamp::now().micros();
    for name in ProjectType::ABSA_LABELS {
        sqlx::query("INSERT INTO labels (project_id, name, created) VALUES ($1, $2, $3)")
            .bind(project_id)
            .bind(name)
            .bind(now)
            .execute(&mut **tx)
            .await
            .map_err(db)?;
    }
    Ok(())
}

/// Ends the unfinished jobs of a project being deleted: none retries against rows that are gone
/// or tells anyone about a project nobody has any more, and a running one loses its lease (its
/// worker's fenced writes fail, and it lets the job go). Their inputs go with them.
async fn end_jobs_of_project(tx: &mut sqlx::Transaction<'static, sqlx::Any>, project_id: i64) -> Result<()> {
    use crate::JobState;
    let ended: Vec<(i64, String)> = sqlx::query_as(
        "UPDATE jobs SET state = $4, error = 'its project was deleted', lease_owner = NULL, \
         lease_expires = NULL, updated = $5, finished = $5 \
         WHERE project_id = $1 AND (state = $2 OR state = $3) RETURNING id, kind",
    )
    .bind(project_id)
    .bind(JobState::Queued.as_str())
    .bind(JobState::Running.as_str())
    .bind(JobState::Failed.as_str())
    .bind(lector_core::time::Timestamp::now().micros())
    .fetch_all(&mut **tx)
    .await
    .map_err(db)?;
    // Counted as failed, as every job that ends is (`/metrics`): those this statement ended,
    // not those a look before it saw (one a worker finished meanwhile is counted done).
    let mut kinds: std::collections::BTreeMap<&str, i64> = std::collections::BTreeMap::new();
    for (_, kind) in &ended {
        *kinds.entry(kind.as_str()).or_default() += 1;
    }
    for (kind, jobs) in kinds {
        crate::jobs::count_ended(tx, kind, JobState::Failed, jobs).await?;
    }
    let ids: Vec<i64> = ended.iter().map(|(id, _)| *id).collect();
    for chunk in ids.chunks(500) {
        let sql = format!("DELETE FROM job_inputs WHERE job_id IN ({})", numbered(1, chunk.len()));
        let params = chunk.iter().map(|id| crate::Param::Int(*id)).collect();
        crate::Param::bind_all(sqlx::query(&sql), params)
            .execute(&mut **tx)
            .await
            .map_err(db)?;
    }
    Ok(())
}

/// Refuses (409) while a model of another project is being trained from one of the project's
/// models (its base), as `delete_model` refuses to delete such a base: gone with the project,
/// the training would lose its base and silently train afresh. On PostgreSQL its models are
/// locked, the caller holding the project's row, in the order every writer of a project takes
/// them (the project, then a model): a training that started from one of them meanwhile (its base
/// held by `model_still_there`) is waited for and then seen, one that starts after waits for
/// this deletion and then finds its base gone.
async fn models_not_bases_in_training(tx: &mut Transaction<'static, Any>, project_id: i64) -> Result<()> {
    if tx.backend_name() == "PostgreSQL" {
        sqlx::query("SELECT id FROM models WHERE project_id = $1 ORDER BY id FOR UPDATE")
            .bind(project_id)
            .execute(&mut **tx)
            .await
            .map_err(db)?;
    }
    let trainee: Option<(i64, i64)> = sqlx::query_as(
        "SELECT t.id, t.base_id FROM models t JOIN models b ON b.id = t.base_id \
         WHERE b.project_id = $1 AND t.project_id <> $1 AND t.status IN ($2, $3) ORDER BY t.id LIMIT 1",
    )
    .bind(project_id)
    .bind(ModelStatus::Queued.as_str())
    .bind(ModelStatus::Training.as_str())
    .fetch_optional(&mut **tx)
    .await
    .map_err(db)?;
    match trainee {
        Some((trainee, base)) => Err(Error::conflict(format!(
            "model {trainee} of another project is being trained from model {base} of this project (its \
             base); delete the project once that training has finished or failed"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::project_stays_put;
    use crate::testing::{TestDatabase, another_workspace, owner_with_project};
    use crate::{Backend, Store};
    use lector_core::{ErrorCode, ProjectType};

    /// A write that authorized a project in one workspace and finds it moved answers 409 instead
    /// of recording the old workspace beside it (as a training or a model upload racing a move
    /// did: the model stayed in the old workspace).
    async fn a_project_moved_meanwhile_is_a_conflict(backend: Backend) {
        let Some(database) = TestDatabase::create(backend).await else {
            return;
        };
        let store = Store::open(&database.url, 4).await.expect("store");
        let (scope, _, project) = owner_with_project(&store, "Moving", ProjectType::Class).await;
        let (elsewhere, scope) = another_workspace(&store, &scope, "Elsewhere").await;
        let mut tx = store.begin_write().await.expect("transaction");
        project_stays_put(&mut tx, &project).await.expect("still there");
        tx.rollback().await.expect("rolled back");
        store
            .transfer_project(&scope, project.id, &elsewhere)
            .await
            .expect("moved");
        let mut tx = store.begin_write().await.expect("transaction");
        let moved = project_stays_put(&mut tx, &project).await.expect_err("moved");
        assert_eq!(moved.code, ErrorCode::Conflict, "{moved:?}");
    }

    #[tokio::test]
    async fn a_project_moved_meanwhile_is_a_conflict_sqlite() {
        a_project_moved_meanwhile_is_a_conflict(Backend::Sqlite).await;
    }

    #[tokio::test]
    async fn a_project_moved_meanwhile_is_a_conflict_postgres() {
        a_project_moved_meanwhile_is_a_conflict(Backend::Postgres).await;
    }
}
