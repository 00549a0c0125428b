//! Registration, log-in, log-out, token revocation, password resets, first-time logins,
//! product keys and rate limits, through HTTPS on both backends.

use crate::common::TestApp;
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
    account_changes_need_the_current_password,
    a_password_reset_deletes_the_product_keys,
    registrations_at_once_each_get_a_personal_workspace,
);

async fn account_changes_need_the_current_password(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let path = format!("/users/{}", ada.user_id);
    for change in [
        json!({"password": "new-password-456"}),
        json!({"email": "eve@example.org"}),
    ] {
        let problem = app
            .put(&path, &ada.token, change.clone())
            .await
            .expect_problem(400, "bad_request");
        assert_eq!(problem["errors"][0]["field"], "current_password");
        let mut wrong = change.clone();
        wrong["current_password"] = json!("not-my-password");
        let problem = app.put(&path, &ada.token, wrong).await.expect_problem(403, "forbidden");
        assert_eq!(problem["errors"][0]["field"], "current_password");
    }
    // The same e-mail (in another case) and other fields need no proof.
    app.put(
        &path,
        &ada.token,
        json!({"email": "ADA@example.org", "first_name": "Ada"}),
    )
    .await
    .expect(200);
    // A product key alone cannot take the account over either.
    let key = app
        .post(&format!("{path}/keys"), &ada.token, json!({"name": "ci"}))
        .await
        .expect(201)["token"]
        .as_str()
        .unwrap()
        .to_owned();
    app.put(&path, &key, json!({"email": "eve@example.org"}))
        .await
        .expect_problem(400, "bad_request");
    // A reset link mailed to the old address stops working when the address changes.
    app.post_signed_out("/password/email", json!({"email": "ada@example.org"}))
        .await
        .expect(200);
    let mailed = app.token_from_mail("ada@example.org").await;
    let changed = app
        .put(
            &path,
            &ada.token,
            json!({"email": "augusta@example.org", "current_password": "password-123"}),
        )
        .await
        .expect(200);
    assert_eq!(changed["email"], "augusta@example.org");
    app.post_signed_out(
        "/password/reset",
        json!({"reset_password_token": mailed, "password": "taken-over-1"}),
    )
    .await
    .expect_problem(422, "validation_failed");

    // A superuser changes someone else's account without it (and the change is logged).
    let root = app.superuser("root@example.org").await;
    app.put(&path, &root.token, json!({"password": "set-by-root-1"}))
        .await
        .expect(200);
    app.login("augusta@example.org", "set-by-root-1").await;
    // Product keys outlive a password change, as the documentation says.
    app.get("/auth/status", &key).await.expect(200);
    // A superuser's own account is no exception.
    let root_path = format!("/users/{}", root.user_id);
    app.put(&root_path, &root.token, json!({"password": "another-pass-1"}))
        .await
        .expect_problem(400, "bad_request");
}

