//! BASE models in the database: the sentence encoders installed on the nodes, kept as models of
//! type BASE in the one system workspace (which has no members), so that every user lists,
//! reads and stars them like any PUBLISHED model and trains with one as `base_id`.
//!
//! The files live per node, the rows are installation-wide, so publishing is additive: a
//! serving node or a worker calls [`Store::sync_base_models`] at start with what its
//! base-models directory holds, and each of those is PUBLISHED (created the first time). A node
//! never changes a BASE model it lacks: a node just added, or a command run on a machine
//! without the files, must not take an encoder away from the nodes that have it.
//!
//! Nothing here marks a BASE model unavailable. Once published it stays PUBLISHED; whether a
//! node can use it is that node's business, answered where the files are needed: `analyze`
//! with a model trained on it answers 409 and `upload_model` 422 on a node without them, and a
//! worker without them hands the training or analysis back to the queue for one that has them
//! (failing it with the reason once it has waited `UNHANDLED_JOB_GRACE_SECS`, see
//! `job_claims`). Rows FAILED by older versions (which marked what a node lacked) stay refused
//! as a base until a node with the files publishes them again. The rows are never deleted, so
//! the models trained with an encoder keep naming it. The files themselves are `lector-embed`'s
//! business; this module never reads them.

use crate::{Store, db};
use lector_core::time::Timestamp;
use lector_core::{ModelStatus, ModelType, Result};

/// The name the system workspace is created with (another if a user took it first).
const SYSTEM_WORKSPACE: &str = "Lector base models";

/// What a node says of one installed BASE model.
#[derive(Debug, Clone, PartialEq)]
pub struct InstalledBaseModel {
    /// Unique among the BASE models; the directory it is installed in.
    pub name: String,
    pub display_name: String,
    pub short_description: String,
    pub long_description: String,
    pub language: String,
}

impl Store {
    /// Publishes the BASE models this node has installed: each PUBLISHED, created the first
    /// time. The BASE models it lacks are left as they are (see the module's doc).
    pub async fn sync_base_models(&self, installed: &[InstalledBaseModel]) -> Result<()> {
        if installed.is_empty() {
            return Ok(());
        }
        let workspace_id = self.system_workspace().await?;
        for base in installed {
            self.publish_base_model(workspace_id, base).await?;
        }
        Ok(())
    }

    /// The system workspace's id, created the first time.
    async fn system_workspace(&self) -> Result<i64> {
        for attempt in 0..3 {
            let found: Option<i64> = sqlx::query_scalar("SELECT id FROM workspaces WHERE is_system = $1")
                .bind(true)
                .fetch_optional(&self.pool)
                .await
                .map_err(db)?;
            if let Some(id) = found {
                return Ok(id);
            }
            let name = if attempt == 0 {
                SYSTEM_WORKSPACE.to_owned()
            } else {
                format!(
                    "{SYSTEM_WORKSPACE} ({})",
                    &uuid::Uuid::new_v4().simple().to_string()[..8]
                )
            };
            // Fails when another node created it meanwhile (one system workspace) or a user
            // took the name; the next round finds it or tries another name.
            let created =
                sqlx::query("INSERT INTO workspaces (name, description, created, is_system) VALUES ($1, $2, $3, $4)")
                    .bind(&name)
                    .bind("The models that ship with Lector")
                    .bind(Timestamp::now().micros())
                    .bind(true)
                    .execute(&self.pool)
                    .await;
            if let Err(e) = created {
                tracing::debug!(error = %e, "the system workspace was not created this round");
            }
        }
        Err(lector_core::Error::internal())
    }

    async fn publish_base_model(&self, workspace_id: i64, base: &InstalledBaseModel) -> Result<()> {
        let now = Timestamp::now().micros();
        let updated = sqlx::query(
            "UPDATE models SET status = $1, failure = NULL, progress = 1, display_name = $2, short_description = $3, \
             long_description = $4, language = $5, updated = $6 WHERE workspace_id = $7 AND name = $8 AND type = $9",
        )
        .bind(ModelStatus::Published.as_str())
        .bind(&base.display_name)
        .bind(&base.short_description)
        .bind(&base.long_description)
        .bind(&base.language)
        .bind(now)
        .bind(workspace_id)
        .bind(&base.name)
        .bind(ModelType::Base.as_str())
        .execute(&self.pool)
        .await
        .map_err(db)?;
        if updated.rows_affected() > 0 {
            return Ok(());
        }
        let inserted = sqlx::query(
            "INSERT INTO models (uuid, workspace_id, name, display_name, short_description, long_description, type, \
             status, progress, language, version, created, updated, finished) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9, 1, $10, $10, $10)",
        )
        .bind(uuid::Uuid::new_v4().to_string())
        .bind(workspace_id)
        .bind(&base.name)
        .bind(&base.display_name)
        .bind(&base.short_description)
        .bind(&base.long_description)
        .bind(ModelType::Base.as_str())
        .bind(ModelStatus::Published.as_str())
        .bind(&base.language)
        .bind(now)
        .execute(&self.pool)
        .await;
        match inserted {
            Ok(_) => {
                tracing::info!(model.name = %base.name, "a BASE model is installed");
                Ok(())
            }
            // Another node inserted it meanwhile.
            Err(sqlx::Error::Database(d)) if d.is_unique_violation() => Ok(()),
            Err(e) => Err(db(e)),
        }
    }
}
