//! What the job tests share: one test per backend for each scenario, and the ABSA project with
//! one class that the clone and labeled-import scenarios start from. Each test binary uses a
//! part of it.
#![allow(dead_code)]

use lector_core::{ProjectType, Scope};
use lector_store::testing::owner_with_project;
use lector_store::{ClassFields, Project, Store, Workspace};

/// Generates a test on SQLite and one on PostgreSQL for each `async fn NAME(backend: Backend)`.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite { $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name(lector_store::Backend::Sqlite).await }
        )* }
        mod postgres { $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name(lector_store::Backend::Postgres).await }
        )* }
    };
}
pub(crate) use on_both_backends;

/// An owner's ABSA project `name` with the one class `class`.
pub async fn absa_project_with_class(store: &Store, name: &str, class: &str) -> (Scope, Workspace, Project) {
    let (scope, workspace, project) = owner_with_project(store, name, ProjectType::Absa).await;
    let classes = vec![ClassFields {
        name: class.into(),
        ..Default::default()
    }];
    store.add_classes(&scope, project.id, classes).await.unwrap();
    (scope, workspace, project)
}
