//! Credentials of external sources through HTTPS on both backends: sealed secrets that never
//! come back, the role policy, and tenancy.

use crate::common::TestApp;
use serde_json::{Value, json};

backend_tests!(
    credential_lifecycle,
    secrets_are_sealed_and_never_answered,
    roles_and_tenancy,
);

const SECRET_URL: &str = "postgres://reader:hunter2-secret@db.example.invalid:5432/sales";

fn postgres_credential(name: &str) -> Value {
    json!({"name": name, "source": "postgres", "secret": {"url": SECRET_URL}})
}

async fn credential_lifecycle(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.workspace(&ada, "Data").await;
    let path = "/organizations/Data/credentials";
    assert_eq!(app.get(path, &ada.token).await.expect(200), json!([]));

    let created = app
        .post(path, &ada.token, postgres_credential("warehouse"))
        .await
        .expect(201);
    assert_eq!(created["name"], "warehouse");
    assert_eq!(created["source"], "postgres");
    assert_eq!(created["organization_id"], id);
    assert_eq!(created["created_by"], ada.user_id);
    assert!(created.get("secret").is_none());
    let s3 = json!({"name": "bucket", "source": "s3",
        "secret": {"access_key_id": "AKIDEXAMPLE", "secret_access_key": "s3-secret-key", "region": "eu-central-1"}});
    app.post(&format!("/organizations/{id}/credentials"), &ada.token, s3)
        .await
        .expect(201);
    let http = json!({"name": "site", "source": "http", "secret": {"headers": {"Authorization": "Bearer tok-secret"}, "base_url": "https://data.example.org"}});
    app.post(path, &ada.token, http).await.expect(201);

    let listed = app.get(path, &ada.token).await.expect(200);
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["warehouse", "bucket", "site"]);

    app.post(path, &ada.token, postgres_credential("warehouse"))
        .await
        .expect_problem(409, "conflict");
    app.post(path, &ada.token, json!({"name": "x", "source": "ftp", "secret": {}}))
        .await
        .expect_problem(400, "bad_request");
    let bad = app
        .post(
            path,
            &ada.token,
            json!({"name": "x", "source": "postgres", "secret": {"url": "mysql://db/x"}}),
        )
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(bad["errors"][0]["field"], "secret.url");
    let bad = app
        .post(
            path,
            &ada.token,
            json!({"name": "x", "source": "s3", "secret": {"region": "eu-central-1"}}),
        )
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(bad["errors"][0]["field"], "secret");
    app.post(path, &ada.token, json!({"name": " ", "source": "http", "secret": {}}))
        .await
        .expect_problem(422, "validation_failed");
    app.post(
        path,
        &ada.token,
        json!({"name": "x", "source": "http", "secret": {}, "id": 4}),
    )
    .await
    .expect_problem(400, "immutable_field");
    app.post(
        path,
        &ada.token,
        json!({"name": "x", "source": "http", "secret": {}, "colour": 4}),
    )
    .await
    .expect_problem(400, "unknown_field");

    let first = created["id"].as_i64().unwrap();
    let deleted = app.delete(&format!("{path}/{first}"), &ada.token).await.expect(200);
    assert_eq!(deleted["id"], first);
    app.delete(&format!("{path}/{first}"), &ada.token)
        .await
        .expect_problem(404, "not_found");
    app.delete(&format!("{path}/abc"), &ada.token)
        .await
        .expect_problem(400, "invalid_parameter");
    assert_eq!(app.get(path, &ada.token).await.expect(200).as_array().unwrap().len(), 2);
}

