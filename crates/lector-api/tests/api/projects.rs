//! Projects, classes and labels through HTTPS on both backends: the four types, ABSA's fixed
//! labels, names unique per workspace, transfer between workspaces, roles and tenancy.

use crate::common::tickets::labeled_tickets;
use crate::common::{TestApp, ids};
use serde_json::{Value, json};

backend_tests!(
    project_lifecycle_and_types,
    absa_projects_keep_their_labels,
    classes_and_labels,
    transfer_needs_manager_in_both_workspaces,
    a_transferred_project_takes_its_models_along,
    projects_follow_roles_and_tenancy,
);

fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect()
}

async fn project_lifecycle_and_types(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let types = app.get("/types", &ada.token).await.expect(200);
    assert_eq!(names(&types), ["ABSA", "LABEL", "CLASS", "CLASSLABEL"]);
    assert_eq!(types[0]["id"], 2);
    // Each type says what its tags mean (the original client's Type has a description).
    assert!(
        types[0]["description"].as_str().unwrap().contains("sentiment"),
        "{types}"
    );
    let described = types.as_array().unwrap().iter();
    assert!(
        described
            .into_iter()
            .all(|t| !t["description"].as_str().unwrap_or_default().is_empty())
    );

    let mut ids = Vec::new();
    for kind in ["ABSA", "CLASS", "LABEL", "CLASSLABEL"] {
        let project = app
            .post(
                "/projects",
                &ada.token,
                json!({"name": format!("p-{kind}"), "type": kind}),
            )
            .await
            .expect(201);
        assert_eq!(project["type"], kind);
        assert_eq!(project["status"], "CREATED");
        ids.push(project["id"].as_i64().unwrap());
    }
    app.post("/projects", &ada.token, json!({"name": "p-CLASS", "type": "LABEL"}))
        .await
        .expect_problem(409, "conflict");
    app.post("/projects", &ada.token, json!({"name": "x", "type": "OTHER"}))
        .await
        .expect_problem(400, "bad_request");
    app.post(
        "/projects",
        &ada.token,
        json!({"name": "x", "type": "CLASS", "status": "READY"}),
    )
    .await
    .expect_problem(400, "immutable_field");
    app.post("/projects", &ada.token, json!({"name": "", "type": "CLASS"}))
        .await
        .expect_problem(422, "validation_failed");

    let listed = app.get("/projects", &ada.token).await.expect(200);
    assert_eq!(listed.as_array().unwrap().len(), 4);
    assert!(listed[0].get("labels").is_none());
    let detailed = app.get("/projects?details=true", &ada.token).await.expect(200);
    assert_eq!(detailed[0]["labels"], json!(["positive", "negative", "neutral"]));
    let python = app.get("/projects?details=True", &ada.token).await.expect(200);
    assert_eq!(python, detailed, "the original's Python client sends True");
    let plain = app.get("/projects?details=False", &ada.token).await.expect(200);
    assert!(plain[0].get("labels").is_none());
    app.get("/projects?details=maybe", &ada.token)
        .await
        .expect_problem(400, "invalid_parameter");

    let class_project = format!("/projects/{}", ids[1]);
    let renamed = app
        .put(&class_project, &ada.token, json!({"name": "Topics"}))
        .await
        .expect(200);
    assert_eq!(
        (renamed["name"].as_str(), renamed["type"].as_str()),
        (Some("Topics"), Some("CLASS"))
    );
    let retyped = app
        .put(&class_project, &ada.token, json!({"type": "LABEL"}))
        .await
        .expect(200);
    assert_eq!(retyped["type"], "LABEL");
    app.post(&format!("{class_project}/labels"), &ada.token, json!({"name": "spam"}))
        .await
        .expect(201);
    app.put(&class_project, &ada.token, json!({"type": "CLASS"}))
        .await
        .expect_problem(409, "conflict");

    let deleted = app.delete(&class_project, &ada.token).await.expect(200);
    assert_eq!(deleted["name"], "Topics");
    app.get(&class_project, &ada.token)
        .await
        .expect_problem(404, "not_found");
    app.get(&format!("{class_project}/labels"), &ada.token)
        .await
        .expect_problem(404, "not_found");
}

