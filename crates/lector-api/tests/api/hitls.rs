//! HITL configurations through HTTPS on both backends: `update_hitl` and `assign_hitl` change
//! only the fields they are given (SPEC: request fields are optional; "body as for add");
//! the assignee is a member who may submit reviews (an ANNOTATOR or more), and stops being
//! one on leaving the workspace or becoming a VIEWER, the pending reviews that then wait for
//! nobody going to the next assignee; reviews are listed a page at a time. The review story itself is in `extraction.rs`.

use crate::common::invoices::{invoice, invoice_model};
use crate::common::{Session, TestApp};
use serde_json::{Value, json};

backend_tests!(
    a_hitl_change_keeps_what_it_leaves_out,
    a_viewer_is_never_the_assignee,
    reviews_are_listed_a_page_at_a_time,
    a_member_who_leaves_or_becomes_a_viewer_is_no_longer_assigned,
    a_moved_project_waits_for_nobody_outside_its_new_workspace,
    reviews_waiting_for_nobody_go_to_the_next_assignee,
    fields_of_the_model_stay_reviewable_after_a_rename,
    a_configuration_is_checked_against_its_model_and_address,
    a_live_configurations_model_is_not_deleted
);

async fn a_hitl_change_keeps_what_it_leaves_out(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let bob = app.register("bob@example.org").await;
    let (project, model) = invoice_model(&app, &ada).await;
    let workspace = app.default_workspace_id(&ada).await;
    app.add_member(&ada.token, workspace, bob.user_id, "ANNOTATOR")
        .await
        .expect(200);
    let labels = json!({"po_number": {"required": true}});
    let created = app
        .post(
            &format!("/projects/{project}/hitls"),
            &ada.token,
            json!({"name": "Invoice check", "description": "POs", "assigned_user_id": ada.user_id,
                   "model_id": model, "is_live": true, "webhook_url": "https://example.org/hook",
                   "labels": labels}),
        )
        .await
        .expect(201);
    let at = format!("/projects/{project}/hitls/{}", created["id"]);
    let kept = |changed: &serde_json::Value, fields: &[&str]| {
        for field in fields {
            assert_eq!(changed[field], created[field], "{field} kept: {changed}");
        }
    };

    // Assigning names only the user.
    let assigned = app
        .post(
            &format!("{at}/assign"),
            &ada.token,
            json!({"assigned_user_id": bob.user_id}),
        )
        .await
        .expect(200);
    assert_eq!(assigned["assigned_user_id"], bob.user_id);
    kept(
        &assigned,
        &["name", "description", "model_id", "is_live", "webhook_url", "labels"],
    );

    // An update of the description keeps the rest, the new assignee too.
    let described = app
        .put(&at, &ada.token, json!({"description": "Every PO"}))
        .await
        .expect(200);
    assert_eq!(described["description"], "Every PO");
    assert_eq!(described["assigned_user_id"], bob.user_id);
    kept(&described, &["name", "model_id", "is_live", "webhook_url", "labels"]);

    // null clears a nullable field; an empty body changes nothing.
    let cleared = app
        .put(&at, &ada.token, json!({"webhook_url": null, "model_id": null}))
        .await
        .expect(200);
    assert!(
        cleared["webhook_url"].is_null() && cleared["model_id"].is_null(),
        "{cleared}"
    );
    kept(&cleared, &["name", "is_live", "labels"]);
    let same = app.put(&at, &ada.token, json!({})).await.expect(200);
    assert_eq!(same["description"], "Every PO");
    assert_eq!(same["assigned_user_id"], bob.user_id);
    let read = app.get(&at, &ada.token).await.expect(200);
    assert_eq!(read["labels"], labels);

    // What is given is still checked.
    let problem = app
        .put(&at, &ada.token, json!({"name": " "}))
        .await
        .expect_problem(400, "bad_request");
    assert_eq!(problem["errors"][0]["field"], "name");
    let stranger = app.register("eve@example.org").await;
    let problem = app
        .post(
            &format!("{at}/assign"),
            &ada.token,
            json!({"assigned_user_id": stranger.user_id}),
        )
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem["errors"][0]["field"], "assigned_user_id");
    app.put(&at, &ada.token, json!({"colour": "red"}))
        .await
        .expect_problem(400, "unknown_field");
}

