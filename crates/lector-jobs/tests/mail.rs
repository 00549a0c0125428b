//! Mail as a job on both backends: a mail server that refuses is retried without losing the
//! message, the body (with its one-time token) is gone from the database once delivered, and a
//! mail that can never go out (a recipient the server refuses for good) fails at once with one
//! notification, and a reset mail whose token expired before it could go out is not sent.

mod common;
use common::on_both_backends;
use lector_core::config::{MailConfig, Secret};
use lector_core::{ErrorCode, Scope};
use lector_jobs::{Mailer, Runner, SendMail, SendPasswordReset};
use lector_store::testing::TestDatabase;
use lector_store::{Backend, JobState, Lease, MailPayload, PasswordResetMail, Store};
use std::sync::Arc;
use std::time::Duration;

async fn user(store: &Store) -> Scope {
    lector_store::testing::owner(store).await.1
}

/// The body a job still keeps in the database, if any.
async fn kept_body(store: &Store, job_id: i64) -> Option<String> {
    let job = store.job_by_id(job_id).await.unwrap().unwrap();
    let lease = Lease {
        job,
        owner: "test".into(),
        token: 0,
        unrunnable_since: None,
    };
    match store.job_input::<String>(&lease).await {
        Ok(body) => Some(body),
        Err(e) if e.code == ErrorCode::NotFound => None,
        Err(e) => panic!("{e:?}"),
    }
}

fn mail(to: &str) -> MailPayload {
    MailPayload {
        to: to.into(),
        subject: "Reset your Lector password".into(),
        advice: "ask for a new reset mail".into(),
    }
}

async fn a_refused_mail_is_retried_and_its_body_deleted_once_sent(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    let scope = user(&store).await;
    let job_id = store
        .queue_mail(&mail("ada@example.org"), "Token: secret-123\n", Some(scope.user_id))
        .await
        .unwrap();

    // The mail server is down: nothing listens on the port.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = MailConfig {
        smtp_url: Some(Secret::new(format!("smtp://127.0.0.1:{closed}"))),
        ..MailConfig::default()
    };
    let down = Runner::new().with(SendMail(Arc::new(Mailer::new(&config, "unused".as_ref()).unwrap())));
    assert!(down.run_one(&store, "w").await.unwrap());
    let job = store.job_by_id(job_id).await.unwrap().unwrap();
    assert_eq!((job.state, job.attempts), (JobState::Queued, 1), "{job:?}");
    assert!(job.error.unwrap().starts_with("the mail could not be sent: smtp"));
    assert_eq!(kept_body(&store, job_id).await.as_deref(), Some("Token: secret-123\n"));

    // The server is back (the outbox stands in for it): the retry, once its delay is over
    // (ended here at once), delivers the same message.
    let delay = lector_store::testing::end_retry_delay(&store, job_id).await;
    assert_eq!(delay, Duration::from_secs(30), "mail waits longer than other jobs");
    let outbox = tempfile::tempdir().unwrap();
    let up = Runner::new().with(SendMail(Arc::new(
        Mailer::new(&MailConfig::default(), outbox.path()).unwrap(),
    )));
    assert!(up.run_one(&store, "w").await.unwrap());
    let job = store.job_by_id(job_id).await.unwrap().unwrap();
    assert_eq!((job.state, job.attempts), (JobState::Done, 2), "{job:?}");
    let sent: Vec<_> = std::fs::read_dir(outbox.path()).unwrap().collect();
    assert_eq!(sent.len(), 1);
    let text = std::fs::read_to_string(sent[0].as_ref().unwrap().path()).unwrap();
    assert!(text.contains("Token: secret-123"), "{text}");
    assert_eq!(
        kept_body(&store, job_id).await,
        None,
        "the token is not left in the database"
    );
    assert!(!job.payload.to_string().contains("secret-123"));
    let notes = store.notifications(&scope, scope.user_id, 0, 10).await.unwrap();
    assert!(notes.is_empty(), "a delivered mail notifies nobody: {notes:?}");
}

