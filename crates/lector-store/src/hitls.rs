//! Human review of extractions (HITL): configurations per project and the reviews they create.
//! Every reader takes the caller's scope through the project check; the role each operation
//! needs is in the name of the `Action` passed (configurations: Manage; reviews: Read to see,
//! Annotate to submit). A review is created only through an extraction that found a live
//! configuration, and its assigned user hears of it.

use crate::records::{BoundQuery, Checked, FromAnyRow, Project, fetch_record, fetch_records, flag};
use crate::{Lease, Store, db};
use lector_core::time::Timestamp;
use lector_core::{Action, Error, NotificationType, Result, ReviewStatus, Role, Scope};
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

/// A review of one extraction.
#[derive(Debug, Clone, PartialEq)]
pub struct HitlReview {
    pub id: i64,
    pub hitl_id: i64,
    pub user_id: Option<i64>,
    pub document_name: String,
    pub page_num: i64,
    /// PENDING, APPROVED or REJECTED ([`ReviewStatus`]).
    pub status: String,
    /// The first field that asked for review, and its threshold.
    pub label: Option<String>,
    pub confidence_threshold: Option<f64>,
    /// What the extraction found (JSON), and the reviewer's values once submitted.
    pub extracted: serde_json::Value,
    pub corrected: Option<serde_json::Value>,
    pub created: Timestamp,
    pub updated: Timestamp,
}

const REVIEW_COLUMNS: &str = "id, hitl_id, user_id, document_name, page_num, status, label, confidence_threshold, \
     extracted, corrected, created, updated";

impl FromAnyRow for HitlReview {
    fn from_row(row: &AnyRow) -> Result<Self, sqlx::Error> {
        let json = |text: String| serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
        Ok(Self {
            id: row.try_get("id")?,
            hitl_id: row.try_get("hitl_id")?,
            user_id: row.try_get("user_id")?,
            document_name: row.try_get("document_name")?,
            page_num: row.try_get("page_num")?,
            status: row.try_get("status")?,
            label: row.try_get("label")?,
            confidence_threshold: row.try_get("confidence_threshold")?,
            extracted: json(row.try_get("extracted")?),
            corrected: row.try_get::<Option<String>, _>("corrected")?.map(json),
            created: Timestamp(row.try_get("created")?),
            updated: Timestamp(row.try_get("updated")?),
        })
    }
}

