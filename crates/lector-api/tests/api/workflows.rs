//! Workflows through HTTPS on both backends: the resource and its roles, production and test
//! addresses (one call, a window that closes), one registration per path and method, the
//! response modes, the trigger's authentication, limits, failing steps, and the story of a
//! customer e-mail answered with its predicted class.

use crate::common::tickets::labeled_tickets;
use crate::common::{Answer, Session, TestApp};
use reqwest::Method;
use serde_json::{Value, json};

backend_tests!(
    workflows_are_a_resource_of_their_workspace,
    the_production_address_listens_while_active,
    a_deactivated_user_runs_no_workflow,
    responses_follow_the_trigger,
    one_registration_per_path_and_method,
    a_deactivated_workspace_frees_its_addresses,
    a_test_address_serves_one_call_and_keeps_its_data,
    the_trigger_authenticates_its_callers,
    a_key_header_name_stored_with_an_underscore_stays_editable,
    each_method_may_lead_to_its_own_steps,
    a_failing_step_stops_the_execution,
    a_request_the_calls_data_spoils_is_the_callers,
    a_written_host_refused_is_the_steps_configuration,
    a_template_past_its_cap_fails_the_run,
    files_and_forms_reach_the_steps,
    a_customer_email_is_answered_with_its_class,
);

/// An answer from a webhook address: status, content type, raw text and JSON if any.
struct Hook {
    status: u16,
    content_type: String,
    text: String,
    json: Value,
    headers: reqwest::header::HeaderMap,
}

/// A POST of a JSON body to a webhook address, without extra headers: most calls of the tests.
async fn post_hook(app: &TestApp, path: &str, body: Value) -> Hook {
    hook(app, Method::POST, path, Some(body), &[]).await
}

/// A multipart form (fields and one file) posted to a webhook address: its status and JSON answer.
async fn form_hook(
    app: &TestApp,
    path: &str,
    fields: &[(&str, String)],
    file_name: &str,
    bytes: &[u8],
) -> (u16, Value) {
    let (content_type, body) = crate::common::multipart(fields, file_name, bytes);
    let response = app
        .client
        .post(app.url(path))
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .expect("request");
    (
        response.status().as_u16(),
        response.json().await.expect("a JSON answer"),
    )
}

