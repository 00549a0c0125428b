//! Changing a model's descriptive fields (`update_model`, MANAGER). Only the fields a change
//! names are written, in one statement under a lock on the model's row, so two changes of
//! different fields both stay (each used to write every column from its own earlier read).
//! A language the model cannot keep is refused: one its sentence encoder does not read (what
//! training refuses too), or any new one while its training reads it.
//!
//! Training, uploads, stars and deletion are elsewhere (`training`, `model_uploads`, `models`).

use crate::models::{Model, ModelChanges, refuse_base};
use crate::{Store, db, db_unique};
use lector_core::time::Timestamp;
use lector_core::{Action, Error, FieldError, ModelStatus, ModelType, Result, Scope};

impl Store {
    /// Changes a model's descriptive fields (MANAGER of its workspace): a taken name is 409, a
    /// language the model cannot take is 422 naming `language` ([`language_problem`]).
    pub async fn update_model(&self, scope: &Scope, model: &Model, changes: ModelChanges) -> Result<Model> {
        let model = self.model_access(scope, model.id, Action::Manage).await?;
        refuse_base(&model)?;
        let mut tx = self.begin_write().await?;
        // FOR UPDATE, not NO KEY UPDATE: a rename changes a unique key (as `update_project`).
        // The language is judged under it, against the status the training writes.
        crate::lock_row(&mut tx, ("models", model.id)).await?;
        if let Some(language) = &changes.language
            && let Some(problem) = language_problem(&mut tx, model.id, language).await?
        {
            return Err(Error::validation(vec![FieldError::new("language", problem)]));
        }
        let (clear_or_set, collection_id) = (changes.collection_id.is_some(), changes.collection_id.flatten());
        let changed = sqlx::query(
            "UPDATE models SET name = COALESCE($1, name), display_name = COALESCE($2, display_name), \
             short_description = COALESCE($3, short_description), long_description = COALESCE($4, long_description), \
             language = COALESCE($5, language), collection_id = CASE WHEN $6 THEN $7 ELSE collection_id END, \
             updated = $8 WHERE id = $9",
        )
        .bind(changes.name)
        .bind(changes.display_name)
        .bind(changes.short_description)
        .bind(changes.long_description)
        .bind(changes.language)
        .bind(clear_or_set)
        .bind(collection_id)
        .bind(Timestamp::now().micros())
        .bind(model.id)
        .execute(&mut *tx)
        .await
        .map_err(db_unique("a model of this name exists in the workspace"))?;
        if changed.rows_affected() == 0 {
            return Err(Error::not_found("model"));
        }
        tx.commit().await.map_err(db)?;
        self.model_again(scope, model.id).await
    }
}

/// Why model `id` cannot take `language` now, if it cannot: while it is QUEUED or TRAINING its
/// job reads the language as it starts and writes it into the model's file (a change then would
/// be lost or split the two); a model trained on a BASE model (a sentence encoder) keeps the
/// encoder's language, as `train_model` refuses any other (`training::base_problem`).
async fn language_problem(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    id: i64,
    language: &str,
) -> Result<Option<String>> {
    type Row = (
        String,
        String,
        Option<i64>,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let row: Option<Row> = sqlx::query_as(
        "SELECT m.status, m.language, m.base_id, b.type, b.language, b.name FROM models m \
         LEFT JOIN models b ON b.id = m.base_id WHERE m.id = $1",
    )
    .bind(id)
    .fetch_optional(&mut **tx)
    .await
    .map_err(db)?;
    let (status, current, base_id, base_type, base_language, base_name) =
        row.ok_or_else(|| Error::not_found("model"))?;
    if language == current {
        return Ok(None);
    }
    if [ModelStatus::Queued.as_str(), ModelStatus::Training.as_str()].contains(&status.as_str()) {
        return Ok(Some(format!(
            "model {id} is being trained for {current} ({status}): its training reads the language and \
             writes it into the model's file; change it once the training has ended"
        )));
    }
    Ok(match (base_id, base_type, base_language) {
        (Some(base_id), Some(kind), Some(base_language))
            if kind == ModelType::Base.as_str() && base_language != language =>
        {
            Some(format!(
                "model {id} reads texts with base model {} (id {base_id}), a sentence encoder for \
                 {base_language} only, so its language stays {base_language}; for {language}, train a \
                 model on a base that reads it",
                base_name.unwrap_or_default()
            ))
        }
        _ => None,
    })
}