async fn absa_projects_keep_their_labels(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project_with_classes(&ada, "Reviews", "ABSA", &[]).await;
    let labels = format!("/projects/{id}/labels");
    let listed = app.get(&labels, &ada.token).await.expect(200);
    assert_eq!(names(&listed), ["positive", "negative", "neutral"]);
    app.post(&labels, &ada.token, json!({"name": "mixed"}))
        .await
        .expect_problem(422, "validation_failed");
    let first = listed[0]["id"].as_i64().unwrap();
    app.put(&format!("{labels}/{first}"), &ada.token, json!({"name": "good"}))
        .await
        .expect_problem(422, "validation_failed");
    app.put(&format!("{labels}/name/positive"), &ada.token, json!({"name": "good"}))
        .await
        .expect_problem(422, "validation_failed");
    app.delete(&format!("{labels}/{first}"), &ada.token)
        .await
        .expect_problem(422, "validation_failed");
    // Aspects are classes and may change freely.
    app.post(
        &format!("/projects/{id}/classes"),
        &ada.token,
        json!({"name": "FOOD#QUALITY"}),
    )
    .await
    .expect(201);
}

async fn classes_and_labels(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project_with_classes(&ada, "Tickets", "CLASSLABEL", &[]).await;
    let classes = format!("/projects/{id}/classes");
    let billing = app
        .post(
            &classes,
            &ada.token,
            json!({"name": "billing", "example": "My invoice is wrong", "description": "money"}),
        )
        .await
        .expect(201);
    assert_eq!(billing["example"], "My invoice is wrong");
    let added = app
        .post(
            &format!("/projects/{id}/upload-classes"),
            &ada.token,
            json!([{"name": "login"}, {"name": "shipping", "description": "parcels"}]),
        )
        .await
        .expect(201);
    assert_eq!(names(&added), ["login", "shipping"]);
    app.post(
        &format!("/projects/{id}/upload-classes"),
        &ada.token,
        json!([{"name": "refund"}, {"name": "billing"}]),
    )
    .await
    .expect_problem(409, "conflict");
    assert_eq!(
        names(&app.get(&classes, &ada.token).await.expect(200)),
        ["billing", "login", "shipping"],
        "all or none"
    );
    app.post(
        &format!("/projects/{id}/upload-classes"),
        &ada.token,
        json!([{"name": "a"}, {"name": "a"}]),
    )
    .await
    .expect_problem(422, "validation_failed");
    // SPEC's class bodies and the original client's ModelClass carry `id`: ignored when adding.
    let with_id = app
        .post(&classes, &ada.token, json!({"name": "x", "id": 999_999}))
        .await
        .expect(201);
    assert_ne!(with_id["id"], 999_999);
    let listed = app
        .post(
            &format!("/projects/{id}/upload-classes"),
            &ada.token,
            json!([{"name": "y", "id": billing["id"]}, {"name": "z", "id": null}]),
        )
        .await
        .expect(201);
    assert_eq!(names(&listed), ["y", "z"]);
    assert_ne!(listed[0]["id"], billing["id"], "a new class, billing unchanged");
    for class in [&with_id, &listed[0], &listed[1]] {
        app.delete(&format!("{classes}/{}", class["id"]), &ada.token)
            .await
            .expect(200);
    }
    app.post(
        &classes,
        &ada.token,
        json!({"name": "x", "created": "2026-01-01T00:00:00Z"}),
    )
    .await
    .expect_problem(400, "immutable_field");

    let billing_path = format!("{classes}/{}", billing["id"]);
    assert_eq!(app.get(&billing_path, &ada.token).await.expect(200)["name"], "billing");
    let changed = app
        .put(
            &billing_path,
            &ada.token,
            json!({"name": "invoices", "description": "money matters"}),
        )
        .await
        .expect(200);
    // What the change leaves out keeps its value: the example annotators read stays.
    assert_eq!(
        (changed["name"].as_str(), changed["example"].as_str()),
        (Some("invoices"), Some("My invoice is wrong"))
    );
    let described = app
        .put(&billing_path, &ada.token, json!({"description": "bills"}))
        .await
        .expect(200);
    assert_eq!(
        (described["name"].as_str(), described["description"].as_str()),
        (Some("invoices"), Some("bills"))
    );
    app.put(&billing_path, &ada.token, json!({"name": "login"}))
        .await
        .expect_problem(409, "conflict");
    // A change may carry the class's own id (as a ModelClass read back does), no other.
    let same = app
        .put(
            &billing_path,
            &ada.token,
            json!({"id": billing["id"], "name": "invoices", "example": "a bill"}),
        )
        .await
        .expect(200);
    assert_eq!((&same["id"], &same["example"]), (&billing["id"], &json!("a bill")));
    let problem = app
        .put(
            &billing_path,
            &ada.token,
            json!({"id": billing["id"].as_i64().unwrap() + 1000, "name": "other"}),
        )
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem["errors"][0]["field"], "id");
    assert_eq!(app.get(&billing_path, &ada.token).await.expect(200)["name"], "invoices");
    app.delete(&billing_path, &ada.token).await.expect(200);
    app.get(&billing_path, &ada.token)
        .await
        .expect_problem(404, "not_found");

    let labels = format!("/projects/{id}/labels");
    let urgent = app
        .post(&labels, &ada.token, json!({"name": "urgent"}))
        .await
        .expect(201);
    app.post(&labels, &ada.token, json!({"name": "routine"}))
        .await
        .expect(201);
    app.post(&labels, &ada.token, json!({"name": "urgent"}))
        .await
        .expect_problem(409, "conflict");
    let by_id = format!("{labels}/{}", urgent["id"]);
    assert_eq!(app.get(&by_id, &ada.token).await.expect(200)["name"], "urgent");
    assert_eq!(
        app.put(&by_id, &ada.token, json!({"name": "critical"}))
            .await
            .expect(200)["name"],
        "critical"
    );
    let by_name = app
        .put(&format!("{labels}/name/routine"), &ada.token, json!({"name": "normal"}))
        .await
        .expect(200);
    assert_eq!(by_name["name"], "normal");
    app.put(&format!("{labels}/name/routine"), &ada.token, json!({"name": "x"}))
        .await
        .expect_problem(404, "not_found");
    app.delete(&by_id, &ada.token).await.expect(200);
    assert_eq!(names(&app.get(&labels, &ada.token).await.expect(200)), ["normal"]);
    let project = app.get(&format!("/projects/{id}"), &ada.token).await.expect(200);
    assert_eq!(project["classes"], json!(["login", "shipping"]));
    assert_eq!(project["labels"], json!(["normal"]));
}

