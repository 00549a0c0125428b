//! Which of its project's classes and labels a trained model learnt each of its names from.
//!
//! A model knows its classes and labels by name (its artifact and `models.classes` hold
//! names); a project's class keeps its id when it is renamed. A training records, by id, the
//! class or label each name was read from (`model_classes`, `model_labels`), and the jobs that
//! write a model's tags into its project (an analysis, a correction session) match the model's
//! names through those ids first and by name only where none is recorded (an uploaded model, a
//! model trained before the record, one run on another project). So a class renamed after the
//! training still gets its tags, under its new name.

use crate::jobs::Lease;
use crate::{Param, Store, db};
use lector_core::Result;
use std::collections::{BTreeMap, HashMap, HashSet};

/// The ids of the project's classes and labels that a training read each name from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LearntFrom {
    pub classes: NamesRead,
    pub labels: NamesRead,
}

/// Names read from classes (or labels), each with the id it was read from: one name an id, the
/// first read, so that a class renamed while a training reads its sessions is learnt as one
/// class under its first name (not as two, each with part of its examples).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamesRead {
    ids: BTreeMap<String, i64>,
    names: HashMap<i64, String>,
}

impl NamesRead {
    /// The name a tag of the class `id`, read as `name`, is learnt under.
    pub(crate) fn learn(&mut self, id: i64, name: String) -> String {
        if let Some(first) = self.names.get(&id) {
            return first.clone();
        }
        self.ids.entry(name.clone()).or_insert(id);
        self.names.insert(id, name.clone());
        name
    }

    /// The id `name` was read from.
    pub fn id(&self, name: &str) -> Option<i64> {
        self.ids.get(name).copied()
    }
}

/// A model's names matched to the classes and labels of the project its tags are written in:
/// each name with the id and the current name of its class (or label).
#[derive(Debug, Clone, Default)]
pub struct ModelVocabulary {
    classes: HashMap<String, (i64, String)>,
    labels: HashMap<String, (i64, String)>,
}

impl ModelVocabulary {
    /// The project's class the model's class `name` is, with its name today.
    pub fn class(&self, name: &str) -> Option<(i64, &str)> {
        self.classes.get(name).map(|(id, name)| (*id, name.as_str()))
    }

    /// The project's label the model's label `name` is, with its name today.
    pub fn label(&self, name: &str) -> Option<(i64, &str)> {
        self.labels.get(name).map(|(id, name)| (*id, name.as_str()))
    }

    /// The class ids and the label ids matched.
    pub(crate) fn ids(&self) -> (Vec<i64>, Vec<i64>) {
        let ids = |matched: &HashMap<String, (i64, String)>| matched.values().map(|(id, _)| *id).collect();
        (ids(&self.classes), ids(&self.labels))
    }

    /// Forgets the matches of classes and labels not in `kept` (deleted since they were read).
    pub(crate) fn keep_only(&mut self, (classes, labels): (&HashSet<i64>, &HashSet<i64>)) {
        self.classes.retain(|_, (id, _)| classes.contains(id));
        self.labels.retain(|_, (id, _)| labels.contains(id));
    }
}

/// Records the ids each of a trained model's names was read from (those of `classes` and
/// `labels` that `learnt_from` names and whose class or label is still there, held until the
/// transaction ends so that the rows written name them).
pub(crate) async fn record(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    model_id: i64,
    (classes, labels): (&[String], &[String]),
    learnt_from: &LearntFrom,
) -> Result<()> {
    let kinds = [
        (
            "model_classes",
            "class_id",
            "SELECT id FROM classes WHERE id",
            classes,
            &learnt_from.classes,
        ),
        (
            "model_labels",
            "label_id",
            "SELECT id FROM labels WHERE id",
            labels,
            &learnt_from.labels,
        ),
    ];
    for (table, column, select, names, ids) in kinds {
        let known: Vec<(&String, i64)> = names
            .iter()
            .filter_map(|name| ids.id(name).map(|id| (name, id)))
            .collect();
        let wanted: Vec<i64> = known.iter().map(|&(_, id)| id).collect();
        let held: HashSet<i64> = crate::id_lists::ids_where_in_held(tx, select, &wanted)
            .await?
            .into_iter()
            .collect();
        let rows = known
            .into_iter()
            .filter(|(_, id)| held.contains(id))
            .map(|(name, id)| vec![Param::Int(model_id), Param::Text(name.clone()), Param::Int(id)])
            .collect();
        crate::insert_many(
            tx,
            table,
            &["model_id", "name", column],
            rows,
            " ON CONFLICT DO NOTHING",
        )
        .await?;
    }
    Ok(())
}

/// Records, for a model given with its names (an uploaded one), the classes and labels of its
/// project that bear those names now.
pub(crate) async fn record_by_name(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    (model_id, project_id): (i64, i64),
    names: (&[String], &[String]),
) -> Result<()> {
    let mut learnt_from = LearntFrom::default();
    for (table, read) in [
        ("classes", &mut learnt_from.classes),
        ("labels", &mut learnt_from.labels),
    ] {
        let rows: Vec<(i64, String)> = sqlx::query_as(&format!("SELECT id, name FROM {table} WHERE project_id = $1"))
            .bind(project_id)
            .fetch_all(&mut **tx)
            .await
            .map_err(db)?;
        for (id, name) in rows {
            read.learn(id, name);
        }
    }
    record(tx, model_id, names, &learnt_from).await
}

impl Store {
    /// The model's names matched to the classes and labels of the job's project: by the ids
    /// its training recorded where they are classes of this project, otherwise by name, never
    /// to a class another of its names was recorded from (renamed to this name since).
    pub async fn model_vocabulary_for_job(&self, lease: &Lease, model_id: i64) -> Result<ModelVocabulary> {
        let project_id = lease.job.project_id.unwrap_or_default();
        let mut vocabulary = ModelVocabulary::default();
        let kinds = [
            ("classes", "model_classes", "class_id", &mut vocabulary.classes),
            ("labels", "model_labels", "label_id", &mut vocabulary.labels),
        ];
        for (table, recorded, column, into) in kinds {
            let by_id: Vec<(String, i64, String)> = sqlx::query_as(&format!(
                "SELECT m.name, t.id, t.name FROM {recorded} m JOIN {table} t ON t.id = m.{column} \
                 WHERE m.model_id = $1 AND t.project_id = $2"
            ))
            .bind(model_id)
            .bind(project_id)
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
            let claimed: HashSet<i64> = by_id.iter().map(|(_, id, _)| *id).collect();
            let by_name: Vec<(i64, String)> =
                sqlx::query_as(&format!("SELECT id, name FROM {table} WHERE project_id = $1"))
                    .bind(project_id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db)?;
            let unclaimed = by_name.into_iter().filter(|(id, _)| !claimed.contains(id));
            into.extend(unclaimed.map(|(id, name)| (name.clone(), (id, name))));
            into.extend(by_id.into_iter().map(|(learnt, id, name)| (learnt, (id, name))));
        }
        Ok(vocabulary)
    }
}
