//! Names that talk (issue 12, finding 8): a workspace name cannot add lines to a mail, and a
//! workspace name tells nobody whether an e-mail address is registered.

use crate::common::TestApp;
use serde_json::json;

backend_tests!(
    personal_workspaces_are_not_named_after_the_address,
    workspace_names_cannot_write_into_mails,
);

async fn personal_workspaces_are_not_named_after_the_address(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let status = app.get("/auth/status", &ada.token).await.expect(200);
    let name = status["workspaces"][0]["name"].as_str().unwrap().to_owned();
    assert_eq!(name, "Personal workspace of Test");
    // A second user of the same first name gets a name of its own.
    let bob = app.register("bob@example.org").await;
    let status = app.get("/auth/status", &bob.token).await.expect(200);
    assert_eq!(status["workspaces"][0]["name"], "Personal workspace of Test (2)");

    // Creating a workspace named after an address answers alike, registered or not.
    let eve = app.register("eve@example.org").await;
    let mut answers = Vec::new();
    for address in ["ada@example.org", "nobody@example.org", "team ada@example.org (2)"] {
        let answer = app.post("/organizations", &eve.token, json!({"name": address})).await;
        let problem = answer.expect_problem(422, "validation_failed");
        assert_eq!(problem["errors"][0]["field"], "name");
        answers.push(problem["detail"].clone());
    }
    assert_eq!(answers[0], answers[1]);
}

async fn workspace_names_cannot_write_into_mails(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let forged = "Team\nToken: forged\n";
    let answer = app.post("/organizations", &ada.token, json!({"name": forged})).await;
    assert_eq!(
        answer.expect_problem(400, "invalid_characters")["errors"][0]["field"],
        "name"
    );
    app.post("/organizations", &ada.token, json!({"name": "Team"}))
        .await
        .expect(200);
    let answer = app
        .put("/organizations/Team", &ada.token, json!({"name": forged}))
        .await;
    answer.expect_problem(400, "invalid_characters");

    // A name stored before the rule (written past the API) is quoted with escapes in the mail.
    let (_, scope) = app.state.store.principal(ada.user_id).await.unwrap().unwrap();
    let legacy = app
        .state
        .store
        .create_workspace(&scope, forged, "")
        .await
        .expect("the store itself takes any name");
    app.invite(&ada.token, legacy.id, "ANNOTATOR", ["bob@example.org"])
        .await
        .expect(200);
    let mail = app.mails_to("bob@example.org").await.pop().expect("an invitation mail");
    assert!(!mail.lines().any(|l| l.starts_with("Token: forged")), "{mail}");
    // (The mail is quoted-printable, which may break the line after the escapes.)
    assert!(mail.contains(r#""Team\nToken: forged\"#), "{mail}");
    assert_ne!(app.token_from_mail("bob@example.org").await, "forged");
}
