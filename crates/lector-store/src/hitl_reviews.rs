//! HITL reviews: what an extraction that found a live configuration leaves for a person
//! (created with a notification to the assignee and the configuration's webhook event), read by
//! any member and submitted by one who may annotate. Who is assigned follows the workspace: a
//! member who leaves, or takes a role that cannot review, is unassigned here.

use crate::hitls::Hitl;
use crate::notifications::notify_in;
use crate::records::{FromAnyRow, fetch_record, fetch_records, flag};
use crate::{Store, db};
use lector_core::time::Timestamp;
use lector_core::{Action, Error, NotificationType, Result, ReviewStatus, Role, Scope};
use sqlx::Row;
use sqlx::any::AnyRow;

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

#[cfg(test)]
impl NewReview {
    /// A review of page 1 of `document_name` with no field, threshold, answer or pages.
    pub(crate) fn plain(document_name: &str) -> Self {
        Self {
            document_name: document_name.into(),
            page_num: 1,
            label: None,
            confidence_threshold: None,
            extracted: serde_json::json!({}),
            pages: None,
        }
    }
}

/// Most reviews one configuration holds waiting (PENDING): past it, an extraction that would
/// add one answers 409 until some are submitted, so a client repeating a failing extraction
/// cannot fill the database and its reviewer's queue without bound.
pub const MAX_PENDING_REVIEWS_PER_HITL: i64 = 10_000;

impl Store {
    /// Creates a pending review of `hitl` and notifies the user assigned to it now, in one
    /// transaction (404 when it has been deleted). An assignee who no longer may submit reviews
    /// in the workspace (gone, or a lower role now) is neither assigned nor told: the review
    /// waits for whoever is assigned next. 409 when the configuration would hold more than
    /// [`MAX_PENDING_REVIEWS_PER_HITL`] waiting with it ([`waiting_reviews`]).
    pub async fn create_review(&self, hitl: &Hitl, new: &NewReview) -> Result<HitlReview> {
        for _ in 0..5 {
            if let Some(review) = self.try_create_review(hitl, new).await? {
                return Ok(review);
            }
        }
        Err(Error::conflict(format!(
            "HITL configuration {:?} was reassigned five times while its review was made; send the \
             extraction again",
            hitl.name
        )))
    }

    /// [`Store::create_review`] once; `None` (nothing written) when the configuration was given
    /// to someone else between the first read of its assignee and its lock. On PostgreSQL the
    /// assignee is read before the configuration's row is locked (that lock comes last, as in
    /// every writer of reviews), so a reassignment committed meanwhile would otherwise leave this
    /// review, which the reassignment could not see, with the user it no longer names.
    async fn try_create_review(&self, hitl: &Hitl, new: &NewReview) -> Result<Option<HitlReview>> {
        let mut tx = self.begin_write().await?;
        let now = Timestamp::now().micros();
        // The configuration as it is now, not as it was when the extraction began: it may have
        // been given to someone else, or deleted, while the document was read.
        let assigned = assignee_now(&mut tx, hitl.id)
            .await?
            .ok_or_else(|| Error::not_found("HITL configuration"))?;
        let assignee = match assigned {
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
            let title = "A review is waiting for you";
            notify_in(&mut tx, user_id, NotificationType::Info, title, &text).await?;
        }
        webhook_in(&mut tx, hitl, "review.created", &review).await?;
        let waiting = waiting_reviews(&mut tx, hitl.id).await?;
        if assignee_now(&mut tx, hitl.id).await? != Some(assigned) {
            // Dropping the transaction takes back this review, its notification and its event.
            return Ok(None);
        }
        if let Some(earlier) = same_review_waiting(&mut tx, &review, new).await? {
            return Ok(Some(earlier));
        }
        if waiting > MAX_PENDING_REVIEWS_PER_HITL {
            return Err(Error::conflict(format!(
                "HITL configuration {:?} has {MAX_PENDING_REVIEWS_PER_HITL} reviews waiting; submit some \
                 before extracting more with it",
                hitl.name
            )));
        }
        tx.commit().await.map_err(db)?;
        self.wake_workers();
        Ok(Some(review))
    }

