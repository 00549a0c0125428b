//! Registration, log-in, log-out, token revocation, password resets, first-time logins,
//! product keys and rate limits, through HTTPS on both backends.

mod common;

use common::TestApp;
use reqwest::Method;
use serde_json::json;

backend_tests!(
    register_login_and_status,
    wrong_password_and_unknown_email_answer_alike,
    logout_revokes_only_the_presented_token,
    password_change_revokes_earlier_tokens,
    password_reset_by_mail_works_once,
    superuser_creates_user_with_first_login_token,
    product_keys_are_bearer_tokens,
    users_see_only_themselves,
    permissions_are_changed_by_superusers_only,
);

async fn register_login_and_status(app: TestApp) {
    let ada = app.register("Ada@Example.org").await;
    let again = json!({"email": "ada@example.org", "password": "password-123"});
    app.call(Method::POST, "/auth/register", None, Some(again))
        .await
        .expect_problem(409, "conflict");
    let short = json!({"email": "bob@example.org", "password": "short"});
    let problem = app
        .call(Method::POST, "/auth/register", None, Some(short))
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem["errors"][0]["field"], "password");

    let login = app
        .call(
            Method::POST,
            "/auth/login",
            None,
            Some(json!({"email": "ADA@example.org", "password": "password-123"})),
        )
        .await
        .expect(200);
    assert_eq!(login["status"], "OK");
    assert_eq!(login["user_id"], ada.user_id);

    let status = app.get("/auth/status", &ada.token).await.expect(200);
    assert_eq!(status["user"]["email"], "ada@example.org");
    let workspaces = status["workspaces"].as_array().unwrap();
    assert_eq!(workspaces.len(), 1, "a personal workspace comes with registration");
    assert_eq!(workspaces[0]["role"], "ADMIN");
    assert_eq!(workspaces[0]["is_default"], true);
    assert_eq!(status["default_workspace_id"], workspaces[0]["id"]);

    app.call(Method::GET, "/auth/status", None, None)
        .await
        .expect_problem(401, "unauthorized");
    app.get("/auth/status", "not-a-token")
        .await
        .expect_problem(401, "unauthorized");
}

async fn wrong_password_and_unknown_email_answer_alike(app: TestApp) {
    app.register("ada@example.org").await;
    let wrong = app
        .call(
            Method::POST,
            "/auth/login",
            None,
            Some(json!({"email": "ada@example.org", "password": "wrong-password"})),
        )
        .await;
    let unknown = app
        .call(
            Method::POST,
            "/auth/login",
            None,
            Some(json!({"email": "nobody@example.org", "password": "wrong-password"})),
        )
        .await;
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.body_without_request_id(), unknown.body_without_request_id());
    let neither = app
        .call(
            Method::POST,
            "/auth/login",
            None,
            Some(json!({"email": "ada@example.org"})),
        )
        .await;
    neither.expect_problem(422, "validation_failed");
}

async fn logout_revokes_only_the_presented_token(app: TestApp) {
    let first = app.register("ada@example.org").await;
    let second = app.login("ada@example.org", "password-123").await;
    app.post("/auth/logout", &first.token, json!({})).await.expect(200);
    app.get("/auth/status", &first.token)
        .await
        .expect_problem(401, "unauthorized");
    app.get("/auth/status", &second.token).await.expect(200);
}

async fn password_change_revokes_earlier_tokens(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let other = app.login("ada@example.org", "password-123").await;
    let path = format!("/users/{}", ada.user_id);
    let user = app
        .put(&path, &ada.token, json!({"first_name": "Augusta"}))
        .await
        .expect(200);
    assert_eq!(user["first_name"], "Augusta");
    app.get("/auth/status", &ada.token).await.expect(200);

    app.put(&path, &ada.token, json!({"password": "new-password-456"}))
        .await
        .expect(200);
    app.get("/auth/status", &ada.token)
        .await
        .expect_problem(401, "unauthorized");
    app.get("/auth/status", &other.token)
        .await
        .expect_problem(401, "unauthorized");
    let fresh = app.login("ada@example.org", "new-password-456").await;
    app.put(&path, &fresh.token, json!({"id": 5}))
        .await
        .expect_problem(400, "immutable_field");
    app.put(&path, &fresh.token, json!({"is_superuser": true}))
        .await
        .expect_problem(400, "immutable_field");
}

async fn password_reset_by_mail_works_once(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let known = app
        .call(
            Method::POST,
            "/password/email",
            None,
            Some(json!({"email": "ada@example.org"})),
        )
        .await;
    let unknown = app
        .call(
            Method::POST,
            "/password/email",
            None,
            Some(json!({"email": "eve@example.org"})),
        )
        .await;
    assert_eq!(known.status, 200);
    assert_eq!(known.text, unknown.text, "the answer does not reveal who is registered");
    assert!(app.mails_to("eve@example.org").await.is_empty());

    let token = app.token_from_mail("ada@example.org").await;
    let reset = json!({"reset_password_token": token, "password": "brand-new-pass"});
    app.call(Method::POST, "/password/reset", None, Some(reset.clone()))
        .await
        .expect(200);
    app.call(Method::POST, "/password/reset", None, Some(reset))
        .await
        .expect_problem(401, "invalid_credentials");
    app.get("/auth/status", &ada.token)
        .await
        .expect_problem(401, "unauthorized");
    app.login("ada@example.org", "brand-new-pass").await;
}

