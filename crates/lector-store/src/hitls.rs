//! Human review of extractions (HITL): the configurations of a project, which say which
//! model's extractions go to review, on what settings, to whom and to which webhook (the
//! reviews themselves are in `hitl_reviews.rs`). Every reader takes the caller's scope through
//! the project check; changing a configuration takes Manage, reading it Read.

use crate::records::{BoundQuery, Checked, FromAnyRow, Project, fetch_record, fetch_records, flag};
use crate::{Lease, Store, db};
use lector_core::time::Timestamp;
use lector_core::{Action, Error, Result, Scope};
use sqlx::Row;
use sqlx::any::AnyRow;

/// A HITL configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Hitl {
    pub id: i64,
    pub project_id: i64,
    pub name: String,
    pub description: String,
    pub assigned_user_id: Option<i64>,
    pub model_id: Option<i64>,
    pub is_live: bool,
    pub webhook_url: Option<String>,
    /// What review events are signed with (HMAC-SHA256); made with the configuration.
    pub webhook_secret: String,
    /// The field settings: `{field: {required, confidence_threshold, data_type}}`.
    pub labels: serde_json::Value,
    pub created: Timestamp,
    pub updated: Timestamp,
    pub(crate) checked: Checked,
}

const HITL_COLUMNS: &str = "id, project_id, name, description, assigned_user_id, model_id, is_live, webhook_url, \
     webhook_secret, labels, created, updated";

impl FromAnyRow for Hitl {
    fn from_row(row: &AnyRow) -> Result<Self, sqlx::Error> {
        let labels: String = row.try_get("labels")?;
        Ok(Self {
            id: row.try_get("id")?,
            project_id: row.try_get("project_id")?,
            name: row.try_get("name")?,
            description: row.try_get("description")?,
            assigned_user_id: row.try_get("assigned_user_id")?,
            model_id: row.try_get("model_id")?,
            is_live: flag(row, "is_live")?,
            webhook_url: row.try_get("webhook_url")?,
            webhook_secret: row.try_get("webhook_secret")?,
            labels: serde_json::from_str(&labels).unwrap_or_else(|_| serde_json::json!({})),
            created: Timestamp(row.try_get("created")?),
            updated: Timestamp(row.try_get("updated")?),
            checked: crate::CHECKED,
        })
    }
}

/// What a configuration is made or changed with.
#[derive(Debug, Clone, PartialEq)]
pub struct NewHitl {
    pub name: String,
    pub description: String,
    pub assigned_user_id: Option<i64>,
    pub model_id: Option<i64>,
    pub is_live: bool,
    pub webhook_url: Option<String>,
    pub labels: serde_json::Value,
}

#[cfg(test)]
impl NewHitl {
    /// A live configuration named `name` with no model, assignee, webhook or field settings.
    pub(crate) fn plain(name: &str) -> Self {
        Self {
            name: name.into(),
            description: String::new(),
            assigned_user_id: None,
            model_id: None,
            is_live: true,
            webhook_url: None,
            labels: serde_json::json!({}),
        }
    }
}

/// A change of a configuration (`update_hitl`, `assign_hitl`): a field left `None` keeps its
/// stored value; `Some(None)` clears a nullable one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HitlChange {
    pub name: Option<String>,
    pub description: Option<String>,
    pub assigned_user_id: Option<Option<i64>>,
    pub model_id: Option<Option<i64>>,
    pub is_live: Option<bool>,
    pub webhook_url: Option<Option<String>>,
    pub labels: Option<serde_json::Value>,
}

/// A bound query for one id column.
type IdQuery<'q> = sqlx::query::QueryScalar<'q, sqlx::Any, i64, sqlx::any::AnyArguments<'q>>;

/// Most configurations one project holds.
pub const MAX_HITLS_PER_PROJECT: i64 = 100;

impl Store {
    /// The project's configurations, oldest first (any member).
    pub async fn hitls(&self, scope: &Scope, project_id: i64) -> Result<Vec<Hitl>> {
        let (project, _) = self.project_access(scope, project_id, Action::Read).await?;
        let sql = format!("SELECT {HITL_COLUMNS} FROM hitls WHERE project_id = $1 ORDER BY id");
        fetch_records(sqlx::query(&sql).bind(project.id), &self.pool).await
    }

    /// One configuration, for a caller who may do `action` in its project.
    pub async fn hitl(&self, scope: &Scope, project_id: i64, id: i64, action: Action) -> Result<Hitl> {
        let (project, _) = self.project_access(scope, project_id, action).await?;
        self.hitl_of(&project, id).await
    }

    /// Where a webhook job (of the configuration's project) posts its event now: the
    /// configuration's `webhook_url` and secret; `None` when it has no address any more, or is
    /// gone.
    pub async fn webhook_for_job(&self, lease: &Lease, hitl_id: i64) -> Result<Option<(String, String)>> {
        let Some(project_id) = lease.job.project_id else {
            return Ok(None);
        };
        let row: Option<(Option<String>, String)> =
            sqlx::query_as("SELECT webhook_url, webhook_secret FROM hitls WHERE id = $1 AND project_id = $2")
                .bind(hitl_id)
                .bind(project_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db)?;
        Ok(row.and_then(|(url, secret)| url.map(|url| (url, secret))))
    }

