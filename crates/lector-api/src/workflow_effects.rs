//! The steps' ways out of a workflow run ([`ServiceEffects`], the service's side of
//! `lector_workflow::Effects`): analysis and extraction through the same functions as the
//! `analyze` and `extract` operations, notifications to members, and outbound calls through
//! the sources' guard with the hop header the service writes. Every store reader they reach
//! takes the run's scope (`workflow_runs::run_scope`), in the workflow's workspace only.

use crate::routes::analyze::analyze_texts;
use crate::routes::extraction::extract_file;
use crate::state::AppState;
use crate::workflow_runs::HOPS_HEADER;
use lector_core::{Error, ErrorCode, NotificationType, Result, Scope};
use lector_sources::Fault;
use lector_store::Workflow;
use lector_workflow::definition::Level;
use lector_workflow::run::{Analyzed, HttpAnswer, HttpCall};
use lector_workflow::{Binary, Effects};
use serde_json::{Value, json};

/// The steps' ways out, for one workflow's run.
pub(crate) struct ServiceEffects<'a> {
    state: &'a AppState,
    scope: Scope,
    workspace_id: i64,
    workflow_name: String,
    /// The workflow calls that led to this run's call.
    hops: u32,
}

impl<'a> ServiceEffects<'a> {
    pub(crate) fn new(state: &'a AppState, scope: Scope, workflow: &Workflow, hops: u32) -> Self {
        Self {
            state,
            scope,
            workspace_id: workflow.workspace_id,
            workflow_name: workflow.name.clone(),
            hops,
        }
    }
}

impl Effects for ServiceEffects<'_> {
    async fn analyze(&self, model_id: i64, texts: Vec<String>, split: bool) -> Result<Analyzed> {
        let documents = texts.into_iter().map(|t| (None, t)).collect();
        let analysis = analyze_texts(self.state, &self.scope, model_id, documents, split).await?;
        let model = json!({"model": analysis.model, "model_id": analysis.model_id, "type": analysis.kind});
        let documents = analysis
            .documents
            .iter()
            .map(crate::routes::as_answered)
            .collect::<Result<_>>()?;
        Ok(Analyzed { model, documents })
    }

    async fn extract(&self, model_id: i64, file: &Binary) -> Result<Value> {
        let result = extract_file(
            self.state,
            &self.scope,
            model_id,
            file.file_name.clone(),
            file.bytes.to_vec(),
        )
        .await?;
        // `fields`: each found field's value by label, for the steps after (`extraction.fields.total`).
        let fields: serde_json::Map<String, Value> = result
            .documents
            .iter()
            .flat_map(|d| &d.matches)
            .map(|m| {
                (
                    m.label.clone(),
                    Value::String(m.value.clone().unwrap_or_else(|| m.text.clone())),
                )
            })
            .collect();
        let mut value = crate::routes::as_answered(&result)?;
        if let Value::Object(map) = &mut value {
            map.remove("labels");
            map.insert("fields".into(), Value::Object(fields));
        }
        Ok(value)
    }

    async fn notify(&self, user_id: i64, level: Level, message: String) -> Result<()> {
        if !crate::workflow_refs::is_member(self.state, user_id, self.workspace_id).await? {
            // Checked when the workflow was saved: the user has gone since (409, as a model gone).
            return Err(Error::conflict(format!(
                "user {user_id} is not a member of the workflow's workspace"
            )));
        }
        let kind = match level {
            Level::Info => NotificationType::Info,
            Level::Warning => NotificationType::Warning,
        };
        let title = format!("Workflow {}", self.workflow_name);
        // The store cuts the text to what a notification holds.
        self.state.store.notify(user_id, kind, &title, &message).await?;
        Ok(())
    }

    async fn http(&self, call: HttpCall) -> Result<HttpAnswer> {
        // The chain's count is the service's to write, whatever the step's own headers say, and
        // it follows redirects to other origins, where the step's own headers (a key, often)
        // do not go.
        let hops = [(HOPS_HEADER.to_owned(), (self.hops + 1).to_string())];
        let answer = self
            .state
            .sources
            .call(
                call.method.as_str(),
                &call.url,
                &call.headers,
                &hops,
                call.body,
                call.max_answer_bytes as u64,
            )
            .await
            .map_err(|failed| call_error(failed, call.address_from_data))?;
        Ok(HttpAnswer {
            status: answer.status,
            content_type: answer.content_type,
            body: answer.body,
        })
    }
}

/// How a step's failed call is answered, by whose fault it is: 422 for a request the call's
/// data made unsendable (a URL that is not one, a header value with a control character) or
/// sent to an address the guard refuses (`address_from_data`: the step's url takes its host
/// from the data, so the caller chose it), 409 for an address the guard refuses that the
/// step's url writes out (the step's configuration: change its url, or allow the network),
/// 502 for the called address's failings (an answer too large among them, not the caller's
/// body). A server fault stays one.
fn call_error(failed: lector_sources::CallError, address_from_data: bool) -> Error {
    let lector_sources::CallError { fault, mut error } = failed;
    if error.code == ErrorCode::Internal {
        return error;
    }
    match fault {
        Fault::Unsendable => error.code = ErrorCode::ValidationFailed,
        // Nothing to tell the caller about the server's settings: it is their address to change.
        Fault::Refused if address_from_data => error.code = ErrorCode::ValidationFailed,
        Fault::Refused => {
            error = Error::conflict(format!(
                "{}: change the step's url, or allow the address (sources.allow_private, sources.allowed_networks)",
                error.detail
            ));
        }
        Fault::Upstream => error.code = ErrorCode::UpstreamFailed,
    }
    error
}