async fn register_login_and_status(app: TestApp) {
    let ada = app.register("Ada@Example.org").await;
    let again = json!({"email": "ada@example.org", "password": "password-123"});
    app.post_signed_out("/auth/register", again)
        .await
        .expect_problem(409, "conflict");
    let short = json!({"email": "bob@example.org", "password": "short"});
    let problem = app
        .post_signed_out("/auth/register", short)
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem["errors"][0]["field"], "password");

    let login = app
        .post_signed_out(
            "/auth/login",
            json!({"email": "ADA@example.org", "password": "password-123"}),
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
        .post_signed_out(
            "/auth/login",
            json!({"email": "ada@example.org", "password": "wrong-password"}),
        )
        .await;
    let unknown = app
        .post_signed_out(
            "/auth/login",
            json!({"email": "nobody@example.org", "password": "wrong-password"}),
        )
        .await;
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.body_without_request_id(), unknown.body_without_request_id());
    let neither = app
        .post_signed_out("/auth/login", json!({"email": "ada@example.org"}))
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

    app.put(
        &path,
        &ada.token,
        json!({"password": "new-password-456", "current_password": "password-123"}),
    )
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
        .post_signed_out("/password/email", json!({"email": "ada@example.org"}))
        .await;
    let unknown = app
        .post_signed_out("/password/email", json!({"email": "eve@example.org"}))
        .await;
    assert_eq!(known.status, 200);
    assert_eq!(known.text, unknown.text, "the answer does not reveal who is registered");
    assert!(app.mails_to("eve@example.org").await.is_empty());

    let token = app.token_from_mail("ada@example.org").await;
    // A second mail: the link used resets the password, and the other one stops working too.
    app.post_signed_out("/password/email", json!({"email": "ada@example.org"}))
        .await
        .expect(200);
    let tokens: Vec<String> = app
        .mails_to("ada@example.org")
        .await
        .iter()
        .filter_map(|mail| mail.lines().find_map(|l| l.strip_prefix("Token: ")))
        .map(|t| t.trim().to_owned())
        .collect();
    let second = tokens.iter().find(|t| **t != token).expect("a second token").clone();
    let reset = json!({"reset_password_token": second, "password": "brand-new-pass"});
    app.post_signed_out("/password/reset", reset.clone()).await.expect(200);
    let used = app
        .post_signed_out("/password/reset", reset)
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(used["errors"][0]["field"], "reset_password_token", "{used}");
    app.post_signed_out(
        "/password/reset",
        json!({"reset_password_token": token, "password": "another-pass-1"}),
    )
    .await
    .expect_problem(422, "validation_failed");
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
        .post_signed_out("/auth/login", json!({"token": token}))
        .await
        .expect(200);
    assert_eq!(login["user_id"], created["id"]);
    let again = app.post_signed_out("/auth/login", json!({"token": token})).await;
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

    // The original client's users_user_id_keys_post takes no body and sends `{}`: the key is
    // named after its first characters, which the listing shows too.
    let unnamed = app.post(&keys, &ada.token, json!({})).await.expect(201);
    let token = unnamed["token"].as_str().unwrap();
    assert_eq!(unnamed["name"], format!("Key {}", &token[..9]));
    app.get("/auth/status", token).await.expect(200);
    let listed = app.get(&keys, &ada.token).await.expect(200);
    assert_eq!(listed[1]["name"], unnamed["name"]);
    assert_eq!(listed[1]["token"], format!("{}…", &token[..9]));
}

/// A reset is how the owner of an address takes the account back from whoever registered it
/// first; a product key made before it would otherwise keep that person in.
async fn a_password_reset_deletes_the_product_keys(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let keys = format!("/users/{}/keys", ada.user_id);
    let created = app.post(&keys, &ada.token, json!({"name": "ci"})).await.expect(201);
    let key = created["token"].as_str().unwrap();
    app.get("/auth/status", key).await.expect(200);

    app.post_signed_out("/password/email", json!({"email": "ada@example.org"}))
        .await
        .expect(200);
    let token = app.token_from_mail("ada@example.org").await;
    let reset = json!({"reset_password_token": token, "password": "brand-new-pass"});
    app.post_signed_out("/password/reset", reset).await.expect(200);
    app.get("/auth/status", key).await.expect_problem(401, "unauthorized");
    let owner = app.login("ada@example.org", "brand-new-pass").await;
    let listed = app.get(&keys, &owner.token).await.expect(200);
    assert_eq!(listed, json!([]));
}

/// Registrations at once without a first name all want the name "Personal workspace": each
/// gets a free one (on PostgreSQL two once picked the same and one answered 409).
async fn registrations_at_once_each_get_a_personal_workspace(app: TestApp) {
    let answers = futures_util::future::join_all((0..8).map(|i| {
        let body = json!({"email": format!("user{i}@example.org"), "password": "password-123"});
        app.post_signed_out("/auth/register", body)
    }))
    .await;
    let mut names = Vec::new();
    for (i, answer) in answers.into_iter().enumerate() {
        assert_eq!(answer.status, 200, "{}", answer.text);
        let session = app.login(&format!("user{i}@example.org"), "password-123").await;
        let status = app.get("/auth/status", &session.token).await.expect(200);
        names.push(status["workspaces"][0]["name"].as_str().unwrap().to_owned());
    }
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 8, "{names:?}");
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

    // The installation keeps a superuser: the last one cannot step down until another is made.
    let root_path = format!("/users/{}/permissions", root.user_id);
    let problem = app
        .put(&root_path, &root.token, json!({"is_superuser": false}))
        .await
        .expect_problem(409, "conflict");
    assert!(
        problem["detail"].as_str().unwrap().contains("at least one superuser"),
        "{problem}"
    );
    app.put(&path, &root.token, json!({"is_superuser": true}))
        .await
        .expect(200);
    let stepped_down = app
        .put(&root_path, &root.token, json!({"is_superuser": false}))
        .await
        .expect(200);
    assert_eq!(stepped_down["is_superuser"], false);
}