    async fn hitl_of(&self, project: &Project, id: i64) -> Result<Hitl> {
        let sql = format!("SELECT {HITL_COLUMNS} FROM hitls WHERE id = $1 AND project_id = $2");
        fetch_record(sqlx::query(&sql).bind(id).bind(project.id), &self.pool, "HITL").await
    }

    /// Creates a configuration (MANAGER); its model must be one of the project's, its user a
    /// member of the workspace.
    pub async fn create_hitl(&self, scope: &Scope, project_id: i64, new: &NewHitl) -> Result<Hitl> {
        let (project, _) = self.project_access(scope, project_id, Action::Manage).await?;
        self.check_hitl_refs(&project, new.model_id, new.assigned_user_id)
            .await?;
        self.check_settings(&project, new.model_id, &new.labels).await?;
        let mut tx = self.begin_write().await?;
        let held = crate::count_under_lock(
            &mut tx,
            ("projects", project.id),
            "SELECT COUNT(*) FROM hitls WHERE project_id = $1",
        )
        .await?;
        if held >= MAX_HITLS_PER_PROJECT {
            return Err(Error::conflict(format!(
                "a project holds at most {MAX_HITLS_PER_PROJECT} HITL configurations"
            )));
        }
        let now = Timestamp::now().micros();
        let sql = format!(
            "INSERT INTO hitls (project_id, name, description, assigned_user_id, model_id, is_live, webhook_url, \
             labels, created, updated, webhook_secret) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10) \
             RETURNING {HITL_COLUMNS}"
        );
        let secret = format!(
            "whsec_{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let row = bind_fields(sqlx::query(&sql).bind(project.id), new)
            .bind(now)
            .bind(secret)
            .fetch_one(&mut *tx)
            .await
            .map_err(crate::db_unique(ONE_LIVE))?;
        tx.commit().await.map_err(db)?;
        Hitl::decode(&row)
    }

    /// Changes a configuration (MANAGER); `assign_hitl` is the same change. Only the fields
    /// the change names are written, in one statement, so two changes of different fields
    /// both stay. A new assignee is given, in the same transaction, the pending reviews that
    /// wait for nobody (made while no one could be assigned, or left by a member who went).
    pub async fn update_hitl(&self, scope: &Scope, project_id: i64, id: i64, change: &HitlChange) -> Result<Hitl> {
        let (project, _) = self.project_access(scope, project_id, Action::Manage).await?;
        let current = self.hitl_of(&project, id).await?;
        let (model_id, user_id) = (change.model_id.flatten(), change.assigned_user_id.flatten());
        self.check_hitl_refs(&project, model_id, user_id).await?;
        if let Some(settings) = &change.labels {
            let model_id = change.model_id.unwrap_or(current.model_id);
            self.check_settings(&project, model_id, settings).await?;
        }
        let sql = format!(
            "UPDATE hitls SET name = COALESCE($1, name), description = COALESCE($2, description), \
             assigned_user_id = CASE WHEN $3 THEN $4 ELSE assigned_user_id END, \
             model_id = CASE WHEN $5 THEN $6 ELSE model_id END, is_live = COALESCE($7, is_live), \
             webhook_url = CASE WHEN $8 THEN $9 ELSE webhook_url END, labels = COALESCE($10, labels), \
             updated = $11 WHERE id = $12 AND project_id = $13 RETURNING {HITL_COLUMNS}"
        );
        let mut tx = self.begin_write().await?;
        // A configuration that is live after the change holds its model's row, as the writers
        // of analyses do (`models::model_still_there`): a `delete_model` under way is waited
        // for, and one that comes after sees the configuration live and refuses (a new
        // model_id's foreign key check would hold the row anyway, but not a bare is_live).
        if let (true, Some(model_id)) = (
            change.is_live.unwrap_or(current.is_live),
            change.model_id.unwrap_or(current.model_id),
        ) {
            crate::lock_row_for_key_share(&mut tx, ("models", model_id)).await?;
        }
        let row = sqlx::query(&sql)
            .bind(&change.name)
            .bind(&change.description)
            .bind(change.assigned_user_id.is_some())
            .bind(change.assigned_user_id.flatten())
            .bind(change.model_id.is_some())
            .bind(change.model_id.flatten())
            .bind(change.is_live)
            .bind(change.webhook_url.is_some())
            .bind(change.webhook_url.clone().flatten())
            .bind(change.labels.as_ref().map(|l| l.to_string()))
            .bind(Timestamp::now().micros())
            .bind(id)
            .bind(project.id)
            .fetch_one(&mut *tx)
            .await
            .map_err(crate::db_unique(ONE_LIVE))?;
        let hitl = Hitl::decode(&row)?;
        if let Some(user_id) = user_id {
            crate::hitl_reviews::give_waiting_reviews(&mut tx, &hitl, user_id).await?;
        }
        tx.commit().await.map_err(db)?;
        Ok(hitl)
    }

    /// 422 unless the model is one of the project's extraction (LABEL) models and the user a
    /// member of its workspace who may submit reviews.
    async fn check_hitl_refs(&self, project: &Project, model_id: Option<i64>, user_id: Option<i64>) -> Result<()> {
        if let Some(model_id) = model_id {
            let sql = "SELECT id FROM models WHERE id = $1 AND project_id = $2 AND type = $3";
            let problem = ("model_id", "is not an extraction (LABEL) model of this project");
            let label = lector_core::ProjectType::Label.as_str();
            let query = sqlx::query_scalar(sql).bind(model_id).bind(project.id).bind(label);
            self.require_row(query, problem).await?;
        }
        if let Some(user_id) = user_id {
            // The assignee submits the reviews, which takes a role that may annotate.
            match crate::hitl_reviews::reviewer_standing(&self.pool, project.id, user_id).await? {
                None => return Err(assignee_problem("is not a member of the project's workspace")),
                Some((role, false)) => {
                    return Err(assignee_problem(&format!(
                        "is a {role} of the project's workspace, who cannot submit reviews: assign an ANNOTATOR or more"
                    )));
                }
                Some((_, true)) => {}
            }
        }
        Ok(())
    }

    /// 422 naming `labels.{field}` for a field of the settings that is neither a label of the
    /// project nor one the configuration's model extracts (a label renamed or deleted since
    /// it was trained, or a model uploaded with its own).
    async fn check_settings(
        &self,
        project: &Project,
        model_id: Option<i64>,
        settings: &serde_json::Value,
    ) -> Result<()> {
        let Some(fields) = settings.as_object().filter(|f| !f.is_empty()) else {
            return Ok(());
        };
        let known = self.field_names(project.id, model_id).await?;
        let unknown: Vec<lector_core::FieldError> = fields
            .keys()
            .filter(|field| !known.contains(field))
            .take(10)
            .map(|field| {
                let field: String = field.chars().take(120).collect();
                lector_core::FieldError::new(format!("labels.{field}"), "is not a label of this project or its model")
            })
            .collect();
        if unknown.is_empty() {
            Ok(())
        } else {
            Err(Error::validation(unknown))
        }
    }

    /// The fields a configuration of `hitl`'s project may name, and a review's corrections may
    /// correct (any member): the project's labels and those its model extracts.
    pub async fn review_fields(&self, hitl: &Hitl) -> Result<Vec<String>> {
        self.field_names(hitl.project_id, hitl.model_id).await
    }

    /// The project's labels and, with a model of the project, the labels it was trained on.
    async fn field_names(&self, project_id: i64, model_id: Option<i64>) -> Result<Vec<String>> {
        let mut names: Vec<String> = sqlx::query_scalar("SELECT name FROM labels WHERE project_id = $1")
            .bind(project_id)
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        if let Some(model_id) = model_id {
            let trained: Option<String> =
                sqlx::query_scalar("SELECT labels FROM models WHERE id = $1 AND project_id = $2")
                    .bind(model_id)
                    .bind(project_id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db)?;
            let trained: Vec<String> = trained.and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
            names.extend(
                trained
                    .into_iter()
                    .filter(|name| !names.contains(name))
                    .collect::<Vec<_>>(),
            );
        }
        Ok(names)
    }

    /// 422 naming the field and what is wrong with it (`problem`) unless `query` finds a row.
    async fn require_row(&self, query: IdQuery<'_>, problem: (&str, &str)) -> Result<()> {
        let found = query.fetch_optional(&self.pool).await.map_err(db)?;
        match found {
            Some(_) => Ok(()),
            None => Err(Error::validation(vec![lector_core::FieldError::new(
                problem.0, problem.1,
            )])),
        }
    }

    /// The live configuration of a project's model, if there is one (the newest), for a caller
    /// already allowed to extract with it.
    pub async fn live_hitl(&self, project: &Project, model_id: i64) -> Result<Option<Hitl>> {
        let sql = format!(
            "SELECT {HITL_COLUMNS} FROM hitls WHERE project_id = $1 AND model_id = $2 AND is_live = $3 \
             ORDER BY id DESC LIMIT 1"
        );
        let row = sqlx::query(&sql)
            .bind(project.id)
            .bind(model_id)
            .bind(true)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        row.as_ref().map(Hitl::decode).transpose()
    }
}

/// The conflict of a second live configuration for a model (migration 0026's index).
const ONE_LIVE: &str = "another live HITL configuration judges this model's extractions: make it not live \
     (is_live: false) first, or give this one another model";

/// 422 naming `assigned_user_id`.
fn assignee_problem(message: &str) -> Error {
    Error::validation(vec![lector_core::FieldError::new("assigned_user_id", message)])
}

/// Binds what a configuration is made with, in the order its statement lists the columns:
/// name, description, assigned user, model, live, webhook, labels.
fn bind_fields<'q>(query: BoundQuery<'q>, new: &'q NewHitl) -> BoundQuery<'q> {
    query
        .bind(&new.name)
        .bind(&new.description)
        .bind(new.assigned_user_id)
        .bind(new.model_id)
        .bind(new.is_live)
        .bind(&new.webhook_url)
        .bind(new.labels.to_string())
}
