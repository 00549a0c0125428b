//! Analyses: a model's predictions over documents of its project. This module keeps their
//! records and which documents each covers, so documents can be listed by analysis; the job
//! that runs a model over documents writes through [`Store::create_analysis`].

use crate::records::{FromAnyRow, fetch_record, fetch_records, from_row};
use crate::{Store, db};
use lector_core::time::Timestamp;
use lector_core::{Action, Result, Scope};

/// An analysis with the number of documents it covers.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    pub id: i64,
    pub uuid: String,
    pub project_id: i64,
    pub model_id: Option<i64>,
    pub user_id: Option<i64>,
    pub name: String,
    pub description: String,
    pub status: String,
    /// The model's (and project's) type.
    pub kind: String,
    pub progress: f64,
    pub created: Timestamp,
    pub finished: Option<Timestamp>,
    pub document_count: i64,
    /// The group whose documents it reads.
    pub document_group_id: Option<i64>,
    /// Its job (`get_project_task`).
    pub task_id: Option<i64>,
    /// Why it failed, when it did.
    pub failure: Option<String>,
}

pub(crate) const ANALYSIS_COLUMNS: &str = "a.id, a.uuid, a.project_id, a.model_id, a.user_id, a.name, a.description, a.status, \
     a.type, a.progress, a.created, a.finished, a.document_group_id, a.task_id, a.failure, \
     (SELECT COUNT(*) FROM analysis_documents ad WHERE ad.analysis_id = a.id) AS document_count";

from_row! {
    Analysis {
        id, uuid, project_id, model_id, user_id, name, description, status, kind = "type", progress,
        created, finished, document_count, document_group_id, task_id, failure,
    }
}

/// A new analysis of documents of a project.
#[derive(Debug, Clone, Default)]
pub struct NewAnalysis {
    pub name: String,
    pub description: String,
    pub model_id: Option<i64>,
    pub document_ids: Vec<i64>,
}

impl Store {
    /// One page of a project's analyses, oldest first.
    pub async fn project_analyses(
        &self,
        scope: &Scope,
        project_id: i64,
        offset: i64,
        limit: i64,
    ) -> Result<Vec<Analysis>> {
        let (project, _) = self.project_access(scope, project_id, Action::Read).await?;
        let sql = format!(
            "SELECT {ANALYSIS_COLUMNS} FROM analyses a WHERE a.project_id = $1 ORDER BY a.id LIMIT {limit} OFFSET {offset}"
        );
        fetch_records(sqlx::query(&sql).bind(project.id), &self.pool).await
    }

    /// A page of the analyses made with a model the caller may read, oldest first: only those
    /// of projects in the caller's workspaces (a PUBLISHED model's other users stay private).
    pub async fn model_analyses(
        &self,
        scope: &Scope,
        model_id: i64,
        offset: i64,
        limit: i64,
    ) -> Result<(Vec<Analysis>, bool)> {
        let model = self.model_access(scope, model_id, Action::Read).await?;
        let mut params = vec![crate::Param::Int(model.id)];
        let visible = if scope.is_superuser {
            String::new()
        } else {
            let ids: Vec<i64> = scope.workspaces.iter().map(|w| w.workspace_id).collect();
            if ids.is_empty() {
                return Ok((Vec::new(), false));
            }
            let places = crate::numbered(2, ids.len());
            params.extend(ids.into_iter().map(crate::Param::Int));
            format!(" AND p.workspace_id IN ({places})")
        };
        let sql = format!(
            "SELECT {ANALYSIS_COLUMNS} FROM analyses a JOIN projects p ON p.id = a.project_id \
             WHERE a.model_id = $1{visible} ORDER BY a.id LIMIT {} OFFSET {offset}",
            limit + 1
        );
        let rows = crate::Param::bind_all(sqlx::query(&sql), params)
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        let mut analyses = rows.iter().map(Analysis::decode).collect::<Result<Vec<_>>>()?;
        let has_more = analyses.len() as i64 > limit;
        analyses.truncate(limit as usize);
        Ok((analyses, has_more))
    }

    /// Records an analysis (CREATED) covering documents of the project.
    pub async fn create_analysis(&self, scope: &Scope, project_id: i64, new: NewAnalysis) -> Result<Analysis> {
        let (project, _) = self.project_access(scope, project_id, Action::Edit).await?;
        let mut tx = self.begin_write().await?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO analyses (uuid, project_id, model_id, user_id, name, description, status, type, created) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
        )
        .bind(uuid::Uuid::new_v4().to_string())
        .bind(project.id)
        .bind(new.model_id)
        .bind(scope.user_id)
        .bind(&new.name)
        .bind(&new.description)
        .bind("CREATED")
        .bind(project.kind.as_str())
        .bind(Timestamp::now().micros())
        .fetch_one(&mut *tx)
        .await
        .map_err(db)?;
        // After the insert has locked the project's key, as every writer of the project does.
        if let Some(model_id) = new.model_id {
            crate::models::model_still_there(&mut tx, model_id).await?;
        }
        let documents = crate::documents::project_documents(&mut tx, project.id, Some(&new.document_ids)).await?;
        let rows = documents
            .iter()
            .map(|d| vec![crate::Param::Int(id), crate::Param::Int(*d)])
            .collect();
        crate::insert_many(&mut tx, "analysis_documents", &["analysis_id", "document_id"], rows, "").await?;
        tx.commit().await.map_err(db)?;
        self.analysis_of(project.id, id).await
    }

    /// An analysis of a project (404 when the project has none with this id).
    pub(crate) async fn analysis_of(&self, project_id: i64, id: i64) -> Result<Analysis> {
        analysis_in(&self.pool, project_id, id).await
    }
}

/// An analysis of the project as `executor` sees it (a transaction sees its own writes).
pub(crate) async fn analysis_in<'c>(
    executor: impl sqlx::Executor<'c, Database = sqlx::Any>,
    project_id: i64,
    id: i64,
) -> Result<Analysis> {
    let sql = format!("SELECT {ANALYSIS_COLUMNS} FROM analyses a WHERE a.project_id = $1 AND a.id = $2");
    fetch_record(sqlx::query(&sql).bind(project_id).bind(id), executor, "analysis").await
}
