//! The operation × actor matrix (issue 12, test 10): every operation of the served
//! `/openapi.json` is called by eight actors (anonymous, a user of another workspace, a
//! member of each of the five roles, a superuser) on the objects of one workspace, and the
//! observed allow or deny must equal the policy declared here for that operation (DESIGN.md
//! section 4). An operation the router serves and this table does not declare fails the test,
//! so a new route is covered the day it lands.
//!
//! Denied means 401, 403 or 404 (another workspace's objects are invisible); allowed means any
//! other answer but a server error (a 409 or 422 shows the request got past the policy). Bodies
//! are valid, so only the policy can refuse them. An operation that destroys its object (or
//! the caller's token) runs on a fresh object of its own, by the denied actors and then by the
//! least of the allowed ones.

use crate::common::tickets::labeled_tickets;
use crate::common::{Backend, Session, TestApp};
use reqwest::Method;
use serde_json::{Value, json};
use std::cell::Cell;
use std::collections::BTreeMap;

/// Hostile strings in every string field of every write (issue 12, test 12): the same status
/// and the same answer on SQLite and PostgreSQL, and never a server error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_strings_in_every_write_answer_alike_on_both_backends() {
    let Some(sqlite) = TestApp::start(Backend::Sqlite).await else {
        return;
    };
    let on_sqlite = hostile_writes(&sqlite).await;
    drop(sqlite);
    let Some(postgres) = TestApp::start(Backend::Postgres).await else {
        return;
    };
    let on_postgres = hostile_writes(&postgres).await;
    let mut differ = Vec::new();
    for (cell, answer) in &on_sqlite {
        let other = on_postgres.get(cell).map(String::as_str).unwrap_or("(not sent)");
        if answer != other {
            differ.push(format!("{cell}\n  sqlite:   {answer}\n  postgres: {other}"));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} hostile writes answer differently:\n{}",
        differ.len(),
        on_sqlite.len(),
        differ.join("\n")
    );
}

backend_tests!(every_operation_against_every_actor);

/// Who may call an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    /// Anyone, signed in or not.
    Anyone,
    /// Any signed-in user (it acts on what is the caller's own).
    Signed,
    /// Members of the workspace with at least this role (0 VIEWER … 4 ADMIN), and superusers.
    Role(usize),
    /// The user the path names, and superusers.
    Target,
    /// The user the object belongs to, alone (`/notifications/…` are the caller's own).
    Owner,
    /// Superusers only.
    Superuser,
}

const VIEWER: usize = 0;
const ANNOTATOR: usize = 1;
const USER: usize = 2;
const MANAGER: usize = 3;
const ADMIN: usize = 4;

