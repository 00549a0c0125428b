//! Notifications: the internal `notify` API, listing, reading, the `/users/{id}` aliases and
//! the refusal of server-owned fields, through HTTPS on both backends.

use crate::common::TestApp;
use lector_core::NotificationType;
use serde_json::json;

backend_tests!(
    notifications_are_listed_read_and_unread,
    notifications_belong_to_their_user
);

async fn notifications_are_listed_read_and_unread(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    for n in 0..3 {
        app.state
            .store
            .notify(
                ada.user_id,
                NotificationType::Info,
                &format!("Model {n} ready"),
                "Score 0.9",
            )
            .await
            .unwrap();
    }
    app.state
        .store
        .notify(
            ada.user_id,
            NotificationType::Warning,
            "Import finished",
            "2 rows rejected",
        )
        .await
        .unwrap();

    let all = app.get("/notifications", &ada.token).await.expect(200);
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), 4);
    assert_eq!(all[0]["title"], "Import finished", "newest first");
    assert_eq!(all[0]["type"], "WARNING");
    assert!(all[0]["read"].is_null(), "unread is null, never \"\": {}", all[0]);
    let page = app.get("/notifications?offset=1&limit=2", &ada.token).await.expect(200);
    assert_eq!(
        page.as_array()
            .unwrap()
            .iter()
            .map(|n| n["id"].clone())
            .collect::<Vec<_>>(),
        [all[1]["id"].clone(), all[2]["id"].clone()]
    );
    app.get("/notifications?limit=0", &ada.token)
        .await
        .expect_problem(400, "invalid_parameter");
    app.get("/notifications?limit=1001", &ada.token)
        .await
        .expect_problem(400, "invalid_parameter");
    app.get("/notifications?offset=-1", &ada.token)
        .await
        .expect_problem(400, "invalid_parameter");

    let id = all[0]["id"].as_i64().unwrap();
    let path = format!("/notifications/{id}");
    assert_eq!(app.get(&path, &ada.token).await.expect(200)["text"], "2 rows rejected");
    let read = app
        .put(&path, &ada.token, json!({"read": "2026-11-21T10:00:00Z"}))
        .await
        .expect(200);
    assert_eq!(read["read"], "2026-11-21T10:00:00Z");
    // Python's datetime.now().isoformat(), as the original client sends it: no offset, UTC.
    let naive = app
        .put(&path, &ada.token, json!({"read": "2024-05-01T12:00:00.123456"}))
        .await
        .expect(200);
    assert_eq!(naive["read"], "2024-05-01T12:00:00.123456Z");
    let unread = app.put(&path, &ada.token, json!({"read": ""})).await.expect(200);
    assert!(unread["read"].is_null(), "{unread}");
    for field in ["title", "text", "created", "type", "id"] {
        let problem = app
            .put(&path, &ada.token, json!({field: "x"}))
            .await
            .expect_problem(400, "immutable_field");
        assert_eq!(problem["errors"][0]["field"], field);
    }
    app.put(&path, &ada.token, json!({"read": "yesterday"}))
        .await
        .expect_problem(422, "validation_failed");
    app.put(&path, &ada.token, json!({"colour": "red"}))
        .await
        .expect_problem(400, "unknown_field");

    let alias = format!("/users/{}/notifications", ada.user_id);
    assert_eq!(
        app.get(&alias, &ada.token).await.expect(200).as_array().unwrap().len(),
        4
    );
    assert_eq!(
        app.get(&format!("{alias}/{id}"), &ada.token).await.expect(200)["id"],
        id
    );
    let via_alias = app
        .put(
            &format!("{alias}/{id}"),
            &ada.token,
            json!({"read": "2026-11-21T11:00:00+01:00"}),
        )
        .await
        .expect(200);
    assert_eq!(via_alias["read"], "2026-11-21T10:00:00Z");
}

async fn notifications_belong_to_their_user(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let eve = app.register("eve@example.org").await;
    let note = app
        .state
        .store
        .notify(ada.user_id, NotificationType::Info, "Private", "for Ada")
        .await
        .unwrap();
    assert!(
        app.get("/notifications", &eve.token)
            .await
            .expect(200)
            .as_array()
            .unwrap()
            .is_empty()
    );
    app.get(&format!("/notifications/{}", note.id), &eve.token)
        .await
        .expect_problem(404, "not_found");
    app.put(&format!("/notifications/{}", note.id), &eve.token, json!({"read": ""}))
        .await
        .expect_problem(404, "not_found");
    app.get(&format!("/users/{}/notifications", ada.user_id), &eve.token)
        .await
        .expect_problem(403, "forbidden");
    let root = app.superuser("root@example.org").await;
    let seen = app
        .get(&format!("/users/{}/notifications", ada.user_id), &root.token)
        .await
        .expect(200);
    assert_eq!(seen[0]["title"], "Private");
}