async fn a_viewer_is_never_the_assignee(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let vic = app.register("vic@example.org").await;
    let ann = app.register("ann@example.org").await;
    let project = app.project_with_classes(&ada, "Invoices", "LABEL", &[]).await;
    let workspace = app.default_workspace_id(&ada).await;
    app.add_member(&ada.token, workspace, vic.user_id, "VIEWER")
        .await
        .expect(200);
    app.add_member(&ada.token, workspace, ann.user_id, "ANNOTATOR")
        .await
        .expect(200);
    let hitls = format!("/projects/{project}/hitls");
    let problem = app
        .post(
            &hitls,
            &ada.token,
            json!({"name": "Check", "assigned_user_id": vic.user_id}),
        )
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem["errors"][0]["field"], "assigned_user_id");
    assert!(problem.to_string().contains("VIEWER"), "{problem}");
    let hitl = app
        .post(
            &hitls,
            &ada.token,
            json!({"name": "Check", "assigned_user_id": ann.user_id}),
        )
        .await
        .expect(201);
    let at = format!("{hitls}/{}", hitl["id"]);
    app.post(
        &format!("{at}/assign"),
        &ada.token,
        json!({"assigned_user_id": vic.user_id}),
    )
    .await
    .expect_problem(422, "validation_failed");
    let kept = app.get(&at, &ada.token).await.expect(200);
    assert_eq!(kept["assigned_user_id"], ann.user_id);
    app.post(
        &format!("{at}/assign"),
        &ada.token,
        json!({"assigned_user_id": ada.user_id}),
    )
    .await
    .expect(200);

    // The receiver's address may carry its key: a member who does not manage the project
    // reads only its origin.
    let address = "https://hooks.example.org/services/T123/key-456?token=abc";
    app.put(&at, &ada.token, json!({"webhook_url": address}))
        .await
        .expect(200);
    assert_eq!(app.get(&at, &ada.token).await.expect(200)["webhook_url"], address);
    let seen = app.get(&at, &vic.token).await.expect(200);
    assert_eq!(seen["webhook_url"], "https://hooks.example.org/…", "{seen}");
    let listed = app.get(&hitls, &vic.token).await.expect(200);
    assert_eq!(listed[0]["webhook_url"], "https://hooks.example.org/…", "{listed}");
}

async fn reviews_are_listed_a_page_at_a_time(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, model) = invoice_model(&app, &ada).await;
    let workspace = app.default_workspace_id(&ada).await;
    let hitl = app
        .post(
            &format!("/projects/{project}/hitls"),
            &ada.token,
            json!({"name": "Check", "model_id": model, "is_live": true, "assigned_user_id": ada.user_id,
                   "labels": {"po_number": {"required": true}}}),
        )
        .await
        .expect(201);
    let extract = format!("/organizations/{workspace}/projects/{project}/models/{model}/extract");
    let mut made = Vec::new();
    for n in 0..3 {
        // Three documents: the same one sent again finds its waiting review.
        made.push(extracted_review(&app, &extract, &ada, &format!("rechnung-{n}.pdf")).await);
    }
    let reviews = format!("/projects/{project}/hitls/{}/reviews", hitl["id"]);
    let ids = |page: serde_json::Value| -> Vec<i64> {
        page.as_array()
            .expect("a plain array")
            .iter()
            .map(|r| r["review_id"].as_i64().unwrap())
            .collect()
    };
    let newest_first: Vec<i64> = made.iter().rev().copied().collect();
    assert_eq!(ids(app.get(&reviews, &ada.token).await.expect(200)), newest_first);
    let first = app.get(&format!("{reviews}?limit=2"), &ada.token).await.expect(200);
    assert_eq!(ids(first), newest_first[..2]);
    let rest = app
        .get(&format!("{reviews}?offset=2&limit=2&with_full_data=true"), &ada.token)
        .await
        .expect(200);
    assert!(rest[0]["data"].is_object(), "{rest}");
    assert_eq!(ids(rest), newest_first[2..]);
    for query in ["limit=0", "limit=1001", "offset=-1", "with_ful_data=true"] {
        app.get(&format!("{reviews}?{query}"), &ada.token)
            .await
            .expect_problem(400, "invalid_parameter");
    }
}

