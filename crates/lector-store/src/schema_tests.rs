//! Two promises about the schema history, kept by tests because a reviewer cannot see them:
//! a migration that has landed never changes (installations have applied it, and sqlx refuses
//! a changed checksum), and after every migration the two backends have the same tables,
//! columns and indexes, so a SQLite installation can move to PostgreSQL.

use crate::testing::TestDatabase;
use crate::{Backend, Store};
use sha2::{Digest, Sha256};
use sqlx::Row;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The checked-in list of migrations 0001–0009: `sha256  backend/file.sql` per line, as
/// `sha256sum` writes it. Frozen: later migrations each add a file of their own under
/// `migrations/checksums/`, so recording a migration never changes an existing file.
const CHECKSUMS: &str = include_str!("../migrations/CHECKSUMS");

fn migrations_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations")
}

fn migration_files() -> BTreeSet<String> {
    let mut files = BTreeSet::new();
    for backend in ["sqlite", "postgres"] {
        for entry in std::fs::read_dir(migrations_dir().join(backend)).expect("migrations folder") {
            let name = entry.expect("entry").file_name().into_string().expect("UTF-8 name");
            if name.ends_with(".sql") {
                files.insert(format!("{backend}/{name}"));
            }
        }
    }
    files
}

/// Every recorded checksum: the frozen list, then one file per later migration.
fn listed() -> BTreeMap<String, String> {
    let mut text = CHECKSUMS.to_owned();
    let dir = migrations_dir().join("checksums");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| entries.map(|e| e.expect("entry").path()).collect())
        .unwrap_or_default();
    files.sort();
    for file in files {
        text.push('\n');
        text.push_str(&std::fs::read_to_string(&file).expect("a checksum file"));
    }
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let (sum, file) = line.split_once("  ").expect("`sha256  file` per line");
            (file.to_owned(), sum.to_owned())
        })
        .collect()
}

#[test]
fn landed_migrations_never_change() {
    for (file, sum) in listed() {
        let bytes = std::fs::read(migrations_dir().join(&file)).unwrap_or_else(|e| {
            panic!("{file} has a recorded checksum but cannot be read ({e}): a landed migration is never removed")
        });
        let actual = format!("{:x}", Sha256::digest(&bytes));
        assert_eq!(
            actual, sum,
            "{file} changed after it landed; installations have applied the old text. Put the change in a new migration instead"
        );
    }
}

#[test]
fn every_migration_is_listed() {
    let listed = listed();
    let missing: Vec<String> = migration_files()
        .into_iter()
        .filter(|f| !listed.contains_key(f))
        .collect();
    assert!(
        missing.is_empty(),
        "new migrations without a recorded checksum: {missing:?}; record each step in a file of its \
         own: `cd crates/lector-store/migrations && sha256sum sqlite/NNNN_x.sql postgres/NNNN_x.sql > checksums/NNNN_x.sha256`"
    );
}

/// Migration files that landed but were never a step of `migrations.rs`, so no installation
/// ran them: kept byte for byte (landed files never change or go), never run. What
/// `0028_lookups_for_limits` holds, steps 28 (`waiting_reviews`) and 29 (`model_lookups`) make.
const LANDED_NEVER_RUN: &[&str] = &["0028_lookups_for_limits.sql"];

/// The migration files that are steps: every one but [`LANDED_NEVER_RUN`].
fn step_files() -> BTreeSet<String> {
    migration_files()
        .into_iter()
        .filter(|file| {
            !LANDED_NEVER_RUN
                .iter()
                .any(|never| file.ends_with(&format!("/{never}")))
        })
        .collect()
}

/// A migration file that is not a step of `migrations.rs` never runs (0028 sat in the folder,
/// recorded and checked, for a session before anyone noticed its index did not exist).
#[test]
fn every_migration_file_is_a_step_that_runs() {
    for file in step_files() {
        let (backend, name) = file.split_once('/').expect("backend/file");
        let version: i64 = name[..4].parse().expect("NNNN_name.sql");
        let step = crate::migrations::STEPS
            .iter()
            .find(|s| s.version == version)
            .unwrap_or_else(|| panic!("{file} is not listed in migrations.rs, so it never runs"));
        let text = std::fs::read_to_string(migrations_dir().join(&file)).expect("a migration");
        let listed = if backend == "sqlite" {
            step.sqlite
        } else {
            step.postgres
        };
        assert_eq!(
            listed, text,
            "step {version} of migrations.rs runs another text than {file}"
        );
    }
    assert_eq!(
        crate::migrations::STEPS.len() * 2,
        step_files().len(),
        "every step has its two files"
    );
}

