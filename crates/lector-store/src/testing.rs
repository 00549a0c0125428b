//! Fresh databases for tests, on either backend.
//!
//! SQLite databases live in a temporary directory. PostgreSQL databases are created with a
//! unique name on the server named by `LECTOR_TEST_DATABASE_URL` and dropped when the
//! [`TestDatabase`] goes. Without that variable a PostgreSQL test is skipped with a notice,
//! except under `CI`, where it fails loudly.

use crate::Backend;

/// A database that exists for one test.
#[derive(Debug)]
pub struct TestDatabase {
    pub url: String,
    /// Keeps the SQLite file's directory alive.
    pub dir: tempfile::TempDir,
    postgres: Option<(String, String)>,
}

impl TestDatabase {
    /// Creates a fresh database; `None` when PostgreSQL is not configured outside CI.
    pub async fn create(backend: Backend) -> Option<Self> {
        let dir = tempfile::tempdir().expect("temporary directory");
        match backend {
            Backend::Sqlite => {
                let url = format!("sqlite://{}?mode=rwc", dir.path().join("lector.db").display());
                Some(Self {
                    url,
                    dir,
                    postgres: None,
                })
            }
            Backend::Postgres => {
                let admin = postgres_admin_url()?;
                let name = format!("lector_test_{}", uuid::Uuid::new_v4().simple());
                let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&admin)
                    .await
                    .expect("connect to PostgreSQL");
                sqlx::query(&format!("CREATE DATABASE {name}"))
                    .execute(&mut conn)
                    .await
                    .expect("create test database");
                Some(Self {
                    url: with_database(&admin, &name),
                    dir,
                    postgres: Some((admin, name)),
                })
            }
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let Some((admin, name)) = self.postgres.take() else {
            return;
        };
        // Drop may run inside a runtime; a thread with its own runtime may block. FORCE ends
        // the connections a pool still holds.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                if let Ok(mut conn) = <sqlx::PgConnection as sqlx::Connection>::connect(&admin).await {
                    let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .execute(&mut conn)
                        .await;
                }
            });
        })
        .join();
    }
}

fn postgres_admin_url() -> Option<String> {
    match std::env::var("LECTOR_TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false") => {
            panic!("LECTOR_TEST_DATABASE_URL is not set: the PostgreSQL tests must run in CI")
        }
        _ => {
            eprintln!("notice: LECTOR_TEST_DATABASE_URL is not set; skipping a PostgreSQL test");
            None
        }
    }
}

/// `postgres://host/db?x` with another database name.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let authority_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    let root = match base[authority_end..].find('/') {
        Some(i) => &base[..authority_end + i],
        None => base,
    };
    format!("{root}/{name}{query}")
}

/// A document whose text is one segment, as a person types it.
pub fn one_segment_document(text: &str) -> crate::NewDocument {
    crate::NewDocument {
        text: text.into(),
        meta: serde_json::json!({}),
        language: "en".into(),
        segments: vec![crate::NewSegment {
            text: text.into(),
            start: 0,
            end: text.chars().count() as i64,
            layout: None,
        }],
    }
}

/// A user (ada@example.org) with its scope: the owner most store-level tests start from.
pub async fn owner(store: &crate::Store) -> (crate::User, lector_core::Scope) {
    let user = store
        .create_user(crate::NewUser {
            email: "ada@example.org".into(),
            first_name: String::new(),
            last_name: String::new(),
            password_hash: None,
            is_superuser: false,
        })
        .await
        .expect("user");
    store.principal(user.id).await.expect("principal").expect("the user")
}

/// The [`owner`] with a project of `kind` in its personal workspace.
pub async fn owner_with_project(
    store: &crate::Store,
    project: &str,
    kind: lector_core::ProjectType,
) -> (lector_core::Scope, crate::Workspace, crate::Project) {
    let (user, scope) = owner(store).await;
    let personal = user.personal_workspace_id.expect("a personal workspace");
    let (workspace, _) = store
        .workspace_access(&scope, &crate::WorkspaceRef::Id(personal), lector_core::Action::Manage)
        .await
        .expect("workspace");
    let fields = crate::ProjectFields {
        name: project.into(),
        kind,
        external_id: None,
        language: "en".into(),
    };
    let project = store.create_project(&scope, &workspace, fields).await.expect("project");
    (scope, workspace, project)
}

/// A new workspace of `scope`'s user named `name`, and the user's scope with it (an ADMIN there).
pub async fn another_workspace(
    store: &crate::Store,
    scope: &lector_core::Scope,
    name: &str,
) -> (crate::Workspace, lector_core::Scope) {
    let workspace = store
        .create_workspace(scope, name, "")
        .await
        .expect("another workspace");
    let scope = store
        .principal(scope.user_id)
        .await
        .expect("principal")
        .expect("the user")
        .1;
    (workspace, scope)
}

