//! The promises of the foreign keys that imports write for every row (documents → projects,
//! documents → groups, segments → documents), on both backends. SQLite keeps them as foreign
//! keys; on PostgreSQL migration 0018 checks them once per statement with triggers instead of
//! once per row, which must keep every promise: a row naming a missing parent is refused, a
//! deleted parent takes (or, for a group, releases) its children, and a parent cannot be
//! deleted under a writer that has not committed yet.

use crate::testing::{TestDatabase, count, owner_with_project};
use crate::{Backend, Store};
use lector_core::ProjectType;
use sqlx::error::ErrorKind;

const DOCUMENT: &str = "INSERT INTO documents (project_id, group_id, group_position, text, meta, language, created) \
                        VALUES ($1, $2, $3, 'text', '{}', 'en', 0) RETURNING id";
const SEGMENT: &str = "INSERT INTO segments (document_id, position, span_start, span_end, text) \
                       VALUES ($1, $2, 0, 4, 'text')";

/// A fresh store with a project and an empty group in it.
async fn project_with_group(backend: Backend) -> Option<(TestDatabase, Store, lector_core::Scope, i64, i64)> {
    let database = TestDatabase::create(backend).await?;
    let store = Store::open(&database.url, 4).await.expect("store");
    let (scope, _, project) = owner_with_project(&store, "Keys", ProjectType::Class).await;
    let group = group_in(&store, project.id, "g").await;
    Some((database, store, scope, project.id, group))
}

/// Inserts an empty group named `name` into `project`; answers its id.
async fn group_in(store: &Store, project: i64, name: &str) -> i64 {
    sqlx::query_scalar(
        "INSERT INTO document_groups (project_id, name, source, status, created) \
         VALUES ($1, $2, 'api', 'CREATED', 0) RETURNING id",
    )
    .bind(project)
    .bind(name)
    .fetch_one(&store.pool)
    .await
    .expect("a group")
}

/// Inserts a document of `group` with two segments; answers its id.
async fn document_in(store: &Store, project: i64, group: Option<i64>, position: i64) -> i64 {
    let id: i64 = sqlx::query_scalar(DOCUMENT)
        .bind(project)
        .bind(group)
        .bind(position)
        .fetch_one(&store.pool)
        .await
        .expect("a document");
    for position in 0..2_i64 {
        sqlx::query(SEGMENT)
            .bind(id)
            .bind(position)
            .execute(&store.pool)
            .await
            .expect("a segment");
    }
    id
}

fn refused_as_foreign_key<T>(result: Result<T, sqlx::Error>, what: &str) {
    let Err(error) = result else {
        panic!("{what} was stored");
    };
    let kind = error.as_database_error().map(|e| e.kind());
    assert_eq!(kind, Some(ErrorKind::ForeignKeyViolation), "{what}: {error}");
}

async fn rows_naming_missing_parents_are_refused(backend: Backend) {
    let Some((_database, store, _, project, group)) = project_with_group(backend).await else {
        return;
    };
    let document = document_in(&store, project, Some(group), 0).await;
    let missing = 1_000_000;
    let insert = |project: i64, group: Option<i64>| {
        sqlx::query(DOCUMENT)
            .bind(project)
            .bind(group)
            .bind(7_i64)
            .fetch_one(&store.pool)
    };
    refused_as_foreign_key(insert(missing, None).await, "a document of a missing project");
    refused_as_foreign_key(insert(project, Some(missing)).await, "a document of a missing group");
    refused_as_foreign_key(
        sqlx::query(SEGMENT)
            .bind(missing)
            .bind(0_i64)
            .execute(&store.pool)
            .await,
        "a segment of a missing document",
    );
    refused_as_foreign_key(
        sqlx::query("UPDATE segments SET document_id = $1 WHERE document_id = $2")
            .bind(missing)
            .bind(document)
            .execute(&store.pool)
            .await,
        "a segment moved to a missing document",
    );
    refused_as_foreign_key(
        sqlx::query("UPDATE documents SET group_id = $1 WHERE id = $2")
            .bind(missing)
            .bind(document)
            .execute(&store.pool)
            .await,
        "a document moved to a missing group",
    );
    // A statement of many rows is refused whole when one of them names a missing parent.
    let many = sqlx::query(&format!(
        "INSERT INTO segments (document_id, position, span_start, span_end, text) \
         VALUES ($1, 5, 0, 4, 'a'), ($1, 6, 0, 4, 'b'), ({missing}, 0, 0, 4, 'c')"
    ))
    .bind(document)
    .execute(&store.pool)
    .await;
    refused_as_foreign_key(many, "a statement with one segment of a missing document");
    assert_eq!(
        count(&store, "SELECT count(*) FROM segments WHERE document_id = $1", document).await,
        2
    );
}