async fn hook(app: &TestApp, method: Method, path: &str, body: Option<Value>, headers: &[(&str, &str)]) -> Hook {
    let mut request = app.client.request(method, app.url(path));
    if let Some(body) = body {
        request = request.json(&body);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let text = response.text().await.expect("body");
    Hook {
        status,
        content_type,
        json: serde_json::from_str(&text).unwrap_or(Value::Null),
        text,
        headers,
    }
}

async fn create(app: &TestApp, who: &Session, body: Value) -> Value {
    app.post("/workflows", &who.token, body).await.expect(201)
}

/// Activates `workflow` as `who`; answers the answer.
async fn activate(app: &TestApp, who: &Session, workflow: i64) -> Answer {
    app.post(&format!("/workflows/{workflow}/activate"), &who.token, json!({}))
        .await
}

fn id(workflow: &Value) -> i64 {
    workflow["id"].as_i64().expect("an id")
}

/// A workflow that answers its request's body back, shaped by a set step.
fn echo(name: &str, path: &str, method: &str) -> Value {
    json!({
        "name": name,
        "trigger": {"path": path, "http_method": method, "response_mode": "last_step"},
        "steps": [{"type": "set", "fields": [{"name": "echo", "from": "body"}], "keep_only_set": true}]
    })
}

async fn executions(app: &TestApp, who: &Session, workflow: i64) -> Vec<Value> {
    app.get(&format!("/workflows/{workflow}/executions"), &who.token)
        .await
        .expect(200)["executions"]
        .as_array()
        .unwrap()
        .clone()
}

async fn workflows_are_a_resource_of_their_workspace(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let created = create(&app, &ada, json!({"name": "Inbox", "trigger": {"path": "inbox"}})).await;
    assert_eq!(created["active"], false);
    assert_eq!(created["methods"], json!(["GET"]));
    assert_eq!(created["trigger"]["response_mode"], "immediately");
    assert_eq!(created["trigger"]["response_data"], "first_entry_json");
    assert_eq!(created["trigger"]["authentication"], json!({"type": "none"}));
    assert!(created["production_url"].as_str().unwrap().ends_with("/webhook/inbox"));
    assert!(created["test_url"].as_str().unwrap().ends_with("/webhook-test/inbox"));
    let workflow = id(&created);
    let workspace = created["organization_id"].as_i64().unwrap();

    let listed = app.get("/workflows", &ada.token).await.expect(200);
    assert_eq!(
        (listed["count"].clone(), listed["has_more"].clone()),
        (json!(1), json!(false))
    );
    let page = app.get("/workflows?limit=1&offset=1", &ada.token).await.expect(200);
    assert_eq!(page["workflows"], json!([]));
    app.get("/workflows?limit=0", &ada.token)
        .await
        .expect_problem(400, "invalid_parameter");

    let changed = app
        .put(
            &format!("/workflows/{workflow}"),
            &ada.token,
            echo("Echo", "echo/in", "POST"),
        )
        .await
        .expect(200);
    assert_eq!(changed["name"], "Echo");
    assert_eq!(changed["methods"], json!(["POST"]));
    assert_eq!(changed["steps"][0]["type"], "set");

    // Bad definitions are refused with every problem named.
    let bad = app
        .post(
            "/workflows",
            &ada.token,
            json!({"name": "Bad", "trigger": {"path": "/x/", "response_code": 99},
                   "steps": [{"type": "analyze", "model_id": 0}]}),
        )
        .await
        .expect_problem(422, "validation_failed");
    let fields = crate::common::problem_fields(&bad);
    assert_eq!(fields, ["trigger.path", "trigger.response_code", "steps[0].model_id"]);
    // What does not fit the definition's shape is refused as the body's own fields are,
    // naming where it is.
    for (body, code, field) in [
        (
            json!({"steps": [{"type": "analyze", "model_id": 1}, {"type": "shell"}]}),
            "bad_request",
            "steps[1].type",
        ),
        (
            json!({"steps": [{"type": "analyze"}]}),
            "bad_request",
            "steps[0].model_id",
        ),
        (
            json!({"trigger": {"path": "x", "http_method": "FOO"}}),
            "bad_request",
            "trigger.http_method",
        ),
        (
            json!({"trigger": {"path": "x", "colour": 1}}),
            "unknown_field",
            "trigger.colour",
        ),
    ] {
        let mut body = body;
        body["name"] = json!("Bad");
        if body.get("trigger").is_none() {
            body["trigger"] = json!({"path": "x"});
        }
        let refused = app.post("/workflows", &ada.token, body).await.expect_problem(400, code);
        assert_eq!(crate::common::problem_fields(&refused), [field], "{refused}");
    }
    app.post(
        "/workflows",
        &ada.token,
        json!({"name": "Bad", "trigger": {"path": "x"}, "id": 4}),
    )
    .await
    .expect_problem(400, "immutable_field");

    // Viewers read; USERs change; strangers see nothing.
    let vera = app.register("vera@example.org").await;
    let uma = app.register("uma@example.org").await;
    let eve = app.register("eve@example.org").await;
    for (who, role) in [(&vera, "VIEWER"), (&uma, "USER")] {
        app.add_member(&ada.token, workspace, who.user_id, role)
            .await
            .expect(200);
    }
    let one = format!("/workflows/{workflow}");
    app.get(&one, &vera.token).await.expect(200);
    app.get(&format!("{one}/executions"), &vera.token).await.expect(200);
    let in_workspace = json!({"name": "V", "organization_id": workspace, "trigger": {"path": "v"}});
    app.post("/workflows", &vera.token, in_workspace.clone())
        .await
        .expect_problem(403, "forbidden");
    app.put(&one, &vera.token, echo("V", "v", "GET"))
        .await
        .expect_problem(403, "forbidden");
    activate(&app, &vera, workflow).await.expect_problem(403, "forbidden");
    app.post(&format!("{one}/test"), &vera.token, json!({}))
        .await
        .expect_problem(403, "forbidden");
    app.delete(&one, &vera.token).await.expect_problem(403, "forbidden");
    app.post("/workflows", &uma.token, in_workspace).await.expect(201);
    // An outbound call's header values (often a key) are shown to those who may edit it only.
    let keyed = app
        .post(
            "/workflows",
            &uma.token,
            json!({"name": "CRM", "organization_id": workspace, "trigger": {"path": "crm"},
                   "steps": [{"type": "http_request", "url": "https://crm.example/x",
                              "headers": {"Authorization": "Bearer crm-key"}}]}),
        )
        .await
        .expect(201);
    let keyed = format!("/workflows/{}", keyed["id"]);
    let header = |w: &Value| w["steps"][0]["headers"]["Authorization"].clone();
    assert_eq!(header(&app.get(&keyed, &uma.token).await.expect(200)), "Bearer crm-key");
    assert_eq!(header(&app.get(&keyed, &vera.token).await.expect(200)), "(hidden)");
    let listed = app.get("/workflows?limit=100", &vera.token).await.expect(200);
    assert!(!listed.to_string().contains("crm-key"), "{listed}");
    app.delete(&keyed, &uma.token).await.expect(200);
    app.get(&one, &eve.token).await.expect_problem(404, "not_found");
    app.delete(&one, &eve.token).await.expect_problem(404, "not_found");
    assert_eq!(app.get("/workflows", &eve.token).await.expect(200)["count"], 0);
    let in_other = json!({"name": "E", "organization_id": workspace, "trigger": {"path": "e"}});
    app.post("/workflows", &eve.token, in_other)
        .await
        .expect_problem(404, "not_found");
    // Nor does a stranger learn who its members are from a notify step's check: a member, a
    // stranger and a workspace that does not exist are answered alike (it was 422 naming the
    // step for a user who is not a member).
    for (workspace, user) in [
        (workspace, ada.user_id),
        (workspace, eve.user_id),
        (workspace + 1000, eve.user_id),
    ] {
        let probe = json!({"name": "P", "organization_id": workspace, "trigger": {"path": "p"},
            "steps": [{"type": "notify", "user_id": user, "message": "hi"}]});
        let refused = app
            .post("/workflows", &eve.token, probe)
            .await
            .expect_problem(404, "not_found");
        assert_eq!(refused["detail"], "workspace not found", "{refused}");
    }

    assert_eq!(app.get("/workflows", &vera.token).await.expect(200)["count"], 2);
    app.delete(&one, &uma.token).await.expect(200);
    app.get(&one, &ada.token).await.expect_problem(404, "not_found");
}

/// A workflow runs as the user who put it to work; once that account is deactivated (by hand:
/// no route does), it runs no more (409), as the account's own tokens stop working. Before,
/// workflow runs looked at the memberships only.
async fn a_deactivated_user_runs_no_workflow(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let workflow = id(&create(&app, &ada, echo("Orders", "shop/orders", "POST")).await);
    activate(&app, &ada, workflow).await.expect(200);
    assert_eq!(
        post_hook(&app, "/webhook/shop/orders", json!({"n": 1})).await.status,
        200
    );
    lector_store::testing::deactivate_user(&app.state.store, ada.user_id).await;
    let refused = post_hook(&app, "/webhook/shop/orders", json!({"n": 2})).await;
    assert_eq!(
        (refused.status, refused.json["code"].clone()),
        (409, json!("conflict")),
        "{}",
        refused.text
    );
}

async fn the_production_address_listens_while_active(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let workflow = id(&create(&app, &ada, echo("Orders", "shop/orders", "POST")).await);
    let before = post_hook(&app, "/webhook/shop/orders", json!({"n": 1})).await;
    assert_eq!(before.status, 404);
    assert!(
        before.json["detail"]
            .as_str()
            .unwrap()
            .contains("POST /webhook/shop/orders"),
        "{}",
        before.text
    );

    let active = activate(&app, &ada, workflow).await.expect(200);
    assert_eq!(active["active"], true);
    assert_eq!(active["runs_as_user_id"], ada.user_id);
    let answered = post_hook(&app, "/webhook/shop/orders", json!({"n": 1})).await;
    assert_eq!(
        (answered.status, answered.json.clone()),
        (200, json!({"echo": {"n": 1}}))
    );
    // No bearer is needed, and one is not looked at.
    let with_bearer = hook(
        &app,
        Method::POST,
        "/webhook/shop/orders",
        None,
        &[("authorization", "Bearer nonsense")],
    )
    .await;
    assert_eq!(with_bearer.status, 200);

    // A path no workflow could register is refused before any look-up (a NUL was a 500 on
    // PostgreSQL).
    let nul = post_hook(&app, "/webhook/shop%00orders", json!({"n": 1})).await;
    assert_eq!(
        (nul.status, nul.json["code"].clone()),
        (400, json!("invalid_characters"))
    );

    let wrong = hook(&app, Method::GET, "/webhook/shop/orders", None, &[]).await;
    assert_eq!(wrong.status, 405);
    assert_eq!(wrong.headers["allow"], "POST");
    assert!(
        wrong.json["detail"].as_str().unwrap().contains("POST"),
        "{}",
        wrong.text
    );
    assert_eq!(
        hook(&app, Method::POST, "/webhook/shop/other", None, &[]).await.status,
        404
    );

    let recorded = executions(&app, &ada, workflow).await;
    assert_eq!(recorded.len(), 2);
    assert!(
        recorded
            .iter()
            .all(|e| e["status"] == "success" && e["mode"] == "production")
    );
    assert!(
        recorded.iter().all(|e| e["data"].is_null()),
        "production keeps no data by default"
    );
    assert!(recorded[0]["finished"].is_string());

    app.post(&format!("/workflows/{workflow}/deactivate"), &ada.token, json!({}))
        .await
        .expect(200);
    assert_eq!(
        hook(&app, Method::POST, "/webhook/shop/orders", None, &[]).await.status,
        404
    );

    // A workflow that keeps its data shows it; an active workflow takes a new path at once.
    let mut keeping = echo("Orders", "shop/orders-v2", "POST");
    keeping["keep_data"] = json!(true);
    app.put(&format!("/workflows/{workflow}"), &ada.token, keeping)
        .await
        .expect(200);
    activate(&app, &ada, workflow).await.expect(200);
    app.put(&format!("/workflows/{workflow}"), &ada.token, {
        let mut moved = echo("Orders", "shop/orders-v3", "POST");
        moved["keep_data"] = json!(true);
        moved
    })
    .await
    .expect(200);
    assert_eq!(
        hook(&app, Method::POST, "/webhook/shop/orders-v2", None, &[])
            .await
            .status,
        404
    );
    let kept = post_hook(&app, "/webhook/shop/orders-v3", json!({"n": 3})).await;
    assert_eq!(kept.status, 200);
    let newest = &executions(&app, &ada, workflow).await[0];
    assert_eq!(newest["data"][0]["entries"][0]["json"]["body"], json!({"n": 3}));
    assert_eq!(newest["data"][1]["type"], "set");
}

async fn responses_follow_the_trigger(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let body = json!({"text": "hello", "n": 2});
    let cases = [
        (
            json!({"response_mode": "immediately"}),
            200,
            json!({"message": "Workflow was started"}),
        ),
        (
            json!({"response_mode": "last_step", "response_data": "all_entries"}),
            200,
            json!([{"out": body}]),
        ),
        (json!({"response_mode": "last_step"}), 200, json!({"out": body})),
        (
            json!({"response_mode": "last_step", "property_name": "out", "response_code": 201}),
            201,
            body.clone(),
        ),
    ];
    for (n, (settings, status, expected)) in cases.into_iter().enumerate() {
        let mut trigger = json!({"path": format!("modes/{n}"), "http_method": "POST"});
        trigger
            .as_object_mut()
            .unwrap()
            .extend(settings.as_object().unwrap().clone());
        let workflow = create(
            &app,
            &ada,
            json!({"name": format!("M{n}"), "trigger": trigger,
            "steps": [{"type": "set", "fields": [{"name": "out", "from": "body"}], "keep_only_set": true}]}),
        )
        .await;
        activate(&app, &ada, id(&workflow)).await.expect(200);
        let answered = post_hook(&app, &format!("/webhook/modes/{n}"), body.clone()).await;
        assert_eq!((answered.status, answered.json), (status, expected), "case {n}");
    }
    // A string property is answered as plain text; no_data answers nothing.
    let text = create(
        &app,
        &ada,
        json!({"name": "Text", "trigger": {"path": "modes/text", "http_method": "POST",
        "response_mode": "last_step", "property_name": ""},
        "steps": [{"type": "set", "fields": [{"name": "data", "value": "Hi {{ body.text }}"}]}]}),
    )
    .await;
    let empty = create(
        &app,
        &ada,
        json!({"name": "Empty", "trigger": {"path": "modes/empty", "http_method": "POST",
        "response_mode": "last_step", "response_data": "no_data", "response_code": 202}}),
    )
    .await;
    for workflow in [&text, &empty] {
        activate(&app, &ada, id(workflow)).await.expect(200);
    }
    let plain = post_hook(&app, "/webhook/modes/text", body.clone()).await;
    assert_eq!((plain.status, plain.text.as_str()), (200, "Hi hello"));
    assert!(plain.content_type.starts_with("text/plain"), "{}", plain.content_type);
    let nothing = post_hook(&app, "/webhook/modes/empty", body.clone()).await;
    assert_eq!((nothing.status, nothing.text.as_str()), (202, ""));

    // A 204 sends neither a body nor its length; a property the call's data lacks is the
    // caller's problem (422 naming it), not the server's.
    let no_content = create(
        &app,
        &ada,
        json!({"name": "No content", "trigger": {"path": "modes/none", "http_method": "POST",
        "response_mode": "last_step", "response_code": 204}}),
    )
    .await;
    let property = create(
        &app,
        &ada,
        json!({"name": "Property", "trigger": {"path": "modes/property", "http_method": "POST",
        "response_mode": "last_step", "property_name": "body.missing"}}),
    )
    .await;
    for workflow in [&no_content, &property] {
        activate(&app, &ada, id(workflow)).await.expect(200);
    }
    let none = post_hook(&app, "/webhook/modes/none", body.clone()).await;
    assert_eq!((none.status, none.text.as_str()), (204, ""));
    assert!(none.headers.get("content-length").is_none(), "{:?}", none.headers);
    let lacking = post_hook(&app, "/webhook/modes/property", body.clone()).await;
    assert_eq!(lacking.status, 422, "{}", lacking.text);
    assert_eq!(lacking.json["errors"][0]["field"], "property_name", "{}", lacking.text);
    assert!(
        lacking.content_type.starts_with("application/problem+json"),
        "{}",
        lacking.content_type
    );

    // An immediate answer's execution finishes after it.
    let started = app.get("/workflows?limit=1", &ada.token).await.expect(200)["workflows"][0]["id"]
        .as_i64()
        .unwrap();
    let mut status = Value::Null;
    for _ in 0..100 {
        status = executions(&app, &ada, started).await[0]["status"].clone();
        if status != "running" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(status, "success");
}

async fn one_registration_per_path_and_method(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let bob = app.register("bob@example.org").await;
    let first = id(&create(&app, &ada, echo("First", "shared", "POST")).await);
    let second = id(&create(&app, &ada, echo("Second", "shared", "POST")).await);
    let theirs = id(&create(&app, &bob, echo("Theirs", "shared", "POST")).await);
    activate(&app, &ada, first).await.expect(200);
    let refused = activate(&app, &ada, second).await.expect_problem(409, "conflict");
    let detail = refused["detail"].as_str().unwrap();
    assert!(
        detail.contains("shared") && detail.contains("POST") && detail.contains(&format!("workflow {first} (First)")),
        "{detail}"
    );
    // Another workspace's workflow is named neither by its name nor by its id.
    let other = activate(&app, &bob, theirs).await.expect_problem(409, "conflict");
    let detail = other["detail"].as_str().unwrap();
    assert!(
        detail.contains("a workflow of another workspace")
            && !detail.contains("First")
            && !detail.contains(&format!("workflow {first}")),
        "{detail}"
    );
    // A test address on a taken path is refused the same way.
    app.post(&format!("/workflows/{second}/test"), &ada.token, json!({}))
        .await
        .expect_problem(409, "conflict");
    assert_eq!(
        app.get(&format!("/workflows/{second}"), &ada.token).await.expect(200)["active"],
        false
    );

    // Another method on the path is free; so is the path once the first lets go.
    app.put(
        &format!("/workflows/{second}"),
        &ada.token,
        echo("Second", "shared", "GET"),
    )
    .await
    .expect(200);
    activate(&app, &ada, second).await.expect(200);
    // Moving an active workflow onto a taken path changes nothing.
    app.put(
        &format!("/workflows/{second}"),
        &ada.token,
        echo("Second", "shared", "POST"),
    )
    .await
    .expect_problem(409, "conflict");
    assert_eq!(
        app.get(&format!("/workflows/{second}"), &ada.token).await.expect(200)["methods"],
        json!(["GET"])
    );
    assert_eq!(hook(&app, Method::GET, "/webhook/shared", None, &[]).await.status, 200);
    app.post(&format!("/workflows/{first}/deactivate"), &ada.token, json!({}))
        .await
        .expect(200);
    activate(&app, &bob, theirs).await.expect(200);
    let answered = post_hook(&app, "/webhook/shared", json!({"by": "bob"})).await;
    assert_eq!(answered.json, json!({"echo": {"by": "bob"}}));
    // Deleting a workflow frees its path.
    app.delete(&format!("/workflows/{theirs}"), &bob.token)
        .await
        .expect(200);
    activate(&app, &ada, first).await.expect(200);
}

/// A deactivated workspace's workflows stop listening, and their addresses are free for others.
async fn a_deactivated_workspace_frees_its_addresses(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let bob = app.register("bob@example.org").await;
    let team = app.workspace(&ada, "Ada's team").await;
    let mut body = echo("Team", "team-hook", "POST");
    body["organization_id"] = json!(team);
    let ours = id(&create(&app, &ada, body).await);
    let theirs = id(&create(&app, &bob, echo("Theirs", "team-hook", "POST")).await);
    activate(&app, &ada, ours).await.expect(200);
    activate(&app, &bob, theirs).await.expect_problem(409, "conflict");
    app.delete(&format!("/organizations/{team}"), &ada.token)
        .await
        .expect(200);
    assert_eq!(post_hook(&app, "/webhook/team-hook", json!({})).await.status, 404);
    activate(&app, &bob, theirs).await.expect(200);
    let answered = post_hook(&app, "/webhook/team-hook", json!({"by": "bob"})).await;
    assert_eq!(answered.json, json!({"echo": {"by": "bob"}}));
}

async fn a_test_address_serves_one_call_and_keeps_its_data(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let workflow = id(&create(&app, &ada, echo("Try", "try/me", "POST")).await);
    assert_eq!(
        hook(&app, Method::POST, "/webhook-test/try/me", None, &[]).await.status,
        404
    );
    let armed = app
        .post(&format!("/workflows/{workflow}/test"), &ada.token, json!({}))
        .await
        .expect(200);
    assert!(armed["test_url"].as_str().unwrap().ends_with("/webhook-test/try/me"));
    let until = armed["listening_until"].as_str().unwrap();
    assert!(
        until
            > lector_core::time::Timestamp::now()
                .plus_seconds(110)
                .to_rfc3339()
                .as_str(),
        "{until}"
    );
    // The production address does not listen for an inactive workflow.
    assert_eq!(hook(&app, Method::POST, "/webhook/try/me", None, &[]).await.status, 404);

    let answered = post_hook(&app, "/webhook-test/try/me?source=form", json!({"q": "?"})).await;
    assert_eq!(
        (answered.status, answered.json.clone()),
        (200, json!({"echo": {"q": "?"}}))
    );
    let again = post_hook(&app, "/webhook-test/try/me", json!({})).await;
    assert_eq!(again.status, 404, "a test address serves one call");

    let recorded = executions(&app, &ada, workflow).await;
    assert_eq!(recorded.len(), 1);
    assert_eq!(
        (recorded[0]["mode"].clone(), recorded[0]["status"].clone()),
        (json!("test"), json!("success"))
    );
    let input = &recorded[0]["data"][0]["entries"][0]["json"];
    assert_eq!(input["body"], json!({"q": "?"}));
    assert_eq!(input["query"], json!({"source": "form"}));
    assert_eq!(input["execution_mode"], "test");
    assert_eq!(
        recorded[0]["data"][1]["entries"][0]["json"],
        json!({"echo": {"q": "?"}})
    );

    // An active workflow may be tested beside its production address.
    activate(&app, &ada, workflow).await.expect(200);
    app.post(&format!("/workflows/{workflow}/test"), &ada.token, json!({}))
        .await
        .expect(200);
    assert_eq!(hook(&app, Method::POST, "/webhook/try/me", None, &[]).await.status, 200);
    assert_eq!(
        hook(&app, Method::POST, "/webhook-test/try/me", None, &[]).await.status,
        200
    );
    assert_eq!(
        hook(&app, Method::POST, "/webhook-test/try/me", None, &[]).await.status,
        404
    );
    assert_eq!(hook(&app, Method::POST, "/webhook/try/me", None, &[]).await.status, 200);

    // Calls racing for one test window on several methods: one runs, the others are told the
    // address is not armed (never a 500).
    let many = create(
        &app,
        &ada,
        json!({"name": "Many", "trigger": {"path": "try/many", "multiple_methods": true,
               "http_methods": ["GET", "POST", "PUT"], "response_mode": "last_step"}}),
    )
    .await;
    for _ in 0..5 {
        app.post(&format!("/workflows/{}/test", id(&many)), &ada.token, json!({}))
            .await
            .expect(200);
        let calls = [
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::GET,
            Method::POST,
            Method::PUT,
        ]
        .map(|method| hook(&app, method, "/webhook-test/try/many", None, &[]));
        let mut statuses: Vec<u16> = futures_util::future::join_all(calls)
            .await
            .iter()
            .map(|answer| answer.status)
            .collect();
        statuses.sort();
        assert_eq!(statuses, [200, 404, 404, 404, 404, 404]);
    }
}

async fn the_trigger_authenticates_its_callers(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let header = create(
        &app,
        &ada,
        json!({"name": "Keyed", "trigger": {"path": "keyed", "http_method": "POST",
        "response_mode": "last_step", "authentication": {"type": "header", "name": "X-Shop-Key", "value": "k-123"}}}),
    )
    .await;
    assert_eq!(
        header["trigger"]["authentication"],
        json!({"type": "header", "name": "X-Shop-Key"})
    );
    let basic = create(
        &app,
        &ada,
        json!({"name": "Basic", "trigger": {"path": "basic", "http_method": "POST",
        "response_mode": "last_step", "authentication": {"type": "basic", "user": "shop", "password": "pw-456"}}}),
    )
    .await;
    assert!(!basic.to_string().contains("pw-456"));
    for workflow in [&header, &basic] {
        activate(&app, &ada, id(workflow)).await.expect(200);
    }
    assert_eq!(hook(&app, Method::POST, "/webhook/keyed", None, &[]).await.status, 401);
    assert_eq!(
        hook(&app, Method::POST, "/webhook/keyed", None, &[("x-shop-key", "k-124")])
            .await
            .status,
        403
    );
    let admitted = hook(&app, Method::POST, "/webhook/keyed", None, &[("x-shop-key", "k-123")]).await;
    assert_eq!(admitted.status, 200);
    assert!(
        !admitted.text.contains("k-123"),
        "the key is not in the entry: {}",
        admitted.text
    );

    use base64::Engine;
    let token = |pair: &str| format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair));
    assert_eq!(hook(&app, Method::POST, "/webhook/basic", None, &[]).await.status, 401);
    let wrong = token("shop:pw-000");
    assert_eq!(
        hook(&app, Method::POST, "/webhook/basic", None, &[("authorization", &wrong)])
            .await
            .status,
        403
    );
    let right = token("shop:pw-456");
    assert_eq!(
        hook(&app, Method::POST, "/webhook/basic", None, &[("authorization", &right)])
            .await
            .status,
        200
    );

    // An update that leaves the secret out keeps it.
    let mut renamed = json!({"name": "Keyed v2", "trigger": {"path": "keyed", "http_method": "POST",
        "response_mode": "last_step", "authentication": {"type": "header", "name": "X-Shop-Key"}}});
    app.put(&format!("/workflows/{}", id(&header)), &ada.token, renamed.clone())
        .await
        .expect(200);
    assert_eq!(
        hook(&app, Method::POST, "/webhook/keyed", None, &[("x-shop-key", "k-123")])
            .await
            .status,
        200
    );
    // So does one that leaves the whole authentication out; only `none` removes it.
    let bare = json!({"name": "Keyed v3", "trigger": {"path": "keyed", "http_method": "POST",
        "response_mode": "last_step"}});
    let kept = app
        .put(&format!("/workflows/{}", id(&header)), &ada.token, bare)
        .await
        .expect(200);
    assert_eq!(kept["trigger"]["authentication"]["type"], "header", "{kept}");
    assert_eq!(hook(&app, Method::POST, "/webhook/keyed", None, &[]).await.status, 401);
    assert_eq!(
        hook(&app, Method::POST, "/webhook/keyed", None, &[("x-shop-key", "k-123")])
            .await
            .status,
        200
    );
    renamed["trigger"]["authentication"] = json!({"type": "basic", "user": "u"});
    app.put(&format!("/workflows/{}", id(&header)), &ada.token, renamed.clone())
        .await
        .expect_problem(422, "validation_failed");

    // A test call refused (no key, a wrong one, a body that is not JSON) is answered, not
    // recorded, and leaves the test address armed for the developer's own call.
    app.post(&format!("/workflows/{}/test", id(&header)), &ada.token, json!({}))
        .await
        .expect(200);
    let refused = [
        hook(&app, Method::POST, "/webhook-test/keyed", None, &[]).await.status,
        hook(
            &app,
            Method::POST,
            "/webhook-test/keyed",
            None,
            &[("x-shop-key", "nope")],
        )
        .await
        .status,
    ];
    assert_eq!(refused, [401, 403]);
    let broken = app
        .client
        .post(app.url("/webhook-test/keyed"))
        .header("x-shop-key", "k-123")
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(broken.status(), 400);
    let tested = hook(
        &app,
        Method::POST,
        "/webhook-test/keyed",
        None,
        &[("x-shop-key", "k-123")],
    )
    .await;
    assert_eq!(tested.status, 200, "{}", tested.text);
    assert_eq!(
        hook(
            &app,
            Method::POST,
            "/webhook-test/keyed",
            None,
            &[("x-shop-key", "k-123")]
        )
        .await
        .status,
        404,
        "one call"
    );
    let recorded = executions(&app, &ada, id(&header)).await;
    let tests: Vec<&str> = recorded
        .iter()
        .filter(|e| e["mode"] == "test")
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(tests, ["success"], "only the call that ran");
}

