//! Hostile text through every kind of field, with the same answer on SQLite and PostgreSQL.
//!
//! One table of strings (NUL, a bidi override, a C1 control, a newline, 10,000 characters,
//! emoji, combining marks) goes into short fields (names, e-mails, passwords, query values),
//! free-text fields and document text. Short fields refuse controls with 400
//! `invalid_characters` naming the field, long values answer 422, and nothing answers 5xx;
//! document text keeps everything but NUL, which normalisation drops.

use crate::common::{Answer, TestApp};
use reqwest::Method;
use serde_json::{Value, json};

backend_tests!(
    hostile_strings_in_short_fields,
    hostile_strings_in_auth_bodies,
    free_text_and_document_text,
);

/// What a short field answers for a hostile value.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Refused,
    TooLong,
    Stored,
}

fn hostile() -> Vec<(&'static str, String, Expect)> {
    vec![
        ("nul", "a\u{0}b".into(), Expect::Refused),
        ("bidi override", "\u{202E}gnp.exe".into(), Expect::Refused),
        ("bidi isolate", "a\u{2066}b".into(), Expect::Refused),
        ("c1", "a\u{85}b".into(), Expect::Refused),
        ("escape", "a\u{1b}[31mb".into(), Expect::Refused),
        ("newline", "a\nb".into(), Expect::Refused),
        ("long", "n".repeat(10_000), Expect::TooLong),
        ("emoji", "\u{1F600}\u{1F389}".into(), Expect::Stored),
        ("combining", "e\u{301}\u{308}z".into(), Expect::Stored),
    ]
}

#[track_caller]
fn check(answer: Answer, what: &str, expect: Expect, field: &str) {
    let status = answer.status.as_u16();
    assert!(status < 500, "{what}: {status} {}", answer.text);
    match expect {
        Expect::Refused => {
            let problem = answer.expect_problem(400, "invalid_characters");
            assert_eq!(problem["errors"][0]["field"], field, "{what}: {problem}");
        }
        Expect::TooLong => {
            let problem = answer.expect_problem(422, "validation_failed");
            assert_eq!(problem["errors"][0]["field"], field, "{what}: {problem}");
        }
        Expect::Stored => assert!((200..300).contains(&status), "{what}: {status} {}", answer.text),
    }
}

async fn hostile_strings_in_short_fields(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let project = app.project(&ada, "Hostile").await;
    for (i, (what, value, expect)) in hostile().into_iter().enumerate() {
        let named = |suffix: &str| format!("{value}{suffix}{i}");
        let cases: Vec<(Method, String, Value, &str)> = vec![
            (
                Method::POST,
                "/organizations".into(),
                json!({"name": named("w")}),
                "name",
            ),
            (
                Method::POST,
                "/projects".into(),
                json!({"name": named("p"), "type": "CLASS"}),
                "name",
            ),
            (
                Method::PUT,
                format!("/projects/{project}"),
                json!({"name": named("q")}),
                "name",
            ),
            (
                Method::POST,
                format!("/projects/{project}/classes"),
                json!({"name": named("c")}),
                "name",
            ),
            (
                Method::POST,
                format!("/projects/{project}/labels"),
                json!({"name": named("l")}),
                "name",
            ),
            (
                Method::POST,
                format!("/projects/{project}/upload-classes"),
                json!([{"name": named("u")}]),
                "[0].name",
            ),
            (
                Method::POST,
                format!("/projects/{project}/annotations"),
                json!({"name": named("s")}),
                "name",
            ),
            (
                Method::PUT,
                format!("/users/{}", ada.user_id),
                json!({"first_name": named("f")}),
                "first_name",
            ),
            (
                Method::POST,
                format!("/projects/{project}/documents"),
                json!({"text": "A document.", "meta": {"source": named("m")}}),
                "meta.source",
            ),
        ];
        for (method, path, body, field) in cases {
            // Meta values are free JSON: only controls other than line breaks are refused.
            let expect = match (field, expect) {
                ("meta.source", Expect::TooLong) => Expect::Stored,
                ("meta.source", Expect::Refused) if what == "newline" => Expect::Stored,
                _ => expect,
            };
            let answer = app.call(method.clone(), &path, Some(&ada.token), Some(body)).await;
            check(answer, &format!("{what} in {method} {path}"), expect, field);
        }
        // Query values are short fields too.
        let search: String = url_escape(&value);
        let answer = app
            .get(&format!("/projects/{project}/documents?search={search}"), &ada.token)
            .await;
        let expect = if expect == Expect::TooLong {
            Expect::Stored
        } else {
            expect
        };
        check(answer, &format!("{what} in search"), expect, "search");
    }
}

