//! The served OpenAPI document: a snapshot (a route change shows up in review) and the
//! operations of API.md that exist so far, each at its method and path; no two schema types
//! share a name.

use crate::common::{Backend, TestApp};
use reqwest::Method;
use serde_json::Value;
use std::path::PathBuf;

/// operationId, method, path: API.md's rows for every operation served so far.
const CONTRACT: &[(&str, &str, &str)] = &[
    ("register", "post", "/auth/register"),
    ("login", "post", "/auth/login"),
    ("reset_password", "post", "/password/reset"),
    ("send_password_reset_email", "post", "/password/email"),
    ("get_user", "get", "/users/{user_id}"),
    ("update_user", "put", "/users/{user_id}"),
    ("get_user_permissions", "get", "/users/{user_id}/permissions"),
    ("update_user_permissions", "put", "/users/{user_id}/permissions"),
    ("list_product_keys", "get", "/users/{user_id}/keys"),
    ("delete_product_key", "delete", "/users/{user_id}/keys/{key_id}"),
    ("create_workspace", "post", "/organizations"),
    ("get_workspace", "get", "/organizations/{organization}"),
    ("update_workspace", "put", "/organizations/{organization}"),
    ("deactivate_workspace", "delete", "/organizations/{organization}"),
    ("set_default_workspace", "post", "/organizations/{organization}/default"),
    ("invite_users", "post", "/organizations/{organization}/users/invite"),
    ("list_invitations", "get", "/organizations/{organization}/users/invites"),
    ("accept_invitation", "post", "/organizations/users/invite/accept"),
    (
        "add_workspace_member",
        "post",
        "/organizations/{organization}/permissions",
    ),
    (
        "update_member_role",
        "put",
        "/organizations/{organization}/permissions/{permission_id}",
    ),
    ("list_notifications", "get", "/notifications"),
    ("get_notification", "get", "/notifications/{notification_id}"),
    ("update_notification", "put", "/notifications/{notification_id}"),
    ("health", "get", "/health"),
    ("info", "get", "/info"),
    ("openapi", "get", "/openapi.json"),
    ("logout", "post", "/auth/logout"),
    ("auth_status", "get", "/auth/status"),
    ("create_user", "post", "/users"),
    ("create_product_key", "post", "/users/{user_id}/keys"),
    ("list_workspaces", "get", "/organizations"),
    ("list_members", "get", "/organizations/{organization}/permissions"),
    (
        "remove_member",
        "delete",
        "/organizations/{organization}/permissions/{permission_id}",
    ),
    (
        "cancel_invitation",
        "delete",
        "/organizations/{organization}/invitation/{invitation_id}",
    ),
    (
        "resend_invitation",
        "post",
        "/organizations/{organization}/invitation/{invitation_id}/resend",
    ),
    ("metrics", "get", "/metrics"),
    ("list_credentials", "get", "/organizations/{organization}/credentials"),
    ("create_credential", "post", "/organizations/{organization}/credentials"),
    (
        "delete_credential",
        "delete",
        "/organizations/{organization}/credentials/{credential_id}",
    ),
    (
        "cancel_invitation",
        "delete",
        "/organizations/{organization}/invitation/{invitation_id}",
    ),
    (
        "resend_invitation",
        "post",
        "/organizations/{organization}/invitation/{invitation_id}/resend",
    ),
    (
        "add_workspace_member",
        "post",
        "/organizations/{organization}/permissions",
    ),
    (
        "update_member_role",
        "put",
        "/organizations/{organization}/permissions/{permission_id}",
    ),
    (
        "remove_member",
        "delete",
        "/organizations/{organization}/permissions/{permission_id}",
    ),
    ("list_models", "get", "/models"),
    ("list_workspace_models", "get", "/organizations/{organization}/models"),
    ("upload_model", "post", "/models/upload"),
    ("list_project_models", "get", "/projects/{project_id}/models"),
    ("train_model", "post", "/projects/{project_id}/models"),
    ("get_project_model", "get", "/projects/{project_id}/models/{model_id}"),
    (
        "update_project_model",
        "put",
        "/projects/{project_id}/models/{model_id}",
    ),
    (
        "delete_project_model",
        "delete",
        "/projects/{project_id}/models/{model_id}",
    ),
    (
        "download_project_model",
        "get",
        "/projects/{project_id}/models/{model_id}/download",
    ),
    ("get_model", "get", "/models/{model_id}"),
    ("update_model", "put", "/models/{model_id}"),
    ("delete_model", "delete", "/models/{model_id}"),
    ("download_model", "get", "/models/{model_id}/download"),
    ("list_model_analyses", "get", "/models/{model_id}/analyses"),
    ("star_model", "post", "/models/{model_id}/star"),
    ("unstar_model", "post", "/models/{model_id}/unstar"),
    (
        "download_workspace_model",
        "get",
        "/organizations/{organization}/models/{model}/download",
    ),
    ("analyze", "post", "/analyze"),
    (
        "create_correction_session",
        "post",
        "/projects/{project_id}/corrections",
    ),
    ("list_correction_sessions", "get", "/projects/{project_id}/corrections"),
    (
        "get_correction_session",
        "get",
        "/projects/{project_id}/corrections/{correction_id}",
    ),
    (
        "delete_correction_session",
        "delete",
        "/projects/{project_id}/corrections/{correction_id}",
    ),
    (
        "list_correction_session_documents",
        "get",
        "/projects/{project_id}/corrections/{correction_id}/documents",
    ),
    (
        "mark_segment_corrected",
        "post",
        "/projects/{project_id}/corrections/{correction_id}/documents/{document_id}/segments/{segment_id}/statuses",
    ),
    (
        "add_correction_tag",
        "post",
        "/projects/{project_id}/corrections/{correction_id}/documents/{document_id}/segments/{segment_id}/tags",
    ),
    (
        "update_correction_tag",
        "put",
        "/projects/{project_id}/corrections/{correction_id}/documents/{document_id}/segments/{segment_id}/tags/{tag_id}",
    ),
    (
        "delete_correction_tag",
        "delete",
        "/projects/{project_id}/corrections/{correction_id}/documents/{document_id}/segments/{segment_id}/tags/{tag_id}",
    ),
    (
        "confirm_correction_tag",
        "post",
        "/projects/{project_id}/corrections/{correction_id}/documents/{document_id}/segments/{segment_id}/tags/{tag_id}/statuses",
    ),
    ("upload_analysis_file", "post", "/analyses/upload"),
    ("create_analysis", "post", "/analyses"),
    ("list_analyses", "get", "/analyses"),
    ("get_analysis", "get", "/analyses/{analysis_id}"),
    ("update_analysis", "put", "/analyses/{analysis_id}"),
    ("delete_analysis", "delete", "/analyses/{analysis_id}"),
    ("list_analysis_documents", "get", "/analyses/{analysis_id}/documents"),
    (
        "download_analysis_documents",
        "get",
        "/analyses/{analysis_id}/documents/download",
    ),
    ("list_projects", "get", "/projects"),
    ("create_project", "post", "/projects"),
    ("get_project", "get", "/projects/{project_id}"),
    ("update_project", "put", "/projects/{project_id}"),
    ("delete_project", "delete", "/projects/{project_id}"),
    ("list_project_analyses", "get", "/projects/{project_id}/analyses"),
    ("list_labeling_sessions", "get", "/projects/{project_id}/annotations"),
    ("create_labeling_session", "post", "/projects/{project_id}/annotations"),
    (
        "connect_labeling_source",
        "post",
        "/projects/{project_id}/annotations/connect",
    ),
    (
        "download_labeling_sessions",
        "get",
        "/projects/{project_id}/annotations/download",
    ),
    (
        "upload_labeling_file",
        "post",
        "/projects/{project_id}/annotations/upload",
    ),
    (
        "get_labeling_session",
        "get",
        "/projects/{project_id}/annotations/{annotation_id}",
    ),
    (
        "update_labeling_session",
        "put",
        "/projects/{project_id}/annotations/{annotation_id}",
    ),
    (
        "delete_labeling_session",
        "delete",
        "/projects/{project_id}/annotations/{annotation_id}",
    ),
    (
        "list_labeling_session_documents",
        "get",
        "/projects/{project_id}/annotations/{annotation_id}/documents",
    ),
    (
        "get_labeling_session_document",
        "get",
        "/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}",
    ),
    (
        "mark_page_annotated",
        "post",
        "/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}/pages/{page}/statuses",
    ),
    (
        "mark_segment_annotated",
        "post",
        "/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}/segments/{segment_id}/statuses",
    ),
    (
        "list_segment_tags",
        "get",
        "/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}/segments/{segment_id}/tags",
    ),
    (
        "add_segment_tag",
        "post",
        "/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}/segments/{segment_id}/tags",
    ),
    (
        "update_segment_tag",
        "put",
        "/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}/segments/{segment_id}/tags/{tag_id}",
    ),
    (
        "delete_segment_tag",
        "delete",
        "/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}/segments/{segment_id}/tags/{tag_id}",
    ),
    (
        "mark_document_annotated",
        "post",
        "/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}/statuses",
    ),
    (
        "download_labeling_session",
        "get",
        "/projects/{project_id}/annotations/{annotation_id}/download",
    ),
    ("list_classes", "get", "/projects/{project_id}/classes"),
    ("add_class", "post", "/projects/{project_id}/classes"),
    ("download_classes", "get", "/projects/{project_id}/classes/download"),
    ("upload_classes_file", "post", "/projects/{project_id}/classes/upload"),
    ("get_class", "get", "/projects/{project_id}/classes/{class_id}"),
    ("update_class", "put", "/projects/{project_id}/classes/{class_id}"),
    ("delete_class", "delete", "/projects/{project_id}/classes/{class_id}"),
    ("clone_project", "post", "/projects/{project_id}/clone"),
    ("list_documents", "get", "/projects/{project_id}/documents"),
    ("create_document", "post", "/projects/{project_id}/documents"),
    ("get_document", "get", "/projects/{project_id}/documents/{document_id}"),
    (
        "update_document",
        "put",
        "/projects/{project_id}/documents/{document_id}",
    ),
    (
        "delete_document",
        "delete",
        "/projects/{project_id}/documents/{document_id}",
    ),
    ("list_groups", "get", "/projects/{project_id}/groups"),
    ("create_group", "post", "/projects/{project_id}/groups"),
    ("connect_group_source", "post", "/projects/{project_id}/groups/connect"),
    ("upload_group_file", "post", "/projects/{project_id}/groups/upload"),
    ("get_group", "get", "/projects/{project_id}/groups/{group_id}"),
    ("update_group", "put", "/projects/{project_id}/groups/{group_id}"),
    ("delete_group", "delete", "/projects/{project_id}/groups/{group_id}"),
    (
        "list_group_documents",
        "get",
        "/projects/{project_id}/groups/{group_id}/documents",
    ),
    (
        "get_group_document",
        "get",
        "/projects/{project_id}/groups/{group_id}/documents/{document_id}",
    ),
    (
        "download_group",
        "get",
        "/projects/{project_id}/groups/{group_id}/download",
    ),
    ("list_labels", "get", "/projects/{project_id}/labels"),
    ("add_label", "post", "/projects/{project_id}/labels"),
    ("download_labels", "get", "/projects/{project_id}/labels/download"),
    (
        "update_label_by_name",
        "put",
        "/projects/{project_id}/labels/name/{name}",
    ),
    ("get_label", "get", "/projects/{project_id}/labels/{label_id}"),
    ("update_label", "put", "/projects/{project_id}/labels/{label_id}"),
    ("delete_label", "delete", "/projects/{project_id}/labels/{label_id}"),
    ("get_project_task", "get", "/projects/{project_id}/tasks/{task_id}"),
    ("transfer_project", "post", "/projects/{project_id}/transfer"),
    ("add_classes", "post", "/projects/{project_id}/upload-classes"),
    ("upload_documents", "post", "/projects/{project_id}/upload-documents"),
    ("list_types", "get", "/types"),
    ("list_user_notifications", "get", "/users/{user_id}/notifications"),
    (
        "get_user_notification",
        "get",
        "/users/{user_id}/notifications/{notification_id}",
    ),
    (
        "update_user_notification",
        "put",
        "/users/{user_id}/notifications/{notification_id}",
    ),
];

