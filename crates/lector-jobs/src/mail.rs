//! Outgoing mail: password resets, invitations and first-time-login tokens.
//!
//! Mail goes through the job queue (`send_mail`, [`SendMail`]; a password reset is
//! `send_password_reset`, [`SendPasswordReset`], which first finds out whether the address has
//! an account, so the request asking for it cannot tell): a request enqueues the message
//! and never waits on SMTP, and a mail server that hiccups only delays the message, which is
//! retried with backoff. The body (it carries one-time tokens) is the job's input, deleted when
//! the job ends. Without SMTP configuration every message is written to the outbox folder, so a
//! fresh installation works offline and an operator can read what would have been sent.

use crate::runner::{Handler, JobContext, JobError, Outcome};
use lector_core::config::MailConfig;
use lector_core::time::Timestamp;
use lector_store::{MailPayload, PasswordResetMail, PasswordResetPayload};
use lettre::message::Mailbox;
use lettre::{AsyncFileTransport, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use std::path::{Path, PathBuf};
use std::sync::Arc;

enum Transport {
    Outbox(AsyncFileTransport<Tokio1Executor>),
    Smtp(Box<AsyncSmtpTransport<Tokio1Executor>>),
}

/// Sends plain-text mail through the configured transport. Cheap to share behind an `Arc`.
pub struct Mailer {
    transport: Transport,
    from: Mailbox,
    outbox: Option<PathBuf>,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailer")
            .field("from", &self.from.to_string())
            .field("outbox", &self.outbox)
            .finish()
    }
}

impl Mailer {
    /// Builds the transport; an unusable sender address or SMTP URL refuses start-up.
    pub fn new(config: &MailConfig, outbox: &Path) -> Result<Self, String> {
        let from: Mailbox = config.from.parse().map_err(|e| format!("mail.from: {e}"))?;
        match &config.smtp_url {
            Some(url) => {
                let smtp = AsyncSmtpTransport::<Tokio1Executor>::from_url(url.expose())
                    .map_err(|e| format!("mail.smtp_url: {e}"))?
                    .build();
                Ok(Self {
                    transport: Transport::Smtp(Box::new(smtp)),
                    from,
                    outbox: None,
                })
            }
            None => {
                std::fs::create_dir_all(outbox).map_err(|e| format!("mail outbox {}: {e}", outbox.display()))?;
                Ok(Self {
                    transport: Transport::Outbox(AsyncFileTransport::new(outbox)),
                    from,
                    outbox: Some(outbox.into()),
                })
            }
        }
    }

    /// The folder messages are written to, when there is no SMTP server.
    pub fn outbox(&self) -> Option<&Path> {
        self.outbox.as_deref()
    }

    /// Sends one plain-text message.
    pub async fn send(&self, to: &str, subject: &str, body: &str) -> Result<(), String> {
        self.send_message(to, subject, body).await.map_err(|e| e.reason)
    }

    /// [`Mailer::send`], telling a refusal that sending again cannot change (a recipient the
    /// server refuses for good) from one that may pass later.
    async fn send_message(&self, to: &str, subject: &str, body: &str) -> Result<(), SendError> {
        let to: Mailbox = to
            .parse()
            .map_err(|e| SendError::permanent(format!("recipient: {e}")))?;
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(subject)
            .body(body.to_owned())
            .map_err(|e| SendError::permanent(format!("message: {e}")))?;
        match &self.transport {
            Transport::Outbox(t) => t.send(message).await.map(|_| ()).map_err(|e| SendError {
                reason: format!("outbox: {e}"),
                permanent: false,
            }),
            Transport::Smtp(t) => t.send(message).await.map(|_| ()).map_err(|e| SendError {
                permanent: refuses_the_recipient(&e),
                reason: format!("smtp: {e}"),
            }),
        }
    }
}

/// Whether the server refused the recipient's address for good: 550, 551 or 553 with an
/// enhanced status that says so of the destination (RFC 3463: 5.1.1 no such mailbox, 5.1.2 no
/// such domain, 5.1.3 a malformed address, 5.1.6 moved, 5.1.10 a null MX). Other 5xx answers
/// (a failed log-in, TLS required, relaying or a sender refused by policy, 5.7.x, a sender's
/// address refused, 5.1.7 and 5.1.8, a greeting that refuses this server) are the
/// installation's to mend, and the mail waits for it.
fn refuses_the_recipient(error: &lettre::transport::smtp::Error) -> bool {
    let code = error.status().map(u16::from);
    error.is_permanent()
        && matches!(code, Some(550 | 551 | 553))
        && matches!(enhanced_address_detail(&error.to_string()), Some(1 | 2 | 3 | 6 | 10))
}