/// Ada's invoice model, and Bob and Cy annotators of her workspace.
struct Team {
    ada: Session,
    bob: Session,
    cy: Session,
    project: i64,
    model: i64,
    workspace: i64,
    /// Bob's and Cy's memberships.
    bobs: Value,
    cys: Value,
}

async fn team(app: &TestApp) -> Team {
    let ada = app.register("ada@example.org").await;
    let bob = app.register("bob@example.org").await;
    let cy = app.register("cy@example.org").await;
    let (project, model) = invoice_model(app, &ada).await;
    let workspace = app.default_workspace_id(&ada).await;
    let mut members = Vec::new();
    for who in [&bob, &cy] {
        let membership = app.add_member(&ada.token, workspace, who.user_id, "ANNOTATOR").await;
        members.push(membership.expect(200));
    }
    let cys = members.pop().unwrap();
    let bobs = members.pop().unwrap();
    Team {
        ada,
        bob,
        cy,
        project,
        model,
        workspace,
        bobs,
        cys,
    }
}

impl Team {
    /// The address of the project's HITL configurations.
    fn hitls(&self) -> String {
        format!("/projects/{}/hitls", self.project)
    }

    /// A live configuration `name` of the invoice model that requires the PO number, assigned
    /// to `assignee`.
    fn configuration(&self, name: &str, assignee: Option<i64>) -> Value {
        json!({"name": name, "model_id": self.model, "is_live": true,
        "assigned_user_id": assignee, "labels": {"po_number": {"required": true}}})
    }

    /// The invoice model's extraction address.
    fn extract(&self) -> String {
        let Team {
            workspace,
            project,
            model,
            ..
        } = self;
        format!("/organizations/{workspace}/projects/{project}/models/{model}/extract")
    }

    /// The address of the review that Ada's extraction of an invoice (as `file`) makes for
    /// the configuration at `hitl`.
    async fn review(&self, app: &TestApp, file: &str, hitl: &str) -> String {
        let review = extracted_review(app, &self.extract(), &self.ada, file).await;
        format!("{hitl}/reviews/{review}")
    }

    /// Ada takes `membership` (Bob's or Cy's) out of the workspace.
    async fn remove(&self, app: &TestApp, membership: &Value) {
        let at = format!("/organizations/{}/permissions/{}", self.workspace, membership["id"]);
        app.delete(&at, &self.ada.token).await.expect(200);
    }
}

/// The id of the review that `who`'s extraction (at `extract`) of an invoice, as `file`, makes.
async fn extracted_review(app: &TestApp, extract: &str, who: &Session, file: &str) -> i64 {
    let result = app
        .send_form(extract, &who.token, file, &invoice(), &[])
        .await
        .expect(200);
    result["documents"][0]["hitl"]["review_id"].as_i64().expect("a review")
}

/// A project moved to another workspace keeps its configurations and their reviews, but they
/// no longer wait for someone who may not review there: Bob (no member of the target) is
/// unassigned from his configuration and his waiting review, Cy (an ANNOTATOR there) keeps
/// hers. Before, Bob's review stayed his, though he could no longer open it.
async fn a_moved_project_waits_for_nobody_outside_its_new_workspace(app: TestApp) {
    let team = team(&app).await;
    let (ada, bob, cy) = (&team.ada, &team.bob, &team.cy);
    let hitls = team.hitls();
    let mut made = Vec::new();
    for (name, who) in [("Check Bob", bob), ("Check Cy", cy)] {
        let hitl = app
            .post(&hitls, &ada.token, team.configuration(name, Some(who.user_id)))
            .await
            .expect(201);
        let at = format!("{hitls}/{}", hitl["id"]);
        let review = team.review(&app, &format!("{name}.pdf"), &at).await;
        // One live configuration a model: this one rests while the next is made.
        let mut resting = team.configuration(name, Some(who.user_id));
        resting["is_live"] = json!(false);
        app.put(&at, &ada.token, resting).await.expect(200);
        made.push((at, review));
    }
    let target = app
        .post("/organizations", &ada.token, json!({"name": "Elsewhere"}))
        .await
        .expect(200)["id"]
        .as_i64()
        .unwrap();
    app.try_add_member(&ada.token, target, cy.user_id, "ANNOTATOR")
        .await
        .expect(200);
    app.post(
        &format!("/projects/{}/transfer", team.project),
        &ada.token,
        json!({"organization_id": target}),
    )
    .await
    .expect(200);
    let [(bobs, bobs_review), (cys, cys_review)] = &made[..] else {
        unreachable!()
    };
    assert_eq!(
        app.get(bobs, &ada.token).await.expect(200)["assigned_user_id"],
        Value::Null
    );
    assert_eq!(
        app.get(bobs_review, &ada.token).await.expect(200)["user_id"],
        Value::Null
    );
    assert_eq!(
        app.get(cys, &ada.token).await.expect(200)["assigned_user_id"],
        cy.user_id
    );
    assert_eq!(app.get(cys_review, &ada.token).await.expect(200)["user_id"], cy.user_id);
}

