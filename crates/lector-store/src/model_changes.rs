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
/// be lost or split the two); a model whose chain of bases starts at a BASE model (a sentence
/// encoder) keeps the encoder's language, as `train_model` refuses any other
/// (`training::base_problem`): a warm start keeps its base's encoder, however far back.
async fn language_problem(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    id: i64,
    language: &str,
) -> Result<Option<String>> {
    let row: Option<(String, String)> = sqlx::query_as("SELECT status, language FROM models WHERE id = $1")
        .bind(id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db)?;
    let (status, current) = row.ok_or_else(|| Error::not_found("model"))?;
    if language == current {
        return Ok(None);
    }
    if [ModelStatus::Queued.as_str(), ModelStatus::Training.as_str()].contains(&status.as_str()) {
        return Ok(Some(format!(
            "model {id} is being trained for {current} ({status}): its training reads the language and \
             writes it into the model's file; change it once the training has ended"
        )));
    }
    Ok(encoder_of(&mut **tx, id)
        .await?
        .filter(|encoder| encoder.language != language)
        .map(|encoder| {
            format!(
                "model {id} reads texts with base model {} (id {}), a sentence encoder for {} only, so \
                 its language stays {}; for {language}, train a model on a base that reads it",
                encoder.name, encoder.id, encoder.language, encoder.language
            )
        }))
}

/// How many steps [`encoder_of`] follows `base_id`: a bound against a cycle, which no write
/// makes (a model's base is an older row, set once), far above any chain of warm starts.
const MAX_BASE_CHAIN: i64 = 256;

/// The BASE model (sentence encoder) a model reads texts with, by the language its row records.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Encoder {
    pub id: i64,
    pub name: String,
    pub language: String,
}

/// The sentence encoder model `id` reads texts with, if any: the BASE row its chain of bases
/// (`base_id`, followed up to [`MAX_BASE_CHAIN`] steps) starts at, `id` itself if it is one,
/// or the first `encoder_id` recorded along the way (a training records its encoder as it
/// starts, so a chain broken by a deleted model still knows it).
/// A warm start keeps its base's encoder (`lector-ml`'s `train::encoder::choose`), so a model
/// warm-started from a classifier trained on an encoder reads with that encoder too; a chain
/// that starts at a model trained without a base has none.
pub(crate) async fn encoder_of<'e>(
    executor: impl sqlx::Executor<'e, Database = sqlx::Any>,
    id: i64,
) -> Result<Option<Encoder>> {
    let row: Option<(i64, String, String)> = sqlx::query_as(
        "WITH RECURSIVE chain (id, base_id, depth) AS ( \
           SELECT id, base_id, 0 FROM models WHERE id = $1 \
           UNION ALL \
           SELECT m.id, m.base_id, c.depth + 1 FROM models m JOIN chain c ON m.id = c.base_id \
           WHERE c.depth < $2 \
         ) \
         SELECT e.id, e.name, e.language FROM chain c JOIN models m ON m.id = c.id \
         JOIN models e ON e.id = CASE WHEN m.type = $3 THEN m.id ELSE m.encoder_id END \
         WHERE e.type = $3 ORDER BY c.depth LIMIT 1",
    )
    .bind(id)
    .bind(MAX_BASE_CHAIN)
    .bind(ModelType::Base.as_str())
    .fetch_optional(executor)
    .await
    .map_err(db)?;
    Ok(row.map(|(id, name, language)| Encoder { id, name, language }))
}
