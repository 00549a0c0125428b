//! The served OpenAPI document: a snapshot (a route change shows up in review) and the
//! operations of API.md that exist so far, each at its method and path.

mod common;

use common::{Backend, TestApp};
use reqwest::Method;
use serde_json::Value;
use std::path::PathBuf;

/// operationId, method, path: API.md's rows for accounts, workspaces and notifications.
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
    let snapshot = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/openapi.json");
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