#[tokio::test]
async fn rows_naming_missing_parents_are_refused_sqlite() {
    rows_naming_missing_parents_are_refused(Backend::Sqlite).await;
}

#[tokio::test]
async fn rows_naming_missing_parents_are_refused_postgres() {
    rows_naming_missing_parents_are_refused(Backend::Postgres).await;
}

async fn deleted_parents_take_or_release_their_children(backend: Backend) {
    let Some((_database, store, scope, project, group)) = project_with_group(backend).await else {
        return;
    };
    let grouped = documents_in(&store, project, Some(group), 3).await;
    let loose = document_in(&store, project, None, 0).await;

    // A document deleted by SQL alone takes its segments.
    sqlx::query("DELETE FROM documents WHERE id = $1")
        .bind(grouped[0])
        .execute(&store.pool)
        .await
        .expect("delete a document");
    assert_eq!(
        count(
            &store,
            "SELECT count(*) FROM segments WHERE document_id = $1",
            grouped[0]
        )
        .await,
        0
    );

    // A group deleted by SQL alone releases its documents, which stay with their segments.
    sqlx::query("DELETE FROM document_groups WHERE id = $1")
        .bind(group)
        .execute(&store.pool)
        .await
        .expect("delete the group");
    assert_eq!(
        count(&store, "SELECT count(*) FROM documents WHERE group_id = $1", group).await,
        0
    );
    assert_eq!(
        count(&store, "SELECT count(*) FROM documents WHERE project_id = $1", project).await,
        3
    );
    assert_eq!(
        count(
            &store,
            "SELECT count(*) FROM segments WHERE document_id = $1",
            grouped[1]
        )
        .await,
        2
    );

    // A project takes its documents and their segments, whichever group they were in.
    let other_group = group_in(&store, project, "h").await;
    document_in(&store, project, Some(other_group), 0).await;
    store.delete_project(&scope, project).await.expect("delete the project");
    assert_eq!(
        count(&store, "SELECT count(*) FROM documents WHERE project_id = $1", project).await,
        0
    );
    assert_eq!(
        count(&store, "SELECT count(*) FROM segments WHERE document_id = $1", loose).await,
        0
    );
    assert_eq!(
        count(&store, "SELECT count(*) FROM segments WHERE document_id > $1", 0).await,
        0
    );
}

async fn documents_in(store: &Store, project: i64, group: Option<i64>, n: i64) -> Vec<i64> {
    let mut ids = Vec::new();
    for position in 0..n {
        ids.push(document_in(store, project, group, position).await);
    }
    ids
}

#[tokio::test]
async fn deleted_parents_take_or_release_their_children_sqlite() {
    deleted_parents_take_or_release_their_children(Backend::Sqlite).await;
}

#[tokio::test]
async fn deleted_parents_take_or_release_their_children_postgres() {
    deleted_parents_take_or_release_their_children(Backend::Postgres).await;
}

/// A project deleted while an import's transaction is open waits for it, then takes what it
/// wrote; a writer that starts after the delete is refused. (PostgreSQL: SQLite has one writer.)
#[tokio::test]
async fn a_parent_is_not_deleted_under_an_open_writer() {
    let Some((_database, store, scope, project, group)) = project_with_group(Backend::Postgres).await else {
        return;
    };
    let mut import = store.pool.begin().await.expect("a transaction");
    let document: i64 = sqlx::query_scalar(DOCUMENT)
        .bind(project)
        .bind(group)
        .bind(0_i64)
        .fetch_one(&mut *import)
        .await
        .expect("a document");
    sqlx::query(SEGMENT)
        .bind(document)
        .bind(0_i64)
        .execute(&mut *import)
        .await
        .expect("a segment");

    let deleting = {
        let (store, scope) = (store.clone(), scope.clone());
        tokio::spawn(async move { store.delete_project(&scope, project).await })
    };
    // The delete waits on the lock the import's check took on the project.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!deleting.is_finished(), "the project was deleted under an open import");
    import.commit().await.expect("the import commits");
    deleting.await.expect("the delete's task").expect("the delete");
    assert_eq!(
        count(&store, "SELECT count(*) FROM documents WHERE project_id = $1", project).await,
        0
    );
    assert_eq!(
        count(&store, "SELECT count(*) FROM segments WHERE document_id = $1", document).await,
        0
    );

    let late = sqlx::query(DOCUMENT)
        .bind(project)
        .bind(Option::<i64>::None)
        .bind(1_i64)
        .fetch_one(&store.pool)
        .await;
    refused_as_foreign_key(late, "a document of the deleted project");
}