/// A review to create: for whom, of what, why.
#[derive(Debug, Clone, PartialEq)]
pub struct NewReview {
    pub document_name: String,
    pub page_num: i64,
    pub label: Option<String>,
    pub confidence_threshold: Option<f64>,
    pub extracted: serde_json::Value,
    /// The pages read (JSON), kept so the corrected values can train the next version.
    pub pages: Option<String>,
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
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        Hitl::decode(&row)
    }

    /// Changes a configuration (MANAGER); `assign_hitl` is the same change. Only the fields
    /// the change names are written, in one statement, so two changes of different fields
    /// both stay.
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
            .fetch_one(&self.pool)
            .await
            .map_err(db)?;
        Hitl::decode(&row)
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
            let row = sqlx::query(
                "SELECT m.role, u.is_superuser FROM memberships m JOIN users u ON u.id = m.user_id \
                 WHERE m.workspace_id = $1 AND m.user_id = $2",
            )
            .bind(project.workspace_id)
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
            let Some(row) = row else {
                return Err(assignee_problem("is not a member of the project's workspace"));
            };
            let role: String = row.try_get("role").map_err(db)?;
            let may_annotate = role
                .parse::<Role>()
                .is_ok_and(|role| role >= Action::Annotate.min_role());
            if !may_annotate && !flag(&row, "is_superuser").map_err(db)? {
                return Err(assignee_problem(&format!(
                    "is a {role} of the project's workspace, who cannot submit reviews: assign an ANNOTATOR or more"
                )));
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

    /// Creates a pending review of `hitl` and notifies its assigned user, in one transaction. An
    /// assignee who no longer may submit reviews in the workspace (gone, or a lower role now) is
    /// neither assigned nor told: the review waits for whoever is assigned next.
    pub async fn create_review(&self, hitl: &Hitl, new: &NewReview) -> Result<HitlReview> {
        let mut tx = self.begin_write().await?;
        let now = Timestamp::now().micros();
        let assignee = match hitl.assigned_user_id {
            Some(user_id) => may_review_in(&mut tx, hitl.project_id, user_id)
                .await?
                .then_some(user_id),
            None => None,
        };
        let sql = format!(
            "INSERT INTO hitl_reviews (hitl_id, user_id, document_name, page_num, status, label, confidence_threshold, \
             extracted, pages, created, updated) VALUES ($1, $2, $3, $4, $10, $5, $6, $7, $9, $8, $8) \
             RETURNING {REVIEW_COLUMNS}"
        );
        let row = sqlx::query(&sql)
            .bind(hitl.id)
            .bind(assignee)
            .bind(&new.document_name)
            .bind(new.page_num)
            .bind(&new.label)
            .bind(new.confidence_threshold)
            .bind(new.extracted.to_string())
            .bind(now)
            .bind(&new.pages)
            .bind(ReviewStatus::Pending.as_str())
            .fetch_one(&mut *tx)
            .await
            .map_err(db)?;
        let review = HitlReview::decode(&row)?;
        if let Some(user_id) = assignee {
            let text = format!(
                "Review {} of {:?} ({}) needs a look: {}.",
                review.id,
                review.document_name,
                hitl.name,
                new.label
                    .as_deref()
                    .map_or("a field".to_owned(), |l| format!("field {l}"))
            );
            let (title, text) = crate::notifications::within_limits("A review is waiting for you", &text);
            sqlx::query("INSERT INTO notifications (user_id, type, title, text, created) VALUES ($1, $2, $3, $4, $5)")
                .bind(user_id)
                .bind(NotificationType::Info.as_str())
                .bind(title)
                .bind(text)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        }
        webhook_in(&mut tx, hitl, "review.created", &review).await?;
        tx.commit().await.map_err(db)?;
        self.wake_workers();
        Ok(review)
    }

    /// A page of a configuration's reviews, newest first (any member).
    pub async fn hitl_reviews(
        &self,
        scope: &Scope,
        project_id: i64,
        hitl_id: i64,
        offset: i64,
        limit: i64,
    ) -> Result<Vec<HitlReview>> {
        let hitl = self.hitl(scope, project_id, hitl_id, Action::Read).await?;
        let sql =
            format!("SELECT {REVIEW_COLUMNS} FROM hitl_reviews WHERE hitl_id = $1 ORDER BY id DESC LIMIT $2 OFFSET $3");
        fetch_records(sqlx::query(&sql).bind(hitl.id).bind(limit).bind(offset), &self.pool).await
    }

    /// One review, for a caller who may do `action` in its project.
    pub async fn hitl_review(
        &self,
        scope: &Scope,
        project_id: i64,
        hitl_id: i64,
        id: i64,
        action: Action,
    ) -> Result<(Hitl, HitlReview)> {
        let hitl = self.hitl(scope, project_id, hitl_id, action).await?;
        let sql = format!("SELECT {REVIEW_COLUMNS} FROM hitl_reviews WHERE id = $1 AND hitl_id = $2");
        let review = fetch_record(sqlx::query(&sql).bind(id).bind(hitl.id), &self.pool, "review").await?;
        Ok((hitl, review))
    }

    /// The pages a review was made from (JSON, a list of `lector_extract::Page`), for the
    /// reviewer's view of the page; `None` for a review made without them.
    pub async fn hitl_review_pages(
        &self,
        scope: &Scope,
        project_id: i64,
        hitl_id: i64,
        id: i64,
    ) -> Result<Option<String>> {
        let hitl = self.hitl(scope, project_id, hitl_id, Action::Read).await?;
        sqlx::query_scalar("SELECT pages FROM hitl_reviews WHERE id = $1 AND hitl_id = $2")
            .bind(id)
            .bind(hitl.id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?
            .ok_or_else(|| Error::not_found("review"))
    }

    /// Submits a review (ANNOTATOR): its verdict (APPROVED or REJECTED) and the corrected
    /// values. A review already submitted answers 409.
    pub async fn submit_review(
        &self,
        scope: &Scope,
        project_id: i64,
        hitl_id: i64,
        id: i64,
        status: ReviewStatus,
        corrected: &serde_json::Value,
    ) -> Result<HitlReview> {
        let (hitl, review) = self
            .hitl_review(scope, project_id, hitl_id, id, Action::Annotate)
            .await?;
        let mut tx = self.begin_write().await?;
        let sql = format!(
            "UPDATE hitl_reviews SET status = $1, corrected = $2, updated = $3 WHERE id = $4 AND status = $5 \
             RETURNING {REVIEW_COLUMNS}"
        );
        let row = sqlx::query(&sql)
            .bind(status.as_str())
            .bind(corrected.to_string())
            .bind(Timestamp::now().micros())
            .bind(review.id)
            .bind(ReviewStatus::Pending.as_str())
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
            .ok_or_else(|| Error::conflict(format!("review {} was already submitted", review.id)))?;
        let review = HitlReview::decode(&row)?;
        webhook_in(&mut tx, &hitl, "review.submitted", &review).await?;
        tx.commit().await.map_err(db)?;
        self.wake_workers();
        Ok(review)
    }
}

/// Whether a user may submit reviews in a project's workspace: a member of a role that may
/// annotate, or a superuser member (as `check_hitl_refs` allows when assigning).
async fn may_review_in(tx: &mut sqlx::Transaction<'_, sqlx::Any>, project_id: i64, user_id: i64) -> Result<bool> {
    let row = sqlx::query(
        "SELECT m.role, u.is_superuser FROM memberships m JOIN projects p ON p.workspace_id = m.workspace_id \
         JOIN users u ON u.id = m.user_id WHERE p.id = $1 AND m.user_id = $2",
    )
    .bind(project_id)
    .bind(user_id)
    .fetch_optional(&mut **tx)
    .await
    .map_err(db)?;
    let Some(row) = row else {
        return Ok(false);
    };
    let role: String = row.try_get("role").map_err(db)?;
    let may_annotate = role.parse::<Role>().is_ok_and(|r| r >= Action::Annotate.min_role());
    Ok(may_annotate || flag(&row, "is_superuser").map_err(db)?)
}

/// Takes a member's review work in a workspace from them, when they leave it or take a role
/// that cannot submit reviews: its configurations stop assigning them, and their pending
/// reviews wait for whoever is assigned next.
pub(crate) async fn unassign_reviews_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    workspace_id: i64,
    user_id: i64,
) -> Result<()> {
    let now = Timestamp::now().micros();
    sqlx::query(
        "UPDATE hitls SET assigned_user_id = NULL, updated = $3 WHERE assigned_user_id = $1 \
         AND project_id IN (SELECT id FROM projects WHERE workspace_id = $2)",
    )
    .bind(user_id)
    .bind(workspace_id)
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(db)?;
    sqlx::query(
        "UPDATE hitl_reviews SET user_id = NULL, updated = $4 WHERE user_id = $1 AND status = $3 \
         AND hitl_id IN (SELECT h.id FROM hitls h JOIN projects p ON p.id = h.project_id WHERE p.workspace_id = $2)",
    )
    .bind(user_id)
    .bind(workspace_id)
    .bind(ReviewStatus::Pending.as_str())
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(db)?;
    Ok(())
}

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