/// A key header name with `_` was taken before such names were refused (proxies drop them).
/// A workflow stored with one stays editable: an update that keeps the name (leaving
/// `authentication` out keeps the stored one) is saved; a new `_` name is refused, saying why.
async fn a_key_header_name_stored_with_an_underscore_stays_editable(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let keyed = json!({"name": "Old keyed", "trigger": {"path": "old-keyed", "http_method": "POST",
        "response_mode": "last_step", "authentication": {"type": "header", "name": "X-Shop-Key", "value": "k-123"}}});
    let workflow = id(&create(&app, &ada, keyed).await);
    // The row as an older release stored it, written past today's checks.
    let (_, scope) = app.state.store.principal(ada.user_id).await.unwrap().unwrap();
    let stored = app
        .state
        .store
        .workflow(&scope, workflow, lector_core::Action::Edit)
        .await
        .unwrap();
    let old = lector_store::NewWorkflow {
        name: stored.name.clone(),
        definition: stored.definition.replace("X-Shop-Key", "X_Shop_Key"),
        auth_digest: stored.auth_digest.clone(),
        keep_data: stored.keep_data,
        routes: vec![("POST".into(), "old-keyed".into())],
    };
    assert_ne!(old.definition, stored.definition);
    app.state.store.update_workflow(&scope, workflow, &old).await.unwrap();

    let at = format!("/workflows/{workflow}");
    let renamed = json!({"name": "Old keyed, renamed", "trigger": {"path": "old-keyed", "http_method": "POST",
        "response_mode": "last_step"}});
    let saved = app.put(&at, &ada.token, renamed).await.expect(200);
    assert_eq!(saved["name"], "Old keyed, renamed");
    assert_eq!(
        saved["trigger"]["authentication"],
        json!({"type": "header", "name": "X_Shop_Key"})
    );
    // Naming it again, with its secret left out, keeps it too.
    let same = json!({"name": "Old keyed", "trigger": {"path": "old-keyed", "http_method": "POST",
        "response_mode": "last_step", "authentication": {"type": "header", "name": "X_Shop_Key"}}});
    app.put(&at, &ada.token, same).await.expect(200);
    activate(&app, &ada, workflow).await.expect(200);
    let admitted = hook(
        &app,
        Method::POST,
        "/webhook/old-keyed",
        None,
        &[("X_Shop_Key", "k-123")],
    )
    .await;
    assert_eq!(admitted.status, 200, "{}", admitted.text);

    let changed = json!({"name": "Old keyed", "trigger": {"path": "old-keyed", "http_method": "POST",
        "response_mode": "last_step", "authentication": {"type": "header", "name": "X_Other_Key", "value": "k-9"}}});
    let refused = app
        .put(&at, &ada.token, changed)
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(crate::common::problem_fields(&refused), ["trigger.authentication.name"]);
    let message = refused["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("no `_`") && message.contains("nginx"), "{message}");
    // The same name on a new workflow is refused alike.
    let fresh = json!({"name": "New keyed", "trigger": {"path": "new-keyed", "http_method": "POST",
        "authentication": {"type": "header", "name": "X_Shop_Key", "value": "k-1"}}});
    let refused = app
        .post("/workflows", &ada.token, fresh)
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(crate::common::problem_fields(&refused), ["trigger.authentication.name"]);
}

async fn each_method_may_lead_to_its_own_steps(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let workflow = create(
        &app,
        &ada,
        json!({"name": "Both", "trigger": {"path": "both", "multiple_methods": true,
        "http_methods": ["GET", "POST", "PUT"], "response_mode": "last_step", "property_name": "said"},
        "steps": [{"type": "set", "fields": [{"name": "said", "value": "written"}]}],
        "steps_by_method": {"GET": [{"type": "set", "fields": [{"name": "said", "value": "read {{ query.id }}"}]}]}}),
    )
    .await;
    assert_eq!(workflow["methods"], json!(["GET", "POST", "PUT"]));
    activate(&app, &ada, id(&workflow)).await.expect(200);
    assert_eq!(
        hook(&app, Method::GET, "/webhook/both?id=7", None, &[]).await.text,
        "read 7"
    );
    assert_eq!(post_hook(&app, "/webhook/both", json!({})).await.text, "written");
    assert_eq!(
        hook(&app, Method::PUT, "/webhook/both", Some(json!({})), &[])
            .await
            .text,
        "written"
    );
    let deleted = hook(&app, Method::DELETE, "/webhook/both", None, &[]).await;
    assert_eq!(deleted.status, 405);
    assert_eq!(deleted.headers["allow"], "GET, POST, PUT");
    // By default, GET and POST.
    let default = create(
        &app,
        &ada,
        json!({"name": "Default", "trigger": {"path": "two", "multiple_methods": true}}),
    )
    .await;
    assert_eq!(default["methods"], json!(["GET", "POST"]));
    // Steps for a method the webhook does not listen to are refused.
    app.post(
        "/workflows",
        &ada.token,
        json!({"name": "X", "trigger": {"path": "x"},
        "steps_by_method": {"POST": []}}),
    )
    .await
    .expect_problem(422, "validation_failed");
}

async fn a_failing_step_stops_the_execution(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let bob = app.register("bob@example.org").await;
    // An outbound call to a private address is refused by the guard, nothing the called address
    // did (it was 502). The host comes from the call's data here: the caller's to change (422,
    // without a word of the server's settings; it was 409). A host written out in the step is
    // refused when the workflow is saved (below), or answers 409 (`a_written_host_refused_...`).
    let workflow = create(
        &app,
        &ada,
        json!({"name": "Fails", "trigger": {"path": "fails", "http_method": "POST",
        "response_mode": "last_step"},
        "steps": [
            {"type": "notify", "user_id": ada.user_id, "message": "New ticket: {{ body.text }}", "level": "WARNING"},
            {"type": "http_request", "url": "http://{{ body.host }}:9/x"},
            {"type": "notify", "user_id": ada.user_id, "message": "never"}
        ]}),
    )
    .await;
    activate(&app, &ada, id(&workflow)).await.expect(200);
    // A NUL in the body is left out of the notification made from it (PostgreSQL refused it: 500).
    let failed = post_hook(
        &app,
        "/webhook/fails",
        json!({"text": "Where is my\u{0} parcel?", "host": "127.0.0.1"}),
    )
    .await;
    assert_eq!(
        (failed.status, failed.json["code"].clone()),
        (422, json!("validation_failed")),
        "{}",
        failed.text
    );
    let detail = failed.json["detail"].as_str().unwrap();
    assert!(detail.starts_with("step 2 (http_request) failed: "), "{detail}");
    assert!(detail.contains("private or reserved address"), "{detail}");
    assert!(
        !detail.contains("change the step's url") && !detail.contains("sources."),
        "{detail}"
    );
    let recorded = executions(&app, &ada, id(&workflow)).await;
    assert_eq!(recorded[0]["status"], "error");
    assert_eq!(recorded[0]["error"], detail);

    let notes = app.get("/notifications", &ada.token).await.expect(200);
    let texts: Vec<&str> = notes
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["text"].as_str().unwrap())
        .collect();
    assert!(texts.contains(&"New ticket: Where is my parcel?"), "{texts:?}");
    assert!(!texts.contains(&"never"));
    assert_eq!(notes[0]["type"], "WARNING");
    assert_eq!(notes[0]["title"], "Workflow Fails");

    // A step that could never run is refused when the workflow is saved, naming it: a user
    // outside the workspace to notify, a model that is not the workspace's.
    let never = json!({"name": "Never", "trigger": {"path": "never", "http_method": "POST"},
        "steps": [{"type": "notify", "user_id": bob.user_id, "message": "hi"},
                  {"type": "set", "fields": [{"name": "a", "value": 1}]}],
        "steps_by_method": {}});
    let refused = app
        .post("/workflows", &ada.token, never.clone())
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(crate::common::problem_fields(&refused), ["steps[0].user_id"]);
    let mut foreign = never;
    foreign["steps"] = json!([{"type": "analyze", "model_id": 999999}, {"type": "extract", "model_id": 1}]);
    let refused = app
        .post("/workflows", &ada.token, foreign.clone())
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(
        crate::common::problem_fields(&refused),
        ["steps[0].model_id", "steps[1].model_id"]
    );
    app.put(&format!("/workflows/{}", id(&workflow)), &ada.token, foreign)
        .await
        .expect_problem(422, "validation_failed");
    // So is an address written out in a step that could never be called: one the guard never
    // reaches (HITL webhooks are told so too), or none at all.
    for (url, why) in [
        ("http://127.0.0.1:9/x", "private or reserved address"),
        ("http://localhost/{{ body.id }}", "private or reserved address"),
        ("http://user:pw@api.example.org/x", "user name or password"),
        ("https://exa mple.org/", "is not a URL"),
    ] {
        let body = json!({"name": "Out", "trigger": {"path": "out", "http_method": "POST"},
            "steps": [{"type": "http_request", "url": url}]});
        let refused = app
            .post("/workflows", &ada.token, body)
            .await
            .expect_problem(422, "validation_failed");
        assert_eq!(crate::common::problem_fields(&refused), ["steps[0].url"], "{url}");
        let message = refused["errors"][0]["message"].as_str().unwrap();
        assert!(message.contains(why), "{url}: {message}");
    }
    assert_eq!(app.get("/notifications", &bob.token).await.expect(200), json!([]));

    // A workflow whose user left the workspace does not run.
    let workspace = workflow["organization_id"].as_i64().unwrap();
    let uma = app.register("uma@example.org").await;
    let members = format!("/organizations/{workspace}/permissions");
    let permission = app
        .add_member(&ada.token, workspace, uma.user_id, "USER")
        .await
        .expect(200);
    let hers = create(
        &app,
        &uma,
        json!({"name": "Hers", "organization_id": workspace,
        "trigger": {"path": "hers", "http_method": "POST", "response_mode": "last_step"}}),
    )
    .await;
    activate(&app, &uma, id(&hers)).await.expect(200);
    assert_eq!(hook(&app, Method::POST, "/webhook/hers", None, &[]).await.status, 200);
    let tell = create(
        &app,
        &ada,
        json!({"name": "Tell uma", "trigger": {"path": "tell-uma", "http_method": "POST", "response_mode": "last_step"},
               "steps": [{"type": "notify", "user_id": uma.user_id, "message": "hi"}]}),
    )
    .await;
    activate(&app, &ada, id(&tell)).await.expect(200);
    // Arming the test of ada's active workflow runs that test as uma; its production address
    // keeps ada's role, and keeps running after uma goes.
    let adas = create(
        &app,
        &ada,
        json!({"name": "Adas", "trigger": {"path": "adas", "http_method": "POST", "response_mode": "last_step"}}),
    )
    .await;
    activate(&app, &ada, id(&adas)).await.expect(200);
    app.post(&format!("/workflows/{}/test", id(&adas)), &uma.token, json!({}))
        .await
        .expect(200);
    let armed = app
        .get(&format!("/workflows/{}", id(&adas)), &ada.token)
        .await
        .expect(200);
    assert_eq!(
        (&armed["runs_as_user_id"], &armed["test_runs_as_user_id"]),
        (&json!(ada.user_id), &json!(uma.user_id)),
        "{armed}"
    );
    // A USER demoted to VIEWER may no longer put the workspace to work.
    let permission_id = permission["id"].as_i64().expect("a membership id");
    app.put(
        &format!("{members}/{permission_id}"),
        &ada.token,
        json!({"role": "VIEWER"}),
    )
    .await
    .expect(200);
    let demoted = hook(&app, Method::POST, "/webhook/hers", None, &[]).await;
    assert_eq!(demoted.status, 409, "{}", demoted.text);
    assert!(
        demoted.json["detail"].as_str().unwrap().contains("role USER"),
        "{}",
        demoted.text
    );
    app.delete(&format!("{members}/{permission_id}"), &ada.token)
        .await
        .expect(200);
    let gone = hook(&app, Method::POST, "/webhook/hers", None, &[]).await;
    assert_eq!(gone.status, 409, "{}", gone.text);
    // A step whose user has left since the workflow was saved answers 409, as a gone model.
    let told = hook(&app, Method::POST, "/webhook/tell-uma", None, &[]).await;
    assert_eq!(told.status, 409, "{}", told.text);
    assert!(told.text.contains("not a member"), "{}", told.text);
    assert!(
        gone.json["detail"].as_str().unwrap().contains("activate it"),
        "{}",
        gone.text
    );
    let tested = hook(&app, Method::POST, "/webhook-test/adas", None, &[]).await;
    assert_eq!(tested.status, 409, "the test was uma's: {}", tested.text);
    assert!(tested.json["detail"].as_str().unwrap().contains("arm its test address"));
    assert_eq!(hook(&app, Method::POST, "/webhook/adas", None, &[]).await.status, 200);
}