async fn secrets_are_sealed_and_never_answered(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.workspace(&ada, "Data").await;
    let path = format!("/organizations/{id}/credentials");
    let mut answers = Vec::new();
    let created = app.post(&path, &ada.token, postgres_credential("warehouse")).await;
    answers.push(created.text.clone());
    let credential_id = created.expect(201)["id"].as_i64().unwrap();
    answers.push(app.get(&path, &ada.token).await.text);
    answers.push(app.post(&path, &ada.token, postgres_credential("warehouse")).await.text);
    for answer in &answers {
        assert!(!answer.contains("hunter2"), "a secret was answered: {answer}");
        assert!(!answer.contains("v1."), "a sealed secret was answered: {answer}");
    }

    // What is stored is sealed for this workspace, and it opens for a fetch there.
    let scope = lector_core::Scope {
        user_id: ada.user_id,
        is_superuser: false,
        workspaces: vec![lector_core::policy::WorkspaceAccess {
            workspace_id: id,
            role: lector_core::Role::Admin,
        }],
    };
    let stored = app
        .state
        .store
        .credential_for_use(&scope, id, credential_id)
        .await
        .unwrap();
    assert!(stored.sealed_secret.starts_with("v1.") && !stored.sealed_secret.contains("hunter2"));
    assert!(!format!("{stored:?}").contains(&stored.sealed_secret));
    let err = app
        .state
        .sources
        .fetch(id, stored.source, &stored.sealed_secret, &json!({"query": "SELECT 1"}))
        .await
        .unwrap_err();
    assert_eq!(
        err.detail, "the host db.example.invalid does not resolve",
        "the secret opened"
    );
    let err = app
        .state
        .sources
        .fetch(
            id + 1,
            stored.source,
            &stored.sealed_secret,
            &json!({"query": "SELECT 1"}),
        )
        .await
        .unwrap_err();
    assert!(
        err.detail.contains("cannot be opened"),
        "sealed for its own workspace only"
    );
    let key = std::fs::read_to_string(app.data_dir.path().join(lector_sources::seal::KEY_FILE)).unwrap();
    assert_eq!(
        key.trim().len(),
        43,
        "a generated 256-bit key is kept in the data directory"
    );
}

async fn roles_and_tenancy(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.workspace(&ada, "Data").await;
    let path = format!("/organizations/{id}/credentials");
    let credential = app
        .post(&path, &ada.token, postgres_credential("warehouse"))
        .await
        .expect(201);
    let one = format!("{path}/{}", credential["id"]);

    let mut by_role = Vec::new();
    for role in ["VIEWER", "USER", "MANAGER"] {
        let member = app.register(&format!("{}@example.org", role.to_lowercase())).await;
        app.add_member(&ada.token, id, member.user_id, role).await.expect(200);
        by_role.push((role, member));
    }
    for (role, member) in &by_role {
        assert_eq!(
            app.get(&path, &member.token)
                .await
                .expect(200)
                .as_array()
                .unwrap()
                .len(),
            1
        );
        let create = app
            .post(&path, &member.token, postgres_credential(&format!("of-{role}")))
            .await;
        let delete_missing = app.delete(&format!("{path}/999999"), &member.token).await;
        if *role == "MANAGER" {
            create.expect(201);
            delete_missing.expect_problem(404, "not_found");
        } else {
            create.expect_problem(403, "forbidden");
            delete_missing.expect_problem(403, "forbidden");
            app.delete(&one, &member.token).await.expect_problem(403, "forbidden");
        }
    }

    // A stranger sees nothing; another workspace's credential answers 404 through one's own.
    let eve = app.register("eve@example.org").await;
    app.get(&path, &eve.token).await.expect_problem(404, "not_found");
    app.post(&path, &eve.token, postgres_credential("mine"))
        .await
        .expect_problem(404, "not_found");
    app.delete(&one, &eve.token).await.expect_problem(404, "not_found");
    let eve_ws = app.workspace(&eve, "Eve's").await;
    let through_own = format!("/organizations/{eve_ws}/credentials/{}", credential["id"]);
    let answer = app.delete(&through_own, &eve.token).await;
    let missing = app
        .delete(&format!("/organizations/{eve_ws}/credentials/999999"), &eve.token)
        .await;
    assert_eq!(answer.status, 404);
    assert_eq!(answer.body_without_request_id(), missing.body_without_request_id());
    assert_eq!(
        app.get(&format!("/organizations/{eve_ws}/credentials"), &eve.token)
            .await
            .expect(200),
        json!([])
    );
    app.get(&path, &ada.token).await.expect(200);
    assert_eq!(
        app.get(&path, &ada.token).await.expect(200).as_array().unwrap().len(),
        2
    );
}