mod rate_limits {
    use crate::common::{Backend, TestApp};
    use serde_json::json;

    backend_tests!(login_takes_an_address_and_counts_failures_under_its_digest);

    backend_tests!(
        backend: thirty_users_behind_one_address_sign_in,
        guesses_spread_over_addresses_are_limited_per_account,
        guesses_sent_at_once_are_limited_too,
        guesses_from_one_ipv6_network_count_as_one_address,
    );

    /// Changing one's e-mail answers 409 for an address that is taken, so it could tell who is
    /// registered: an account has as many tries an hour as an address has registrations.
    /// Before, it had no limit.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn email_changes_are_limited() {
        let Some(app) = TestApp::start_with(Backend::Sqlite, |c| c.rate_limits.register_per_hour = 3).await else {
            return;
        };
        let ada = app.register("ada@example.org").await;
        app.register("bob@example.org").await;
        clear_of_the_window_edge(3600, 10).await;
        let change = |email: &str| json!({"email": email, "current_password": "password-123"});
        let me = format!("/users/{}", ada.user_id);
        app.put(&me, &ada.token, change("bob@example.org")).await.expect(409);
        app.put(&me, &ada.token, change("carol@example.org")).await.expect(200);
        // A name alone is no e-mail change and counts nothing.
        app.put(&me, &ada.token, json!({"first_name": "Ada"})).await.expect(200);
        app.put(&me, &ada.token, change("dave@example.org")).await.expect(200);
        let limited = app.put(&me, &ada.token, change("bob@example.org")).await;
        assert!(limited.headers.contains_key("retry-after"), "{:?}", limited.headers);
        limited.expect_problem(429, "rate_limited");
    }

    /// One address gets a few reset mails an hour from one client, and a few more from all:
    /// before, each client address could have five mailed to it an hour, so many clients could
    /// flood it; and one client cannot use up what the owner may ask for. Every address is
    /// counted alike, registered or not.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_address_gets_few_reset_mails_an_hour() {
        let Some(app) = TestApp::start_with(Backend::Sqlite, |c| {
            c.tls = lector_core::config::TlsMode::Proxy;
            c.rate_limits.reset_mails_per_recipient_per_hour = 3;
            c.rate_limits.reset_mails_per_recipient_and_client_per_hour = 2;
        })
        .await
        else {
            return;
        };
        register_from(&app, "ada@example.org", "192.0.2.1").await;
        clear_of_the_window_edge(3600, 30).await;
        for email in ["ada@example.org", "nobody@example.org"] {
            for _ in 0..2 {
                reset_from(&app, "198.51.100.1", email).await.expect(200);
            }
            reset_from(&app, "198.51.100.1", email)
                .await
                .expect_problem(429, "rate_limited");
            reset_from(&app, "198.51.100.2", email).await.expect(200);
            let limited = reset_from(&app, "198.51.100.3", &format!(" {} ", email.to_uppercase())).await;
            assert!(limited.headers.contains_key("retry-after"), "{:?}", limited.headers);
            limited.expect_problem(429, "rate_limited");
        }
        assert_eq!(app.mails_to("ada@example.org").await.len(), 3);
        // The mails sent still work.
        let token = app.token_from_mail("ada@example.org").await;
        let reset = json!({"reset_password_token": token, "password": "brand-new-pass"});
        post_from(&app, "198.51.100.4", "/password/reset", reset)
            .await
            .expect(200);
    }

    /// An address gets a few invitation mails an hour from one sender, whatever the workspace,
    /// and a few more from all senders, invitations and resends alike: before, only each
    /// workspace's 200 an hour bounded them, so one account with many workspaces could send an
    /// inbox thousands. A workspace that reaches its own limit part-way through a list keeps
    /// what it invited and names the rest; a user creates a few workspaces an hour (a superuser
    /// more).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_address_gets_few_invitation_mails_an_hour() {
        let Some(app) = TestApp::start_with(Backend::Sqlite, |c| {
            c.rate_limits.invitation_mails_per_recipient_and_sender_per_hour = 3;
            c.rate_limits.invitation_mails_per_recipient_per_hour = 4;
            c.rate_limits.invitations_per_hour = 4;
            c.rate_limits.workspaces_per_hour = 2;
        })
        .await
        else {
            return;
        };
        let ada = app.register("ada@example.org").await;
        let bob = app.register("bob@example.org").await;
        clear_of_the_window_edge(3600, 30).await;
        let team = app.workspace(&ada, "Team").await;
        // A creation refused (a taken name) does not count.
        app.post("/organizations", &ada.token, json!({"name": "Team"}))
            .await
            .expect_problem(409, "conflict");
        let lab = app.workspace(&ada, "Lab").await;
        app.post("/organizations", &ada.token, json!({"name": "Third"}))
            .await
            .expect_problem(429, "rate_limited");
        // A superuser is not held to it.
        let root = app.superuser("root@example.org").await;
        for name in ["Ops 1", "Ops 2", "Ops 3"] {
            app.workspace(&root, name).await;
        }
        let first = app
            .invite(&ada.token, team, "VIEWER", ["victim@example.org"])
            .await
            .expect(200);
        let resend = format!(
            "/organizations/{team}/invitation/{}/resend",
            first["invitations"][0]["id"]
        );
        app.post(&resend, &ada.token, json!({})).await.expect(200);
        let lab_invites = app
            .invite(&ada.token, lab, "VIEWER", ["victim@example.org", "other@example.org"])
            .await
            .expect(200);
        assert_eq!(lab_invites["invitations"].as_array().unwrap().len(), 2, "{lab_invites}");
        // Ada has sent the address her three.
        let limited = app.post(&resend, &ada.token, json!({})).await;
        assert!(limited.headers.contains_key("retry-after"), "{:?}", limited.headers);
        limited.expect_problem(429, "rate_limited");
        // Bob may still send one, the fourth from all senders; not a fifth.
        let bobs = app.workspace(&bob, "Bob's").await;
        let sent = app
            .invite(&bob.token, bobs, "VIEWER", ["victim@example.org"])
            .await
            .expect(200);
        let again = format!(
            "/organizations/{bobs}/invitation/{}/resend",
            sent["invitations"][0]["id"]
        );
        app.post(&again, &bob.token, json!({}))
            .await
            .expect_problem(429, "rate_limited");
        assert_eq!(app.mails_to("victim@example.org").await.len(), 4);
        // Lab has sent two of its four; the third and fourth go, the fifth is named.
        let emails = ["a@example.org", "b@example.org", "c@example.org"];
        let partial = app.invite(&ada.token, lab, "VIEWER", emails).await.expect(200);
        assert_eq!(partial["invitations"].as_array().unwrap().len(), 2, "{partial}");
        assert_eq!(partial["not_invited"][0]["email"], "c@example.org", "{partial}");
        assert!(
            partial["not_invited"][0]["reason"]
                .as_str()
                .unwrap()
                .contains("this hour"),
            "{partial}"
        );
        app.invite(&ada.token, lab, "VIEWER", ["d@example.org"])
            .await
            .expect_problem(429, "rate_limited");
    }

    /// A wrong `current_password` counts as a failed log-in of the account: past the limit the
    /// change is refused (429) before the password is checked, the right one too, and so is a
    /// log-in from the same address. Before, an access token or product key alone could guess
    /// the account's password as fast as it could send requests.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn current_password_guesses_are_limited() {
        let Some(app) = TestApp::start_with(Backend::Sqlite, |c| {
            c.rate_limits.login_failures_per_account_address = 3;
        })
        .await
        else {
            return;
        };
        let ada = app.register("ada@example.org").await;
        clear_of_the_window_edge(900, 30).await;
        let me = format!("/users/{}", ada.user_id);
        let change = |current: &str| json!({"password": "brand-new-pass", "current_password": current});
        for _ in 0..3 {
            app.put(&me, &ada.token, change("guess-1234"))
                .await
                .expect_problem(403, "forbidden");
        }
        app.put(&me, &ada.token, change("password-123"))
            .await
            .expect_problem(429, "rate_limited");
        let login = json!({"email": "ada@example.org", "password": "password-123"});
        assert_eq!(app.post_signed_out("/auth/login", login).await.status, 429);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn login_attempts_are_limited_with_retry_after() {
        let Some(app) = TestApp::start_with(Backend::Sqlite, |c| c.rate_limits.login_per_minute = 3).await else {
            return;
        };
        app.register("ada@example.org").await;
        clear_of_the_window_edge(60, 10).await;
        let body = json!({"email": "ada@example.org", "password": "wrong-password"});
        for _ in 0..3 {
            assert_eq!(app.post_signed_out("/auth/login", body.clone()).await.status, 401);
        }
        let limited = app.post_signed_out("/auth/login", body).await;
        let retry: u64 = limited.headers["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((1..=60).contains(&retry));
        limited.expect_problem(429, "rate_limited");
    }

    /// A log-in's e-mail must be an address (422 otherwise): an 8 KB one once reached the
    /// rate-limit keys, past what PostgreSQL indexes (500). The keys hold a digest of the
    /// address, never the address, and wrong passwords still count.
    async fn login_takes_an_address_and_counts_failures_under_its_digest(app: TestApp) {
        let long: String = (0..4096).map(|_| format!("{:02x}", rand::random::<u8>())).collect();
        let problem = app
            .post_signed_out(
                "/auth/login",
                json!({"email": format!("{long}@x.org"), "password": "x"}),
            )
            .await
            .expect_problem(422, "validation_failed");
        assert_eq!(crate::common::problem_fields(&problem), ["email"]);
        app.post_signed_out("/auth/login", json!({"email": "not an address", "password": "x"}))
            .await
            .expect_problem(422, "validation_failed");

        app.register("ada@example.org").await;
        app.login(" ADA@example.org ", "password-123").await;
        clear_of_the_window_edge(app.state.config.rate_limits.login_failure_window_secs, 30).await;
        let wrong = json!({"email": "ada@example.org", "password": "wrong-password"});
        for _ in 0..app.state.config.rate_limits.login_failures_per_account_address {
            app.post_signed_out("/auth/login", wrong.clone())
                .await
                .expect_problem(401, "invalid_credentials");
        }
        app.post_signed_out("/auth/login", wrong)
            .await
            .expect_problem(429, "rate_limited");
        let keys =
            lector_store::testing::texts(&app.state.store, "SELECT key FROM rate_limits WHERE count >= $1", 0).await;
        assert!(keys.iter().any(|k| k.starts_with("login-fail:account:")), "{keys:?}");
        assert!(keys.iter().all(|k| !k.contains("ada")), "{keys:?}");
    }

    /// An app behind a trusted proxy, so each request can name its client address.
    async fn behind_proxy(backend: Backend) -> Option<TestApp> {
        TestApp::start_with(backend, |c| {
            c.tls = lector_core::config::TlsMode::Proxy;
            c.rate_limits = lector_core::config::RateLimits::default();
        })
        .await
    }

    /// Waits, when the rate limits' current window (fixed, `window_secs` long from the epoch) has
    /// under `room_secs` left, until the next one starts: a test counting attempts within one
    /// window would otherwise see the counts start again half-way.
    async fn clear_of_the_window_edge(window_secs: i64, room_secs: u64) {
        let window_secs = window_secs as u64;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let left = window_secs - now % window_secs;
        if left < room_secs {
            tokio::time::sleep(std::time::Duration::from_secs(left + 1)).await;
        }
    }

    async fn login_from(app: &TestApp, address: &str, email: &str, password: &str) -> crate::common::Answer {
        let body = json!({"email": email, "password": password});
        post_from(app, address, "/auth/login", body).await
    }

    async fn reset_from(app: &TestApp, address: &str, email: &str) -> crate::common::Answer {
        post_from(app, address, "/password/email", json!({"email": email})).await
    }

    /// POSTs `body` as a client at `address` behind the trusted proxy.
    async fn post_from(app: &TestApp, address: &str, path: &str, body: serde_json::Value) -> crate::common::Answer {
        let plain = app.base.replace("https://", "http://");
        let answer = reqwest::Client::new()
            .post(format!("{plain}{path}"))
            .header("x-forwarded-proto", "https")
            .header("x-forwarded-for", address)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = answer.status();
        let headers = answer.headers().clone();
        let text = answer.text().await.unwrap();
        crate::common::Answer {
            status,
            headers,
            body: serde_json::from_str(&text).unwrap_or_default(),
            text,
        }
    }

    /// Thirty guesses at once from one address: each is counted before its password is
    /// checked, so exactly the five the account-and-address limit allows are answered 401.
    async fn guesses_sent_at_once_are_limited_too(backend: Backend) {
        let Some(app) = behind_proxy(backend).await else { return };
        register_from(&app, "ada@example.org", "192.0.2.1").await;
        clear_of_the_window_edge(app.state.config.rate_limits.login_failure_window_secs, 30).await;
        let guesses: Vec<String> = (0..30).map(|g| format!("guess-{g}")).collect();
        let answers = futures_util::future::join_all(
            guesses
                .iter()
                .map(|guess| login_from(&app, "203.0.113.9", "ada@example.org", guess)),
        )
        .await;
        let count = |status: u16| answers.iter().filter(|a| a.status.as_u16() == status).count();
        assert_eq!((count(401), count(429)), (5, 25));
        // The owner, from another address, still signs in; and a success counts nothing.
        login_from(&app, "192.0.2.44", "ada@example.org", "password-123")
            .await
            .expect(200);
        login_from(&app, "192.0.2.44", "ada@example.org", "guess")
            .await
            .expect(401);
    }

    async fn thirty_users_behind_one_address_sign_in(backend: Backend) {
        let Some(app) = behind_proxy(backend).await else { return };
        let started = std::time::Instant::now();
        for i in 0..30 {
            let email = format!("user{i}@example.org");
            register_from(&app, &email, &format!("192.0.2.{}", i + 100)).await;
            login_from(&app, "198.51.100.7", &email, "password-123")
                .await
                .expect(200);
        }
        assert!(started.elapsed().as_secs() < 60);
        // A few typos on the way do not lock the address either.
        login_from(&app, "198.51.100.7", "user1@example.org", "typo")
            .await
            .expect(401);
        login_from(&app, "198.51.100.7", "user1@example.org", "password-123")
            .await
            .expect(200);
    }

    /// A host given IPv6 holds a whole /64: its addresses count as one, so a new address for
    /// every guess gains nothing. Before, each of them had a fresh count, and none was ever
    /// refused.
    async fn guesses_from_one_ipv6_network_count_as_one_address(backend: Backend) {
        let Some(app) = behind_proxy(backend).await else { return };
        register_from(&app, "ada@example.org", "192.0.2.1").await;
        clear_of_the_window_edge(app.state.config.rate_limits.login_failure_window_secs, 30).await;
        let per_address = app.state.config.rate_limits.login_failures_per_account_address as usize;
        let mut statuses = Vec::new();
        for guess in 0..per_address + 3 {
            let address = format!("2001:db8:7:7::{:x}", guess + 1);
            let answer = login_from(&app, &address, "ada@example.org", &format!("guess-{guess}")).await;
            statuses.push(answer.status.as_u16());
        }
        let mut expected = vec![401; per_address];
        expected.extend([429; 3]);
        assert_eq!(statuses, expected);
        // Another network is another client.
        login_from(&app, "2001:db8:7:8::1", "ada@example.org", "password-123")
            .await
            .expect(200);
    }

    async fn guesses_spread_over_addresses_are_limited_per_account(backend: Backend) {
        let Some(app) = behind_proxy(backend).await else { return };
        register_from(&app, "ada@example.org", "192.0.2.1").await;
        clear_of_the_window_edge(app.state.config.rate_limits.login_failure_window_secs, 30).await;
        let addresses = ["203.0.113.1", "203.0.113.2", "203.0.113.3"];
        let (mut wrong, mut limited) = (0, 0);
        for guess in 0..30 {
            let address = addresses[guess % 3];
            let answer = login_from(&app, address, "ada@example.org", &format!("guess-{guess}")).await;
            match answer.status.as_u16() {
                401 => {
                    assert_eq!(limited, 0, "once limited, the account stays limited");
                    wrong += 1;
                }
                429 => {
                    let retry: u64 = answer.headers["retry-after"].to_str().unwrap().parse().unwrap();
                    assert!((1..=900).contains(&retry), "{retry}");
                    answer.expect_problem(429, "rate_limited");
                    limited += 1;
                }
                other => panic!("{other}: {}", answer.text),
            }
        }
        // The tenth failure is still answered like a wrong password; then the account is closed
        // to the guessing addresses, even with the right password.
        assert_eq!(wrong, 10);
        assert_eq!(limited, 20);
        login_from(&app, addresses[0], "ada@example.org", "password-123")
            .await
            .expect(429);
        // The owner, from an address with no failures, is not locked out by them.
        login_from(&app, "192.0.2.44", "ada@example.org", "password-123")
            .await
            .expect(200);
        // Unknown accounts are counted alike, so the limit says nothing about registration.
        for guess in 0..12 {
            let answer = login_from(&app, addresses[guess % 3], "nobody@example.org", "guess").await;
            assert_eq!(answer.status, if guess < 10 { 401 } else { 429 }, "{guess}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_forged_forwarded_for_does_not_escape_the_address_limit() {
        let Some(app) = behind_proxy(Backend::Sqlite).await else {
            return;
        };
        let limit = app.state.config.rate_limits.register_per_hour;
        clear_of_the_window_edge(3600, 30).await;
        // The client writes a new address each time; the proxy appends the one it saw.
        for i in 0..limit {
            let forwarded = format!("10.0.{}.{}, 198.51.100.9", i / 250, i % 250 + 1);
            register_from(&app, &format!("user{i}@example.org"), &forwarded).await;
        }
        let plain = app.base.replace("https://", "http://");
        let answer = reqwest::Client::new()
            .post(format!("{plain}/auth/register"))
            .header("x-forwarded-proto", "https")
            .header("x-forwarded-for", "10.9.9.9, 198.51.100.9")
            .json(&json!({"email": "one-more@example.org", "password": "password-123"}))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 429);
        // Another client behind the same proxy is not limited by it.
        register_from(&app, "neighbour@example.org", "10.9.9.9, 198.51.100.10").await;
    }

    /// Registers from its own address (registrations have their own per-address limit).
    async fn register_from(app: &TestApp, email: &str, address: &str) {
        let body = json!({"email": email, "password": "password-123"});
        post_from(app, address, "/auth/register", body).await.expect(200);
    }
}

/// A reset request does the same work whatever the address: it queues one job and records no
/// token, so its time cannot tell a registered address from another. The job (run here by the
/// test, as no worker runs) records the token and mails it only for an active account.
mod reset_request_is_a_job {
    use crate::common::TestApp;
    use lector_core::config::Config;
    use serde_json::json;

    backend_tests!(adjust: no_workers; a_reset_request_does_the_same_work_for_any_address);

    fn no_workers(config: &mut Config) {
        config.workers = 0;
    }

    async fn tokens_recorded(app: &TestApp) -> i64 {
        let every = "SELECT COUNT(*) FROM one_time_tokens WHERE id > $1";
        lector_store::testing::count(&app.state.store, every, 0).await
    }

    async fn a_reset_request_does_the_same_work_for_any_address(app: TestApp) {
        app.register("ada@example.org").await;
        let store = &app.state.store;
        for email in ["ada@example.org", "eve@example.org"] {
            let before = tokens_recorded(&app).await;
            app.post_signed_out("/password/email", json!({"email": email}))
                .await
                .expect(200);
            let queued = store.unfinished_jobs().await.unwrap();
            let kinds: Vec<&str> = queued.iter().map(|j| j.kind.as_str()).collect();
            assert_eq!(kinds, [lector_store::PASSWORD_RESET_JOB], "{email}");
            assert_eq!(
                tokens_recorded(&app).await,
                before,
                "{email}: no token before the job runs"
            );
            let runner = lector_jobs::standard_runner(
                app.state.mailer.clone(),
                app.state.base_models.clone(),
                app.state.sandbox.clone(),
                app.state.sources.clone(),
            );
            while runner.run_one(store, "test-worker").await.unwrap() {}
        }
        assert_eq!(tokens_recorded(&app).await, 1, "a token for the account only");
        assert!(app.mails_to("eve@example.org").await.is_empty());
        let token = app.token_from_mail("ada@example.org").await;
        app.post_signed_out(
            "/password/reset",
            json!({"reset_password_token": token, "password": "brand-new-pass"}),
        )
        .await
        .expect(200);
        app.login("ada@example.org", "brand-new-pass").await;
    }
}