/// A one-segment document of `text`, tagged with `class` and marked annotated: a labeled
/// session's row, as training tests need them.
pub fn labeled(text: &str, class: &str) -> crate::LabeledDocument {
    crate::LabeledDocument {
        document: crate::NewDocument {
            segments: vec![crate::NewSegment {
                text: text.into(),
                start: 0,
                end: text.chars().count() as i64,
                layout: None,
            }],
            text: text.into(),
            meta: serde_json::json!({}),
            language: "en".into(),
        },
        tags: vec![vec![crate::NewTag {
            class: Some(class.into()),
            label: None,
            part: None,
        }]],
        annotated: vec![true],
    }
}

/// The one number `sql` answers with `id` bound as `$1` (a `COUNT(*)` of rows a test checks).
pub async fn count(store: &crate::Store, sql: &str, id: i64) -> i64 {
    sqlx::query_scalar(sql)
        .bind(id)
        .fetch_one(&store.pool)
        .await
        .expect("a count")
}

/// The text column `sql` answers, row by row, with `id` bound as `$1`.
pub async fn texts(store: &crate::Store, sql: &str, id: i64) -> Vec<String> {
    sqlx::query_scalar(sql)
        .bind(id)
        .fetch_all(&store.pool)
        .await
        .expect("the texts")
}

/// Moves the end of every job that ended back by `secs`, as if they had ended that long ago.
pub async fn age_finished_jobs(store: &crate::Store, secs: i64) {
    sqlx::query("UPDATE jobs SET finished = finished - $1 WHERE finished IS NOT NULL")
        .bind(secs * 1_000_000)
        .execute(&store.pool)
        .await
        .expect("the jobs aged");
}

/// Deactivates a user as an operator would by hand (no route does): its `is_active` cleared.
pub async fn deactivate_user(store: &crate::Store, user_id: i64) {
    sqlx::query("UPDATE users SET is_active = $1 WHERE id = $2")
        .bind(false)
        .bind(user_id)
        .execute(&store.pool)
        .await
        .expect("the user deactivated");
}

/// Marks a group PROCESSING, as a job that fills it finds it (a test job of its own kind).
pub async fn group_being_filled(store: &crate::Store, group_id: i64) {
    sqlx::query("UPDATE document_groups SET status = $1 WHERE id = $2")
        .bind("PROCESSING")
        .bind(group_id)
        .execute(&store.pool)
        .await
        .expect("the group PROCESSING");
}

/// Moves every queued job's queueing and next run back by `secs`, as if it had waited that long.
pub async fn age_queued_jobs(store: &crate::Store, secs: i64) {
    sqlx::query(
        "UPDATE jobs SET created = created - $1, run_after = run_after - $1, \
         unrunnable_since = unrunnable_since - $1 WHERE state = 'QUEUED'",
    )
    .bind(secs * 1_000_000)
    .execute(&store.pool)
    .await
    .expect("the jobs aged");
}

/// Moves every queued job's next run `secs` later, as if it had been put off: the jobs queued
/// after it run first.
pub async fn put_off_queued_jobs(store: &crate::Store, secs: i64) {
    sqlx::query("UPDATE jobs SET run_after = run_after + $1 WHERE state = 'QUEUED'")
        .bind(secs * 1_000_000)
        .execute(&store.pool)
        .await
        .expect("the jobs put off");
}

/// Ends a queued job's retry delay now (for tests that must not wait for a backoff); answers
/// the delay that was left, from the job's last update.
pub async fn end_retry_delay(store: &crate::Store, job_id: i64) -> std::time::Duration {
    let (run_after, updated): (i64, i64) = sqlx::query_as("SELECT run_after, updated FROM jobs WHERE id = $1")
        .bind(job_id)
        .fetch_one(&store.pool)
        .await
        .expect("the job");
    sqlx::query("UPDATE jobs SET run_after = updated WHERE id = $1")
        .bind(job_id)
        .execute(&store.pool)
        .await
        .expect("the job made runnable");
    std::time::Duration::from_micros((run_after - updated).max(0) as u64)
}

/// Puts a job that ended back on the queue as it was before its end was written, as if the
/// worker that ran it had died after the job's own writes and before it ended the job.
pub async fn run_again(store: &crate::Store, job_id: i64) {
    sqlx::query(
        "UPDATE jobs SET state = $1, finished = NULL, result = NULL, error = NULL, lease_owner = NULL, \
         lease_expires = NULL, run_after = updated WHERE id = $2",
    )
    .bind(crate::JobState::Queued.as_str())
    .bind(job_id)
    .execute(&store.pool)
    .await
    .expect("the job queued again");
}