/// The `N` of the enhanced status `5.1.N` that opens a server's answer (lettre writes it as
/// "permanent error (550): 5.1.1 …").
fn enhanced_address_detail(answer: &str) -> Option<u16> {
    let (_, message) = answer.split_once("): ")?;
    let rest = message.trim_start().strip_prefix("5.1.")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Why a message was not sent, and whether sending it again could change that.
struct SendError {
    reason: String,
    permanent: bool,
}

impl SendError {
    fn permanent(reason: String) -> Self {
        Self {
            reason,
            permanent: true,
        }
    }
}

/// Sends a job's message: a transport that fails is a failed attempt, retried with backoff; a
/// recipient the server refuses for good fails the job at once (its sender is told now, not
/// after a day of retries).
async fn deliver(mailer: &Mailer, to: &str, subject: &str, body: &str) -> Result<(), JobError> {
    mailer.send_message(to, subject, body).await.map_err(|e| {
        let reason = format!("the mail could not be sent: {}", e.reason);
        if e.permanent {
            JobError::fatal(reason)
        } else {
            JobError::transient(reason)
        }
    })
}

/// Delivers a `send_mail` job's message through the configured transport.
#[derive(Debug, Clone)]
pub struct SendMail(pub Arc<Mailer>);

impl Handler for SendMail {
    type Payload = MailPayload;

    async fn run(&self, job: JobContext<'_>, mail: MailPayload) -> Result<Outcome, JobError> {
        let JobContext { store, lease, .. } = job;
        if let Err(e) = mail.to.parse::<Mailbox>() {
            return Err(JobError::fatal(format!(
                "the recipient {:?} is not an address: {e}",
                mail.to
            )));
        }
        let body: String = store.job_input(lease).await.map_err(JobError::from_store)?;
        deliver(&self.0, &mail.to, &mail.subject, &body).await?;
        tracing::info!(job.id = lease.job.id, "mail sent");
        Ok(Outcome {
            result: serde_json::json!({"sent": true}),
            notice: None,
        })
    }
}

/// Mails a password reset if the job's address is an active account's, recording its token
/// first; for any other address the job ends having sent nothing.
#[derive(Debug, Clone)]
pub struct SendPasswordReset(pub Arc<Mailer>);

impl Handler for SendPasswordReset {
    type Payload = PasswordResetPayload;

    async fn run(&self, job: JobContext<'_>, reset: PasswordResetPayload) -> Result<Outcome, JobError> {
        let JobContext { store, lease, .. } = job;
        let mail: PasswordResetMail = store.job_input(lease).await.map_err(JobError::from_store)?;
        // A retry past the token's lifetime would mail a link that no longer works.
        if Timestamp(mail.expires) <= Timestamp::now() {
            tracing::info!(
                job.id = lease.job.id,
                "password reset not sent: its token expired first"
            );
            return Ok(Outcome {
                result: serde_json::json!({"sent": false, "expired": true}),
                notice: None,
            });
        }
        let has_account = store
            .record_reset_token(&reset.email, &mail.token_hash, Timestamp(mail.expires))
            .await
            .map_err(JobError::from_store)?;
        if has_account {
            deliver(&self.0, &reset.email, &mail.subject, &mail.text).await?;
        }
        tracing::info!(job.id = lease.job.id, sent = has_account, "password reset handled");
        Ok(Outcome {
            result: serde_json::json!({"sent": has_account}),
            notice: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_enhanced_status_of_an_address_is_read() {
        assert_eq!(
            enhanced_address_detail("permanent error (550): 5.1.1 no such mailbox"),
            Some(1)
        );
        assert_eq!(
            enhanced_address_detail("permanent error (553): 5.1.10 null MX"),
            Some(10)
        );
        assert_eq!(
            enhanced_address_detail("permanent error (553): 5.1.8 sender domain"),
            Some(8)
        );
        assert_eq!(
            enhanced_address_detail("permanent error (550): 5.7.1 relaying denied"),
            None
        );
        assert_eq!(
            enhanced_address_detail("permanent error (550): mailbox unavailable"),
            None
        );
        assert_eq!(
            enhanced_address_detail("permanent error (550): denied for 5.1.2.3"),
            None
        );
    }

    #[tokio::test]
    async fn writes_one_file_per_message_to_the_outbox() {
        let dir = std::env::temp_dir().join(format!("lector-mail-{}", std::process::id()));
        let mailer = Mailer::new(&MailConfig::default(), &dir).unwrap();
        mailer.send("ada@example.org", "Hello", "token=abc").await.unwrap();
        let files: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(files.len(), 1);
        let text = std::fs::read_to_string(files[0].as_ref().unwrap().path()).unwrap();
        assert!(text.contains("To: ada@example.org") && text.contains("token=abc"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(mailer.send("not an address", "x", "y").await.is_err());
    }
}