async fn hostile_strings_in_auth_bodies(app: TestApp) {
    for (i, (what, value, expect)) in hostile().into_iter().enumerate() {
        let email = format!("u{i}{value}@example.org");
        let body = json!({"email": email, "password": "password-123", "first_name": "Eve"});
        let answer = app.post_signed_out("/auth/register", body).await;
        let email_expect = match (what, expect) {
            ("emoji" | "combining", _) => Expect::Stored,
            _ => expect,
        };
        check(answer, &format!("{what} in register email"), email_expect, "email");

        let body = json!({"email": format!("p{i}@example.org"), "password": format!("password-{value}")});
        let answer = app.post_signed_out("/auth/register", body).await;
        check(answer, &format!("{what} in register password"), expect, "password");

        let body = json!({"email": format!("n{i}@example.org"), "password": "password-123", "first_name": value});
        let answer = app.post_signed_out("/auth/register", body).await;
        check(answer, &format!("{what} in register first_name"), expect, "first_name");

        // Log-in never says more than "invalid credentials" about a clean value; an e-mail too
        // long to be an address is refused as in register.
        for (field, body) in [
            ("email", json!({"email": email, "password": "password-123"})),
            ("password", json!({"email": "nobody@example.org", "password": value})),
        ] {
            let answer = app.post_signed_out("/auth/login", body).await;
            let status = answer.status.as_u16();
            if expect == Expect::Refused || (expect == Expect::TooLong && field == "email") {
                check(answer, &format!("{what} in login {field}"), expect, field);
            } else if (what, field) == ("emoji", "email") || (what, field) == ("combining", "email") {
                assert_eq!(status, 200, "{what} in login {field}: {}", answer.text);
            } else {
                answer.expect_problem(401, "invalid_credentials");
            }
        }
    }
}

async fn free_text_and_document_text(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let project = app.project(&ada, "Hostile").await;
    // Free text takes line breaks and tabs, not other controls.
    let answer = app
        .post(
            "/organizations",
            &ada.token,
            json!({"name": "Team", "description": "two\nlines\tand a tab"}),
        )
        .await;
    check(answer, "newline in a description", Expect::Stored, "description");
    for bad in ["a\u{0}b", "a\u{1b}b", "a\u{202E}b"] {
        let answer = app
            .post(
                "/organizations",
                &ada.token,
                json!({"name": "Other", "description": bad}),
            )
            .await;
        check(answer, "control in a description", Expect::Refused, "description");
    }
    // Document text drops NUL (the same on both backends) and keeps the rest.
    let text = "Nul\u{0} here. Emoji \u{1F600} and e\u{301}.";
    let document = app.document(&ada, project, json!({"text": text})).await;
    assert_eq!(document["text"], "Nul here. Emoji \u{1F600} and \u{e9}.");
    let bulk = json!([{"text": "First\u{0} one."}, {"text": "Second."}]);
    let accepted = app
        .post(&format!("/projects/{project}/upload-documents"), &ada.token, bulk)
        .await
        .expect(202);
    let task = accepted["task_id"].as_i64().unwrap();
    let done = app.wait_for_task(&ada.token, project, task).await;
    assert_eq!(done["status"], "DONE", "{done}");
    let found = app
        .get(&format!("/projects/{project}/documents?search=First"), &ada.token)
        .await
        .expect(200);
    assert_eq!(found["documents"][0]["text"], "First one.", "{found}");
}

/// Percent-encodes every byte but ASCII letters and digits, so the server sees exactly `value`.
fn url_escape(value: &str) -> String {
    value
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