/// A call whose data makes a step's request unsendable (a URL that is not one, a header value
/// with a control character) is the caller's to fix: 422, not 502 as if the called address
/// had failed.
/// A step whose url writes out a host the guard refuses (saved while the server allowed it,
/// say) answers 409 naming what to change: the step's url or the server's settings. The same
/// refusal of a host the caller's data names is the caller's (422).
async fn a_written_host_refused_is_the_steps_configuration(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let written = create(
        &app,
        &ada,
        json!({"name": "Written", "trigger": {"path": "written", "http_method": "POST", "response_mode": "last_step"},
               "steps": [{"type": "http_request", "url": "http://8.8.8.8:9/x?host={{ body.host }}"}]}),
    )
    .await;
    activate(&app, &ada, id(&written)).await.expect(200);
    // The row as saved when the server still allowed private networks: written past the check
    // a save makes today, before any call (nothing of it is cached yet).
    let (_, scope) = app.state.store.principal(ada.user_id).await.unwrap().unwrap();
    let stored = app
        .state
        .store
        .workflow(&scope, id(&written), lector_core::Action::Edit)
        .await
        .unwrap();
    let private = lector_store::NewWorkflow {
        name: stored.name.clone(),
        definition: stored.definition.replace("8.8.8.8", "127.0.0.1"),
        auth_digest: None,
        keep_data: stored.keep_data,
        routes: vec![("POST".into(), "written".into())],
    };
    assert_ne!(private.definition, stored.definition);
    app.state
        .store
        .update_workflow(&scope, id(&written), &private)
        .await
        .unwrap();
    let failed = post_hook(&app, "/webhook/written", json!({"host": "127.0.0.1"})).await;
    assert_eq!(
        (failed.status, failed.json["code"].clone()),
        (409, json!("conflict")),
        "{}",
        failed.text
    );
    let detail = failed.json["detail"].as_str().unwrap();
    assert!(detail.starts_with("step 1 (http_request) failed: "), "{detail}");
    assert!(
        detail.contains("change the step's url") && detail.contains("sources.allow_private"),
        "{detail}"
    );

    // A host in the data, whole or in part: the caller's (422).
    for (path, url) in [
        ("whole", "{{ body.url }}"),
        ("part", "http://127.0.0.{{ body.last }}:9/x"),
        ("host", "http://{{ body.host }}:9/x"),
    ] {
        let workflow = create(
            &app,
            &ada,
            json!({"name": path, "trigger": {"path": path, "http_method": "POST", "response_mode": "last_step"},
                   "steps": [{"type": "http_request", "url": url}]}),
        )
        .await;
        activate(&app, &ada, id(&workflow)).await.expect(200);
        let body = json!({"url": "http://127.0.0.1:9/x", "host": "127.0.0.1", "last": "1"});
        let refused = post_hook(&app, &format!("/webhook/{path}"), body).await;
        assert_eq!(
            (refused.status, refused.json["code"].clone()),
            (422, json!("validation_failed")),
            "{url}: {}",
            refused.text
        );
        let detail = refused.json["detail"].as_str().unwrap();
        assert!(!detail.contains("sources."), "{url}: {detail}");
    }
}