async fn transfer_needs_manager_in_both_workspaces(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let bob = app.register("bob@example.org").await;
    let target = app.workspace(&bob, "Bob's team").await;
    let id = app.project_with_classes(&ada, "Mail", "LABEL", &[]).await;
    app.add_labels(&ada, id, &["spam"]).await;
    let transfer = format!("/projects/{id}/transfer");
    app.post(&transfer, &ada.token, json!({"organization_id": target}))
        .await
        .expect_problem(404, "not_found");

    let membership = app
        .add_member(&bob.token, target, ada.user_id, "USER")
        .await
        .expect(200);
    app.post(&transfer, &ada.token, json!({"organization_id": target}))
        .await
        .expect_problem(403, "forbidden");
    app.put(
        &format!("/organizations/{target}/permissions/{}", membership["id"]),
        &bob.token,
        json!({"role": "MANAGER"}),
    )
    .await
    .expect(200);
    let moved = app
        .post(&transfer, &ada.token, json!({"organization_id": target}))
        .await
        .expect(200);
    assert_eq!(moved["organization_id"], target);
    assert_eq!(moved["labels"], json!(["spam"]), "the project's labels move with it");
    let in_target = app
        .get(&format!("/projects?organization_id={target}"), &bob.token)
        .await
        .expect(200);
    assert_eq!(names(&in_target), ["Mail"]);
    // A move to the workspace it is in moves nothing, and tells nobody it did.
    app.post(&transfer, &ada.token, json!({"organization_id": target}))
        .await
        .expect(200);
    let notices = app.notifications(&ada).await;
    let moved = notices.iter().filter(|n| n["title"] == "Transfer finished").count();
    assert_eq!(moved, 1, "{notices:?}");
}