async fn a_member_who_leaves_or_becomes_a_viewer_is_no_longer_assigned(app: TestApp) {
    let team = team(&app).await;
    let (ada, bob, cy) = (&team.ada, &team.bob, &team.cy);
    let hitls = team.hitls();
    let for_bob = app
        .post(&hitls, &ada.token, team.configuration("Check Bob", Some(bob.user_id)))
        .await
        .expect(201);
    let first = team
        .review(&app, "first.pdf", &format!("{hitls}/{}", for_bob["id"]))
        .await;
    assert_eq!(app.get(&first, &ada.token).await.expect(200)["user_id"], bob.user_id);
    assert_eq!(app.notifications(bob).await.len(), 1);
    // A review waiting for Bob is his (or a MANAGER's) to submit, not another annotator's.
    let taken = app
        .put(&first, &cy.token, json!({"status": "APPROVED"}))
        .await
        .expect_problem(403, "forbidden");
    assert!(taken["detail"].as_str().unwrap().contains("waits for user"), "{taken}");

    // Bob leaves: the configuration and his pending review are unassigned, and a new review
    // neither names nor notifies him.
    team.remove(&app, &team.bobs).await;
    let hitl = app
        .get(&format!("{hitls}/{}", for_bob["id"]), &ada.token)
        .await
        .expect(200);
    assert!(hitl["assigned_user_id"].is_null(), "{hitl}");
    assert!(app.get(&first, &ada.token).await.expect(200)["user_id"].is_null());
    let second = team
        .review(&app, "second.pdf", &format!("{hitls}/{}", hitl["id"]))
        .await;
    assert!(app.get(&second, &ada.token).await.expect(200)["user_id"].is_null());
    assert_eq!(
        app.notifications(bob).await.len(),
        1,
        "nothing more of a workspace he left"
    );
    // Whoever submits a review is its reviewer, whomever it waited for.
    let submitted = app
        .put(&second, &cy.token, json!({"status": "REJECTED"}))
        .await
        .expect(200);
    assert_eq!(submitted["user_id"], cy.user_id, "{submitted}");

    // Cy becomes a VIEWER, who cannot submit reviews: unassigned likewise.
    app.put(
        &format!("{hitls}/{}", for_bob["id"]),
        &ada.token,
        json!({"is_live": false}),
    )
    .await
    .expect(200);
    let for_cy = app
        .post(&hitls, &ada.token, team.configuration("Check Cy", Some(cy.user_id)))
        .await
        .expect(201);
    app.put(
        &format!("/organizations/{}/permissions/{}", team.workspace, team.cys["id"]),
        &ada.token,
        json!({"role": "VIEWER"}),
    )
    .await
    .expect(200);
    let hitl = app
        .get(&format!("{hitls}/{}", for_cy["id"]), &ada.token)
        .await
        .expect(200);
    assert!(hitl["assigned_user_id"].is_null(), "{hitl}");
    app.send_form(&team.extract(), &ada.token, "third.pdf", &invoice(), &[])
        .await
        .expect(200);
    assert_eq!(app.notifications(cy).await.len(), 0);
}

