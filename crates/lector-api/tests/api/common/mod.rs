//! `TestApp`: the real server, over HTTPS on port 0, on a fresh database of either backend.
//!
//! The database comes from `lector_store::testing` (a temporary SQLite file, or a uniquely named
//! PostgreSQL database dropped afterwards).
#![allow(dead_code)]

pub mod invoices;
pub mod receiver;
pub mod tickets;
pub mod words;

use lector_api::{AppState, Server};
use lector_core::config::Config;
use lector_store::testing::TestDatabase;
use reqwest::{Method, StatusCode, header::HeaderMap};
use serde::Serialize;
use serde_json::{Value, json};
use std::fmt::Display;
use std::path::PathBuf;
use tokio::sync::oneshot;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// One test per backend for each listed `async fn NAME(app: TestApp)`; `adjust: FN;` first starts the apps with FN.
#[macro_export]
macro_rules! backend_tests {
    (adjust: $adjust:ident; $($name:ident),* $(,)?) => {
        $crate::backend_tests!(@each super::$adjust; $($name),*);
    };
    (@each $adjust:expr; $($name:ident),*) => {
        $crate::backend_tests!(@one sqlite, Sqlite, $adjust; $($name),*);
        $crate::backend_tests!(@one postgres, Postgres, $adjust; $($name),*);
    };
    (@one $module:ident, $backend:ident, $adjust:expr; $($name:ident),*) => {
        mod $module {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let backend = $crate::common::Backend::$backend;
                    if let Some(app) = $crate::common::TestApp::start_with(backend, $adjust).await {
                        super::$name(app).await;
                    }
                }
            )*
        }
    };
    // Tests that start their own app (a configuration of their own, several apps) take the
    // backend: `backend_tests!(backend: name, …)` runs `name(Backend::…)` in on_sqlite and
    // on_postgres.
    (backend: $($name:ident),* $(,)?) => {
        $crate::backend_tests!(@backend on_sqlite, Sqlite; $($name),*);
        $crate::backend_tests!(@backend on_postgres, Postgres; $($name),*);
    };
    (@backend $module:ident, $backend:ident; $($name:ident),*) => {
        mod $module {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::common::Backend::$backend).await;
                }
            )*
        }
    };
    ($($name:ident),* $(,)?) => {
        $crate::backend_tests!(@each |_| {}; $($name),*);
    };
}

pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub state: AppState,
    pub data_dir: tempfile::TempDir,
    /// How long the teardown waits for the test's jobs to end ([`JOBS_SETTLE`]).
    pub jobs_settle: std::time::Duration,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
    database: Option<TestDatabase>,
}

/// A registered user and its token.
#[derive(Debug, Clone)]
pub struct Session {
    pub token: String,
    pub user_id: i64,
    pub email: String,
}

impl Session {
    /// The session an auth answer (register, login, accept_invitation) opens.
    fn from_answer(answer: &Value, email: &str) -> Self {
        Session {
            token: answer["auth_token"].as_str().expect("token").to_owned(),
            user_id: answer["user_id"].as_i64().expect("user id"),
            email: email.to_owned(),
        }
    }
}

/// An answer: status, headers and the body as JSON (`Value::Null` when it is not JSON).
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
    pub text: String,
}

/// The fields a problem's `errors` name, in order.
pub fn problem_fields(problem: &Value) -> Vec<&str> {
    problem["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["field"].as_str().expect("a field"))
        .collect()
}

impl Answer {
    /// Asserts the status, showing the body when it differs.
    #[track_caller]
    pub fn expect(self, status: u16) -> Value {
        assert_eq!(self.status.as_u16(), status, "unexpected status; body: {}", self.text);
        self.body
    }

    /// The body without its `request_id`, to compare two answers byte for byte otherwise.
    pub fn body_without_request_id(&self) -> String {
        let mut body = self.body.clone();
        if let Some(object) = body.as_object_mut() {
            assert!(
                object.remove("request_id").is_some(),
                "problems carry a request id: {}",
                self.text
            );
        }
        body.to_string()
    }

    /// Asserts a problem+json answer with this status and code.
    #[track_caller]
    pub fn expect_problem(self, status: u16, code: &str) -> Value {
        assert_eq!(self.status.as_u16(), status, "unexpected status; body: {}", self.text);
        let content_type = self
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        assert_eq!(content_type, "application/problem+json", "body: {}", self.text);
        assert_eq!(self.body["code"], code, "body: {}", self.text);
        assert_eq!(self.body["status"], status);
        self.body
    }
}

/// The `id` of every element of a JSON array (a page's documents, a document's segments).
pub fn ids(list: &Value) -> Vec<i64> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|element| element["id"].as_i64().expect("an id"))
        .collect()
}