async fn served() -> Value {
    let app = TestApp::start(Backend::Sqlite).await.expect("app");
    app.call(Method::GET, "/openapi.json", None, None).await.expect(200)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_is_served_at_its_contract_path() {
    let document = served().await;
    assert_eq!(document["openapi"], "3.1.0");
    for (id, method, path) in CONTRACT {
        let operation = &document["paths"][path][method];
        assert_eq!(operation["operationId"], *id, "{method} {path}");
        let public = lector_api::openapi::PUBLIC_OPERATIONS.contains(id);
        assert_eq!(operation.get("security").is_none(), public, "{id}: security");
        assert!(
            operation["responses"]["default"].is_object(),
            "{id}: problem answer documented"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_document_matches_its_snapshot() {
    let document = served().await;
    let rendered = serde_json::to_string_pretty(&document).unwrap() + "\n";
    let snapshot = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/api/snapshots/openapi.json");
    if std::env::var("LECTOR_UPDATE_SNAPSHOTS").is_ok_and(|v| v == "1") {
        std::fs::write(&snapshot, &rendered).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&snapshot)
        .unwrap_or_else(|_| panic!("{} is missing: run with LECTOR_UPDATE_SNAPSHOTS=1", snapshot.display()));
    assert!(
        expected == rendered,
        "the OpenAPI document changed; review it and run with LECTOR_UPDATE_SNAPSHOTS=1 to accept"
    );
}

/// utoipa names a component after its type and keeps one of two types of the same name,
/// silently: the document then describes one of them wrongly. Every `ToSchema` type of the API
/// has a name of its own.
#[test]
fn schema_names_are_unique() {
    let mut names: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let mut files = vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        let mut derives_schema = false;
        for line in source.lines().map(str::trim) {
            if line.starts_with("#[derive(") && line.contains("ToSchema") {
                derives_schema = true;
            } else if derives_schema && !line.starts_with('#') && !line.starts_with("///") {
                let words: Vec<&str> = line.split_whitespace().collect();
                if let Some(at) = words.iter().position(|w| *w == "struct" || *w == "enum") {
                    let name = words[at + 1]
                        .trim_end_matches(['{', ';', '('])
                        .split('<')
                        .next()
                        .unwrap();
                    names
                        .entry(name.to_owned())
                        .or_default()
                        .push(path.display().to_string());
                }
                derives_schema = false;
            }
        }
    }
    assert!(names.len() > 50, "the scan finds the API's types: {}", names.len());
    let twice: Vec<_> = names.iter().filter(|(_, places)| places.len() > 1).collect();
    assert!(twice.is_empty(), "ToSchema types sharing a name: {twice:?}");
}
