//! A project's labels: read, added within the project's limit, renamed and deleted. An ABSA
//! project keeps exactly its three fixed labels (positive, negative, neutral), judged under the
//! project's lock, as a change of its type is.

use crate::projects::{MAX_LABELS_PER_PROJECT, db_unique_named};
use crate::records::{FromAnyRow, LABEL_COLUMNS, Label, Project, fetch_record, fetch_records};
use crate::{Store, count_under_lock, db};
use lector_core::time::Timestamp;
use lector_core::{Action, Error, ProjectType, Result, Scope};

/// How a label is named in a path.
#[derive(Debug, Clone, Copy)]
pub enum LabelKey<'a> {
    Id(i64),
    Name(&'a str),
}

fn absa_refuses_labels() -> Error {
    Error::validation(vec![lector_core::FieldError::new(
        "name",
        "an ABSA project has exactly the labels positive, negative and neutral",
    )])
}

impl Store {
    pub async fn labels(&self, scope: &Scope, project_id: i64) -> Result<Vec<Label>> {
        let (project, _) = self.project_access(scope, project_id, Action::Read).await?;
        self.labels_of(&project).await
    }

    /// The labels of a project the caller has already resolved.
    /// The labels of a project read through a scoped call.
    pub async fn labels_of(&self, project: &Project) -> Result<Vec<Label>> {
        let project_id = project.id;
        let sql = format!("SELECT {LABEL_COLUMNS} FROM labels WHERE project_id = $1 ORDER BY id");
        fetch_records(sqlx::query(&sql).bind(project_id), &self.pool).await
    }

    pub async fn label(&self, scope: &Scope, project_id: i64, label_id: i64) -> Result<Label> {
        let (project, _) = self.project_access(scope, project_id, Action::Read).await?;
        self.label_where(project.id, "id = $2", LabelKey::Id(label_id)).await
    }

    async fn label_where(&self, project_id: i64, filter: &str, key: LabelKey<'_>) -> Result<Label> {
        let sql = format!("SELECT {LABEL_COLUMNS} FROM labels WHERE project_id = $1 AND {filter}");
        let query = sqlx::query(&sql).bind(project_id);
        let query = match key {
            LabelKey::Id(id) => query.bind(id),
            LabelKey::Name(name) => query.bind(name.to_owned()),
        };
        fetch_record(query, &self.pool, "label").await
    }

    /// Adds a label; ABSA projects refuse.
    pub async fn add_label(&self, scope: &Scope, project_id: i64, name: &str) -> Result<Label> {
        let (project, _) = self.project_access(scope, project_id, Action::Manage).await?;
        if project.kind == ProjectType::Absa {
            return Err(absa_refuses_labels());
        }
        let mut tx = self.begin_write().await?;
        let held = count_under_lock(
            &mut tx,
            ("projects", project.id),
            "SELECT COUNT(*) FROM labels WHERE project_id = $1",
        )
        .await?;
        if held >= MAX_LABELS_PER_PROJECT {
            return Err(Error::conflict(format!(
                "a project has at most {MAX_LABELS_PER_PROJECT} labels"
            )));
        }
        // Under the project's lock, its type as it is now: a change to ABSA meanwhile holds.
        let absa: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM projects WHERE id = $1 AND type = $2")
            .bind(project.id)
            .bind(ProjectType::Absa.as_str())
            .fetch_one(&mut *tx)
            .await
            .map_err(db)?;
        if absa > 0 {
            return Err(absa_refuses_labels());
        }
        let sql =
            format!("INSERT INTO labels (project_id, name, created) VALUES ($1, $2, $3) RETURNING {LABEL_COLUMNS}");
        let row = sqlx::query(&sql)
            .bind(project.id)
            .bind(name)
            .bind(Timestamp::now().micros())
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| db_unique_named(e, "label", name))?;
        tx.commit().await.map_err(db)?;
        Label::decode(&row)
    }

    /// Renames a label found by id or by its current name; ABSA labels are fixed.
    pub async fn rename_label(&self, scope: &Scope, project_id: i64, key: LabelKey<'_>, name: &str) -> Result<Label> {
        let (project, _) = self.project_access(scope, project_id, Action::Manage).await?;
        let filter = match key {
            LabelKey::Id(_) => "id = $2",
            LabelKey::Name(_) => "name = $2",
        };
        let label = self.label_where(project.id, filter, key).await?;
        if project.kind == ProjectType::Absa {
            return Err(absa_refuses_labels());
        }
        sqlx::query("UPDATE labels SET name = $1 WHERE id = $2")
            .bind(name)
            .bind(label.id)
            .execute(&self.pool)
            .await
            .map_err(|e| db_unique_named(e, "label", name))?;
        Ok(Label {
            name: name.to_owned(),
            ..label
        })
    }

    pub async fn delete_label(&self, scope: &Scope, project_id: i64, label_id: i64) -> Result<Label> {
        let (project, _) = self.project_access(scope, project_id, Action::Manage).await?;
        let label = self.label_where(project.id, "id = $2", LabelKey::Id(label_id)).await?;
        if project.kind == ProjectType::Absa {
            return Err(absa_refuses_labels());
        }
        sqlx::query("DELETE FROM labels WHERE id = $1")
            .bind(label.id)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(label)
    }
}