/// A multipart form: text fields, then a `file` part unless `file_name` is empty; answers the
/// content type (with its boundary) and the body.
pub fn multipart(fields: &[(&str, String)], file_name: &str, bytes: &[u8]) -> (String, Vec<u8>) {
    let boundary = "lector-test-boundary-7d1f";
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").as_bytes(),
        );
    }
    if !file_name.is_empty() {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{file_name}\"\r\n\
                 Content-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

impl TestApp {
    pub async fn start(backend: Backend) -> Option<Self> {
        Self::start_with(backend, |_| {}).await
    }

    /// Starts the app with a configuration the test may adjust.
    pub async fn start_with(backend: Backend, adjust: impl FnOnce(&mut Config)) -> Option<Self> {
        Self::start_full(backend, adjust, None).await
    }

    /// Starts the app with its blobs in `blobs` (an S3 store opened with the test's own `AWS_*`
    /// values, which a test cannot put in the process environment).
    pub async fn start_with_blobs(backend: Backend, blobs: lector_store::Blobs) -> Option<Self> {
        Self::start_full(backend, |_| {}, Some(blobs)).await
    }

    async fn start_full(
        backend: Backend,
        adjust: impl FnOnce(&mut Config),
        blobs: Option<lector_store::Blobs>,
    ) -> Option<Self> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let database = TestDatabase::create(match backend {
            Backend::Sqlite => lector_store::Backend::Sqlite,
            Backend::Postgres => lector_store::Backend::Postgres,
        })
        .await?;
        let data_dir = tempfile::tempdir().expect("temporary directory");
        let mut config = Config {
            listen: "127.0.0.1:0".into(),
            data_dir: data_dir.path().to_path_buf(),
            database_url: Some(lector_core::config::Secret::new(database.url.clone())),
            ..Config::default()
        };
        config.password_hashing.memory_kib = 64;
        config.password_hashing.iterations = 1;
        config.rate_limits.login_per_minute = 1000;
        config.rate_limits.register_per_hour = 1000;
        config.rate_limits.reset_mail_per_hour = 1000;
        // Documents are read by this crate's own build of the sandbox program.
        config.extract.sandbox_program = Some(env!("CARGO_BIN_EXE_lector-extract-sandbox").into());
        adjust(&mut config);
        let mut state = AppState::new(config).await.expect("app state");
        state.publish_base_models().await.expect("base models published");
        if let Some(blobs) = blobs {
            state.store = state.store.with_blobs(blobs);
        }
        let server = Server::bind(state.clone()).await.expect("bind");
        let address = server.local_addr().expect("address");
        let (tx, rx) = oneshot::channel::<()>();
        let workers = lector_jobs::standard_runner(
            state.mailer.clone(),
            state.base_models.clone(),
            state.sandbox.clone(),
            state.sources.clone(),
        )
        .spawn(state.store.clone(), state.config.workers);
        let handle = tokio::spawn(async move {
            server
                .run(async {
                    let _ = rx.await;
                })
                .await;
            workers.stop(std::time::Duration::from_secs(60)).await;
        });
        let client = reqwest::Client::builder()
            .danger_accept_invalid_certs(true)
            // The suite speaks HTTP/1.1 like most clients; tests/protocol.rs covers HTTP/2.
            .http1_only()
            .build()
            .expect("client");
        Some(Self {
            base: format!("https://{address}"),
            client,
            state,
            data_dir,
            jobs_settle: JOBS_SETTLE,
            shutdown: Some(tx),
            server: Some(handle),
            database: Some(database),
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn call(&self, method: Method, path: &str, token: Option<&str>, body: Option<Value>) -> Answer {
        let mut request = self.client.request(method, self.url(path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("request");
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.expect("body");
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Answer {
            status,
            headers,
            body,
            text,
        }
    }

    pub async fn get(&self, path: &str, token: &str) -> Answer {
        self.call(Method::GET, path, Some(token), None).await
    }

    /// Asserts that `path` with each of `queries` answers 400 `invalid_parameter`.
    pub async fn refuses_queries(&self, path: &str, token: &str, queries: &[&str]) {
        for query in queries {
            let answer = self.get(&format!("{path}?{query}"), token).await;
            assert_eq!(answer.status.as_u16(), 400, "?{query}: {}", answer.text);
            assert_eq!(answer.body["code"], "invalid_parameter", "?{query}: {}", answer.text);
        }
    }

    pub async fn post(&self, path: &str, token: &str, body: Value) -> Answer {
        self.call(Method::POST, path, Some(token), Some(body)).await
    }

    /// A POST without a token (sign-up, log-in, password mail and reset, invitations).
    pub async fn post_signed_out(&self, path: &str, body: Value) -> Answer {
        self.call(Method::POST, path, None, Some(body)).await
    }

    pub async fn put(&self, path: &str, token: &str, body: Value) -> Answer {
        self.call(Method::PUT, path, Some(token), Some(body)).await
    }

    pub async fn delete(&self, path: &str, token: &str) -> Answer {
        self.call(Method::DELETE, path, Some(token), None).await
    }

    /// Registers a user through the API.
    pub async fn register(&self, email: &str) -> Session {
        let body = json!({"email": email, "password": "password-123", "first_name": "Test", "last_name": "User"});
        let answer = self.post_signed_out("/auth/register", body).await.expect(200);
        Session::from_answer(&answer, email)
    }

    /// Creates a superuser the way `lector user create --superuser` does, and logs it in.
    pub async fn superuser(&self, email: &str) -> Session {
        let body: lector_api::routes::users::CreateUserBody = serde_json::from_value(json!({
            "email": email, "password": "password-123", "is_superuser": true
        }))
        .expect("body");
        lector_api::accounts::create_account(&self.state, body.into())
            .await
            .expect("superuser");
        self.login(email, "password-123").await
    }

    pub async fn login(&self, email: &str, password: &str) -> Session {
        let body = json!({"email": email, "password": password});
        let answer = self.post_signed_out("/auth/login", body).await.expect(200);
        Session::from_answer(&answer, email)
    }

    /// Creates a project of `kind` with these classes; answers its id.
    pub async fn project_with_classes(&self, owner: &Session, name: &str, kind: &str, classes: &[&str]) -> i64 {
        let id = self
            .post("/projects", &owner.token, json!({"name": name, "type": kind}))
            .await
            .expect(201)["id"]
            .as_i64()
            .unwrap();
        let classes: Vec<Value> = classes.iter().map(|c| json!({"name": c})).collect();
        if !classes.is_empty() {
            self.post(&format!("/projects/{id}/upload-classes"), &owner.token, json!(classes))
                .await
                .expect(201);
        }
        id
    }

    /// The id of the project's class named `name`, as list_classes gives it.
    pub async fn class_id(&self, token: &str, project: i64, name: &str) -> Value {
        let classes = self
            .get(&format!("/projects/{project}/classes"), token)
            .await
            .expect(200);
        let found = classes.as_array().unwrap().iter().find(|c| c["name"] == name);
        found.unwrap_or_else(|| panic!("no class {name:?}: {classes}"))["id"].clone()
    }

    /// Creates a workspace named `name` (200); answers its id.
    pub async fn workspace(&self, owner: &Session, name: &str) -> i64 {
        let created = self.post("/organizations", &owner.token, json!({"name": name})).await;
        created.expect(200)["id"].as_i64().unwrap()
    }

    /// The id of `who`'s default workspace, as `/auth/status` gives it.
    pub async fn default_workspace_id(&self, who: &Session) -> i64 {
        let status = self.get("/auth/status", &who.token).await.expect(200);
        status["default_workspace_id"].as_i64().unwrap()
    }

    /// The notifications of `who`.
    pub async fn notifications(&self, who: &Session) -> Vec<Value> {
        let all = self.get("/notifications", &who.token).await.expect(200);
        all.as_array().expect("a plain array").clone()
    }

    /// How many notifications of `who` are titled `title`.
    pub async fn notified(&self, who: &Session, title: &str) -> usize {
        let all = self.notifications(who).await;
        all.iter().filter(|n| n["title"] == title).count()
    }

    /// Adds user `user_id` to `workspace` (an id or name) with `role` as a client would: when the
    /// caller shares no workspace with the user yet (answered like an unknown id), it first makes
    /// them known by an invitation the user accepts ([`Self::introduce`]) and asks again.
    /// Answers the last answer. Tests of the rule itself call [`Self::try_add_member`].
    pub async fn add_member(&self, token: &str, workspace: impl Display, user_id: i64, role: &str) -> Answer {
        let workspace = workspace.to_string();
        let first = self.try_add_member(token, &workspace, user_id, role).await;
        let stranger = first.status == 404
            && first.body["detail"]
                .as_str()
                .is_some_and(|d| d.contains("share a workspace"));
        if !stranger || !self.introduce(token, user_id).await {
            return first;
        }
        self.try_add_member(token, &workspace, user_id, role).await
    }

    /// Adds user `user_id` to `workspace` with `role` in one request; answers the answer.
    pub async fn try_add_member(&self, token: &str, workspace: impl Display, user_id: i64, role: &str) -> Answer {
        let body = json!({"role": role, "user_id": user_id});
        self.post(&format!("/organizations/{workspace}/permissions"), token, body)
            .await
    }

    /// Makes user `user_id` known to the caller of `token` the way a client does with a
    /// stranger: the caller invites their address (which the test knows) as VIEWER to the
    /// caller's workspace `introductions-<caller's id>` (created on first use), and the user
    /// accepts with the tests' password. Answers false for an unknown id.
    pub async fn introduce(&self, token: &str, user_id: i64) -> bool {
        let Some((user, _)) = self.state.store.principal(user_id).await.expect("user") else {
            return false;
        };
        let status = self.get("/auth/status", token).await.expect(200);
        let lobby = format!("introductions-{}", status["user"]["id"]);
        let created = self.post("/organizations", token, json!({"name": lobby})).await;
        assert!(matches!(created.status.as_u16(), 200 | 409), "{}", created.text);
        let invited = self.invite(token, &lobby, "VIEWER", [&user.email]).await.expect(200);
        assert_eq!(invited["invitations"].as_array().map(Vec::len), Some(1), "{invited}");
        let mailed = self.token_from_mail(&user.email).await;
        self.accept_invitation(json!({"token": mailed, "password": "password-123"}))
            .await
            .expect(200);
        true
    }

    /// Invites `emails` (a list) to `workspace` with `role`; answers the answer.
    pub async fn invite(&self, token: &str, workspace: impl Display, role: &str, emails: impl Serialize) -> Answer {
        let body = json!({"role": role, "emails": emails});
        self.post(&format!("/organizations/{workspace}/users/invite"), token, body)
            .await
    }

    /// Accepts an invitation with `body` (its token, a password, names), signed out; answers the answer.
    pub async fn accept_invitation(&self, body: Value) -> Answer {
        self.post_signed_out("/organizations/users/invite/accept", body).await
    }

    /// Creates a CLASS project named `name`, without classes; answers its id.
    pub async fn project(&self, owner: &Session, name: &str) -> i64 {
        self.project_with_classes(owner, name, "CLASS", &[]).await
    }

    /// Creates a project of `kind` (named after it) with these classes and labels; answers its id.
    pub async fn project_with(&self, owner: &Session, kind: &str, classes: &[&str], labels: &[&str]) -> i64 {
        let project = self.project_with_classes(owner, kind, kind, classes).await;
        self.add_labels(owner, project, labels).await;
        project
    }

    /// Adds these labels to `project`, one request each.
    pub async fn add_labels(&self, owner: &Session, project: i64, labels: &[&str]) {
        for label in labels {
            self.post(
                &format!("/projects/{project}/labels"),
                &owner.token,
                json!({"name": label}),
            )
            .await
            .expect(201);
        }
    }

    /// A labeling session of `documents` (each a text and its tags) in `project`, made by `who`.
    pub async fn labeled_session(&self, who: &Session, project: i64, name: &str, documents: impl Serialize) -> Value {
        self.post(
            &format!("/projects/{project}/annotations"),
            &who.token,
            json!({"name": name, "documents": documents}),
        )
        .await
        .expect(201)
    }

    /// A labeling session over the documents `document_ids` of `project`, made by `who`.
    pub async fn session_over(&self, who: &Session, project: i64, name: &str, document_ids: impl Serialize) -> Value {
        let body = json!({"name": name, "document_ids": document_ids});
        self.post(&format!("/projects/{project}/annotations"), &who.token, body)
            .await
            .expect(201)
    }

    /// Marks the segment, page or document at `at` (its path in a session) ANNOTATED; answers the answer.
    pub async fn mark_annotated(&self, who: &Session, at: &str) -> Answer {
        self.post(&format!("{at}/statuses"), &who.token, json!({"name": "ANNOTATED"}))
            .await
    }

    /// Adds a document of `body` to `project` (201); answers it.
    pub async fn document(&self, owner: &Session, project: i64, body: Value) -> Value {
        self.post(&format!("/projects/{project}/documents"), &owner.token, body)
            .await
            .expect(201)
    }

    /// Creates a group of `project` with `body` (201); answers it.
    pub async fn group(&self, owner: &Session, project: i64, body: Value) -> Value {
        self.post(&format!("/projects/{project}/groups"), &owner.token, body)
            .await
            .expect(201)
    }

    /// Runs every runnable job to its end, as a worker would (for apps started without workers,
    /// whose tests hold each job where they want it).
    pub async fn run_jobs(&self) {
        let state = &self.state;
        let runner = lector_jobs::standard_runner(
            state.mailer.clone(),
            state.base_models.clone(),
            state.sandbox.clone(),
            state.sources.clone(),
        );
        while runner.run_one(&state.store, "test-worker").await.unwrap() {}
    }

    /// Trains a model of `project` with `body` and waits for its job; answers the model as
    /// `get_project_model` gives it (READY or FAILED: the caller checks).
    pub async fn train_model(&self, who: &Session, project: i64, body: Value) -> Value {
        let model = self
            .post(&format!("/projects/{project}/models"), &who.token, body)
            .await
            .expect(201);
        assert_eq!(model["status"], "QUEUED", "{model}");
        let task = model["task_id"].as_i64().expect("a task id");
        self.wait_for_task(&who.token, project, task).await;
        self.get(&format!("/projects/{project}/models/{}", model["id"]), &who.token)
            .await
            .expect(200)
    }

    /// Creates a correction session of `project` with `body` (201, PREDICTING) and waits for
    /// its job to fill it; answers the session as `get_correction_session` then gives it.
    pub async fn correction(&self, token: &str, project: i64, body: Value) -> Value {
        let created = self
            .post(&format!("/projects/{project}/corrections"), token, body)
            .await
            .expect(201);
        assert_eq!(created["status"], "PREDICTING", "{created}");
        assert_eq!(created["document_count"], 0, "{created}");
        let at = format!("/projects/{project}/corrections/{}", created["id"]);
        for _ in 0..1200 {
            let session = self.get(&at, token).await.expect(200);
            if session["status"] != "PREDICTING" {
                return session;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("the correction session was not filled");
    }

    /// Uploads a file into a project, fills a group from it and waits for the import; answers
    /// the upload and the group's documents with their meta and segments.
    pub async fn import_file(&self, who: &Session, project: i64, name: &str, bytes: &[u8]) -> (Value, Vec<Value>) {
        let (uploaded, group, task) = self
            .uploaded_group(who, project, name, bytes, json!({"name": name}))
            .await;
        assert_eq!(task["status"], "DONE", "{task}");
        let documents = self
            .get(
                &format!(
                    "/projects/{project}/groups/{}/documents?details=meta,segments",
                    group["id"]
                ),
                &who.token,
            )
            .await
            .expect(200);
        (uploaded, documents.as_array().unwrap().clone())
    }

    /// Uploads a file for the groups of `project` (`upload_group_file`); answers the answer.
    pub async fn upload_file(&self, who: &Session, project: i64, name: &str, bytes: &[u8]) -> Answer {
        self.send_form(
            &format!("/projects/{project}/groups/upload"),
            &who.token,
            name,
            bytes,
            &[],
        )
        .await
    }

    /// Creates a group from an upload and waits for its import; answers the finished group and task.
    pub async fn group_from_file(&self, who: &Session, project: i64, body: Value) -> (Value, Value) {
        let answer = self
            .post(&format!("/projects/{project}/groups"), &who.token, body)
            .await;
        let location = answer.headers.get("location").map(|v| v.to_str().unwrap().to_owned());
        let group = answer.expect(201);
        assert_eq!(group["status"], "PROCESSING");
        assert_eq!(
            location.as_deref(),
            Some(format!("/projects/{project}/groups/{}", group["id"]).as_str())
        );
        let task = self
            .wait_for_task(&who.token, project, group["task_id"].as_i64().unwrap())
            .await;
        let group = self
            .get(&format!("/projects/{project}/groups/{}", group["id"]), &who.token)
            .await
            .expect(200);
        (group, task)
    }

    /// Uploads a file (200) and groups it by `body` with the upload's `file_id`; answers upload, group, task.
    pub async fn uploaded_group(
        &self,
        who: &Session,
        project: i64,
        name: &str,
        bytes: &[u8],
        mut body: Value,
    ) -> (Value, Value, Value) {
        let uploaded = self.upload_file(who, project, name, bytes).await.expect(200);
        body["file_id"] = uploaded["id"].clone();
        let (group, task) = self.group_from_file(who, project, body).await;
        (uploaded, group, task)
    }

    /// Polls a task of a project until it is DONE or FAILED, checking its progress never
    /// decreases; answers the last task.
    pub async fn wait_for_task(&self, token: &str, project_id: i64, task_id: i64) -> Value {
        let mut last_progress = 0.0;
        for _ in 0..1200 {
            let task = self
                .get(&format!("/projects/{project_id}/tasks/{task_id}"), token)
                .await
                .expect(200);
            let progress = task["progress"].as_f64().unwrap();
            assert!(progress >= last_progress, "progress never decreases");
            last_progress = progress;
            if task["status"] == "DONE" || task["status"] == "FAILED" {
                return task;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("the task did not finish");
    }

    /// Sends a multipart form with a `file` part (and any other text fields first).
    pub async fn send_form(
        &self,
        path: &str,
        token: &str,
        file_name: &str,
        bytes: &[u8],
        extra: &[(&str, &str)],
    ) -> Answer {
        let fields: Vec<(&str, String)> = extra.iter().map(|(n, v)| (*n, v.to_string())).collect();
        let (content_type, body) = multipart(&fields, file_name, bytes);
        let response = self
            .client
            .post(self.url(path))
            .bearer_auth(token)
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .expect("request");
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.expect("body");
        Answer {
            status,
            headers,
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
            text,
        }
    }

    /// Uploads a model's file (`upload_model`) with the form's other `fields`.
    pub async fn upload_model(&self, token: &str, bytes: &[u8], fields: &[(&str, &str)]) -> Answer {
        self.send_form("/models/upload", token, "model.lector-model", bytes, fields)
            .await
    }

    /// Downloads a file: answers its content type, content disposition and bytes.
    pub async fn download(&self, token: &str, path: &str) -> (String, String, Vec<u8>) {
        let response = self.client.get(self.url(path)).bearer_auth(token).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 200, "{path}");
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
                .unwrap_or_default()
        };
        let (content_type, disposition) = (header("content-type"), header("content-disposition"));
        (content_type, disposition, response.bytes().await.unwrap().to_vec())
    }

    /// Waits (`within` at most) until no job is queued or running; answers those left.
    pub async fn settle_jobs(&self, within: std::time::Duration) -> Vec<lector_store::Job> {
        let deadline = std::time::Instant::now() + within;
        loop {
            let left = self.state.store.unfinished_jobs().await.expect("unfinished jobs");
            if left.is_empty() || std::time::Instant::now() >= deadline {
                return left;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
    }

    /// Messages in the mail outbox addressed to `email`, oldest first, once every queued mail
    /// has been delivered (mail is a job).
    pub async fn mails_to(&self, email: &str) -> Vec<String> {
        let left = self.settle_jobs(std::time::Duration::from_secs(30)).await;
        assert!(
            left.iter()
                .all(|j| j.kind != lector_store::MAIL_JOB && j.kind != lector_store::PASSWORD_RESET_JOB),
            "mail still queued: {left:?}"
        );
        let outbox: PathBuf = self.data_dir.path().join("mail");
        let mut mails: Vec<(std::time::SystemTime, String)> = std::fs::read_dir(&outbox)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter_map(|e| {
                        let modified = e.metadata().ok()?.modified().ok()?;
                        Some((modified, std::fs::read_to_string(e.path()).ok()?))
                    })
                    .filter(|(_, text)| text.lines().any(|l| l.eq_ignore_ascii_case(&format!("to: {email}"))))
                    .collect()
            })
            .unwrap_or_default();
        mails.sort();
        mails.into_iter().map(|(_, text)| text).collect()
    }

    /// The token of the newest mail to `email`, waiting for queued mail to be delivered.
    pub async fn token_from_mail(&self, email: &str) -> String {
        let mails = self.mails_to(email).await;
        let last = mails.last().unwrap_or_else(|| panic!("no mail to {email}"));
        last.lines()
            .find_map(|l| l.strip_prefix("Token: "))
            .unwrap_or_else(|| panic!("no token in the mail: {last}"))
            .trim()
            .to_owned()
    }
}

/// How long a finished test's jobs may take to end before the test fails for leaving them.
pub const JOBS_SETTLE: std::time::Duration = std::time::Duration::from_secs(30);

impl TestApp {
    /// Sessions whose stored counts differ from their rows, as lines for a failure message (the
    /// teardown's check).
    fn miscounted_sessions(&self) -> Vec<String> {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return vec![];
        };
        if runtime.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
            return vec![];
        }
        tokio::task::block_in_place(|| runtime.block_on(self.state.store.miscounted_sessions()))
            .expect("sessions' counts")
    }

    /// The jobs still queued or running after `jobs_settle`, as lines for a failure message.
    /// Drop cannot await: this thread blocks while the runtime's other threads run the workers.
    fn jobs_left_behind(&self) -> Vec<String> {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return vec![];
        };
        if runtime.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
            return vec![];
        }
        let left = tokio::task::block_in_place(|| runtime.block_on(self.settle_jobs(self.jobs_settle)));
        left.iter()
            .map(|j| {
                format!(
                    "job {} {} {} (attempt {} of {}, error {:?})",
                    j.id,
                    j.kind,
                    j.state.as_str(),
                    j.attempts,
                    j.max_attempts,
                    j.error
                )
            })
            .collect()
    }
}

/// Like crates.io's test app, the teardown fails a test that leaves jobs queued or running:
/// every job a test starts must end within the test (wait for it). It also fails a test after
/// which a session's stored counts (documents, segments, marks) differ from its rows: every
/// write path the tests take keeps them.
impl Drop for TestApp {
    fn drop(&mut self) {
        let (left, miscounted) = if std::thread::panicking() {
            (vec![], vec![])
        } else {
            (self.jobs_left_behind(), self.miscounted_sessions())
        };
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(handle) = self.server.take() {
            handle.abort();
        }
        // The server stops before its database goes.
        self.database.take();
        assert!(
            left.is_empty(),
            "the test left jobs queued or running after {:?}:\n{}",
            self.jobs_settle,
            left.join("\n")
        );
        assert!(
            miscounted.is_empty(),
            "the counts kept on sessions' rows differ from their rows:\n{}",
            miscounted.join("\n")
        );
    }
}

/// Every file under `dir`, however deep (the blob store's, say).
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|e| {
            let path = e.path();
            if path.is_dir() { files_under(&path) } else { vec![path] }
        })
        .collect()
}