#[test]
fn both_backends_have_every_step() {
    let files = migration_files();
    for file in &files {
        let (backend, name) = file.split_once('/').expect("backend/file");
        let other = if backend == "sqlite" { "postgres" } else { "sqlite" };
        assert!(files.contains(&format!("{other}/{name}")), "{file} has no {other} twin");
    }
}

/// Tables, their columns and their named indexes, as one backend reports them.
#[derive(Debug, PartialEq, Eq)]
struct Shape {
    columns: BTreeMap<String, BTreeSet<String>>,
    indexes: BTreeMap<String, BTreeSet<String>>,
}

async fn shape(store: &Store) -> Shape {
    let (tables, columns, indexes) = match store.backend() {
        Backend::Sqlite => (
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> '_sqlx_migrations'",
            "SELECT name FROM pragma_table_info($1)",
            // Indexes written as CREATE INDEX have SQL; those behind UNIQUE and PRIMARY KEY do not.
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = $1 AND sql IS NOT NULL",
        ),
        Backend::Postgres => (
            "SELECT table_name::text AS name FROM information_schema.tables \
             WHERE table_schema = 'public' AND table_name <> '_sqlx_migrations'",
            "SELECT column_name::text AS name FROM information_schema.columns \
             WHERE table_schema = 'public' AND table_name = $1",
            "SELECT indexname::text AS name FROM pg_indexes WHERE schemaname = 'public' AND tablename = $1 \
             AND indexname NOT IN (SELECT conname FROM pg_constraint)",
        ),
    };
    let names = |sql: &'static str, arg: Option<String>| {
        let pool = store.pool.clone();
        async move {
            let mut query = sqlx::query(sql);
            if let Some(arg) = arg {
                query = query.bind(arg);
            }
            query
                .fetch_all(&pool)
                .await
                .expect("schema query")
                .iter()
                .map(|row| row.try_get::<String, _>("name").expect("name"))
                .collect::<BTreeSet<String>>()
        }
    };
    let mut shape = Shape {
        columns: BTreeMap::new(),
        indexes: BTreeMap::new(),
    };
    for table in names(tables, None).await {
        shape
            .columns
            .insert(table.clone(), names(columns, Some(table.clone())).await);
        shape.indexes.insert(table.clone(), names(indexes, Some(table)).await);
    }
    shape
}

#[tokio::test]
async fn sqlite_and_postgres_schemas_match() {
    let Some(postgres) = TestDatabase::create(Backend::Postgres).await else {
        return;
    };
    let sqlite = TestDatabase::create(Backend::Sqlite).await.expect("SQLite");
    let sqlite_store = Store::open(&sqlite.url, 2).await.expect("migrate SQLite");
    let postgres_store = Store::open(&postgres.url, 2).await.expect("migrate PostgreSQL");
    let (left, right) = (shape(&sqlite_store).await, shape(&postgres_store).await);
    sqlite_store.close().await;
    postgres_store.close().await;
    assert!(!left.columns.is_empty(), "no tables found");
    for table in left.columns.keys().chain(right.columns.keys()).collect::<BTreeSet<_>>() {
        assert_eq!(
            left.columns.get(table),
            right.columns.get(table),
            "columns of {table}: SQLite, then PostgreSQL"
        );
        assert_eq!(
            left.indexes.get(table),
            right.indexes.get(table),
            "indexes of {table}: SQLite, then PostgreSQL"
        );
    }
}

/// Migration 0021 turns the projects a clone job was filling, stored PROCESSING before, into
/// CLONING (the original client's Project status enum has no PROCESSING): the step is taken off
/// the record of a migrated database holding such a project, and opening the store applies it.
async fn stored_copies_become_cloning(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 2).await.expect("migrate");
    let (_, _, project) = crate::testing::owner_with_project(&store, "Copy", lector_core::ProjectType::Class).await;
    sqlx::query("UPDATE projects SET status = 'PROCESSING' WHERE id = $1")
        .bind(project.id)
        .execute(&store.pool)
        .await
        .expect("a copy as 0020 left it");
    sqlx::query("DELETE FROM _sqlx_migrations WHERE version = 21")
        .execute(&store.pool)
        .await
        .expect("forget 0021");
    store.close().await;
    let store = Store::open(&database.url, 2).await.expect("migrate again");
    let status: String = sqlx::query_scalar("SELECT status FROM projects WHERE id = $1")
        .bind(project.id)
        .fetch_one(&store.pool)
        .await
        .expect("status");
    store.close().await;
    assert_eq!(status, "CLONING");
}

