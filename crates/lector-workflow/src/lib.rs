//! Workflows: small automations that other systems start by calling a webhook address. A
//! workflow is a trigger (path, methods, how it answers, who may call it) and ordered steps
//! (analyze, extract, notify, http_request, set) that run over the request's entries.
//!
//! This crate knows nothing of HTTP servers or SQL: it checks definitions ([`definition`]),
//! moves data through paths and templates ([`data`]), admits requests ([`admission`]), runs
//! steps through the service's [`run::Effects`] and shapes the answer ([`run::reply`]). The
//! service (`lector-api`) listens on the addresses, keeps registrations and executions in the
//! store and implements the effects.

pub mod admission;
pub mod data;
pub mod definition;
pub mod run;

pub use data::{Binary, Entry};
pub use definition::{Definition, Method, Step, Trigger};
pub use run::{Effects, Failed, Finished, Reply};