async fn a_transferred_project_takes_its_models_along(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let vic = app.register("vic@example.org").await;
    let bob = app.register("bob@example.org").await;
    let personal = app.default_workspace_id(&ada).await;
    app.add_member(&ada.token, personal, vic.user_id, "MANAGER")
        .await
        .expect(200);
    let target = app.workspace(&bob, "Bob's team").await;
    app.add_member(&bob.token, target, ada.user_id, "MANAGER")
        .await
        .expect(200);
    let (first, _) = labeled_tickets(&app, &ada, "Tickets").await;
    let model = app
        .train_model(&ada, first, json!({"display_name": "Triage", "name": "triage"}))
        .await;
    assert_eq!(model["status"], "READY", "{model}");
    let id = model["id"].as_i64().unwrap();
    app.post(
        &format!("/projects/{first}/transfer"),
        &ada.token,
        json!({"organization_id": target}),
    )
    .await
    .expect(200);

    // The old workspace's members lose the model with the project; the new one's have it.
    for path in [
        format!("/models/{id}"),
        format!("/models/{id}/download"),
        format!("/projects/{first}/models/{id}"),
    ] {
        app.get(&path, &vic.token).await.expect_problem(404, "not_found");
    }
    app.delete(&format!("/models/{id}"), &vic.token)
        .await
        .expect_problem(404, "not_found");
    let one = app.get(&format!("/models/{id}"), &bob.token).await.expect(200);
    assert_eq!(one["models"][0]["id"], id);
    app.get(&format!("/projects/{first}/models/{id}"), &bob.token)
        .await
        .expect(200);
    let theirs = app
        .get(&format!("/organizations/{target}/models"), &bob.token)
        .await
        .expect(200);
    assert_eq!(ids(&theirs["models"]), [id]);

    // A project whose model's name the target already uses stays where it is, whole.
    let (second, _) = labeled_tickets(&app, &ada, "More tickets").await;
    let other = app
        .train_model(&ada, second, json!({"display_name": "Triage again", "name": "triage"}))
        .await;
    let other_id = other["id"].as_i64().unwrap();
    let refused = app
        .post(
            &format!("/projects/{second}/transfer"),
            &ada.token,
            json!({"organization_id": target}),
        )
        .await
        .expect_problem(409, "conflict");
    assert!(refused["detail"].as_str().unwrap().contains("\"triage\""), "{refused}");
    let stayed = app.get(&format!("/projects/{second}"), &vic.token).await.expect(200);
    assert_eq!(stayed["organization_id"], personal);
    app.get(&format!("/models/{other_id}"), &vic.token).await.expect(200);
    app.get(&format!("/models/{other_id}"), &bob.token)
        .await
        .expect_problem(404, "not_found");
}

async fn projects_follow_roles_and_tenancy(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let eve = app.register("eve@example.org").await;
    let viewer = app.register("viewer@example.org").await;
    let ws = app.workspace(&ada, "Shared").await;
    app.add_member(&ada.token, ws, viewer.user_id, "USER").await.expect(200);
    let id = app
        .post(
            "/projects",
            &ada.token,
            json!({"name": "Docs", "type": "CLASS", "organization_id": ws}),
        )
        .await
        .expect(201)["id"]
        .as_i64()
        .unwrap();
    let path = format!("/projects/{id}");

    // A USER reads but does not manage projects, classes or labels.
    app.get(&path, &viewer.token).await.expect(200);
    app.put(&path, &viewer.token, json!({"name": "Mine"}))
        .await
        .expect_problem(403, "forbidden");
    app.post(&format!("{path}/classes"), &viewer.token, json!({"name": "c"}))
        .await
        .expect_problem(403, "forbidden");
    app.post(
        "/projects",
        &viewer.token,
        json!({"name": "New", "type": "CLASS", "organization_id": ws}),
    )
    .await
    .expect_problem(403, "forbidden");

    // Another workspace's user sees nothing, byte for byte like a missing project.
    let foreign = app.get(&path, &eve.token).await;
    let missing = app.get("/projects/999999", &eve.token).await;
    assert_eq!(foreign.status.as_u16(), 404);
    assert_eq!(foreign.body_without_request_id(), missing.body_without_request_id());
    app.get(&format!("{path}/classes"), &eve.token)
        .await
        .expect_problem(404, "not_found");
    app.get(&format!("{path}/labels"), &eve.token)
        .await
        .expect_problem(404, "not_found");
    app.delete(&path, &eve.token).await.expect_problem(404, "not_found");
    assert!(
        app.get("/projects", &eve.token)
            .await
            .expect(200)
            .as_array()
            .unwrap()
            .is_empty()
    );
    app.post(
        "/projects",
        &eve.token,
        json!({"name": "In", "type": "CLASS", "organization_id": ws}),
    )
    .await
    .expect_problem(404, "not_found");
}