async fn a_request_the_calls_data_spoils_is_the_callers(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let workflow = create(
        &app,
        &ada,
        json!({"name": "Relay", "trigger": {"path": "relay", "http_method": "POST", "response_mode": "last_step"},
               "steps": [{"type": "http_request", "url": "{{ body.url }}", "headers": {"X-Note": "{{ body.note }}"}}]}),
    )
    .await;
    activate(&app, &ada, id(&workflow)).await.expect(200);
    for (body, why) in [
        (
            json!({"url": "not an address", "note": "hi"}),
            "the URL is not an address",
        ),
        (
            json!({"url": "ftp://files.example.org/x", "note": "hi"}),
            "http:// or https://",
        ),
        (
            json!({"url": "https://api.example.org/x", "note": "a\r\nX-Evil: 1"}),
            "header cannot be sent",
        ),
    ] {
        let refused = post_hook(&app, "/webhook/relay", body.clone()).await;
        assert_eq!(
            (refused.status, refused.json["code"].clone()),
            (422, json!("validation_failed")),
            "{body}: {}",
            refused.text
        );
        let detail = refused.json["detail"].as_str().unwrap();
        assert!(
            detail.starts_with("step 1 (http_request) failed: ") && detail.contains(why),
            "{detail}"
        );
    }
}

/// A template that renders past 1 MiB (placeholders for the whole body, many times over) fails
/// its step instead of growing without bound; the execution records why.
async fn a_template_past_its_cap_fails_the_run(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let template = "{{ body.text }}".repeat(600);
    let workflow = create(
        &app,
        &ada,
        json!({"name": "Huge", "trigger": {"path": "huge", "http_method": "POST",
        "response_mode": "last_step"},
        "steps": [{"type": "set", "fields": [{"name": "huge", "value": template}], "keep_only_set": true}]}),
    )
    .await;
    activate(&app, &ada, id(&workflow)).await.expect(200);
    let small = post_hook(&app, "/webhook/huge", json!({"text": "ab"})).await;
    assert_eq!(small.status, 200, "{}", small.text);
    assert_eq!(small.json["huge"].as_str().map(str::len), Some(1200));
    let failed = post_hook(&app, "/webhook/huge", json!({"text": "x".repeat(2000)})).await;
    let detail = "step 1 (set) failed: a template renders to more than 1048576 bytes";
    assert_eq!(
        (failed.status, failed.json["detail"].clone()),
        (422, json!(detail)),
        "{}",
        failed.text
    );
    let recorded = executions(&app, &ada, id(&workflow)).await;
    assert_eq!(
        (recorded[0]["status"].clone(), recorded[0]["error"].clone()),
        (json!("error"), json!(detail))
    );
}

