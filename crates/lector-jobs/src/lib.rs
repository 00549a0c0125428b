//! Lector's background work. For now: delivering mail, to an outbox folder (one `.eml` file per
//! message, readable by a person) or over SMTP. Ingest, training, analysis and clone jobs will
//! run here on the durable job queue.

pub mod mail;

pub use mail::Mailer;
