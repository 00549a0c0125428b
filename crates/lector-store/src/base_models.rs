//! BASE models in the database: the sentence encoders installed on a node, kept as models of
//! type BASE in the one system workspace (which has no members), so that every user lists,
//! reads and stars them like any PUBLISHED model and trains with one as `base_id`.
//!
//! A serving node calls [`Store::sync_base_models`] at start with what its base-models
//! directory holds: an installed encoder is PUBLISHED, one whose files are gone is FAILED with
//! the reason (it is then listed to nobody but superusers, and refused as a base). The rows
//! are never deleted, so the models trained with an encoder keep naming it. The files
//! themselves are `lector-embed`'s business; this module never reads them.

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
    /// Makes the BASE model rows say what this node has installed: each installed model
    /// PUBLISHED (created the first time), each other BASE model FAILED with the reason.
    pub async fn sync_base_models(&self, installed: &[InstalledBaseModel]) -> Result<()> {
        let workspace_id = self.system_workspace().await?;
        for base in installed {
            self.publish_base_model(workspace_id, base).await?;
        }
        let rows: Vec<(i64, String)> =
            sqlx::query_as("SELECT id, name FROM models WHERE workspace_id = $1 AND type = $2 AND status <> $3")
                .bind(workspace_id)
                .bind(ModelType::Base.as_str())
                .bind(ModelStatus::Failed.as_str())
                .fetch_all(&self.pool)
                .await
                .map_err(db)?;
        for (id, name) in rows
            .into_iter()
            .filter(|(_, n)| !installed.iter().any(|b| &b.name == n))
        {
            tracing::warn!(model.id = id, model.name = %name, "a BASE model is no longer installed");
            sqlx::query("UPDATE models SET status = $1, failure = $2, updated = $3 WHERE id = $4")
                .bind(ModelStatus::Failed.as_str())
                .bind(format!(
                    "the files of base model {name} are not installed on this server: run `lector base-models install`"
                ))
                .bind(Timestamp::now().micros())
                .bind(id)
                .execute(&self.pool)
                .await
                .map_err(db)?;
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