async fn a_mail_that_cannot_go_out_fails_once_with_a_notification(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    let scope = user(&store).await;
    let job_id = store
        .queue_mail(&mail("not an address"), "Token: t\n", Some(scope.user_id))
        .await
        .unwrap();
    let outbox = tempfile::tempdir().unwrap();
    let runner = Runner::new().with(SendMail(Arc::new(
        Mailer::new(&MailConfig::default(), outbox.path()).unwrap(),
    )));
    runner.run_one(&store, "w").await.unwrap();
    let job = store.job_by_id(job_id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Failed);
    assert_eq!(kept_body(&store, job_id).await, None);
    let notes = store.notifications(&scope, scope.user_id, 0, 10).await.unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0].title, "Mail not sent");
    assert!(
        notes[0].text.starts_with(
            "The mail \"Reset your Lector password\" to not an address failed after 1 attempt: the recipient"
        ),
        "{}",
        notes[0].text
    );
    assert!(
        notes[0].text.ends_with("; ask for a new reset mail."),
        "{}",
        notes[0].text
    );
}

/// A mail server on a free port of localhost that refuses every recipient for good (550);
/// answers its address.
async fn refusing_mail_server() -> String {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut lines = BufReader::new(read).lines();
                write.write_all(b"220 refusing ESMTP\r\n").await.unwrap();
                while let Ok(Some(line)) = lines.next_line().await {
                    let command = line.to_ascii_uppercase();
                    let answer: &[u8] = if command.starts_with("RCPT") {
                        b"550 5.1.1 no such mailbox\r\n"
                    } else if command.starts_with("QUIT") {
                        b"221 bye\r\n"
                    } else {
                        b"250 ok\r\n"
                    };
                    if write.write_all(answer).await.is_err() || command.starts_with("QUIT") {
                        break;
                    }
                }
            });
        }
    });
    format!("smtp://127.0.0.1:{port}")
}

/// A recipient the mail server refuses for good (550) fails the mail at once, with the
/// server's reason and one notification, instead of a day of retries.
async fn a_recipient_refused_for_good_fails_at_once(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    let scope = user(&store).await;
    let job_id = store
        .queue_mail(&mail("nobody@example.org"), "Token: t\n", Some(scope.user_id))
        .await
        .unwrap();
    let config = MailConfig {
        smtp_url: Some(Secret::new(refusing_mail_server().await)),
        ..MailConfig::default()
    };
    let runner = Runner::new().with(SendMail(Arc::new(Mailer::new(&config, "unused".as_ref()).unwrap())));
    assert!(runner.run_one(&store, "w").await.unwrap());
    let job = store.job_by_id(job_id).await.unwrap().unwrap();
    assert_eq!((job.state, job.attempts), (JobState::Failed, 1), "{job:?}");
    assert!(
        job.error.as_deref().unwrap_or("").contains("no such mailbox"),
        "{job:?}"
    );
    let notes = store.notifications(&scope, scope.user_id, 0, 10).await.unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
}

async fn a_reset_mail_past_its_tokens_lifetime_is_not_sent(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    user(&store).await;
    let outbox = tempfile::tempdir().unwrap();
    let runner = Runner::new().with(SendPasswordReset(Arc::new(
        Mailer::new(&MailConfig::default(), outbox.path()).unwrap(),
    )));
    let now = lector_core::time::Timestamp::now();
    for (token, expires) in [("late", now.plus_seconds(-1)), ("live", now.plus_seconds(600))] {
        let mail = PasswordResetMail {
            token_hash: token.into(),
            expires: expires.micros(),
            subject: "Reset your Lector password".into(),
            text: format!("Token: {token}\n"),
        };
        store.queue_password_reset("ada@example.org", &mail).await.unwrap();
        assert!(runner.run_one(&store, "w").await.unwrap());
    }
    let sent: Vec<String> = std::fs::read_dir(outbox.path())
        .unwrap()
        .map(|file| std::fs::read_to_string(file.unwrap().path()).unwrap())
        .collect();
    assert_eq!(sent.len(), 1, "only the live token's mail goes out");
    assert!(sent[0].contains("Token: live"), "{}", sent[0]);
}

on_both_backends!(
    a_refused_mail_is_retried_and_its_body_deleted_once_sent,
    a_mail_that_cannot_go_out_fails_once_with_a_notification,
    a_reset_mail_past_its_tokens_lifetime_is_not_sent,
    a_recipient_refused_for_good_fails_at_once
);