/// What a request carries.
#[derive(Debug, Clone)]
enum Payload {
    Nothing,
    Json(Value),
    /// A multipart form: text fields, then a file (skipped when the name is empty).
    Form(Vec<(&'static str, String)>, &'static str, Vec<u8>),
}

impl Payload {
    /// The payload a refused caller sends: a form's file cut to its first KiB. A server that
    /// refuses before reading the body closes the connection while a large body is still
    /// being written (hyper does not linger), and the client then sees a broken pipe instead
    /// of the answer. The refusal must not depend on the file; a server that let the caller
    /// through would answer the cut file with a 4xx of its own, which the check reports.
    fn for_refused_caller(self) -> Self {
        match self {
            Payload::Form(fields, name, mut bytes) => {
                bytes.truncate(1024);
                Payload::Form(fields, name, bytes)
            }
            other => other,
        }
    }
}

/// An object made for one destructive operation.
#[derive(Debug, Clone, Copy)]
enum Fresh {
    Analysis,
    Model,
    Workspace,
    Credential,
    Invitation,
    Member,
    Project,
    Session,
    Tag,
    Class,
    Correction,
    CorrectionTag,
    Document,
    Group,
    Label,
    Key,
    Token,
    Workflow,
    TestAddress,
}

struct Spec {
    need: Need,
    payload: Payload,
    fresh: Option<Fresh>,
}

fn spec(need: Need, payload: Payload) -> Option<Spec> {
    Some(Spec {
        need,
        payload,
        fresh: None,
    })
}

fn destroys(need: Need, fresh: Fresh) -> Option<Spec> {
    Some(Spec {
        need,
        payload: Payload::Nothing,
        fresh: Some(fresh),
    })
}

thread_local! {
    /// Per test (a test's body runs on its own thread), so that a run on each backend makes
    /// the same names in the same order.
    static UNIQUE: Cell<usize> = const { Cell::new(0) };
}

/// A name no earlier call of this test used.
fn unique(prefix: &str) -> String {
    let n = UNIQUE.with(|u| u.replace(u.get() + 1));
    format!("{prefix}-{n}")
}

/// A complete connect form; its address is private, so an allowed caller gets the guard's 422
/// at once instead of a fetch.
fn connect_form(f: &Fixture) -> Payload {
    let fields = vec![
        ("credential_id", f.credential_id.to_string()),
        ("source", "http".to_owned()),
        (
            "parameters",
            json!({"url": "https://127.0.0.1:9/tickets.csv"}).to_string(),
        ),
    ];
    Payload::Form(fields, "", Vec::new())
}

fn csv(text: &str) -> Payload {
    Payload::Form(Vec::new(), "rows.csv", text.as_bytes().to_vec())
}

/// The declared policy of every operation, with a body that passes validation.
fn declared(op: &str, f: &Fixture) -> Option<Spec> {
    use Need::*;
    use Payload::{Json, Nothing};
    let text = || json!([{"text": "My invoice is wrong."}]);
    match op {
        // Signed-out operations and the service's own documents.
        "health" | "info" | "openapi" => spec(Anyone, Nothing),
        "metrics" => spec(Superuser, Nothing),
        "login" => spec(
            Anyone,
            Json(json!({"email": f.admin.email, "password": "password-123"})),
        ),
        "register" => spec(
            Anyone,
            Json(json!({"email": format!("{}@example.org", unique("new")), "password": "password-123"})),
        ),
        "send_password_reset_email" => spec(Anyone, Json(json!({"email": "nobody@example.org"}))),
        "reset_password" => spec(
            Anyone,
            Json(json!({"reset_password_token": "not-a-token", "password": "password-456"})),
        ),
        "accept_invitation" => spec(
            Anyone,
            Json(json!({"token": "not-a-token", "password": "password-456"})),
        ),
        // What every signed-in user has of their own.
        "auth_status" | "list_workspaces" | "list_projects" | "list_models" | "list_analyses"
        | "list_notifications" | "list_types" => spec(Signed, Nothing),
        "logout" => destroys(Signed, Fresh::Token),
        "create_workspace" => spec(Signed, Json(json!({"name": unique("Workspace")}))),
        "upload_analysis_file" => spec(Signed, csv("text\nMy invoice is wrong.\n")),
        // The workspace.
        "get_workspace" | "list_members" | "list_workspace_models" | "download_workspace_model" => {
            spec(Role(VIEWER), Nothing)
        }
        "set_default_workspace" => spec(Role(VIEWER), Json(json!({"default": false}))),
        "update_workspace" => spec(Role(ADMIN), Json(json!({"name": f.workspace_name}))),
        "deactivate_workspace" => destroys(Role(ADMIN), Fresh::Workspace),
        // Members see the credentials' names (never their secrets): USERs connect sources with them.
        "list_credentials" => spec(Role(VIEWER), Nothing),
        "create_credential" => spec(
            Role(MANAGER),
            Json(
                json!({"name": unique("site"), "source": "http", "secret": {"headers": {"X-Key": "k"}, "base_url": "https://127.0.0.1:9"}}),
            ),
        ),
        "delete_credential" => destroys(Role(MANAGER), Fresh::Credential),
        "list_invitations" => spec(Role(MANAGER), Nothing),
        "invite_users" => spec(
            Role(MANAGER),
            Json(json!({"role": "VIEWER", "emails": [format!("{}@example.org", unique("invitee"))]})),
        ),
        "resend_invitation" => spec(Role(MANAGER), Nothing),
        "cancel_invitation" => destroys(Role(MANAGER), Fresh::Invitation),
        "add_workspace_member" => spec(
            Role(MANAGER),
            Json(json!({"role": "VIEWER", "user_id": f.spare.user_id})),
        ),
        "update_member_role" => spec(Role(MANAGER), Json(json!({"role": "VIEWER"}))),
        "remove_member" => destroys(Role(MANAGER), Fresh::Member),
        // Projects, classes and labels.
        "create_project" => spec(
            Role(MANAGER),
            Json(json!({"name": unique("Project"), "type": "CLASS", "organization_id": f.workspace_id})),
        ),
        "get_project"
        | "list_project_analyses"
        | "list_classes"
        | "download_classes"
        | "get_class"
        | "list_labels"
        | "download_labels"
        | "get_label"
        | "get_project_task" => spec(Role(VIEWER), Nothing),
        "update_project" => spec(Role(MANAGER), Json(json!({"name": f.project_name}))),
        "delete_project" => destroys(Role(MANAGER), Fresh::Project),
        "clone_project" => spec(Role(MANAGER), Json(json!({"name": unique("Clone")}))),
        "transfer_project" => spec(Role(MANAGER), Json(json!({"organization_id": f.workspace_id}))),
        "add_class" => spec(Role(MANAGER), Json(json!({"name": unique("class")}))),
        "add_classes" => spec(Role(MANAGER), Json(json!([{"name": unique("class")}]))),
        "upload_classes_file" => spec(Role(MANAGER), csv(&format!("name\n{}\n", unique("class")))),
        "update_class" => spec(Role(MANAGER), Json(json!({"name": "billing"}))),
        "delete_class" => destroys(Role(MANAGER), Fresh::Class),
        "add_label" => spec(Role(MANAGER), Json(json!({"name": unique("label")}))),
        "update_label" | "update_label_by_name" => spec(Role(MANAGER), Json(json!({"name": "urgent"}))),
        "delete_label" => destroys(Role(MANAGER), Fresh::Label),
        // Documents and groups.
        "list_documents"
        | "get_document"
        | "list_groups"
        | "get_group"
        | "list_group_documents"
        | "get_group_document"
        | "download_group" => spec(Role(VIEWER), Nothing),
        "create_document" => spec(Role(USER), Json(json!({"text": "My parcel is late."}))),
        // It splits the document again, so it changes a document of its own.
        "update_document" => Some(Spec {
            need: Role(USER),
            payload: Json(json!({"text": "My invoice is wrong."})),
            fresh: Some(Fresh::Document),
        }),
        "delete_document" => destroys(Role(USER), Fresh::Document),
        "upload_documents" => spec(Role(USER), Json(text())),
        "create_group" => spec(Role(USER), Json(json!({"name": unique("group"), "documents": text()}))),
        "update_group" => spec(Role(USER), Json(json!({"name": "Tickets group"}))),
        "delete_group" => destroys(Role(USER), Fresh::Group),
        "upload_group_file" => spec(Role(USER), csv("text\nMy invoice is wrong.\n")),
        "connect_group_source" => spec(Role(USER), connect_form(f)),
        // Labeling.
        "list_labeling_sessions"
        | "download_labeling_sessions"
        | "get_labeling_session"
        | "list_labeling_session_documents"
        | "get_labeling_session_document"
        | "list_segment_tags"
        | "download_labeling_session" => spec(Role(VIEWER), Nothing),
        "create_labeling_session" => spec(
            Role(USER),
            Json(json!({"name": unique("session"), "documents": text()})),
        ),
        "update_labeling_session" => spec(Role(USER), Json(json!({"name": "Tickets"}))),
        "delete_labeling_session" => destroys(Role(USER), Fresh::Session),
        "upload_labeling_file" => spec(Role(USER), csv("text,class\nMy invoice is wrong.,billing\n")),
        "connect_labeling_source" => spec(Role(USER), connect_form(f)),
        "mark_page_annotated" | "mark_segment_annotated" | "mark_document_annotated" | "mark_segment_corrected" => {
            spec(Role(ANNOTATOR), Json(json!({"name": "ANNOTATED"})))
        }
        "add_segment_tag" | "add_correction_tag" => spec(Role(ANNOTATOR), Json(json!({"class": "login"}))),
        "update_segment_tag" | "update_correction_tag" => spec(Role(ANNOTATOR), Json(json!({"class": "billing"}))),
        "delete_segment_tag" => destroys(Role(ANNOTATOR), Fresh::Tag),
        "delete_correction_tag" => destroys(Role(ANNOTATOR), Fresh::CorrectionTag),
        "confirm_correction_tag" => spec(Role(ANNOTATOR), Json(json!({"status": "READY"}))),
        // Correction sessions.
        "list_correction_sessions" | "get_correction_session" | "list_correction_session_documents" => {
            spec(Role(VIEWER), Nothing)
        }
        "create_correction_session" => spec(
            Role(USER),
            Json(json!({"model_id": f.model_id, "sample_size": 2, "name": unique("check")})),
        ),
        "delete_correction_session" => destroys(Role(USER), Fresh::Correction),
        // Models.
        "get_model"
        | "list_model_analyses"
        | "download_model"
        | "list_project_models"
        | "get_project_model"
        | "download_project_model" => spec(Role(VIEWER), Nothing),
        "star_model" | "unstar_model" => spec(Role(VIEWER), Nothing),
        "train_model" => spec(Role(USER), Json(json!({"name": unique("model")}))),
        "update_model" | "update_project_model" => spec(Role(MANAGER), Json(json!({"display_name": "Tickets"}))),
        "delete_model" | "delete_project_model" => destroys(Role(MANAGER), Fresh::Model),
        "upload_model" => spec(
            Role(MANAGER),
            Payload::Form(
                vec![
                    ("organization", f.workspace_id.to_string()),
                    ("display_name", unique("Uploaded")),
                ],
                "model.lector-model",
                f.model_bytes.clone(),
            ),
        ),
        // Analyses.
        "get_analysis" | "list_analysis_documents" | "download_analysis_documents" => spec(Role(VIEWER), Nothing),
        "analyze" => spec(Role(USER), Json(json!({"model_id": f.model_id, "documents": text()}))),
        "create_analysis" => spec(
            Role(USER),
            Json(json!({"model_id": f.model_id, "name": unique("analysis"), "documents": text()})),
        ),
        "update_analysis" => spec(Role(USER), Json(json!({"name": "Tickets analysis"}))),
        // HITL: configurations need MANAGER, reviews are seen by members and submitted by an
        // ANNOTATOR (once: later callers the policy lets through get 409).
        "list_hitls" | "get_hitl" | "list_hitl_reviews" | "get_hitl_review" => spec(Role(VIEWER), Nothing),
        "create_hitl" => spec(Role(MANAGER), Json(json!({"name": unique("hitl")}))),
        "update_hitl" | "assign_hitl" => spec(Role(MANAGER), Json(json!({"name": "Matrix check", "is_live": true}))),
        "submit_hitl_review" => spec(Role(ANNOTATOR), Json(json!({"status": "approved", "values": {}}))),
        // Extraction: the fixture's model tags classes, so a caller the policy lets through
        // is answered 409 (an extraction takes a LABEL model) before the file is read.
        "extract" => spec(
            Role(USER),
            Payload::Form(
                vec![],
                "invoice.pdf",
                lector_extract::samples::text_pdf(&[vec![lector_extract::samples::TextRun::new(
                    50.0,
                    80.0,
                    12.0,
                    "Total 1,00 €",
                )]]),
            ),
        ),
        "delete_analysis" => destroys(Role(USER), Fresh::Analysis),
        // Workflows: members read them, USERs change them; their addresses are public (the
        // fixture's hook workflow is active and answers at once; a test address serves one call).
        "list_workflows" => spec(Signed, Nothing),
        "get_workflow" | "list_workflow_executions" => spec(Role(VIEWER), Nothing),
        "create_workflow" => spec(
            Role(USER),
            Json(json!({"name": unique("Flow"), "organization_id": f.workspace_id,
                "trigger": {"path": unique("matrix/new")}})),
        ),
        "update_workflow" => spec(
            Role(USER),
            Json(
                json!({"name": "Matrix flow", "trigger": {"path": "matrix/flow", "http_method": "POST"},
                "steps": [{"type": "set", "fields": [{"name": "seen", "value": true}]}]}),
            ),
        ),
        "activate_workflow" | "deactivate_workflow" | "listen_workflow_test" => spec(Role(USER), Nothing),
        "delete_workflow" => destroys(Role(USER), Fresh::Workflow),
        "webhook_production" => spec(Anyone, Json(json!({"text": "My invoice is wrong."}))),
        "webhook_test" => Some(Spec {
            need: Anyone,
            payload: Json(json!({"text": "My invoice is wrong."})),
            fresh: Some(Fresh::TestAddress),
        }),
        // Users: the USER member is the target of these paths.
        "get_user"
        | "list_product_keys"
        | "list_user_notifications"
        | "get_user_notification"
        | "get_user_permissions" => spec(Target, Nothing),
        "get_notification" => spec(Owner, Nothing),
        "update_user" => spec(Target, Json(json!({"first_name": "Uma"}))),
        "create_product_key" => spec(Target, Json(json!({"name": unique("key")}))),
        "delete_product_key" => destroys(Target, Fresh::Key),
        "update_user_notification" => spec(Target, Json(json!({"read": "2026-11-24T00:00:00Z"}))),
        "update_notification" => spec(Owner, Json(json!({"read": "2026-11-24T00:00:00Z"}))),
        "create_user" => spec(
            Superuser,
            Json(json!({"email": format!("{}@example.org", unique("made")), "password": "password-123"})),
        ),
        "update_user_permissions" => spec(Superuser, Json(json!({"is_betauser": true}))),
        _ => None,
    }
}

/// The actors, least powerful first.
#[derive(Debug, Clone)]
struct Actor {
    name: &'static str,
    session: Option<Session>,
    /// The role in the workspace (VIEWER … ADMIN), if a member.
    role: Option<usize>,
    superuser: bool,
    /// The user the `/users/{user_id}` paths name.
    target: bool,
}

impl Actor {
    fn allowed(&self, need: Need) -> bool {
        match need {
            Need::Anyone => true,
            Need::Signed => self.session.is_some(),
            Need::Role(min) => self.superuser || self.role.is_some_and(|r| r >= min),
            Need::Target => self.superuser || self.target,
            Need::Owner => self.target,
            Need::Superuser => self.superuser,
        }
    }
}

/// The workspace and its objects, each of which the path parameters can name.
struct Fixture {
    admin: Session,
    /// A user who shares a workspace (not this one) with the admin and the manager, added as a
    /// member by `add_workspace_member` (users one shares no workspace with are not).
    spare: Session,
    workspace_id: i64,
    workspace_name: String,
    project_name: String,
    credential_id: i64,
    model_id: i64,
    model_bytes: Vec<u8>,
    /// Path parameter name → value.
    params: BTreeMap<&'static str, String>,
    /// The document, segment and tag of the correction session, and the document of the group,
    /// for the paths under them.
    correction: BTreeMap<&'static str, String>,
    group_document: String,
}

impl Fixture {
    /// The parameters for a path: the correction's document, segment and tag under
    /// `/corrections/…`, the group's document under `/groups/…/documents`.
    fn params_for(&self, template: &str, base: &BTreeMap<&'static str, String>) -> BTreeMap<&'static str, String> {
        let mut params = base.clone();
        if template.contains("/corrections/{correction_id}/documents/") {
            params.extend(self.correction.clone());
        }
        if template.contains("/groups/{group_id}/documents/") {
            params.insert("document_id", self.group_document.clone());
        }
        params
    }
}

async fn every_operation_against_every_actor(app: TestApp) {
    let (fixture, actors) = build(&app).await;
    let operations = served_operations(&app).await;
    let undeclared: Vec<&str> = operations
        .iter()
        .filter(|(op, _, _)| declared(op, &fixture).is_none())
        .map(|(op, _, _)| op.as_str())
        .collect();
    assert!(
        undeclared.is_empty(),
        "operations without a declared policy: {undeclared:?}"
    );
    let mut wrong = Vec::new();
    let (mut later, mut cells) = (Vec::new(), 0);
    for (op, method, template) in &operations {
        let spec = declared(op, &fixture).unwrap();
        if spec.fresh.is_some() {
            later.push((op, method, template));
            continue;
        }
        for actor in &actors {
            let spec = declared(op, &fixture).unwrap();
            let path = fill(template, &fixture.params_for(template, &fixture.params));
            cells += 1;
            check(&app, actor, op, method, &path, spec, &mut wrong).await;
        }
    }
    // Logout last of all: it ends the token of the actor it is allowed for.
    later.sort_by_key(|(op, _, _)| op.as_str() == "logout");
    for (op, method, template) in later {
        let spec = declared(op, &fixture).unwrap();
        let fresh = spec.fresh.unwrap();
        let mut params = fixture.params_for(template, &fixture.params);
        let first_allowed = actors.iter().position(|a| a.allowed(spec.need)).unwrap();
        for actor in &actors[..=first_allowed] {
            let spec = declared(op, &fixture).unwrap();
            if actor.allowed(spec.need) || !params.contains_key("fresh") {
                // A new object for the allowed actor (and one made once for the denied ones).
                make_fresh(&app, &fixture, &actors, fresh, &mut params).await;
            }
            let path = fill(template, &params);
            cells += 1;
            check(&app, actor, op, method, &path, spec, &mut wrong).await;
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {cells} cells differ from the declared policy:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    app.settle_jobs(std::time::Duration::from_secs(60)).await;
}

/// Calls one cell and records it when the answer differs from the policy.
async fn check(
    app: &TestApp,
    actor: &Actor,
    op: &str,
    method: &Method,
    path: &str,
    spec: Spec,
    wrong: &mut Vec<String>,
) {
    let token = actor.session.as_ref().map(|s| s.token.as_str());
    let expected = actor.allowed(spec.need);
    let payload = if expected {
        spec.payload
    } else {
        spec.payload.for_refused_caller()
    };
    let (status, body) = send(app, method, path, token, payload).await;
    // A 401 `invalid_credentials` answers a token in the body, not the caller.
    let refused_caller = status == 403 || (status == 401 && !body.contains("\"invalid_credentials\""));
    let denied = refused_caller || status == 404;
    let fine = if status >= 500 {
        false
    } else if spec.need == Need::Anyone {
        // Signed-out operations refuse bad tokens and unknown addresses with 4xx of their own.
        !refused_caller
    } else {
        expected != denied
    };
    if !fine {
        let verdict = if expected { "allowed" } else { "denied" };
        let body: String = body.chars().take(160).collect();
        wrong.push(format!(
            "{op} {method} {path} as {}: expected {verdict}, got {status} {body}",
            actor.name
        ));
    }
}

async fn send(app: &TestApp, method: &Method, path: &str, token: Option<&str>, payload: Payload) -> (u16, String) {
    let mut request = app.client.request(method.clone(), app.url(path));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request = match payload {
        Payload::Nothing if *method == Method::POST || *method == Method::PUT => request.json(&json!({})),
        Payload::Nothing => request,
        Payload::Json(body) => request.json(&body),
        Payload::Form(fields, file_name, bytes) => {
            let (content_type, body) = crate::common::multipart(&fields, file_name, &bytes);
            request.header("content-type", content_type).body(body)
        }
    };
    let response = request.send().await.expect("an answer");
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

/// (operationId, method, path template) of every operation the server documents.
async fn served_operations(app: &TestApp) -> Vec<(String, Method, String)> {
    let document = app.call(Method::GET, "/openapi.json", None, None).await.expect(200);
    let mut operations = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let Ok(method) = method.to_uppercase().parse::<Method>() else {
                continue;
            };
            if let Some(id) = operation["operationId"].as_str() {
                operations.push((id.to_owned(), method, path.clone()));
            }
        }
    }
    operations.sort();
    operations
}

fn fill(template: &str, params: &BTreeMap<&'static str, String>) -> String {
    let mut path = template.to_owned();
    for (name, value) in params {
        path = path.replace(&format!("{{{name}}}"), value);
    }
    assert!(!path.contains('{'), "no value for a parameter of {template}");
    path
}

/// The first item of a listing, bare or wrapped in an object (`{"documents": [...]}`).
fn first(listing: &Value) -> Value {
    let items = listing.as_array().or_else(|| {
        ["documents", "notifications", "models"]
            .iter()
            .find_map(|key| listing[key].as_array())
    });
    items
        .and_then(|items| items.first())
        .cloned()
        .unwrap_or_else(|| panic!("an empty listing: {listing}"))
}

/// A document of a correction listing, a segment the model tagged in it, and that tag.
fn tagged_segment(listing: &Value) -> (Value, Value, Value) {
    listing["documents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|d| d["segments"].as_array().unwrap().iter().map(move |s| (d, s)))
        .find_map(|(d, s)| s["tags"].as_array()?.first().map(|t| (d.clone(), s.clone(), t.clone())))
        .unwrap_or_else(|| panic!("no tagged segment in {listing}"))
}

fn id(value: &Value) -> String {
    value["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("no id in {value}"))
        .to_string()
}

/// Sets up the workspace, its members and one of every object.
async fn build(app: &TestApp) -> (Fixture, Vec<Actor>) {
    UNIQUE.with(|u| u.set(0));
    let admin = app.register("admin@example.org").await;
    let outsider = app.register("outsider@example.org").await;
    let spare = app.register("spare@example.org").await;
    let root = app.superuser("root@example.org").await;
    let workspace_id = app.workspace(&admin, "Matrix").await;
    let org = format!("/organizations/{workspace_id}");
    let mut members = Vec::new();
    for (role, name) in [
        ("VIEWER", "viewer"),
        ("ANNOTATOR", "annotator"),
        ("USER", "user"),
        ("MANAGER", "manager"),
    ] {
        let member = app.register(&format!("{name}@example.org")).await;
        let added = app
            .add_member(&admin.token, workspace_id, member.user_id, role)
            .await
            .expect(200);
        members.push((member, added));
    }
    let lobby = app.workspace(&admin, "Lobby").await;
    for user_id in [spare.user_id, members[MANAGER].0.user_id] {
        app.add_member(&admin.token, lobby, user_id, "VIEWER").await.expect(200);
    }
    app.post(&format!("{org}/default"), &admin.token, json!({"default": true}))
        .await
        .expect(200);
    let (project, session) = labeled_tickets(app, &admin, "Tickets").await;
    let p = format!("/projects/{project}");
    let user = members[USER].0.clone();
    let model = app.train_model(&user, project, json!({"name": "Tickets v1"})).await;
    let (_, _, model_bytes) = app
        .download(&admin.token, &format!("/models/{}/download", model["id"]))
        .await;
    let documents = app
        .get(
            &format!("{p}/annotations/{session}/documents?details=segments"),
            &admin.token,
        )
        .await
        .expect(200);
    let document = first(&documents);
    let segment = document["segments"][0].clone();
    let tags_path = format!(
        "{p}/annotations/{session}/documents/{}/segments/{}/tags",
        id(&document),
        id(&segment)
    );
    let tag = first(&app.get(&tags_path, &admin.token).await.expect(200));
    let group = app
        .post(
            &format!("{p}/groups"),
            &user.token,
            json!({"name": "Group", "documents": [{"text": "A parcel."}]}),
        )
        .await
        .expect(201);
    let group_document = first(
        &app.get(&format!("{p}/groups/{}/documents", id(&group)), &admin.token)
            .await
            .expect(200),
    );
    let label = app
        .post(&format!("{p}/labels"), &admin.token, json!({"name": "urgent"}))
        .await
        .expect(201);
    let class = first(&app.get(&format!("{p}/classes"), &admin.token).await.expect(200));
    let analysis = app
        .post(
            "/analyses",
            &user.token,
            json!({"model_id": model["id"], "name": "Analysis", "documents": [{"text": "A bill."}]}),
        )
        .await
        .expect(201);
    let correction = app
        .correction(&user.token, project, json!({"model_id": model["id"], "sample_size": 3}))
        .await;
    let listing = app
        .get(
            &format!("{p}/corrections/{}/documents?details=tags", id(&correction)),
            &admin.token,
        )
        .await
        .expect(200);
    let (corrected, corrected_segment, correction_tag) = tagged_segment(&listing);
    let credential = app
        .post(
            &format!("{org}/credentials"),
            &admin.token,
            json!({"name": "site", "source": "http", "secret": {"headers": {"X-Key": "k"}, "base_url": "https://127.0.0.1:9"}}),
        )
        .await
        .expect(201);
    let invitation = app
        .invite(&admin.token, workspace_id, "VIEWER", ["guest@example.org"])
        .await
        .expect(200)["invitations"][0]
        .clone();
    let key = app
        .post(
            &format!("/users/{}/keys", user.user_id),
            &user.token,
            json!({"name": "ci"}),
        )
        .await
        .expect(201);
    let notification = app.get("/notifications", &user.token).await.expect(200);
    let notification = first(&notification);
    let viewer_membership = &members[VIEWER].1;
    // A HITL configuration of the project, and a review of it (reviews come from extractions
    // with a LABEL model, which this CLASS project has not; the store makes this one directly).
    // Nobody is assigned, so the review waits for nobody: any ANNOTATOR may submit it (one
    // waiting for a user is theirs or a MANAGER's, `hitls.rs`).
    let hitl = app
        .post(
            &format!("{p}/hitls"),
            &admin.token,
            json!({"name": "Matrix check", "is_live": true}),
        )
        .await
        .expect(201);
    let workflow = app
        .post(
            "/workflows",
            &admin.token,
            json!({"name": "Matrix flow", "organization_id": workspace_id, "trigger": {"path": "matrix/flow"}}),
        )
        .await
        .expect(201);
    let hook = app
        .post(
            "/workflows",
            &admin.token,
            json!({"name": "Matrix hook", "organization_id": workspace_id,
                "trigger": {"path": "matrix/hook", "http_method": "POST"}}),
        )
        .await
        .expect(201);
    app.post(&format!("/workflows/{}/activate", id(&hook)), &admin.token, json!({}))
        .await
        .expect(200);
    let everywhere = lector_core::Scope {
        user_id: admin.user_id,
        is_superuser: true,
        workspaces: Vec::new(),
    };
    let stored = app
        .state
        .store
        .hitl(
            &everywhere,
            project,
            hitl["id"].as_i64().unwrap(),
            lector_core::Action::Read,
        )
        .await
        .expect("the HITL");
    let review = app
        .state
        .store
        .create_review(
            &stored,
            &lector_store::NewReview {
                document_name: "invoice.pdf".into(),
                page_num: 1,
                label: Some("total".into()),
                confidence_threshold: Some(0.9),
                extracted: json!({"matches": []}),
                pages: None,
            },
        )
        .await
        .expect("a review");

    let mut params = BTreeMap::new();
    params.insert("organization", workspace_id.to_string());
    params.insert("project_id", project.to_string());
    params.insert("annotation_id", session.to_string());
    params.insert("document_id", id(&document));
    params.insert("segment_id", id(&segment));
    params.insert("tag_id", id(&tag));
    params.insert("page", "0".to_owned());
    params.insert("group_id", id(&group));
    params.insert("class_id", id(&class));
    params.insert("label_id", id(&label));
    params.insert("name", "urgent".to_owned());
    params.insert("model_id", id(&model));
    params.insert("model", id(&model));
    params.insert("task_id", model["task_id"].as_i64().unwrap().to_string());
    params.insert("analysis_id", id(&analysis));
    params.insert("correction_id", id(&correction));
    params.insert("credential_id", id(&credential));
    params.insert("invitation_id", id(&invitation));
    params.insert("permission_id", id(viewer_membership));
    params.insert("user_id", user.user_id.to_string());
    params.insert("key_id", id(&key));
    params.insert("notification_id", id(&notification));
    params.insert("hitl_id", id(&hitl));
    params.insert("review_id", review.id.to_string());
    params.insert("workflow_id", id(&workflow));
    params.insert("path", "matrix/hook".to_owned());
    params.insert("hook_id", id(&hook));
    let mut correction_params = BTreeMap::new();
    correction_params.insert("document_id", id(&corrected));
    correction_params.insert("segment_id", id(&corrected_segment));
    correction_params.insert("tag_id", id(&correction_tag));
    let fixture = Fixture {
        correction: correction_params,
        group_document: id(&group_document),
        spare,
        workspace_id,
        workspace_name: "Matrix".into(),
        project_name: "Tickets".into(),
        credential_id: credential["id"].as_i64().unwrap(),
        model_id: model["id"].as_i64().unwrap(),
        model_bytes,
        params,
        admin: admin.clone(),
    };
    let mut actors = vec![
        Actor {
            name: "anonymous",
            session: None,
            role: None,
            superuser: false,
            target: false,
        },
        Actor {
            name: "outsider",
            session: Some(outsider),
            role: None,
            superuser: false,
            target: false,
        },
    ];
    for (role, (member, _)) in members.into_iter().enumerate() {
        actors.push(Actor {
            name: ["VIEWER", "ANNOTATOR", "USER", "MANAGER"][role],
            target: role == USER,
            session: Some(member),
            role: Some(role),
            superuser: false,
        });
    }
    actors.push(Actor {
        name: "ADMIN",
        session: Some(admin),
        role: Some(ADMIN),
        superuser: false,
        target: false,
    });
    actors.push(Actor {
        name: "superuser",
        session: Some(root),
        role: None,
        superuser: true,
        target: false,
    });
    (fixture, actors)
}

/// Creates an object (201) and answers its id.
async fn made(app: &TestApp, path: &str, token: &str, body: Value) -> String {
    id(&app.post(path, token, body).await.expect(201))
}

/// Makes the object a destructive operation destroys, and points the parameters at it.
async fn make_fresh(
    app: &TestApp,
    f: &Fixture,
    actors: &[Actor],
    fresh: Fresh,
    params: &mut BTreeMap<&'static str, String>,
) {
    let admin = &f.admin.token;
    let p = format!("/projects/{}", f.params["project_id"]);
    let org = format!("/organizations/{}", f.workspace_id);
    params.insert("fresh", "yes".into());
    match fresh {
        Fresh::Analysis => {
            params.insert(
                "analysis_id",
                made(
                    app,
                    "/analyses",
                    admin,
                    json!({"model_id": f.model_id, "name": unique("a"), "documents": [{"text": "x"}]}),
                )
                .await,
            );
        }
        Fresh::Model => {
            let made = app
                .upload_model(
                    admin,
                    &f.model_bytes,
                    &[("project_id", &f.params["project_id"]), ("display_name", &unique("m"))],
                )
                .await
                .expect(200);
            params.insert("model_id", id(&made));
        }
        Fresh::Workspace => {
            let made = app.workspace(&f.admin, &unique("Team")).await;
            for actor in actors.iter().filter(|a| a.role.is_some_and(|r| r < ADMIN)) {
                let user_id = actor.session.as_ref().unwrap().user_id;
                app.add_member(admin, made, user_id, actor.name).await.expect(200);
            }
            params.insert("organization", made.to_string());
        }
        Fresh::Credential => {
            params.insert(
                "credential_id",
                made(
                    app,
                    &format!("{org}/credentials"),
                    admin,
                    json!({"name": unique("c"), "source": "http", "secret": {"headers": {"X-Key": "k"}, "base_url": "https://127.0.0.1:9"}}),
                )
                .await,
            );
        }
        Fresh::Invitation => {
            let email = format!("{}@example.org", unique("i"));
            let made = app.invite(admin, f.workspace_id, "VIEWER", [email]).await.expect(200);
            params.insert("invitation_id", id(&made["invitations"][0]));
        }
        Fresh::Member => {
            let member = app.register(&format!("{}@example.org", unique("m"))).await;
            let made = app
                .add_member(admin, f.workspace_id, member.user_id, "VIEWER")
                .await
                .expect(200);
            params.insert("permission_id", id(&made));
        }
        Fresh::Project => {
            params.insert(
                "project_id",
                made(
                    app,
                    "/projects",
                    admin,
                    json!({"name": unique("P"), "type": "CLASS", "organization_id": f.workspace_id}),
                )
                .await,
            );
        }
        Fresh::Session => {
            params.insert(
                "annotation_id",
                made(
                    app,
                    &format!("{p}/annotations"),
                    admin,
                    json!({"name": unique("s"), "documents": [{"text": "x"}]}),
                )
                .await,
            );
        }
        Fresh::Tag => {
            // A session of its own with one tagged segment.
            let made = app
                .post(
                    &format!("{p}/annotations"),
                    admin,
                    json!({"name": unique("s"), "documents": [{"text": "x", "tags": [{"class": "billing"}]}]}),
                )
                .await
                .expect(201);
            let documents = app
                .get(
                    &format!("{p}/annotations/{}/documents?details=segments", id(&made)),
                    admin,
                )
                .await
                .expect(200);
            let document = first(&documents);
            let segment = document["segments"][0].clone();
            let path = format!(
                "{p}/annotations/{}/documents/{}/segments/{}/tags",
                id(&made),
                id(&document),
                id(&segment)
            );
            let tag = first(&app.get(&path, admin).await.expect(200));
            params.insert("annotation_id", id(&made));
            params.insert("document_id", id(&document));
            params.insert("segment_id", id(&segment));
            params.insert("tag_id", id(&tag));
        }
        Fresh::Class => {
            params.insert(
                "class_id",
                made(app, &format!("{p}/classes"), admin, json!({"name": unique("c")})).await,
            );
        }
        Fresh::Label => {
            params.insert(
                "label_id",
                made(app, &format!("{p}/labels"), admin, json!({"name": unique("l")})).await,
            );
        }
        Fresh::Correction => {
            params.insert(
                "correction_id",
                made(
                    app,
                    &format!("{p}/corrections"),
                    admin,
                    json!({"model_id": f.model_id, "sample_size": 2}),
                )
                .await,
            );
        }
        Fresh::CorrectionTag => {
            // A correction session of its own, and a tag the model gave.
            let made = app
                .correction(
                    admin,
                    f.params["project_id"].parse().unwrap(),
                    json!({"model_id": f.model_id, "sample_size": 3}),
                )
                .await;
            let listing = app
                .get(&format!("{p}/corrections/{}/documents?details=tags", id(&made)), admin)
                .await
                .expect(200);
            let document = first(&listing);
            let segment = document["segments"][0].clone();
            let tag = match segment["tags"].as_array().and_then(|t| t.first()) {
                Some(tag) => tag.clone(),
                None => app
                    .post(
                        &format!(
                            "{p}/corrections/{}/documents/{}/segments/{}/tags",
                            id(&made),
                            id(&document),
                            id(&segment)
                        ),
                        admin,
                        json!({"class": "billing"}),
                    )
                    .await
                    .expect(201)["tag"]
                    .clone(),
            };
            params.insert("correction_id", id(&made));
            params.insert("document_id", id(&document));
            params.insert("segment_id", id(&segment));
            params.insert("tag_id", id(&tag));
        }
        Fresh::Document => {
            params.insert(
                "document_id",
                made(app, &format!("{p}/documents"), admin, json!({"text": "x"})).await,
            );
        }
        Fresh::Group => {
            params.insert(
                "group_id",
                made(
                    app,
                    &format!("{p}/groups"),
                    admin,
                    json!({"name": unique("g"), "documents": [{"text": "x"}]}),
                )
                .await,
            );
        }
        Fresh::Key => {
            let user = actors.iter().find(|a| a.target).unwrap().session.as_ref().unwrap();
            params.insert(
                "key_id",
                made(
                    app,
                    &format!("/users/{}/keys", user.user_id),
                    &user.token,
                    json!({"name": unique("k")}),
                )
                .await,
            );
        }
        Fresh::Token => {}
        Fresh::Workflow => {
            params.insert(
                "workflow_id",
                made(
                    app,
                    "/workflows",
                    admin,
                    json!({"name": unique("Doomed"), "organization_id": f.workspace_id,
                        "trigger": {"path": unique("matrix/doomed")}}),
                )
                .await,
            );
        }
        Fresh::TestAddress => {
            app.post(&format!("/workflows/{}/test", f.params["hook_id"]), admin, json!({}))
                .await
                .expect(200);
        }
    }
}

/// The strings every write field gets: controls, direction overrides, a lone surrogate (sent
/// as its JSON escape), 10,000 characters, emoji and combining marks.
const HOSTILE: [(&str, &str); 9] = [
    ("nul", "a\u{0}b"),
    ("bidi override", "\u{202E}gnp.exe"),
    ("c1 control", "a\u{85}b"),
    ("escape", "a\u{1b}[31mb"),
    ("newline", "a\nb"),
    ("lone surrogate", LONE_SURROGATE),
    ("emoji", "\u{1F600}\u{1F469}\u{200D}\u{1F467}"),
    ("combining", "e\u{301}\u{308}z"),
    ("long", ""),
];

/// Stands for the JSON text `"a\ud800b"`, which no Rust string holds.
const LONE_SURROGATE: &str = "\u{E000}lone-surrogate\u{E000}";

/// Every write with a JSON body, each of its string fields set to each hostile string, sent
/// by the least actor the policy allows; answers cell → status and answer with ids, times and
/// tokens masked. A server error fails at once.
async fn hostile_writes(app: &TestApp) -> BTreeMap<String, String> {
    let (fixture, actors) = build(app).await;
    let mut answers = BTreeMap::new();
    for (op, method, template) in served_operations(app).await {
        let Some(Spec {
            need,
            payload: Payload::Json(body),
            fresh: None,
        }) = declared(&op, &fixture)
        else {
            continue;
        };
        let actor = actors.iter().find(|a| a.allowed(need)).unwrap();
        let token = actor.session.as_ref().map(|s| s.token.clone());
        let path = fill(&template, &fixture.params_for(&template, &fixture.params));
        for field in string_fields(&body, "") {
            for (name, text) in HOSTILE {
                let long = "n".repeat(10_000);
                let text = if name == "long" { long.as_str() } else { text };
                let raw = with_field(&body, &field, text);
                let mut request = app
                    .client
                    .request(method.clone(), app.url(&path))
                    .header("content-type", "application/json")
                    .body(raw);
                if let Some(token) = &token {
                    request = request.bearer_auth(token);
                }
                let response = request.send().await.expect("an answer");
                let status = response.status().as_u16();
                let text = response.text().await.unwrap_or_default();
                assert!(status < 500, "{op} {field}={name}: {status} {text}");
                answers.insert(format!("{op} {field}={name}"), format!("{status} {}", masked(&text)));
            }
        }
    }
    app.settle_jobs(std::time::Duration::from_secs(60)).await;
    answers
}

/// The paths of a body's string fields (`name`, `documents[0].text`).
fn string_fields(value: &Value, at: &str) -> Vec<String> {
    match value {
        Value::String(_) => vec![at.to_owned()],
        Value::Object(map) => map
            .iter()
            .flat_map(|(key, v)| {
                let path = if at.is_empty() {
                    key.clone()
                } else {
                    format!("{at}.{key}")
                };
                string_fields(v, &path)
            })
            .collect(),
        Value::Array(items) => items
            .first()
            .map(|v| string_fields(v, &format!("{at}[0]")))
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// The body as JSON text with the field at `path` set to `text`.
fn with_field(body: &Value, path: &str, text: &str) -> String {
    let mut body = body.clone();
    let mut at = &mut body;
    for part in path.split('.') {
        let (key, index) = match part.strip_suffix("[0]") {
            Some(key) => (key, true),
            None => (part, false),
        };
        if !key.is_empty() {
            at = &mut at[key];
        }
        if index {
            at = &mut at[0];
        }
    }
    *at = Value::String(text.to_owned());
    let json = body.to_string();
    json.replace(&Value::String(LONE_SURROGATE.into()).to_string(), "\"a\\ud800b\"")
}

/// Whether `text` holds an RFC 3339 date-time (`2026-11-24T13:07`).
fn has_timestamp(text: &str) -> bool {
    let shape = b"dddd-dd-ddT";
    text.as_bytes().windows(shape.len()).any(|w| {
        w.iter()
            .zip(shape)
            .all(|(c, s)| if *s == b'd' { c.is_ascii_digit() } else { c == s })
    })
}

/// An answer with what differs between two runs masked: numbers, times, uuids, tokens and
/// webhook secrets.
fn masked(text: &str) -> String {
    fn mask(value: &mut Value) {
        match value {
            Value::Number(_) => *value = json!(0),
            Value::String(s) => {
                let volatile = (s.len() == 36 && s.matches('-').count() == 4)
                    || has_timestamp(s)
                    || s.starts_with("eyJ")
                    || s.starts_with("lk_")
                    || s.starts_with("whsec_");
                if volatile {
                    *value = json!("*");
                }
            }
            Value::Array(items) => items.iter_mut().for_each(mask),
            Value::Object(map) => {
                map.remove("request_id");
                map.values_mut().for_each(mask);
            }
            _ => {}
        }
    }
    match serde_json::from_str::<Value>(text) {
        Ok(mut value) => {
            mask(&mut value);
            value.to_string()
        }
        Err(_) => text.to_owned(),
    }
}