/// Queues the event of `review` for the configuration's webhook, if it has one, in `tx`.
async fn webhook_in(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    hitl: &Hitl,
    event_type: &str,
    review: &HitlReview,
) -> Result<()> {
    if hitl.webhook_url.is_none() {
        return Ok(());
    }
    let payload = crate::WebhookPayload {
        hitl_id: hitl.id,
        event_id: uuid::Uuid::new_v4().to_string(),
        event_type: event_type.to_owned(),
        created: Timestamp::now().to_rfc3339(),
    };
    let data = serde_json::json!({
        "review_id": review.id,
        "hitl_id": review.hitl_id,
        "project_id": hitl.project_id,
        "status": review.status,
        "document_name": review.document_name,
        "page_num": review.page_num,
        "user_id": review.user_id,
        "label": review.label,
        "extracted": review.extracted,
        "corrected": review.corrected,
    });
    let workspace_id: i64 = sqlx::query_scalar("SELECT workspace_id FROM projects WHERE id = $1")
        .bind(hitl.project_id)
        .fetch_one(&mut **tx)
        .await
        .map_err(db)?;
    let job = crate::NewJob::of(&payload)?
        .with_input(&data)?
        .in_project(workspace_id, hitl.project_id);
    crate::jobs::enqueue_in(tx, job).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Backend;
    use crate::testing::{TestDatabase, owner_with_project};
    use lector_core::ProjectType;

    /// Reviews written before migration 0020 said `pending`; the migration upper-cases them,
    /// and such a review is then submitted like a new one.
    async fn lower_case_reviews_are_upper_cased(backend: Backend) {
        let Some(database) = TestDatabase::create(backend).await else {
            return;
        };
        let store = Store::open(&database.url, 2).await.expect("store");
        let (scope, _, project) = owner_with_project(&store, "Invoices", ProjectType::Label).await;
        let new = NewHitl {
            name: "Check".into(),
            description: String::new(),
            assigned_user_id: None,
            model_id: None,
            is_live: true,
            webhook_url: None,
            labels: serde_json::json!({}),
        };
        let hitl = store.create_hitl(&scope, project.id, &new).await.expect("hitl");
        let review = NewReview {
            document_name: "a.pdf".into(),
            page_num: 1,
            label: None,
            confidence_threshold: None,
            extracted: serde_json::json!({}),
            pages: None,
        };
        let review = store.create_review(&hitl, &review).await.expect("review");
        assert_eq!(review.status, "PENDING");
        sqlx::query("UPDATE hitl_reviews SET status = 'pending' WHERE id = $1")
            .bind(review.id)
            .execute(&store.pool)
            .await
            .expect("an old review");
        let migration = match backend {
            Backend::Sqlite => include_str!("../migrations/sqlite/0020_review_status_case.sql"),
            Backend::Postgres => include_str!("../migrations/postgres/0020_review_status_case.sql"),
        };
        sqlx::raw_sql(migration).execute(&store.pool).await.expect("migration");
        let (_, read) = store
            .hitl_review(&scope, project.id, hitl.id, review.id, Action::Read)
            .await
            .expect("read");
        assert_eq!(read.status, "PENDING");
        let submitted = store
            .submit_review(
                &scope,
                project.id,
                hitl.id,
                review.id,
                ReviewStatus::Approved,
                &serde_json::json!({}),
            )
            .await
            .expect("submitted");
        assert_eq!(submitted.status, "APPROVED");
    }

    #[tokio::test]
    async fn sqlite_lower_case_reviews_are_upper_cased() {
        lower_case_reviews_are_upper_cased(Backend::Sqlite).await;
    }

    #[tokio::test]
    async fn postgres_lower_case_reviews_are_upper_cased() {
        lower_case_reviews_are_upper_cased(Backend::Postgres).await;
    }
}