async fn files_and_forms_reach_the_steps(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let workflow = create(
        &app,
        &ada,
        json!({"name": "Forms", "trigger": {"path": "forms", "http_method": "POST",
        "response_mode": "last_step"},
        "steps": [{"type": "set", "fields": [{"name": "got", "from": "body"}], "keep_only_set": true}]}),
    )
    .await;
    app.post(&format!("/workflows/{}/test", id(&workflow)), &ada.token, json!({}))
        .await
        .expect(200);
    let answered = form_hook(
        &app,
        "/webhook-test/forms",
        &[("customer", "Ann".into())],
        "order.pdf",
        b"%PDF-1.4 tiny",
    )
    .await;
    assert_eq!(answered, (200, json!({"got": {"customer": "Ann"}})));
    let recorded = executions(&app, &ada, id(&workflow)).await;
    let binary = &recorded[0]["data"][0]["entries"][0]["binary"]["file"];
    assert_eq!(
        (binary["file_name"].clone(), binary["size"].clone()),
        (json!("order.pdf"), json!(13))
    );

    // A form and a text body.
    activate(&app, &ada, id(&workflow)).await.expect(200);
    let form = app
        .client
        .post(app.url("/webhook/forms"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("a=1&b=two")
        .send()
        .await
        .unwrap();
    assert_eq!(
        form.json::<Value>().await.unwrap(),
        json!({"got": {"a": "1", "b": "two"}})
    );
    let text = app
        .client
        .post(app.url("/webhook/forms"))
        .header("content-type", "text/plain")
        .body("plain words")
        .send()
        .await
        .unwrap();
    assert_eq!(text.json::<Value>().await.unwrap(), json!({"got": "plain words"}));
    // A form larger than axum's own default limit (2 MiB), within `workflows.max_body_bytes`:
    // it was refused as malformed.
    let scan = vec![b'x'; 3 * 1024 * 1024];
    let answered = form_hook(&app, "/webhook/forms", &[("customer", "Bo".into())], "scan.pdf", &scan).await;
    assert_eq!(answered, (200, json!({"got": {"customer": "Bo"}})));
    let broken = app
        .client
        .post(app.url("/webhook/forms"))
        .header("content-type", "application/json")
        .body("{nope")
        .send()
        .await
        .unwrap();
    assert_eq!(broken.status(), 400);
}

async fn a_customer_email_is_answered_with_its_class(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, _) = labeled_tickets(&app, &ada, "Support").await;
    let model = app
        .train_model(&ada, project, json!({"display_name": "Tickets v1"}))
        .await;
    assert_eq!(model["status"], "READY", "{model}");
    let workflow = create(
        &app,
        &ada,
        json!({
            "name": "Support triage",
            "trigger": {"path": "support/mail", "http_method": "POST", "response_mode": "last_step",
                        "response_data": "first_entry_json", "property_name": "data"},
            "steps": [
                {"type": "analyze", "model_id": model["id"], "text": "body.text", "split": false},
                {"type": "set", "fields": [{"name": "data", "from": "analysis.class"}], "keep_only_set": true}
            ]
        }),
    )
    .await;
    activate(&app, &ada, id(&workflow)).await.expect(200);
    let mut right = 0;
    for (text, class) in crate::common::tickets::UNSEEN {
        let email = json!({"from": "customer@example.com", "subject": "Help", "text": text});
        let answered = post_hook(&app, "/webhook/support/mail", email).await;
        assert_eq!(answered.status, 200, "{}", answered.text);
        assert!(
            answered.content_type.starts_with("text/plain"),
            "{}",
            answered.content_type
        );
        assert!(
            ["billing", "login", "shipping"].contains(&answered.text.as_str()),
            "{}",
            answered.text
        );
        right += usize::from(answered.text == class);
    }
    assert!(right >= 12, "{right} of 15 unseen e-mails answered with their class");
    let recorded = executions(&app, &ada, id(&workflow)).await;
    assert_eq!(recorded.len(), 15);
    assert!(recorded.iter().all(|e| e["status"] == "success"));
    // The analysis needs its text.
    let no_text = post_hook(&app, "/webhook/support/mail", json!({"subject": "x"})).await;
    assert_eq!(
        (no_text.status, no_text.json["detail"].clone()),
        (422, json!("step 1 (analyze) failed: the request has no body.text"))
    );

    // The step's analysis has the numbers /analyze answers (0.95, not 0.949999988079071).
    let raw = create(
        &app,
        &ada,
        json!({"name": "Raw", "trigger": {"path": "support/raw", "http_method": "POST",
               "response_mode": "last_step", "response_data": "all_entries"},
               "steps": [{"type": "analyze", "model_id": model["id"], "text": "body.text", "split": false}]}),
    )
    .await;
    activate(&app, &ada, id(&raw)).await.expect(200);
    let (text, _) = crate::common::tickets::UNSEEN[0];
    let answered = post_hook(&app, "/webhook/support/raw", json!({"text": text})).await;
    let step = &answered.json[0]["analysis"]["confidence"];
    let direct = crate::common::tickets::analyze(&app, &ada, &model["id"], &[text]).await;
    let tags = direct["documents"][0]["segments"][0]["tags"]
        .as_array()
        .unwrap()
        .clone();
    assert!(tags.iter().any(|t| &t["confidence"] == step), "{step} among {tags:?}");

    // The model stays while an active workflow runs it: deleting it would fail every call.
    let path = format!("/models/{}", model["id"]);
    let refused = app.delete(&path, &ada.token).await.expect_problem(409, "conflict");
    let detail = refused["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("Support triage") || detail.contains("Raw"), "{refused}");
    // So does its project: deleted, or moved to another workspace (the models go with it,
    // where the workflow's runs no longer find them).
    let project = format!("/projects/{}", model["project_id"]);
    let refused = app.delete(&project, &ada.token).await.expect_problem(409, "conflict");
    assert!(
        refused["detail"].as_str().unwrap().contains("a model of this project"),
        "{refused}"
    );
    let team = app.workspace(&ada, "Team").await;
    let transfer = format!("{project}/transfer");
    app.post(&transfer, &ada.token, json!({"organization_id": team}))
        .await
        .expect_problem(409, "conflict");
    for workflow in [id(&workflow), id(&raw)] {
        app.post(&format!("/workflows/{workflow}/deactivate"), &ada.token, json!({}))
            .await
            .expect(200);
    }
    app.delete(&path, &ada.token).await.expect(200);
}

mod outbound {
    //! Steps that reach out: a file's fields extracted and posted to a receiver on loopback
    //! (which the guard lets through only when configured to).
    use super::*;
    use crate::common::invoices::invoice_model;
    use crate::common::receiver::{next, receiver};

    async fn an_invoice_is_extracted_and_posted_on(app: TestApp) {
        let ada = app.register("ada@example.org").await;
        let (_, model) = invoice_model(&app, &ada).await;
        let (address, mut received) = receiver(|_| {
            b"HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: 13\r\nconnection: close\r\n\r\n{\"ticket\":42}"
                .to_vec()
        })
        .await;
        let workflow = create(&app, &ada, json!({
            "name": "Invoices in",
            "trigger": {"path": "invoices/in", "http_method": "POST", "response_mode": "last_step",
                        "property_name": "ticket"},
            "steps": [
                {"type": "extract", "model_id": model, "file": "file"},
                {"type": "set", "keep_only_set": true, "fields": [
                    {"name": "invoice.number", "from": "extraction.fields.invoice_number"},
                    {"name": "invoice.total", "from": "extraction.fields.total"},
                    {"name": "invoice.from", "value": "{{ body.sender }}"}
                ]},
                {"type": "http_request", "method": "POST", "url": format!("http://{address}/tickets/{{{{ invoice.number }}}}"),
                 "headers": {"X-Source": "lector"}, "send_entry": true},
                {"type": "set", "fields": [{"name": "ticket", "from": "response.body.ticket"}]}
            ]
        }))
        .await;
        activate(&app, &ada, id(&workflow)).await.expect(200);
        let answered = form_hook(
            &app,
            "/webhook/invoices/in",
            &[("sender", "billing@muster.example".into())],
            "invoice.pdf",
            &crate::common::invoices::invoice(),
        )
        .await;
        assert_eq!(answered, (200, json!(42)));
        let posted = next(&mut received).await;
        assert_eq!(posted.request_line, "POST /tickets/RE-2024-0017 HTTP/1.1");
        assert_eq!(posted.headers["x-source"], "lector");
        assert_eq!(posted.headers["content-type"], "application/json");
        let sent: Value = serde_json::from_slice(&posted.body).unwrap();
        assert_eq!(
            sent,
            json!({"invoice": {"number": "RE-2024-0017", "total": "1234.50", "from": "billing@muster.example"}})
        );
        // A file the request lacks, and a model that does not extract, fail their step.
        let lacking = post_hook(&app, "/webhook/invoices/in", json!({})).await;
        assert_eq!(lacking.status, 422);
        let detail = lacking.json["detail"].as_str().unwrap();
        assert!(
            detail.starts_with("step 1 (extract) failed: the request has no file `file`"),
            "{detail}"
        );
    }

    /// A workflow's outbound call counts the workflow calls that led to it, and a call at the
    /// end of eight in a row is refused, so workflows calling themselves stop.
    async fn chains_of_workflow_calls_stop(app: TestApp) {
        let ada = app.register("ada@example.org").await;
        let (address, mut received) =
            receiver(|_| b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_vec()).await;
        let workflow = create(
            &app,
            &ada,
            json!({
                "name": "Relay",
                "trigger": {"path": "relay", "http_method": "POST", "response_mode": "last_step"},
                "steps": [{"type": "http_request", "method": "POST", "url": format!("http://{address}/next"),
                           "headers": {"Lector-Workflow-Hops": "0"}}]
            }),
        )
        .await;
        activate(&app, &ada, id(&workflow)).await.expect(200);
        for (incoming, outgoing) in [(None, "1"), (Some("3"), "4"), (Some("7"), "8")] {
            let headers: Vec<(&str, &str)> = incoming.map(|n| ("lector-workflow-hops", n)).into_iter().collect();
            let answered = hook(&app, Method::POST, "/webhook/relay", Some(json!({})), &headers).await;
            assert_eq!(answered.status, 200, "{}", answered.text);
            let sent = next(&mut received).await;
            assert_eq!(sent.headers["lector-workflow-hops"], outgoing, "after {incoming:?}");
        }
        let looped = hook(
            &app,
            Method::POST,
            "/webhook/relay",
            Some(json!({})),
            &[("lector-workflow-hops", "8")],
        )
        .await;
        assert_eq!(
            (looped.status, &looped.json["code"]),
            (409, &json!("conflict")),
            "{}",
            looped.text
        );
        assert!(
            looped.json["detail"]
                .as_str()
                .unwrap()
                .contains("8 workflow calls in a row"),
            "{}",
            looped.text
        );
        let recorded = executions(&app, &ada, id(&workflow)).await;
        assert_eq!(recorded.len(), 4);
        assert!(received.try_recv().is_err(), "the refused call sent nothing on");
    }

    /// A step's call redirected to another origin keeps the service's own headers (the hop
    /// count, so chains through a redirector still stop; the content type of the body sent
    /// again) and drops the step's, which may carry a key.
    async fn a_redirect_elsewhere_keeps_the_services_headers(app: TestApp) {
        let ada = app.register("ada@example.org").await;
        let (target, mut arrived) =
            receiver(|_| b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_vec()).await;
        let (redirector, mut redirected) = receiver(move |_| {
            format!(
                "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://{target}/in\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )
            .into_bytes()
        })
        .await;
        let workflow = create(
            &app,
            &ada,
            json!({
                "name": "Forward",
                "trigger": {"path": "forward", "http_method": "POST", "response_mode": "last_step"},
                "steps": [{"type": "http_request", "method": "POST", "url": format!("http://{redirector}/out"),
                           "headers": {"Authorization": "Bearer s3cret", "X-Key": "k-1"}, "send_entry": true}]
            }),
        )
        .await;
        activate(&app, &ada, id(&workflow)).await.expect(200);
        let answered = hook(
            &app,
            Method::POST,
            "/webhook/forward",
            Some(json!({"n": 1})),
            &[("lector-workflow-hops", "2")],
        )
        .await;
        assert_eq!(answered.status, 200, "{}", answered.text);
        let first = next(&mut redirected).await;
        assert_eq!(first.headers["authorization"], "Bearer s3cret");
        let second = next(&mut arrived).await;
        assert_eq!(second.request_line, "POST /in HTTP/1.1");
        assert_eq!(
            second.headers.get("lector-workflow-hops").map(String::as_str),
            Some("3")
        );
        assert_eq!(
            second.headers.get("content-type").map(String::as_str),
            Some("application/json")
        );
        assert!(!second.headers.contains_key("authorization"), "{:?}", second.headers);
        assert!(!second.headers.contains_key("x-key"), "{:?}", second.headers);
        assert_eq!(second.body, first.body);
    }

    fn loopback_allowed(config: &mut lector_core::config::Config) {
        config.sources.allow_private = true;
    }

    backend_tests!(
        adjust: loopback_allowed;
        an_invoice_is_extracted_and_posted_on,
        chains_of_workflow_calls_stop,
        a_redirect_elsewhere_keeps_the_services_headers,
    );

    /// A caller's values are data in a step's address: encoded where they land after the host,
    /// so they cannot change the path or query the workflow's author wrote. An answer past
    /// `sources.max_bytes` fails the step as the called address's fault (502), not the
    /// caller's (413).
    async fn caller_values_stay_data_in_a_steps_address(app: TestApp) {
        let ada = app.register("ada@example.org").await;
        let (address, mut received) = receiver(|n| {
            let body = if n == 1 { "{}".to_owned() } else { "x".repeat(2000) };
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
            .into_bytes()
        })
        .await;
        let url = format!("http://{address}/users/{{{{ body.id }}}}/profile?key=fixed");
        let workflow = create(
            &app,
            &ada,
            json!({
                "name": "Lookup",
                "trigger": {"path": "lookup", "http_method": "POST", "response_mode": "last_step"},
                "steps": [{"type": "http_request", "method": "GET", "url": url}]
            }),
        )
        .await;
        activate(&app, &ada, id(&workflow)).await.expect(200);
        let answered = post_hook(&app, "/webhook/lookup", json!({"id": "../../admin?x=1#"})).await;
        assert_eq!(answered.status, 200, "{}", answered.text);
        let sent = next(&mut received).await;
        assert_eq!(
            sent.request_line,
            "GET /users/..%2F..%2Fadmin%3Fx%3D1%23/profile?key=fixed HTTP/1.1"
        );
        let climbing = post_hook(&app, "/webhook/lookup", json!({"id": ".."})).await;
        assert_eq!(climbing.status, 422, "{}", climbing.text);
        let large = post_hook(&app, "/webhook/lookup", json!({"id": "7"})).await;
        assert_eq!(
            (large.status, &large.json["code"]),
            (502, &json!("upstream_failed")),
            "{}",
            large.text
        );
    }

    fn loopback_allowed_small_answers(config: &mut lector_core::config::Config) {
        loopback_allowed(config);
        config.sources.max_bytes = 1000;
    }

    mod small_answers {
        use super::*;
        backend_tests!(adjust: loopback_allowed_small_answers; caller_values_stay_data_in_a_steps_address);
    }
}

mod unready_models {
    //! A step's model must be one that predicts: one still training may be saved in a
    //! workflow but not activated, and a FAILED one, or an extraction model of no project, is
    //! refused when the workflow is saved (422 naming the step and what to do), rather than
    //! answering 409 on every call. Workers are off: the test runs each job when it wants.
    use super::*;
    use crate::common::tickets::{BILLING, labeled, queue_training};

    /// The message of the one field error a 422 names, checking the field.
    fn refusal(problem: &Value, field: &str) -> String {
        assert_eq!(crate::common::problem_fields(problem), [field], "{problem}");
        problem["errors"][0]["message"].as_str().unwrap().to_owned()
    }

    fn analyze_with(name: &str, path: &str, model: &Value) -> Value {
        json!({"name": name, "trigger": {"path": path, "http_method": "POST"},
               "steps": [{"type": "analyze", "model_id": model["id"]}]})
    }

    async fn steps_name_models_that_predict(app: TestApp) {
        let ada = app.register("ada@example.org").await;
        let (project, train) = labeled_tickets(&app, &ada, "Tickets").await;
        // A training that fails when it runs: its test session is deleted before.
        let test = app
            .labeled_session(&ada, project, "Test", labeled(&BILLING[..3], "billing"))
            .await;
        let test = test["id"].as_i64().unwrap();
        let failing = app
            .post(
                &format!("/projects/{project}/models"),
                &ada.token,
                json!({"display_name": "Held", "trainset_annotation_ids": [train],
                       "testset_annotation_ids": [test]}),
            )
            .await
            .expect(201);
        app.delete(&format!("/projects/{project}/annotations/{test}"), &ada.token)
            .await
            .expect(200);
        let queued = queue_training(&app, &ada, project, "Tickets v1").await;

        // Saved while its model trains, activated once the model is READY.
        let triage = id(&create(&app, &ada, analyze_with("Triage", "triage", &queued)).await);
        let refused = activate(&app, &ada, triage)
            .await
            .expect_problem(422, "validation_failed");
        let why = refusal(&refused, "steps[0].model_id");
        assert!(
            why.contains("QUEUED") && why.contains("once the model is READY"),
            "{why}"
        );
        app.run_jobs().await;
        let path = format!("/projects/{project}/models");
        let failed = app
            .get(&format!("{path}/{}", failing["id"]), &ada.token)
            .await
            .expect(200);
        assert_eq!(failed["status"], "FAILED", "{failed}");
        activate(&app, &ada, triage).await.expect(200);

        // A FAILED model never predicts: refused on creation and on change.
        let refused = app
            .post("/workflows", &ada.token, analyze_with("Never", "never", &failing))
            .await
            .expect_problem(422, "validation_failed");
        let why = refusal(&refused, "steps[0].model_id");
        assert!(why.contains("FAILED") && why.contains("train a new model"), "{why}");
        let refused = app
            .put(
                &format!("/workflows/{triage}"),
                &ada.token,
                analyze_with("Triage", "triage", &failing),
            )
            .await
            .expect_problem(422, "validation_failed");
        refusal(&refused, "steps[0].model_id");

        // An extraction model of no project (uploaded into the workspace) cannot extract: its
        // fields' settings are its project's.
        let fields = app.project_with(&ada, "LABEL", &[], &["total", "date"]).await;
        let totals: Vec<Value> = (0..12)
            .map(|n| match n % 2 {
                0 => json!({"text": format!("Total amount {n},50 EUR"), "tags": [{"label": "total"}]}),
                _ => json!({"text": format!("Invoice date {n:02}.03.2024"), "tags": [{"label": "date"}]}),
            })
            .collect();
        app.labeled_session(&ada, fields, "Totals", totals).await;
        let extractor = queue_training(&app, &ada, fields, "Totals v1").await;
        app.run_jobs().await;
        let extractor_id = extractor["id"].as_i64().unwrap();
        let (_, _, file) = app
            .download(&ada.token, &format!("/models/{extractor_id}/download"))
            .await;
        let loose = app
            .upload_model(&ada.token, &file, &[("display_name", "Totals loose")])
            .await
            .expect(200);
        assert_eq!(loose["project_id"], Value::Null, "{loose}");
        let extract_with = |model: &Value| {
            json!({"name": "Invoices", "trigger": {"path": "invoices", "http_method": "POST"},
                   "steps": [{"type": "extract", "model_id": model["id"]}]})
        };
        let refused = app
            .post("/workflows", &ada.token, extract_with(&loose))
            .await
            .expect_problem(422, "validation_failed");
        let why = refusal(&refused, "steps[0].model_id");
        assert!(why.contains("no project"), "{why}");
        let invoices = id(&create(&app, &ada, extract_with(&extractor)).await);
        activate(&app, &ada, invoices).await.expect(200);
    }

    fn no_workers(config: &mut lector_core::config::Config) {
        config.workers = 0;
    }

    backend_tests!(adjust: no_workers; steps_name_models_that_predict);
}

mod windows {
    //! The test window closes: a test address armed with a one-second window serves nobody after
    //! it; and the limits of the webhook addresses (body size, rate).
    use super::*;

    async fn a_test_address_closes_after_its_window(app: TestApp) {
        let ada = app.register("ada@example.org").await;
        let workflow = id(&create(&app, &ada, echo("Late", "late", "POST")).await);
        app.post(&format!("/workflows/{workflow}/test"), &ada.token, json!({}))
            .await
            .expect(200);
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        let late = post_hook(&app, "/webhook-test/late", json!({})).await;
        assert_eq!(late.status, 404);
        assert!(executions(&app, &ada, workflow).await.is_empty());
        // After the window, the path is free for another workflow.
        let other = id(&create(&app, &ada, echo("Other", "late", "POST")).await);
        activate(&app, &ada, other).await.expect(200);
    }

    async fn webhook_addresses_have_limits(app: TestApp) {
        let ada = app.register("ada@example.org").await;
        let workflow = create(
            &app,
            &ada,
            json!({"name": "Limited", "trigger": {"path": "limited", "http_method": "POST",
            "response_mode": "last_step", "rate_limit_per_minute": 3}}),
        )
        .await;
        activate(&app, &ada, id(&workflow)).await.expect(200);
        let large = json!({"text": "x".repeat(5000)});
        assert_eq!(post_hook(&app, "/webhook/limited", large).await.status, 413);
        for _ in 0..2 {
            assert_eq!(post_hook(&app, "/webhook/limited", json!({})).await.status, 200);
        }
        let limited = post_hook(&app, "/webhook/limited", json!({})).await;
        assert_eq!(limited.status, 429);
        assert!(limited.headers.contains_key("retry-after"));
        // Calls without the credentials are limited apart: they cannot use up the rate of the
        // callers who have them.
        let keyed = create(
            &app,
            &ada,
            json!({"name": "Keyed", "trigger": {"path": "keyed-limited", "http_method": "POST",
            "response_mode": "last_step", "rate_limit_per_minute": 2,
            "authentication": {"type": "header", "name": "X-Key", "value": "k-1"}}}),
        )
        .await;
        activate(&app, &ada, id(&keyed)).await.expect(200);
        let mut statuses = Vec::new();
        for key in ["a", "b", "c", "k-1"] {
            let answered = hook(
                &app,
                Method::POST,
                "/webhook/keyed-limited",
                Some(json!({})),
                &[("x-key", key)],
            )
            .await;
            statuses.push(answered.status);
        }
        assert_eq!(
            statuses,
            [403, 403, 429, 200],
            "the guesses left the rate of the key's holders"
        );
        app.post(
            "/workflows",
            &ada.token,
            json!({"name": "Too fast", "trigger": {"path": "fast",
            "rate_limit_per_minute": 0}}),
        )
        .await
        .expect_problem(422, "validation_failed");
    }

    fn short(config: &mut lector_core::config::Config) {
        config.workflows.test_window_secs = 1;
        config.workflows.max_body_bytes = 4096;
    }

    backend_tests!(
        adjust: short;
        a_test_address_closes_after_its_window,
        webhook_addresses_have_limits,
    );
}

mod background {
    //! Runs of `immediately` workflows are bounded per node: past
    //! `workflows.max_background_runs`, a call is answered 503 with `Retry-After` and runs
    //! nothing; a finished run frees its place.
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A listener on loopback whose first request is answered only once `release` is sent;
    /// later ones at once.
    async fn holding() -> (std::net::SocketAddr, tokio::sync::oneshot::Sender<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let mut released = Some(released);
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut buffer = [0u8; 4096];
                let _ = stream.read(&mut buffer).await;
                if let Some(released) = released.take() {
                    let _ = released.await;
                }
                let _ = stream
                    .write_all(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
            }
        });
        (address, release)
    }

    /// An active workflow named `name` with `trigger`, whose one step waits for [`holding`]'s
    /// release.
    async fn held_workflow(
        app: &TestApp,
        ada: &Session,
        name: &str,
        trigger: Value,
    ) -> (Value, tokio::sync::oneshot::Sender<()>) {
        let (address, release) = holding().await;
        let workflow = create(
            app,
            ada,
            json!({"name": name, "trigger": trigger,
            "steps": [{"type": "http_request", "method": "GET", "url": format!("http://{address}/hold")}]}),
        )
        .await;
        activate(app, ada, id(&workflow)).await.expect(200);
        (workflow, release)
    }

    /// An active workflow on `/webhook/slow` whose run waits for the release.
    async fn slow_workflow(app: &TestApp, ada: &Session) -> (Value, tokio::sync::oneshot::Sender<()>) {
        held_workflow(app, ada, "Slow", json!({"path": "slow", "http_method": "POST"})).await
    }

    /// An active `last_step` workflow on `/webhook/held` whose run waits for the release, and a
    /// call to it whose caller gives up waiting after 1.5 s.
    async fn held_and_given_up(app: &TestApp, ada: &Session) -> (Value, tokio::sync::oneshot::Sender<()>) {
        let trigger = json!({"path": "held", "http_method": "POST", "response_mode": "last_step"});
        let held = held_workflow(app, ada, "Held", trigger).await;
        let gave_up = app
            .client
            .post(app.url("/webhook/held"))
            .json(&json!({}))
            .timeout(std::time::Duration::from_millis(1500))
            .send()
            .await;
        assert!(gave_up.is_err(), "the caller stopped waiting");
        held
    }

    async fn background_runs_are_bounded_per_node(app: TestApp) {
        let ada = app.register("ada@example.org").await;
        let (workflow, release) = slow_workflow(&app, &ada).await;
        // The first run holds the only place until its call is answered.
        let started = post_hook(&app, "/webhook/slow", json!({})).await;
        assert_eq!(started.status, 200, "{}", started.text);
        assert_eq!(started.json["message"], "Workflow was started");
        let refused = post_hook(&app, "/webhook/slow", json!({})).await;
        assert_eq!(
            (refused.status, refused.json["code"].clone()),
            (503, json!("unavailable")),
            "{}",
            refused.text
        );
        assert!(refused.content_type.starts_with("application/problem+json"));
        assert!(refused.headers.contains_key("retry-after"));
        assert!(
            refused.json["detail"].as_str().unwrap().contains("in the background"),
            "{}",
            refused.text
        );
        // Refused calls run nothing: one execution only.
        assert_eq!(executions(&app, &ada, id(&workflow)).await.len(), 1);
        release.send(()).unwrap();
        // Once the run has ended, its place is free again.
        let mut answered = 0;
        for _ in 0..300 {
            answered = post_hook(&app, "/webhook/slow", json!({})).await.status;
            if answered != 503 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(answered, 200);
    }

    /// A `last_step` run whose caller gives up waiting still runs to its end and is recorded:
    /// its steps may have had effects already, and a sender that retries must find the first
    /// call in the executions.
    async fn a_run_outlives_a_caller_who_gives_up(app: TestApp) {
        let ada = app.register("ada@example.org").await;
        let (workflow, release) = held_and_given_up(&app, &ada).await;
        release.send(()).unwrap();
        let mut recorded = Vec::new();
        for _ in 0..300 {
            recorded = executions(&app, &ada, id(&workflow)).await;
            if !recorded.is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(recorded.len(), 1, "the run was recorded");
        assert_eq!(recorded[0]["status"], "success", "{:?}", recorded[0]);
    }

    /// A call that finds no place among the node's runs is refused before it takes a test
    /// address's one call: answered 503, not recorded, the address still armed.
    async fn a_busy_node_leaves_a_test_address_armed(app: TestApp) {
        let ada = app.register("ada@example.org").await;
        let (_slow, release) = slow_workflow(&app, &ada).await;
        let quick = id(&create(
            &app,
            &ada,
            json!({"name": "Quick", "trigger": {"path": "quick", "http_method": "POST"}}),
        )
        .await);
        app.post(&format!("/workflows/{quick}/test"), &ada.token, json!({}))
            .await
            .expect(200);
        assert_eq!(post_hook(&app, "/webhook/slow", json!({})).await.status, 200);
        let refused = post_hook(&app, "/webhook-test/quick", json!({})).await;
        assert_eq!(refused.status, 503, "{}", refused.text);
        assert!(
            executions(&app, &ada, quick).await.is_empty(),
            "a refused call is not recorded"
        );
        release.send(()).unwrap();
        let mut answered = 0;
        for _ in 0..300 {
            answered = post_hook(&app, "/webhook-test/quick", json!({})).await.status;
            if answered != 503 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(answered, 200, "the test address stayed armed");
        assert_eq!(executions(&app, &ada, quick).await.len(), 1);
    }

    /// The same for a `last_step` call, whose places are as many as the node's connections:
    /// one here, held by a run whose caller gave up.
    async fn a_busy_node_leaves_a_test_address_armed_for_last_step_runs(app: TestApp) {
        let ada = app.register("ada@example.org").await;
        let echoed = id(&create(&app, &ada, echo("Echo", "echo", "POST")).await);
        app.post(&format!("/workflows/{echoed}/test"), &ada.token, json!({}))
            .await
            .expect(200);
        let (_held, release) = held_and_given_up(&app, &ada).await;
        let refused = post_hook(&app, "/webhook-test/echo", json!({"n": 1})).await;
        assert_eq!(refused.status, 503, "{}", refused.text);
        assert!(
            executions(&app, &ada, echoed).await.is_empty(),
            "a refused call is not recorded"
        );
        release.send(()).unwrap();
        let mut answered = post_hook(&app, "/webhook-test/echo", json!({"n": 2})).await;
        for _ in 0..300 {
            if answered.status != 503 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            answered = post_hook(&app, "/webhook-test/echo", json!({"n": 2})).await;
        }
        assert_eq!(answered.status, 200, "the test address stayed armed: {}", answered.text);
        assert_eq!(answered.json, json!({"echo": {"n": 2}}));
    }

    fn one_connection_only(config: &mut lector_core::config::Config) {
        config.http.max_connections = 1;
        config.sources.allow_private = true;
    }

    mod one_connection {
        use super::*;
        backend_tests!(adjust: one_connection_only; a_busy_node_leaves_a_test_address_armed_for_last_step_runs);
    }

    fn one_background_run(config: &mut lector_core::config::Config) {
        config.workflows.max_background_runs = 1;
        config.sources.allow_private = true;
    }

    backend_tests!(
        adjust: one_background_run;
        background_runs_are_bounded_per_node,
        a_run_outlives_a_caller_who_gives_up,
        a_busy_node_leaves_a_test_address_armed,
    );
}

mod read_only {
    //! A read-only workspace refuses every write: its workflows' addresses run and record nothing
    //! (403 `workspace_read_only`, a test address staying armed), and a workflow there may still
    //! be deactivated, which only stops it.
    use super::*;

    /// Sets the read-only flag of `workspace` as `who`.
    async fn set_read_only(app: &TestApp, who: &Session, workspace: i64, flag: bool) {
        let path = format!("/organizations/{workspace}");
        let name = app.get(&path, &who.token).await.expect(200)["name"].clone();
        app.put(&path, &who.token, json!({"name": name, "is_read_only": flag}))
            .await
            .expect(200);
    }

    async fn a_read_only_workspace_runs_no_workflow(app: TestApp) {
        let ada = app.register("ada@example.org").await;
        let definition = json!({"name": "Notes",
            "trigger": {"path": "notes", "http_method": "POST", "response_mode": "last_step"},
            "steps": [{"type": "notify", "user_id": ada.user_id, "message": "Got {{ body.text }}"}]});
        let created = create(&app, &ada, definition.clone()).await;
        let (workflow, workspace) = (id(&created), created["organization_id"].as_i64().unwrap());
        activate(&app, &ada, workflow).await.expect(200);
        app.post(&format!("/workflows/{workflow}/test"), &ada.token, json!({}))
            .await
            .expect(200);
        set_read_only(&app, &ada, workspace, true).await;
        for path in ["/webhook/notes", "/webhook-test/notes"] {
            let refused = post_hook(&app, path, json!({"text": "one"})).await;
            assert_eq!(
                (refused.status, refused.json["code"].clone()),
                (403, json!("workspace_read_only")),
                "{path}: {}",
                refused.text
            );
        }
        assert!(executions(&app, &ada, workflow).await.is_empty(), "nothing recorded");
        assert_eq!(app.get("/notifications", &ada.token).await.expect(200), json!([]));
        // Changing or deleting the workflow stays refused; deactivating it only stops it.
        let path = format!("/workflows/{workflow}");
        app.put(&path, &ada.token, definition)
            .await
            .expect_problem(403, "workspace_read_only");
        app.delete(&path, &ada.token)
            .await
            .expect_problem(403, "workspace_read_only");
        let stopped = app
            .post(&format!("{path}/deactivate"), &ada.token, json!({}))
            .await
            .expect(200);
        assert_eq!(stopped["active"], false);
        assert_eq!(post_hook(&app, "/webhook/notes", json!({})).await.status, 404);
        activate(&app, &ada, workflow)
            .await
            .expect_problem(403, "workspace_read_only");
        // The refused test call left the test address armed for the workspace's writable days.
        set_read_only(&app, &ada, workspace, false).await;
        let tested = post_hook(&app, "/webhook-test/notes", json!({"text": "two"})).await;
        assert_eq!(tested.status, 200, "{}", tested.text);
        assert_eq!(executions(&app, &ada, workflow).await.len(), 1);
    }

    backend_tests!(a_read_only_workspace_runs_no_workflow);
}
