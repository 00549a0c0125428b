//! Notifications: the internal `notify` API, listing, reading, the `/users/{id}` aliases and
//! the change of a notification's fields (SPEC's body: title, text, created, type, read) and the
//! refusal of its id, through HTTPS on both backends.

use crate::common::TestApp;
use lector_core::NotificationType;
use lector_core::validate::{MAX_NOTIFICATION_TEXT_CHARS, MAX_NOTIFICATION_TITLE_CHARS};
use serde_json::json;

backend_tests!(
    notifications_are_listed_read_and_unread,
    notifications_belong_to_their_user,
    notifications_change_as_spec_says,
    what_the_service_writes_its_api_accepts,
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
    let problem = app
        .put(&path, &ada.token, json!({"id": 7, "read": ""}))
        .await
        .expect_problem(400, "immutable_field");
    assert_eq!(problem["errors"][0]["field"], "id");
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

    // Only the unread ones, or only the read ones: what the web app's bell counts.
    let ids = |list: serde_json::Value| -> Vec<i64> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|n| n["id"].as_i64().unwrap())
            .collect()
    };
    let unread = ids(app.get("/notifications?read=false", &ada.token).await.expect(200));
    assert_eq!(
        unread,
        all[1..].iter().map(|n| n["id"].as_i64().unwrap()).collect::<Vec<_>>()
    );
    assert_eq!(
        ids(app.get(&format!("{alias}?read=true"), &ada.token).await.expect(200)),
        [id]
    );
    assert_eq!(
        ids(app
            .get("/notifications?read=false&offset=1&limit=1", &ada.token)
            .await
            .expect(200)),
        [unread[1]]
    );
    app.get("/notifications?read=maybe", &ada.token)
        .await
        .expect_problem(400, "invalid_parameter");
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

/// SPEC's "change a notification" takes title, text, created, type and read: the original
/// client's NotificationInput sends them back as it read them, and each one given is applied;
/// a field left out keeps its value.
async fn notifications_change_as_spec_says(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let note = app
        .state
        .store
        .notify(ada.user_id, NotificationType::Info, "Model ready", "Score 0.9")
        .await
        .unwrap();
    let path = format!("/notifications/{}", note.id);
    let fetched = app.get(&path, &ada.token).await.expect(200);

    // The fetched notification sent back (without its id) with `read` set: only `read` moves.
    let mut input = fetched.clone();
    input.as_object_mut().unwrap().remove("id");
    input["read"] = json!("2024-05-01T12:00:00.123456");
    let read = app.put(&path, &ada.token, input).await.expect(200);
    assert_eq!(read["read"], "2024-05-01T12:00:00.123456Z");
    for field in ["id", "title", "text", "created", "type"] {
        assert_eq!(read[field], fetched[field], "{field}");
    }

    // Each field given replaces its value; `read` left out stays.
    let changed = app
        .put(
            &path,
            &ada.token,
            json!({"title": "Renamed", "text": "Two lines\nof text", "type": "WARNING",
                   "created": "2024-01-02T03:04:05"}),
        )
        .await
        .expect(200);
    assert_eq!(changed["title"], "Renamed");
    assert_eq!(changed["text"], "Two lines\nof text");
    assert_eq!(changed["type"], "WARNING");
    assert_eq!(changed["created"], "2024-01-02T03:04:05Z");
    assert_eq!(changed["read"], "2024-05-01T12:00:00.123456Z", "read left out stays");
    assert_eq!(app.get(&path, &ada.token).await.expect(200), changed);

    // `null`, like "", marks it unread.
    let unread = app.put(&path, &ada.token, json!({"read": null})).await.expect(200);
    assert!(unread["read"].is_null(), "{unread}");
    assert_eq!(unread["title"], "Renamed");

    for (body, field) in [
        (json!({"type": "DEBUG"}), "type"),
        (json!({"title": " "}), "title"),
        (json!({"title": "x".repeat(201)}), "title"),
        (json!({"text": "x".repeat(2001)}), "text"),
        (json!({"created": "last week"}), "created"),
        // Past the year 9999 in UTC, or before 0: it could not be served again.
        (json!({"read": "9999-12-31T23:59:59-23:59"}), "read"),
        (json!({"created": "0000-01-01T00:00:00+23:59"}), "created"),
    ] {
        let problem = app
            .put(&path, &ada.token, body)
            .await
            .expect_problem(422, "validation_failed");
        assert_eq!(problem["errors"][0]["field"], field);
    }
}

/// The service's own notifications (a job's error, a workflow's message, a review's notice)
/// are cut to what `update_notification` accepts, so they can be sent back unchanged.
async fn what_the_service_writes_its_api_accepts(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let note = app
        .state
        .store
        .notify(
            ada.user_id,
            NotificationType::Warning,
            &"T".repeat(300),
            &"é".repeat(30_000),
        )
        .await
        .unwrap();
    assert_eq!(note.title.chars().count(), MAX_NOTIFICATION_TITLE_CHARS);
    assert_eq!(note.text.chars().count(), MAX_NOTIFICATION_TEXT_CHARS);
    let path = format!("/notifications/{}", note.id);
    let fetched = app.get(&path, &ada.token).await.expect(200);
    app.put(
        &path,
        &ada.token,
        json!({"title": fetched["title"], "text": fetched["text"]}),
    )
    .await
    .expect(200);
}