    /// A page of a configuration's reviews, newest first (any member).
    pub async fn hitl_reviews(
        &self,
        scope: &Scope,
        project_id: i64,
        hitl_id: i64,
        status: Option<ReviewStatus>,
        offset: i64,
        limit: i64,
    ) -> Result<Vec<HitlReview>> {
        let hitl = self.hitl(scope, project_id, hitl_id, Action::Read).await?;
        let of_status = if status.is_some() { "AND status = $4" } else { "" };
        let sql = format!(
            "SELECT {REVIEW_COLUMNS} FROM hitl_reviews WHERE hitl_id = $1 {of_status} \
             ORDER BY id DESC LIMIT $2 OFFSET $3"
        );
        let mut query = sqlx::query(&sql).bind(hitl.id).bind(limit).bind(offset);
        if let Some(status) = status {
            query = query.bind(status.as_str());
        }
        fetch_records(query, &self.pool).await
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
    /// values; the review's `user_id` becomes the caller's, who reviewed it. A review waiting
    /// for a user is theirs to submit, or a MANAGER's (403 for anyone else); one waiting for
    /// nobody, any annotator's. A review already submitted answers 409.
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
        // A submitted review answers 409 below, whoever asks.
        let waiting = review.status == ReviewStatus::Pending.as_str();
        if let Some(waiting_for) = review.user_id.filter(|user| waiting && *user != scope.user_id) {
            self.hitl(scope, project_id, hitl_id, Action::Manage)
                .await
                .map_err(|e| match e.code {
                    lector_core::ErrorCode::Forbidden => Error::forbidden(format!(
                        "review {} waits for user {waiting_for}: only they or a MANAGER may submit it",
                        review.id
                    )),
                    _ => e,
                })?;
        }
        let mut tx = self.begin_write().await?;
        let sql = format!(
            "UPDATE hitl_reviews SET status = $1, corrected = $2, updated = $3, user_id = $6 \
             WHERE id = $4 AND status = $5 AND COALESCE(user_id, 0) = $7 RETURNING {REVIEW_COLUMNS}"
        );
        let row = sqlx::query(&sql)
            .bind(status.as_str())
            .bind(corrected.to_string())
            .bind(Timestamp::now().micros())
            .bind(review.id)
            .bind(ReviewStatus::Pending.as_str())
            .bind(scope.user_id)
            // Whom it waited for when checked above: a review given to another reviewer
            // meanwhile is not submitted.
            .bind(review.user_id.unwrap_or(0))
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
            .ok_or_else(|| {
                Error::conflict(format!(
                    "review {} was submitted, or given to another reviewer, meanwhile",
                    review.id
                ))
            })?;
        let review = HitlReview::decode(&row)?;
        webhook_in(&mut tx, &hitl, "review.submitted", &review).await?;
        tx.commit().await.map_err(db)?;
        self.wake_workers();
        Ok(review)
    }
}

/// A user's standing in a project's workspace: their role there, if they are a member, and
/// whether that standing may submit reviews (a role that may annotate, or a superuser member).
/// What `check_hitl_refs` asks when a user is assigned, and a new review when it is made.
pub(crate) async fn reviewer_standing<'e>(
    executor: impl sqlx::Executor<'e, Database = sqlx::Any>,
    project_id: i64,
    user_id: i64,
) -> Result<Option<(String, bool)>> {
    let row = sqlx::query(
        "SELECT m.role, u.is_superuser FROM memberships m JOIN projects p ON p.workspace_id = m.workspace_id \
         JOIN users u ON u.id = m.user_id WHERE p.id = $1 AND m.user_id = $2",
    )
    .bind(project_id)
    .bind(user_id)
    .fetch_optional(executor)
    .await
    .map_err(db)?;
    let Some(row) = row else {
        return Ok(None);
    };
    let role: String = row.try_get("role").map_err(db)?;
    let may_annotate = role.parse::<Role>().is_ok_and(|r| r >= Action::Annotate.min_role());
    let may_review = may_annotate || flag(&row, "is_superuser").map_err(db)?;
    Ok(Some((role, may_review)))
}

/// Whether a user may submit reviews in a project's workspace now ([`reviewer_standing`]).
async fn may_review_in(tx: &mut sqlx::Transaction<'_, sqlx::Any>, project_id: i64, user_id: i64) -> Result<bool> {
    let standing = reviewer_standing(&mut **tx, project_id, user_id).await?;
    Ok(standing.is_some_and(|(_, may_review)| may_review))
}