#[tokio::test]
async fn stored_copies_become_cloning_sqlite() {
    stored_copies_become_cloning(Backend::Sqlite).await;
}

#[tokio::test]
async fn stored_copies_become_cloning_postgres() {
    stored_copies_become_cloning(Backend::Postgres).await;
}

/// Migration 0026 keeps one live HITL configuration per model: of a model's live ones, the
/// newest (the one extraction used) stays live, and the index refuses another.
async fn one_live_hitl_per_model(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 2).await.expect("migrate");
    let (_, _, project) = crate::testing::owner_with_project(&store, "Fields", lector_core::ProjectType::Label).await;
    let model: i64 = sqlx::query_scalar(
        "INSERT INTO models (uuid, workspace_id, project_id, name, display_name, type, status, language, created, updated) \
         VALUES ('m-26', $1, $2, 'm', 'm', 'LABEL', 'READY', 'en', 0, 0) RETURNING id",
    )
    .bind(project.workspace_id)
    .bind(project.id)
    .fetch_one(&store.pool)
    .await
    .expect("a model");
    let live = |name: &'static str| {
        sqlx::query(
            "INSERT INTO hitls (project_id, name, model_id, is_live, webhook_secret, created, updated) \
             VALUES ($1, $2, $3, $4, 's', 0, 0)",
        )
        .bind(project.id)
        .bind(name)
        .bind(model)
        .bind(true)
    };
    sqlx::query("DROP INDEX hitls_one_live_per_model")
        .execute(&store.pool)
        .await
        .expect("the index dropped, as before 0026");
    for name in ["older", "newer"] {
        live(name).execute(&store.pool).await.expect("two live, as before 0026");
    }
    sqlx::query("DELETE FROM _sqlx_migrations WHERE version = 26")
        .execute(&store.pool)
        .await
        .expect("forget 0026");
    store.close().await;
    let store = Store::open(&database.url, 2).await.expect("migrate again");
    let live_ones: Vec<String> = sqlx::query_scalar("SELECT name FROM hitls WHERE is_live = $1 ORDER BY id")
        .bind(true)
        .fetch_all(&store.pool)
        .await
        .expect("live ones");
    assert_eq!(live_ones, ["newer"]);
    assert!(live("third").execute(&store.pool).await.is_err(), "one live per model");
    store.close().await;
}

#[tokio::test]
async fn one_live_hitl_per_model_sqlite() {
    one_live_hitl_per_model(Backend::Sqlite).await;
}

#[tokio::test]
async fn one_live_hitl_per_model_postgres() {
    one_live_hitl_per_model(Backend::Postgres).await;
}

/// A database a newer Lector migrated (a step this binary does not know) is refused at start,
/// with sqlx's reason for the operator instead of a bare internal error.
async fn a_newer_schema_is_refused_with_its_reason(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 2).await.expect("store");
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         SELECT 9999, description, success, checksum, execution_time FROM _sqlx_migrations WHERE version = 1",
    )
    .execute(&store.pool)
    .await
    .expect("a step from the future");
    let status = store.schema_status().await.expect("the status");
    assert_eq!(
        (status.pending.len(), status.unknown.as_slice()),
        (0, [9999].as_slice()),
        "{status:?}"
    );
    store.close().await;
    let refused = Store::open(&database.url, 2).await.expect_err("refused");
    assert!(
        refused.detail.starts_with("migrating the schema: ") && refused.detail.contains("9999"),
        "{}",
        refused.detail
    );
}

#[tokio::test]
async fn a_newer_schema_is_refused_with_its_reason_sqlite() {
    a_newer_schema_is_refused_with_its_reason(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_newer_schema_is_refused_with_its_reason_postgres() {
    a_newer_schema_is_refused_with_its_reason(Backend::Postgres).await;
}
