//! Limits counted in the writing transaction hold under concurrency, on both backends: sessions
//! per project, projects and members per workspace, whose limits are too large to reach over HTTP in a
//! test (the API tests' `limits.rs` races requests at the smaller ones). SQL fills each limit
//! to ten short of its edge; then twenty requests race for the last ten places, and a clone or
//! a transfer into a full workspace is refused.

use crate::hitl_reviews::MAX_PENDING_REVIEWS_PER_HITL;
use crate::invitations::MAX_PENDING_INVITATIONS;
use crate::projects::MAX_PROJECTS_PER_WORKSPACE;
use crate::sessions::MAX_SESSIONS_PER_PROJECT;
use crate::testing::{TestDatabase, another_workspace, count, owner_with_project};
use crate::workspaces::{MAX_MEMBERS_PER_WORKSPACE, WorkspaceRef};
use crate::{Backend, MAX_WORK_PER_USER, MAX_WORK_PER_WORKSPACE, NewSession, NewUser, ProjectFields, Store};
use futures_util::future::join_all;
use lector_core::time::Timestamp;
use lector_core::{ErrorCode, ProjectType, Result, Role, Scope};

/// Inserts `n` rows by one statement: `insert` names the table and columns, `select` the
/// values of row `i` (from 1) with `$1` bound to `owner`.
async fn fill(store: &Store, insert: &str, select: &str, owner: i64, n: i64) {
    let sql = format!(
        "{insert} WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {n}) {select} FROM n"
    );
    sqlx::query(&sql)
        .bind(owner)
        .execute(&store.pool)
        .await
        .expect("rows up to the edge");
}

/// How many results were created and how many refused as conflicts; anything else fails.
fn created_and_refused<T: std::fmt::Debug>(results: &[Result<T>]) -> (usize, usize) {
    let created = results.iter().filter(|r| r.is_ok()).count();
    let refused = results
        .iter()
        .filter(|r| matches!(r, Err(e) if e.code == ErrorCode::Conflict))
        .count();
    assert_eq!(created + refused, results.len(), "{results:?}");
    (created, refused)
}