async fn reviews_waiting_for_nobody_go_to_the_next_assignee(app: TestApp) {
    let team = team(&app).await;
    let (ada, bob, cy) = (&team.ada, &team.bob, &team.cy);
    let hitls = team.hitls();
    let checks = app
        .post(&hitls, &ada.token, team.configuration("Check", Some(bob.user_id)))
        .await
        .expect(201);
    let at = format!("{hitls}/{}", checks["id"]);
    // Bob's review waits for nobody once he leaves; so does one made while nobody is assigned.
    let first = team.review(&app, "first.pdf", &at).await;
    team.remove(&app, &team.bobs).await;
    let second = team.review(&app, "second.pdf", &at).await;
    // A third, submitted, stays its reviewer's.
    let third = team.review(&app, "third.pdf", &at).await;
    app.put(&third, &ada.token, json!({"status": "APPROVED"}))
        .await
        .expect(200);
    // And one of another configuration stays waiting.
    app.put(&at, &ada.token, json!({"is_live": false})).await.expect(200);
    let others = app
        .post(&hitls, &ada.token, team.configuration("Other", None))
        .await
        .expect(201);
    let other = team
        .review(&app, "other.pdf", &format!("{hitls}/{}", others["id"]))
        .await;
    for waiting in [&first, &second, &other] {
        assert!(app.get(waiting, &ada.token).await.expect(200)["user_id"].is_null());
    }
    assert_eq!(app.notifications(cy).await.len(), 0);

    // Cy is assigned: the configuration's waiting reviews are hers, and she is told once.
    let assigned = app
        .post(
            &format!("{at}/assign"),
            &ada.token,
            json!({"assigned_user_id": cy.user_id}),
        )
        .await
        .expect(200);
    assert_eq!(assigned["assigned_user_id"], cy.user_id);
    for given in [&first, &second] {
        assert_eq!(app.get(given, &ada.token).await.expect(200)["user_id"], cy.user_id);
    }
    assert_eq!(app.get(&third, &ada.token).await.expect(200)["user_id"], ada.user_id);
    assert!(app.get(&other, &ada.token).await.expect(200)["user_id"].is_null());
    let notes = app.notifications(cy).await;
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0]["text"].as_str().unwrap().contains("2 reviews of Check"),
        "{notes:?}"
    );
    // Assigned again, with nothing waiting: no more notifications.
    app.put(&at, &ada.token, json!({"assigned_user_id": cy.user_id}))
        .await
        .expect(200);
    assert_eq!(app.notifications(cy).await.len(), 1);
    // The other configuration's review goes to whoever it assigns (an update like assign).
    app.put(
        &format!("{hitls}/{}", others["id"]),
        &ada.token,
        json!({"assigned_user_id": ada.user_id}),
    )
    .await
    .expect(200);
    assert_eq!(app.get(&other, &ada.token).await.expect(200)["user_id"], ada.user_id);
}

/// A review's fields are those the model extracts: a label renamed after training still names
/// a field its configuration may set and its reviews may correct.
async fn fields_of_the_model_stay_reviewable_after_a_rename(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, model) = invoice_model(&app, &ada).await;
    let workspace = app.default_workspace_id(&ada).await;
    app.put(
        &format!("/projects/{project}/labels/name/po_number"),
        &ada.token,
        json!({"name": "order_number"}),
    )
    .await
    .expect(200);
    let hitls = format!("/projects/{project}/hitls");
    let settings = json!({"po_number": {"required": true}, "order_number": {"required": false}});
    let hitl = app
        .post(
            &hitls,
            &ada.token,
            json!({"name": "Check", "model_id": model, "is_live": true, "assigned_user_id": ada.user_id,
                   "labels": settings}),
        )
        .await
        .expect(201);
    let extract = format!("/organizations/{workspace}/projects/{project}/models/{model}/extract");
    let review = extracted_review(&app, &extract, &ada, "rechnung.pdf").await;
    let at = format!("{hitls}/{}/reviews/{review}", hitl["id"]);
    let corrected = json!({"status": "approved", "values": {"po_number": "PO-7", "order_number": "PO-7"}});
    app.put(&at, &ada.token, corrected).await.expect(200);
    // A rejection's values are no training data, so they are kept as the reviewer wrote them.
    let review = extracted_review(&app, &extract, &ada, "rechnung.pdf").await;
    let rejected = json!({"status": "rejected", "values": {"note": "not an invoice"}});
    app.put(
        &format!("{hitls}/{}/reviews/{review}", hitl["id"]),
        &ada.token,
        rejected,
    )
    .await
    .expect(200);
    // Neither the project nor the model knows this one.
    let unknown = json!({"name": "Other", "model_id": model, "labels": {"colour": {}}});
    let problem = app
        .post(&hitls, &ada.token, unknown)
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem["errors"][0]["field"], "labels.colour", "{problem}");
}

