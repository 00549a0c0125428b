//! The schema history, one entry per step with its SQL for each backend.
//!
//! Entries are forward-only and never edited once landed: a change is a new entry.

use crate::{Backend, Store, db};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use std::borrow::Cow;

pub(crate) struct Step {
    pub(crate) version: i64,
    description: &'static str,
    pub(crate) sqlite: &'static str,
    pub(crate) postgres: &'static str,
}

pub(crate) const STEPS: &[Step] = &[
    Step {
        version: 1,
        description: "accounts",
        sqlite: include_str!("../migrations/sqlite/0001_accounts.sql"),
        postgres: include_str!("../migrations/postgres/0001_accounts.sql"),
    },
    Step {
        version: 2,
        description: "projects",
        sqlite: include_str!("../migrations/sqlite/0002_projects.sql"),
        postgres: include_str!("../migrations/postgres/0002_projects.sql"),
    },
    Step {
        version: 3,
        description: "jobs",
        sqlite: include_str!("../migrations/sqlite/0003_jobs.sql"),
        postgres: include_str!("../migrations/postgres/0003_jobs.sql"),
    },
    Step {
        version: 4,
        description: "documents",
        sqlite: include_str!("../migrations/sqlite/0004_documents.sql"),
        postgres: include_str!("../migrations/postgres/0004_documents.sql"),
    },
    Step {
        version: 5,
        description: "sessions",
        sqlite: include_str!("../migrations/sqlite/0005_sessions.sql"),
        postgres: include_str!("../migrations/postgres/0005_sessions.sql"),
    },
    Step {
        version: 6,
        description: "uploads",
        sqlite: include_str!("../migrations/sqlite/0006_uploads.sql"),
        postgres: include_str!("../migrations/postgres/0006_uploads.sql"),
    },
    Step {
        version: 7,
        description: "credentials",
        sqlite: include_str!("../migrations/sqlite/0007_credentials.sql"),
        postgres: include_str!("../migrations/postgres/0007_credentials.sql"),
    },
    Step {
        version: 8,
        description: "models",
        sqlite: include_str!("../migrations/sqlite/0008_models.sql"),
        postgres: include_str!("../migrations/postgres/0008_models.sql"),
    },
    Step {
        version: 9,
        description: "hardening",
        sqlite: include_str!("../migrations/sqlite/0009_hardening.sql"),
        postgres: include_str!("../migrations/postgres/0009_hardening.sql"),
    },
    Step {
        version: 10,
        description: "analyses",
        sqlite: include_str!("../migrations/sqlite/0010_analyses.sql"),
        postgres: include_str!("../migrations/postgres/0010_analyses.sql"),
    },
    Step {
        version: 11,
        description: "corrections",
        sqlite: include_str!("../migrations/sqlite/0011_corrections.sql"),
        postgres: include_str!("../migrations/postgres/0011_corrections.sql"),
    },
    Step {
        version: 12,
        description: "base models",
        sqlite: include_str!("../migrations/sqlite/0012_base_models.sql"),
        postgres: include_str!("../migrations/postgres/0012_base_models.sql"),
    },
    Step {
        version: 13,
        description: "segment layouts",
        sqlite: include_str!("../migrations/sqlite/0013_segment_layouts.sql"),
        postgres: include_str!("../migrations/postgres/0013_segment_layouts.sql"),
    },
    Step {
        version: 14,
        description: "hitl",
        sqlite: include_str!("../migrations/sqlite/0014_hitl.sql"),
        postgres: include_str!("../migrations/postgres/0014_hitl.sql"),
    },
    Step {
        version: 15,
        description: "field_models",
        sqlite: include_str!("../migrations/sqlite/0015_field_models.sql"),
        postgres: include_str!("../migrations/postgres/0015_field_models.sql"),
    },
    Step {
        version: 16,
        description: "workflows",
        sqlite: include_str!("../migrations/sqlite/0016_workflows.sql"),
        postgres: include_str!("../migrations/postgres/0016_workflows.sql"),
    },
    Step {
        version: 17,
        description: "lease reclaims",
        sqlite: include_str!("../migrations/sqlite/0017_lease_reclaims.sql"),
        postgres: include_str!("../migrations/postgres/0017_lease_reclaims.sql"),
    },
    Step {
        version: 18,
        description: "statement foreign keys",
        sqlite: include_str!("../migrations/sqlite/0018_statement_foreign_keys.sql"),
        postgres: include_str!("../migrations/postgres/0018_statement_foreign_keys.sql"),
    },
    Step {
        version: 19,
        description: "job totals",
        sqlite: include_str!("../migrations/sqlite/0019_job_totals.sql"),
        postgres: include_str!("../migrations/postgres/0019_job_totals.sql"),
    },
    Step {
        version: 20,
        description: "review status case",
        sqlite: include_str!("../migrations/sqlite/0020_review_status_case.sql"),
        postgres: include_str!("../migrations/postgres/0020_review_status_case.sql"),
    },
    Step {
        version: 21,
        description: "cloning status",
        sqlite: include_str!("../migrations/sqlite/0021_cloning_status.sql"),
        postgres: include_str!("../migrations/postgres/0021_cloning_status.sql"),
    },
    Step {
        version: 22,
        description: "task indexes",
        sqlite: include_str!("../migrations/sqlite/0022_task_indexes.sql"),
        postgres: include_str!("../migrations/postgres/0022_task_indexes.sql"),
    },
    Step {
        version: 23,
        description: "execution liveness",
        sqlite: include_str!("../migrations/sqlite/0023_execution_liveness.sql"),
        postgres: include_str!("../migrations/postgres/0023_execution_liveness.sql"),
    },
    Step {
        version: 24,
        description: "upload rows",
        sqlite: include_str!("../migrations/sqlite/0024_upload_rows.sql"),
        postgres: include_str!("../migrations/postgres/0024_upload_rows.sql"),
    },
    Step {
        version: 25,
        description: "session counts",
        sqlite: include_str!("../migrations/sqlite/0025_session_counts.sql"),
        postgres: include_str!("../migrations/postgres/0025_session_counts.sql"),
    },
    Step {
        version: 26,
        description: "one live hitl",
        sqlite: include_str!("../migrations/sqlite/0026_one_live_hitl.sql"),
        postgres: include_str!("../migrations/postgres/0026_one_live_hitl.sql"),
    },
    Step {
        version: 27,
        description: "workflow tester",
        sqlite: include_str!("../migrations/sqlite/0027_workflow_tester.sql"),
        postgres: include_str!("../migrations/postgres/0027_workflow_tester.sql"),
    },
    Step {
        version: 28,
        description: "waiting reviews",
        sqlite: include_str!("../migrations/sqlite/0028_waiting_reviews.sql"),
        postgres: include_str!("../migrations/postgres/0028_waiting_reviews.sql"),
    },
    Step {
        version: 29,
        description: "model lookups",
        sqlite: include_str!("../migrations/sqlite/0029_model_lookups.sql"),
        postgres: include_str!("../migrations/postgres/0029_model_lookups.sql"),
    },
    Step {
        version: 30,
        description: "workspace work",
        sqlite: include_str!("../migrations/sqlite/0030_workspace_work.sql"),
        postgres: include_str!("../migrations/postgres/0030_workspace_work.sql"),
    },
    Step {
        version: 31,
        description: "unrunnable jobs",
        sqlite: include_str!("../migrations/sqlite/0031_unrunnable_jobs.sql"),
        postgres: include_str!("../migrations/postgres/0031_unrunnable_jobs.sql"),
    },
    Step {
        version: 32,
        description: "short jobs queue",
        sqlite: include_str!("../migrations/sqlite/0032_short_jobs_queue.sql"),
        postgres: include_str!("../migrations/postgres/0032_short_jobs_queue.sql"),
    },
    Step {
        version: 33,
        description: "deletion lookups",
        sqlite: include_str!("../migrations/sqlite/0033_deletion_lookups.sql"),
        postgres: include_str!("../migrations/postgres/0033_deletion_lookups.sql"),
    },
    Step {
        version: 34,
        description: "model vocabulary",
        sqlite: include_str!("../migrations/sqlite/0034_model_vocabulary.sql"),
        postgres: include_str!("../migrations/postgres/0034_model_vocabulary.sql"),
    },
];