async fn sessions_stop_at_the_limit_under_concurrency(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 8).await.expect("store");
    let (scope, _, project) = owner_with_project(&store, "Edge", ProjectType::Class).await;
    fill(
        &store,
        "INSERT INTO sessions (uuid, project_id, user_id, name, description, mode, status, created)",
        &format!(
            "SELECT 'filler-' || i, $1, {}, 'filler ' || i, '', 'ANNOTATION', 'CREATED', 0",
            scope.user_id
        ),
        project.id,
        MAX_SESSIONS_PER_PROJECT - 10,
    )
    .await;
    let racers = (0..20).map(|i| {
        let new = NewSession {
            name: format!("racer {i}"),
            ..Default::default()
        };
        store.create_session(&scope, project.id, new)
    });
    let results = join_all(racers).await;
    assert_eq!(created_and_refused(&results), (10, 10));
    let held = count(
        &store,
        "SELECT COUNT(*) FROM sessions WHERE project_id = $1",
        project.id,
    )
    .await;
    assert_eq!(held, MAX_SESSIONS_PER_PROJECT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_stop_at_the_limit_under_concurrency_sqlite() {
    sessions_stop_at_the_limit_under_concurrency(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_stop_at_the_limit_under_concurrency_postgres() {
    sessions_stop_at_the_limit_under_concurrency(Backend::Postgres).await;
}

async fn projects_stop_at_the_limit_of_their_workspace(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 8).await.expect("store");
    let (scope, workspace, first) = owner_with_project(&store, "First", ProjectType::Class).await;
    let (elsewhere, scope) = another_workspace(&store, &scope, "Elsewhere").await;
    let wanderer = store
        .create_project(
            &scope,
            &elsewhere,
            ProjectFields {
                name: "Wanderer".into(),
                kind: ProjectType::Class,
                external_id: None,
                language: "en".into(),
            },
        )
        .await
        .expect("a project elsewhere");
    // The workspace holds its first project and these, ten short of the limit.
    fill(
        &store,
        "INSERT INTO projects (workspace_id, name, type, status, language, created)",
        "SELECT $1, 'filler ' || i, 'CLASS', 'CREATED', 'en', 0",
        workspace.id,
        MAX_PROJECTS_PER_WORKSPACE - 11,
    )
    .await;
    let racers = (0..20).map(|i| {
        let fields = ProjectFields {
            name: format!("racer {i}"),
            kind: ProjectType::Class,
            external_id: None,
            language: "en".into(),
        };
        store.create_project(&scope, &workspace, fields)
    });
    let results = join_all(racers).await;
    assert_eq!(created_and_refused(&results), (10, 10));
    let in_workspace = "SELECT COUNT(*) FROM projects WHERE workspace_id = $1";
    assert_eq!(
        count(&store, in_workspace, workspace.id).await,
        MAX_PROJECTS_PER_WORKSPACE
    );

    // A full workspace takes no clone and no transferred project either.
    let cloned = store
        .start_clone(&scope, first.id, &workspace, Some("Copy".into()))
        .await;
    assert_eq!(
        cloned.expect_err("a clone into a full workspace").code,
        ErrorCode::Conflict
    );
    let moved = store.transfer_project(&scope, wanderer.id, &workspace).await;
    assert_eq!(
        moved.expect_err("a transfer into a full workspace").code,
        ErrorCode::Conflict
    );
    assert_eq!(
        count(&store, in_workspace, workspace.id).await,
        MAX_PROJECTS_PER_WORKSPACE
    );
    assert_eq!(count(&store, in_workspace, elsewhere.id).await, 1);
}

/// A workspace's long jobs (trainings, analyses, corrections, clones) waiting or running stop
/// at [`MAX_WORK_PER_WORKSPACE`], counted behind the workspace's lock: ten clones asked at once
/// with five places left make five. Other jobs (mail) and ended ones do not count. Before,
/// there was no limit, and one workspace could hold every worker for hours.
async fn long_jobs_stop_at_the_limit_of_their_workspace(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 8).await.expect("store");
    let (scope, workspace, project) = owner_with_project(&store, "Busy", ProjectType::Class).await;
    let jobs = "INSERT INTO jobs (kind, payload, state, workspace_id, max_attempts, run_after, created, updated)";
    for (kind, state, n) in [
        (crate::TRAINING_JOB, "QUEUED", MAX_WORK_PER_WORKSPACE - 6),
        (crate::ANALYSIS_JOB, "RUNNING", 1),
        (crate::ANALYSIS_JOB, "DONE", 30),
        (crate::MAIL_JOB, "QUEUED", 30),
    ] {
        let select = format!("SELECT '{kind}', '{{}}', '{state}', $1, 1, 0, 0, 0");
        fill(&store, jobs, &select, workspace.id, n).await;
    }
    let racers = (0..10).map(|i| store.start_clone(&scope, project.id, &workspace, Some(format!("Copy {i}"))));
    let results = join_all(racers).await;
    assert_eq!(created_and_refused(&results), (5, 5));
    let refused = results.into_iter().find_map(Result::err).expect("a refusal");
    assert!(refused.detail.contains("the workspace has"), "{refused:?}");

    // A user has at most MAX_WORK_PER_USER in all their workspaces: 5 clones, 35 more elsewhere.
    let owned = "INSERT INTO jobs (kind, payload, state, user_id, max_attempts, run_after, created, updated)";
    let select = format!("SELECT '{}', '{{}}', 'QUEUED', $1, 1, 0, 0, 0", crate::TRAINING_JOB);
    fill(&store, owned, &select, scope.user_id, MAX_WORK_PER_USER - 5).await;
    let (elsewhere, scope) = another_workspace(&store, &scope, "Elsewhere").await;
    let refused = store
        .start_clone(&scope, project.id, &elsewhere, Some("Copy elsewhere".into()))
        .await
        .expect_err("the user's limit");
    assert!(refused.detail.contains("you have"), "{refused:?}");

    // A project moved into a workspace takes its long jobs along: not past the target's limit.
    let (third, scope) = another_workspace(&store, &scope, "Third").await;
    let select = format!("SELECT '{}', '{{}}', 'QUEUED', $1, 1, 0, 0, 0", crate::ANALYSIS_JOB);
    fill(&store, jobs, &select, third.id, MAX_WORK_PER_WORKSPACE).await;
    let of_project = "INSERT INTO jobs (kind, payload, state, project_id, max_attempts, run_after, created, updated)";
    fill(&store, of_project, &select, project.id, 1).await;
    let moved = store.transfer_project(&scope, project.id, &third).await;
    assert!(moved.expect_err("a full target").detail.contains("would give"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_jobs_stop_at_the_limit_of_their_workspace_sqlite() {
    long_jobs_stop_at_the_limit_of_their_workspace(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_jobs_stop_at_the_limit_of_their_workspace_postgres() {
    long_jobs_stop_at_the_limit_of_their_workspace(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn projects_stop_at_the_limit_of_their_workspace_sqlite() {
    projects_stop_at_the_limit_of_their_workspace(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn projects_stop_at_the_limit_of_their_workspace_postgres() {
    projects_stop_at_the_limit_of_their_workspace(Backend::Postgres).await;
}

async fn members_stop_at_the_limit_of_their_workspace(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 8).await.expect("store");
    let (scope, workspace, _) = owner_with_project(&store, "Crowd", ProjectType::Class).await;
    // The owner and these, ten short of the limit.
    fill(
        &store,
        "INSERT INTO users (email, created)",
        "SELECT 'filler-' || i || '@example.org', $1",
        0,
        MAX_MEMBERS_PER_WORKSPACE - 11,
    )
    .await;
    sqlx::query(
        "INSERT INTO memberships (workspace_id, user_id, role, created) \
         SELECT $1, id, 'VIEWER', 0 FROM users WHERE email LIKE 'filler-%'",
    )
    .bind(workspace.id)
    .execute(&store.pool)
    .await
    .expect("members up to the edge");
    let mut racers = Vec::new();
    for i in 0..20 {
        let user = store
            .create_user(NewUser {
                email: format!("racer-{i}@example.org"),
                first_name: "Racer".into(),
                last_name: String::new(),
                password_hash: None,
                is_superuser: false,
            })
            .await
            .expect("a racer");
        racers.push(user.id);
    }
    let place = WorkspaceRef::Id(workspace.id);
    // The racers share no workspace with the owner: a superuser adds them.
    let root = Scope {
        is_superuser: true,
        ..scope.clone()
    };
    let results = join_all(
        racers
            .iter()
            .map(|id| store.add_member(&root, &place, *id, Role::Viewer)),
    )
    .await;
    assert_eq!(created_and_refused(&results), (10, 10));
    let members = "SELECT COUNT(*) FROM memberships WHERE workspace_id = $1";
    assert_eq!(count(&store, members, workspace.id).await, MAX_MEMBERS_PER_WORKSPACE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_stop_at_the_limit_of_their_workspace_sqlite() {
    members_stop_at_the_limit_of_their_workspace(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_stop_at_the_limit_of_their_workspace_postgres() {
    members_stop_at_the_limit_of_their_workspace(Backend::Postgres).await;
}

async fn invitations_stop_at_the_limit_of_their_workspace(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 8).await.expect("store");
    let (scope, workspace, _) = owner_with_project(&store, "Crowd", ProjectType::Class).await;
    let pending = |prefix: &str, expires: i64| {
        format!(
            "SELECT $1, '{prefix}-' || i || '@example.org', 'VIEWER', {}, '{prefix}-' || i, 'PENDING', 0, {expires}",
            scope.user_id
        )
    };
    let insert =
        "INSERT INTO invitations (workspace_id, email, role, invited_by_id, token_hash, status, created, expires)";
    // Ten short of the limit, and expired ones that no longer count.
    let an_hour_on = Timestamp::now().plus_seconds(3600).micros();
    fill(
        &store,
        insert,
        &pending("filler", an_hour_on),
        workspace.id,
        MAX_PENDING_INVITATIONS - 10,
    )
    .await;
    fill(&store, insert, &pending("expired", 1), workspace.id, 50).await;
    let racers: Vec<String> = (0..20).map(|i| format!("racer-{i}@example.org")).collect();
    let later = Timestamp::now().plus_seconds(3600);
    let results = join_all(
        racers
            .iter()
            .map(|email| store.create_invitation(&scope, workspace.id, email, Role::Viewer, email, later)),
    )
    .await;
    assert_eq!(created_and_refused(&results), (10, 10));
    let pending = "SELECT COUNT(*) FROM invitations WHERE workspace_id = $1 AND expires > 1";
    assert_eq!(count(&store, pending, workspace.id).await, MAX_PENDING_INVITATIONS);
    // Renewing an expired one would make it pending again: refused while the workspace is full.
    let expired: i64 = sqlx::query_scalar("SELECT id FROM invitations WHERE email = 'expired-1@example.org'")
        .fetch_one(&store.pool)
        .await
        .unwrap();
    let renewed = store
        .renew_invitation(&scope, &WorkspaceRef::Id(workspace.id), expired, "renewed", later)
        .await;
    assert_eq!(created_and_refused(&[renewed]), (0, 1));
    assert_eq!(count(&store, pending, workspace.id).await, MAX_PENDING_INVITATIONS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invitations_stop_at_the_limit_of_their_workspace_sqlite() {
    invitations_stop_at_the_limit_of_their_workspace(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invitations_stop_at_the_limit_of_their_workspace_postgres() {
    invitations_stop_at_the_limit_of_their_workspace(Backend::Postgres).await;
}

async fn reviews_stop_at_the_limit_of_their_configuration(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 8).await.expect("store");
    let (scope, _, project) = owner_with_project(&store, "Invoices", ProjectType::Label).await;
    let new = crate::NewHitl::plain("Check");
    let hitl = store.create_hitl(&scope, project.id, &new).await.expect("hitl");
    fill(
        &store,
        "INSERT INTO hitl_reviews (hitl_id, document_name, page_num, status, extracted, created, updated)",
        "SELECT $1, 'filler.pdf', 1, 'PENDING', '{}', 0, 0",
        hitl.id,
        MAX_PENDING_REVIEWS_PER_HITL - 10,
    )
    .await;
    // A submitted review does not count.
    fill(
        &store,
        "INSERT INTO hitl_reviews (hitl_id, document_name, page_num, status, extracted, created, updated)",
        "SELECT $1, 'done.pdf', 1, 'APPROVED', '{}', 0, 0",
        hitl.id,
        5,
    )
    .await;
    // Twenty documents (the same one again would find its waiting review).
    let reviews: Vec<_> = (0..20)
        .map(|n| crate::NewReview::plain(&format!("racer-{n}.pdf")))
        .collect();
    let racers = reviews.iter().map(|review| store.create_review(&hitl, review));
    let results = join_all(racers).await;
    assert_eq!(created_and_refused(&results), (10, 10));
    let waiting = count(
        &store,
        "SELECT COUNT(*) FROM hitl_reviews WHERE hitl_id = $1 AND status = 'PENDING'",
        hitl.id,
    )
    .await;
    assert_eq!(waiting, MAX_PENDING_REVIEWS_PER_HITL);
}

/// The same extraction sent twenty times at once makes one review: each looks for an earlier
/// one behind the configuration's lock, so all but the first find it.
async fn the_same_review_sent_at_once_is_made_once(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 8).await.expect("store");
    let (scope, _, project) = owner_with_project(&store, "Invoices", ProjectType::Label).await;
    let hitl = store
        .create_hitl(&scope, project.id, &crate::NewHitl::plain("Check"))
        .await
        .expect("hitl");
    let review = crate::NewReview::plain("same.pdf");
    let results = join_all((0..20).map(|_| store.create_review(&hitl, &review))).await;
    let ids: std::collections::BTreeSet<i64> = results.into_iter().map(|r| r.expect("answered").id).collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let waiting = count(
        &store,
        "SELECT COUNT(*) FROM hitl_reviews WHERE hitl_id = $1 AND status = 'PENDING'",
        hitl.id,
    )
    .await;
    assert_eq!(waiting, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_review_sent_at_once_is_made_once_sqlite() {
    the_same_review_sent_at_once_is_made_once(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_review_sent_at_once_is_made_once_postgres() {
    the_same_review_sent_at_once_is_made_once(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviews_stop_at_the_limit_of_their_configuration_sqlite() {
    reviews_stop_at_the_limit_of_their_configuration(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviews_stop_at_the_limit_of_their_configuration_postgres() {
    reviews_stop_at_the_limit_of_their_configuration(Backend::Postgres).await;
}