/// Gives `hitl`'s pending reviews that wait for nobody to `user_id`, its new assignee, and
/// tells them in one notification, in `tx` (the configuration's change). An assignee who may
/// not submit reviews (checked again here, in the transaction) is given nothing.
pub(crate) async fn give_waiting_reviews(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    hitl: &Hitl,
    user_id: i64,
) -> Result<()> {
    if !may_review_in(tx, hitl.project_id, user_id).await? {
        return Ok(());
    }
    let now = Timestamp::now().micros();
    let given = sqlx::query(
        "UPDATE hitl_reviews SET user_id = $1, updated = $2 WHERE hitl_id = $3 AND status = $4 AND user_id IS NULL",
    )
    .bind(user_id)
    .bind(now)
    .bind(hitl.id)
    .bind(ReviewStatus::Pending.as_str())
    .execute(&mut **tx)
    .await
    .map_err(db)?
    .rows_affected();
    if given == 0 {
        return Ok(());
    }
    let text = match given {
        1 => format!("A review of {} that waited for its assignee is yours now.", hitl.name),
        n => format!(
            "{n} reviews of {} that waited for their assignee are yours now.",
            hitl.name
        ),
    };
    let title = "Reviews are waiting for you";
    notify_in(tx, user_id, NotificationType::Info, title, &text).await
}

/// Takes a member's review work in a workspace from them, when they leave it or take a role
/// that cannot submit reviews: its configurations stop assigning them, and their pending
/// reviews wait for whoever is assigned next ([`give_waiting_reviews`]).
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

/// After project `project_id` moved to workspace `workspace_id`: its configurations and their
/// waiting reviews no longer wait for users who may not review there (as when such a user
/// leaves, [`unassign_reviews_in`]); otherwise their reviews were stuck with someone who could
/// not open them, and only a MANAGER could take them back.
pub(crate) async fn unassign_outsiders(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    project_id: i64,
    workspace_id: i64,
) -> Result<()> {
    const REVIEWERS: &str = "SELECT m.user_id FROM memberships m JOIN users u ON u.id = m.user_id \
         WHERE m.workspace_id = $2 AND (m.role <> 'VIEWER' OR u.is_superuser = $4)";
    let now = Timestamp::now().micros();
    let statements = [
        format!(
            "UPDATE hitls SET assigned_user_id = NULL, updated = $3 WHERE project_id = $1 \
             AND assigned_user_id IS NOT NULL AND assigned_user_id NOT IN ({REVIEWERS})"
        ),
        format!(
            "UPDATE hitl_reviews SET user_id = NULL, updated = $3 WHERE status = $5 AND user_id IS NOT NULL \
             AND hitl_id IN (SELECT id FROM hitls WHERE project_id = $1) AND user_id NOT IN ({REVIEWERS})"
        ),
    ];
    for sql in &statements {
        sqlx::query(sql)
            .bind(project_id)
            .bind(workspace_id)
            .bind(now)
            .bind(true)
            .bind(ReviewStatus::Pending.as_str())
            .execute(&mut **tx)
            .await
            .map_err(db)?;
    }
    Ok(())
}

/// Whom configuration `hitl_id` names as its reviewer, as this transaction reads it; `None` when
/// the configuration is gone.
async fn assignee_now(tx: &mut sqlx::Transaction<'static, sqlx::Any>, hitl_id: i64) -> Result<Option<Option<i64>>> {
    sqlx::query_scalar("SELECT assigned_user_id FROM hitls WHERE id = $1")
        .bind(hitl_id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db)
}

/// The reviews of configuration `hitl_id` waiting, counted behind a lock on the configuration
/// taken last in the writing transaction (after the review, its notification and its webhook
/// job have locked what they refer to, in the order other writers take them), so concurrent
/// extractions queue behind each other at the limit without deadlocking with them. On
/// PostgreSQL the lock is `FOR NO KEY UPDATE`, which the reviews' own foreign keys (key share)
/// do not conflict with.
async fn waiting_reviews(tx: &mut sqlx::Transaction<'static, sqlx::Any>, hitl_id: i64) -> Result<i64> {
    crate::lock_row_for_no_key_update(tx, ("hitls", hitl_id)).await?;
    sqlx::query_scalar("SELECT COUNT(*) FROM hitl_reviews WHERE hitl_id = $1 AND status = 'PENDING'")
        .bind(hitl_id)
        .fetch_one(&mut **tx)
        .await
        .map_err(db)
}