/// A live configuration's required field that the model never learnt (a label added after its
/// training) is judged all the same: missing from the document, it makes a review.
async fn a_configuration_is_checked_against_its_model_and_address(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, model) = invoice_model(&app, &ada).await;
    let workspace = app.default_workspace_id(&ada).await;
    app.add_labels(&ada, project, &["tax_id"]).await;
    let hitl = app
        .post(
            &format!("/projects/{project}/hitls"),
            &ada.token,
            json!({"name": "Tax check", "model_id": model, "is_live": true,
                   "labels": {"tax_id": {"required": true}}}),
        )
        .await
        .expect(201);
    // An address the server never posts to is refused when saved, not by failed deliveries.
    for url in [
        "http://127.0.0.1:9/hook",
        "http://169.254.169.254/latest",
        "https://localhost/x",
    ] {
        let refused = app
            .post(
                &format!("/projects/{project}/hitls"),
                &ada.token,
                json!({"name": "Private", "webhook_url": url}),
            )
            .await
            .expect_problem(422, "validation_failed");
        assert_eq!(crate::common::problem_fields(&refused), ["webhook_url"], "{url}");
    }
    app.put(
        &format!("/projects/{project}/hitls/{}", hitl["id"]),
        &ada.token,
        json!({"webhook_url": "http://[::1]/hook"}),
    )
    .await
    .expect_problem(422, "validation_failed");
    // One live configuration judges a model: a second is refused until the first is not live.
    let second = json!({"name": "Second", "model_id": model, "is_live": true});
    let refused = app
        .post(&format!("/projects/{project}/hitls"), &ada.token, second.clone())
        .await
        .expect_problem(409, "conflict");
    assert!(refused["detail"].as_str().unwrap().contains("is_live"), "{refused}");
    let quiet = app
        .post(
            &format!("/projects/{project}/hitls"),
            &ada.token,
            json!({"name": "Quiet", "model_id": model}),
        )
        .await
        .expect(201);
    app.put(
        &format!("/projects/{project}/hitls/{}", quiet["id"]),
        &ada.token,
        json!({"is_live": true}),
    )
    .await
    .expect_problem(409, "conflict");
    let extract = format!("/organizations/{workspace}/projects/{project}/models/{model}/extract");
    let result = app
        .send_form(&extract, &ada.token, "invoice.pdf", &invoice(), &[])
        .await
        .expect(200);
    let document = &result["documents"][0];
    assert_eq!(document["missing_fields"], json!(["tax_id"]), "{document}");
    assert_eq!(document["all_required_fields_found"], false);
    let review = document["hitl"]["review_id"].as_i64().expect("a review");
    let reviewed = app
        .get(
            &format!("/projects/{project}/hitls/{}/reviews/{review}", hitl["id"]),
            &ada.token,
        )
        .await
        .expect(200);
    assert_eq!(reviewed["status"], "PENDING");
}

/// Deleting the model of a live configuration is refused, naming the configuration and what to
/// do (the deletion cleared its `model_id`, silently ending its reviews); once the
/// configuration is off, the model goes and the configuration stays, without a model.
async fn a_live_configurations_model_is_not_deleted(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, model) = invoice_model(&app, &ada).await;
    let hitl = app
        .post(
            &format!("/projects/{project}/hitls"),
            &ada.token,
            json!({"name": "Invoice check", "model_id": model, "is_live": true}),
        )
        .await
        .expect(201);
    let at = format!("/projects/{project}/hitls/{}", hitl["id"]);
    for path in [
        format!("/models/{model}"),
        format!("/projects/{project}/models/{model}"),
    ] {
        let refused = app.delete(&path, &ada.token).await.expect_problem(409, "conflict");
        let detail = refused["detail"].as_str().unwrap();
        assert!(
            detail.contains(&format!("live HITL configuration {} (\"Invoice check\")", hitl["id"]))
                && detail.contains("is_live: false"),
            "{refused}"
        );
    }
    assert_eq!(app.get(&at, &ada.token).await.expect(200)["model_id"], model);
    app.put(&at, &ada.token, json!({"is_live": false})).await.expect(200);
    app.delete(&format!("/models/{model}"), &ada.token).await.expect(200);
    let kept = app.get(&at, &ada.token).await.expect(200);
    assert_eq!(
        (&kept["model_id"], &kept["is_live"]),
        (&Value::Null, &json!(false)),
        "{kept}"
    );
}