pub(crate) fn migrator(backend: Backend) -> Migrator {
    let migrations = STEPS
        .iter()
        .map(|step| {
            let sql = match backend {
                Backend::Sqlite => step.sqlite,
                Backend::Postgres => step.postgres,
            };
            Migration::new(
                step.version,
                Cow::Borrowed(step.description),
                MigrationType::Simple,
                Cow::Borrowed(sql),
                false,
            )
        })
        .collect::<Vec<_>>();
    Migrator {
        migrations: Cow::Owned(migrations),
        ..Migrator::DEFAULT
    }
}

/// Where a database stands against the steps this binary knows ([`Store::schema_status`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaStatus {
    /// Steps applied that this binary knows.
    pub applied: usize,
    /// Steps this binary would apply, as `NNNN description`.
    pub pending: Vec<String>,
    /// Steps applied that this binary does not know (a newer Lector's): it refuses to start.
    pub unknown: Vec<i64>,
}

impl Store {
    /// Reads which steps the database has applied, changing nothing (a database never
    /// migrated has applied none).
    pub async fn schema_status(&self) -> lector_core::Result<SchemaStatus> {
        let exists = match self.backend {
            Backend::Sqlite => "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
            Backend::Postgres => "SELECT COUNT(*) FROM pg_tables WHERE tablename = '_sqlx_migrations'",
        };
        let tables: i64 = sqlx::query_scalar(exists).fetch_one(&self.pool).await.map_err(db)?;
        let done: Vec<i64> = if tables == 0 {
            Vec::new()
        } else {
            sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
                .fetch_all(&self.pool)
                .await
                .map_err(db)?
        };
        let known = |version: i64| STEPS.iter().any(|step| step.version == version);
        Ok(SchemaStatus {
            applied: done.iter().filter(|v| known(**v)).count(),
            pending: STEPS
                .iter()
                .filter(|step| !done.contains(&step.version))
                .map(|step| format!("{:04} {}", step.version, step.description))
                .collect(),
            unknown: done.into_iter().filter(|v| !known(*v)).collect(),
        })
    }
}