async fn superuser_creates_user_with_first_login_token(app: TestApp) {
    let root = app.superuser("root@example.org").await;
    let ada = app.register("ada@example.org").await;
    let body = json!({"email": "new@example.org", "first_name": "New"});
    app.post("/users", &ada.token, body.clone())
        .await
        .expect_problem(403, "forbidden");
    let created = app.post("/users", &root.token, body).await.expect(201);
    assert_eq!(created["email"], "new@example.org");

    let token = app.token_from_mail("new@example.org").await;
    let login = app
        .call(Method::POST, "/auth/login", None, Some(json!({"token": token})))
        .await
        .expect(200);
    assert_eq!(login["user_id"], created["id"]);
    let again = app
        .call(Method::POST, "/auth/login", None, Some(json!({"token": token})))
        .await;
    again.expect_problem(401, "invalid_credentials");
    let bearer = login["auth_token"].as_str().unwrap();
    app.put(
        &format!("/users/{}", created["id"]),
        bearer,
        json!({"password": "chosen-password"}),
    )
    .await
    .expect(200);
    app.login("new@example.org", "chosen-password").await;
}

async fn product_keys_are_bearer_tokens(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let keys = format!("/users/{}/keys", ada.user_id);
    let created = app.post(&keys, &ada.token, json!({"name": "ci"})).await.expect(201);
    let token = created["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("lk_") && token.len() > 40);
    app.post(&keys, &ada.token, json!({"name": "laptop"})).await.expect(201);

    let status = app.get("/auth/status", &token).await.expect(200);
    assert_eq!(status["user"]["id"], ada.user_id);
    let listed = app.get(&keys, &ada.token).await.expect(200);
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert!(
        !listed.to_string().contains(&token),
        "a listed key never shows its whole token"
    );

    let remaining = app
        .delete(&format!("{keys}/{}", created["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(remaining.as_array().unwrap().len(), 1);
    assert_eq!(remaining[0]["name"], "laptop");
    app.get("/auth/status", &token)
        .await
        .expect_problem(401, "unauthorized");
    app.delete(&format!("{keys}/{}", created["id"]), &ada.token)
        .await
        .expect_problem(404, "not_found");
    app.post(&keys, &ada.token, json!({"name": ""}))
        .await
        .expect_problem(422, "validation_failed");
}

async fn users_see_only_themselves(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let bob = app.register("bob@example.org").await;
    app.get(&format!("/users/{}", ada.user_id), &ada.token)
        .await
        .expect(200);
    app.get(&format!("/users/{}", bob.user_id), &ada.token)
        .await
        .expect_problem(403, "forbidden");
    app.put(
        &format!("/users/{}", bob.user_id),
        &ada.token,
        json!({"first_name": "x"}),
    )
    .await
    .expect_problem(403, "forbidden");
    app.get(&format!("/users/{}/keys", bob.user_id), &ada.token)
        .await
        .expect_problem(403, "forbidden");
    app.get("/users/abc", &ada.token)
        .await
        .expect_problem(400, "invalid_parameter");
    let root = app.superuser("root@example.org").await;
    app.get(&format!("/users/{}", bob.user_id), &root.token)
        .await
        .expect(200);
    app.get("/users/999999", &root.token)
        .await
        .expect_problem(404, "not_found");
}

async fn permissions_are_changed_by_superusers_only(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let path = format!("/users/{}/permissions", ada.user_id);
    let own = app.get(&path, &ada.token).await.expect(200);
    assert_eq!(own["is_superuser"], false);
    assert_eq!(own["workspaces"][0]["role"], "ADMIN");
    app.put(&path, &ada.token, json!({"is_superuser": true}))
        .await
        .expect_problem(403, "forbidden");
    let root = app.superuser("root@example.org").await;
    let changed = app
        .put(&path, &root.token, json!({"is_betauser": true}))
        .await
        .expect(200);
    assert_eq!(changed["is_betauser"], true);
    assert_eq!(changed["is_superuser"], false);
}

mod rate_limits {
    use super::common::{Backend, TestApp};
    use reqwest::Method;
    use serde_json::json;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn login_attempts_are_limited_with_retry_after() {
        let Some(app) = TestApp::start_with(Backend::Sqlite, |c| c.rate_limits.login_per_minute = 3).await else {
            return;
        };
        app.register("ada@example.org").await;
        let body = json!({"email": "ada@example.org", "password": "wrong-password"});
        for _ in 0..3 {
            assert_eq!(
                app.call(Method::POST, "/auth/login", None, Some(body.clone()))
                    .await
                    .status,
                401
            );
        }
        let limited = app.call(Method::POST, "/auth/login", None, Some(body)).await;
        let retry: u64 = limited.headers["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((1..=60).contains(&retry));
        limited.expect_problem(429, "rate_limited");
    }
}