/// The review of the configuration still waiting for the same document with the same answer,
/// if there is one: an extraction repeated (a client's retry after a lost answer, or the same
/// file sent again) finds the review it made, instead of making another for the same work and
/// notifying its reviewer again. Called after [`waiting_reviews`] has locked the configuration,
/// so of two such extractions at once the second sees the first's review, whichever of the two
/// reviews has the lower id (the ids are drawn before the lock, in any order).
async fn same_review_waiting(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    made: &HitlReview,
    new: &NewReview,
) -> Result<Option<HitlReview>> {
    let sql = format!(
        "SELECT {REVIEW_COLUMNS} FROM hitl_reviews WHERE hitl_id = $1 AND id <> $8 AND status = 'PENDING' \
         AND document_name = $2 AND page_num = $3 AND COALESCE(label, '') = $4 \
         AND COALESCE(confidence_threshold, -1) = $5 AND extracted = $6 AND COALESCE(pages, '') = $7 \
         ORDER BY id LIMIT 1"
    );
    let row = sqlx::query(&sql)
        .bind(made.hitl_id)
        .bind(&new.document_name)
        .bind(new.page_num)
        .bind(new.label.as_deref().unwrap_or_default())
        .bind(new.confidence_threshold.unwrap_or(-1.0))
        .bind(new.extracted.to_string())
        .bind(new.pages.as_deref().unwrap_or_default())
        .bind(made.id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db)?;
    row.as_ref().map(HitlReview::decode).transpose()
}

/// Queues the event of `review` for the configuration's webhook, if it has one, in `tx`.
async fn webhook_in(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    hitl: &Hitl,
    event_type: &str,
    review: &HitlReview,
) -> Result<()> {
    // The address as it is now: one set while the document was read gets this review's events.
    let address: Option<Option<String>> = sqlx::query_scalar("SELECT webhook_url FROM hitls WHERE id = $1")
        .bind(hitl.id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db)?;
    if address.flatten().is_none() {
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
    use crate::hitls::NewHitl;
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
        let new = NewHitl::plain("Check");
        let hitl = store.create_hitl(&scope, project.id, &new).await.expect("hitl");
        let review = store
            .create_review(&hitl, &NewReview::plain("a.pdf"))
            .await
            .expect("review");
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

    /// A review goes to whom the configuration names when the review is made, not when the
    /// extraction read it, and its event to the address it names then; a configuration deleted
    /// meanwhile makes none (404). Before, the user named when the extraction began was
    /// notified, and an address set meanwhile missed the review's creation.
    async fn a_review_follows_the_configuration_as_it_is_now(backend: Backend) {
        let Some(database) = TestDatabase::create(backend).await else {
            return;
        };
        let store = Store::open(&database.url, 2).await.expect("store");
        let (scope, _, project) = owner_with_project(&store, "Invoices", ProjectType::Label).await;
        let read_earlier = store
            .create_hitl(&scope, project.id, &NewHitl::plain("Check"))
            .await
            .expect("hitl");
        assert_eq!(read_earlier.assigned_user_id, None);
        let assign = "UPDATE hitls SET assigned_user_id = $1, webhook_url = 'https://example.org/in' WHERE id = $2";
        sqlx::query(assign)
            .bind(scope.user_id)
            .bind(read_earlier.id)
            .execute(&store.pool)
            .await
            .expect("assigned and given an address meanwhile");
        let new = NewReview::plain("a.pdf");
        let review = store.create_review(&read_earlier, &new).await.expect("review");
        assert_eq!(review.user_id, Some(scope.user_id));
        // The address set meanwhile is told of the review (it would hear of its submission).
        let events = "SELECT COUNT(*) FROM jobs WHERE kind = 'deliver_webhook' AND project_id = $1";
        assert_eq!(crate::testing::count(&store, events, project.id).await, 1);
        // As when its project is deleted while a document is read.
        for gone in [
            "DELETE FROM hitl_reviews WHERE hitl_id = $1",
            "DELETE FROM hitls WHERE id = $1",
        ] {
            sqlx::query(gone)
                .bind(read_earlier.id)
                .execute(&store.pool)
                .await
                .expect("deleted meanwhile");
        }
        let gone = store
            .create_review(&read_earlier, &new)
            .await
            .expect_err("no configuration");
        assert_eq!(gone.status(), 404, "{gone:?}");
    }

    #[tokio::test]
    async fn sqlite_a_review_follows_the_configuration_as_it_is_now() {
        a_review_follows_the_configuration_as_it_is_now(Backend::Sqlite).await;
    }

    #[tokio::test]
    async fn postgres_a_review_follows_the_configuration_as_it_is_now() {
        a_review_follows_the_configuration_as_it_is_now(Backend::Postgres).await;
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
