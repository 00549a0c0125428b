//! Running a workflow for a call to one of its webhook addresses: the per-workflow rate limit,
//! the trigger's authentication, the steps (through `workflow_effects::ServiceEffects`, the
//! service's side of `lector_workflow::Effects`), the execution's record and the answer. The route
//! (`routes/webhooks.rs`) only turns the HTTP request into an [`Incoming`] call and the
//! [`Answer`] back into a response.
//!
//! Steps run with the role of the user who last activated the workflow (for a test call: who
//! armed its test address), in the workflow's workspace only: every store reader they reach
//! takes that scope, so a workflow can do no more than that user could, and nothing outside its
//! workspace.

use crate::background_runs::RunSlot;
use crate::state::AppState;
use crate::workflow_effects::ServiceEffects;
use lector_core::time::Timestamp;
use lector_core::{Action, Error, ErrorCode, Result, Scope};
use lector_store::{ExecutionEnd, FinishedExecution, WebhookTarget, Workflow};
use lector_workflow::admission::{Verdict, admit};
use lector_workflow::definition::{Method, ResponseMode};
use lector_workflow::{Binary, Definition, Entry, Reply, Trigger};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::OwnedSemaphorePermit;

/// Which of a webhook's two addresses was called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Address {
    Production,
    Test,
}

impl Address {
    fn as_str(self) -> &'static str {
        match self {
            Address::Production => "production",
            Address::Test => "test",
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            Address::Production => "webhook",
            Address::Test => "webhook-test",
        }
    }
}

/// A call to a webhook address, as the route read it. The body is read only once the call
/// is admitted ([`Incoming::body`]).
pub struct Incoming {
    pub address: Address,
    pub method: String,
    pub path: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub query: serde_json::Map<String, Value>,
}

impl Incoming {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the request's body brought: JSON for `body`, and files.
#[derive(Debug, Default)]
pub struct Received {
    pub body: Value,
    pub files: Vec<(String, Binary)>,
}

/// What the webhook answers.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub reply: Reply,
}

/// Requests a minute each workflow is served on this node: fixed one-minute windows, one for
/// the calls its authentication admits and one for those it refuses, so callers without the
/// credentials can neither use up the genuine callers' rate nor guess without limit.
#[derive(Debug, Default)]
pub struct WebhookLimiter {
    windows: Mutex<HashMap<(i64, Credentials), (Instant, u32)>>,
}

/// Which of a workflow's windows a call counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Credentials {
    Admitted,
    Refused,
}

impl WebhookLimiter {
    /// Counts a call; refuses it with the seconds to wait once the window is full.
    fn admit(&self, workflow_id: i64, credentials: Credentials, per_minute: u32) -> std::result::Result<(), u64> {
        let now = Instant::now();
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        if windows.len() > 100_000 {
            windows.retain(|_, (start, _)| now.duration_since(*start) < Duration::from_secs(60));
        }
        let (start, count) = windows.entry((workflow_id, credentials)).or_insert((now, 0));
        if now.duration_since(*start) >= Duration::from_secs(60) {
            *start = now;
            *count = 0;
        }
        if *count >= per_minute {
            let wait = Duration::from_secs(60).saturating_sub(now.duration_since(*start));
            return Err(wait.as_secs().max(1));
        }
        *count += 1;
        Ok(())
    }
}

/// How long this node answers a production address from memory before it asks the database
/// again. A change made on this node clears the cache at once ([`HookCache::clear`]); one made
/// on another node is seen within this time.
const HOOK_TTL: Duration = Duration::from_secs(1);

/// The production addresses this node served lately: (method, path) → the workflow and its
/// parsed definition. Only found workflows are kept; a miss asks the database.
#[derive(Debug, Default)]
pub struct HookCache {
    entries: Mutex<HashMap<(String, String), CachedHook>>,
}

type CachedHook = (Instant, Arc<Workflow>, Arc<Definition>);

impl HookCache {
    fn get(&self, method: &str, path: &str) -> Option<(Arc<Workflow>, Arc<Definition>)> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let (at, workflow, definition) = entries.get(&(method.to_owned(), path.to_owned()))?;
        (at.elapsed() < HOOK_TTL).then(|| (workflow.clone(), definition.clone()))
    }

    fn put(&self, method: &str, path: &str, workflow: Arc<Workflow>, definition: Arc<Definition>) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= 10_000 {
            entries.clear();
        }
        entries.insert(
            (method.to_owned(), path.to_owned()),
            (Instant::now(), workflow, definition),
        );
    }

    /// Forgets every address: a workflow changed on this node.
    pub fn clear(&self) {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// The workflow a call reaches, admitted: found, within its rate, with the trigger's
/// credentials, in a workspace that takes changes. The body is read after this, so a refused
/// caller cannot make the server read a large one.
pub struct Admitted {
    workflow: Arc<Workflow>,
    definition: Arc<Definition>,
    method: Method,
    started: Timestamp,
    /// The scope the steps run with, or why they cannot run (recorded as the call's execution).
    scope: Result<Scope>,
}

/// Finds and admits the workflow a call reaches (404, 405, 429, 401, 403 otherwise; 403
/// `workspace_read_only` when its workspace is read-only, which refuses every write: the
/// steps' effects and the execution's record). A refused call is answered, not recorded (on
/// either address: anyone who knows a path could fill the executions with refusals), and
/// leaves a test address armed; an admitted one takes it with [`start_call`] once its body is
/// read.
pub async fn admit_call(state: &AppState, call: &Incoming) -> Result<Admitted> {
    let started = Timestamp::now();
    let method = Method::parse(&call.method);
    let cached = match (call.address, method) {
        (Address::Production, Some(method)) => state.webhook_hooks.get(method.as_str(), &call.path),
        _ => None,
    };
    let (workflow, definition) = match cached {
        Some(found) => found,
        None => find(state, call, method).await?,
    };
    let method = method.ok_or_else(|| not_registered(call))?;
    let verdict = admit(
        &definition.trigger.authentication,
        workflow.auth_digest.as_deref(),
        |name| call.header(name),
    );
    let credentials = match verdict {
        Verdict::Admitted => Credentials::Admitted,
        Verdict::Missing | Verdict::Wrong => Credentials::Refused,
    };
    state
        .webhook_limits
        .admit(workflow.id, credentials, definition.trigger.rate_limit_per_minute)
        .map_err(Error::rate_limited)?;
    match verdict {
        Verdict::Admitted => {}
        Verdict::Missing => return Err(Error::unauthorized("this webhook needs its authentication")),
        Verdict::Wrong => return Err(Error::forbidden("the webhook's authentication data is wrong")),
    }
    let scope = match run_scope(state, &workflow, call.address).await {
        Err(error) if error.code == ErrorCode::WorkspaceReadOnly => return Err(error),
        scope => scope,
    };
    Ok(Admitted {
        workflow,
        definition,
        method,
        started,
        scope,
    })
}

/// An admitted call that holds its place among the node's runs and, on a test address, the
/// address's one call: it runs.
pub struct Started {
    admitted: Admitted,
    place: Place,
}

/// A call's place among the node's runs, held while its steps run.
enum Place {
    /// An `immediately` run's, which the node keeps alive and waits for (`background_runs`).
    Background(RunSlot),
    /// A `last_step` run's, bounded by the node's connections (`background_runs::RunPlaces`).
    Answering(OwnedSemaphorePermit),
}

/// Starts an admitted call whose body was read: takes its place among the node's runs first
/// (503 with `Retry-After` when none is free: refused as the trigger's refusals are, answered,
/// not recorded, a test address left armed), then a test address's one call (404 when another
/// call took it meanwhile); a production address has nothing to take.
pub async fn start_call(state: &AppState, call: &Incoming, admitted: Admitted) -> Result<Started> {
    let place = match admitted.definition.trigger.response_mode {
        ResponseMode::Immediately => state.background_runs.try_start().map(Place::Background),
        ResponseMode::LastStep => state.answering_runs.try_start().map(Place::Answering),
    };
    let place = place.ok_or_else(|| busy(state))?;
    if call.address == Address::Test {
        let taken = state
            .store
            .take_test_address(admitted.method.as_str(), &call.path, admitted.workflow.id)
            .await?;
        if !taken {
            return Err(not_registered(call));
        }
    }
    Ok(Started { admitted, place })
}

/// 404 naming the method and path.
fn not_registered(call: &Incoming) -> Error {
    let hint = match call.address {
        Address::Production => "; a workflow listens there while it is active",
        Address::Test => "; listen_workflow_test arms a test address for one call",
    };
    Error::new(
        ErrorCode::NotFound,
        format!(
            "the webhook {} /{}/{} is not registered{hint}",
            call.method,
            call.address.prefix(),
            call.path
        ),
    )
}

/// Asks the database what a call reaches; a production address found is kept in the node's
/// cache.
async fn find(state: &AppState, call: &Incoming, method: Option<Method>) -> Result<(Arc<Workflow>, Arc<Definition>)> {
    let test = call.address == Address::Test;
    let asked = method.map_or("", Method::as_str);
    match state.store.webhook_target(asked, &call.path, test).await? {
        WebhookTarget::Workflow(workflow) if method.is_some() => {
            let definition = Arc::new(parse_definition(&workflow)?);
            let workflow: Arc<Workflow> = Arc::from(workflow);
            if !test {
                state
                    .webhook_hooks
                    .put(asked, &call.path, workflow.clone(), definition.clone());
            }
            Ok((workflow, definition))
        }
        WebhookTarget::Workflow(_) | WebhookTarget::NotFound => Err(not_registered(call)),
        WebhookTarget::OtherMethods(methods) => {
            let mut error = Error::new(
                ErrorCode::MethodNotAllowed,
                format!(
                    "/{}/{} listens to {} only, not {}",
                    call.address.prefix(),
                    call.path,
                    methods.join(", "),
                    call.method
                ),
            );
            error.errors = vec![lector_core::FieldError::new("allow", methods.join(", "))];
            Err(error)
        }
    }
}

/// The end of an execution that did not run its steps.
fn failed_end(error: &Error) -> ExecutionEnd {
    ExecutionEnd {
        status: "error",
        error: Some(error.detail.clone()),
        data: None,
    }
}

/// Records a finished execution through the node's execution log.
async fn record(
    state: &AppState,
    workflow: &Workflow,
    address: Address,
    method: Method,
    started: Timestamp,
    end: ExecutionEnd,
) -> Result<()> {
    let execution = FinishedExecution {
        workflow_id: workflow.id,
        mode: address.as_str(),
        method: method.as_str().to_owned(),
        started,
        finished: Some(Timestamp::now()),
        end,
    };
    state.execution_log.record(&state.store, execution).await
}

fn parse_definition(workflow: &Workflow) -> Result<Definition> {
    serde_json::from_str(&workflow.definition).map_err(|e| {
        tracing::error!(workflow.id = workflow.id, error = %e, "a stored workflow definition does not parse");
        Error::internal()
    })
}

/// The header of a workflow's outbound calls: how many workflow calls led to this one, so a
/// chain of them (a workflow calling its own address, two calling each other) stops at
/// [`MAX_WORKFLOW_HOPS`] instead of going round until the rate limits.
pub const HOPS_HEADER: &str = "lector-workflow-hops";
/// The longest chain of workflow calls a call may end; the one after it is refused.
pub const MAX_WORKFLOW_HOPS: u32 = 8;

/// How many workflow calls led to `call` (0 for a call from elsewhere).
fn hops_of(call: &Incoming) -> u32 {
    call.header(HOPS_HEADER)
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0)
}

/// Runs a started call's steps and answers as its trigger says; records the execution.
pub async fn run_call(state: &AppState, call: Incoming, started: Started, received: Received) -> Result<Answer> {
    let Started {
        admitted:
            Admitted {
                workflow,
                definition,
                method,
                started,
                scope,
            },
        place,
    } = started;
    let hops = hops_of(&call);
    if hops >= MAX_WORKFLOW_HOPS {
        let error = Error::conflict(format!(
            "this call comes at the end of {hops} workflow calls in a row ({HOPS_HEADER}): workflows that \
             call themselves or each other stop here"
        ));
        record(state, &workflow, call.address, method, started, failed_end(&error)).await?;
        return Err(error);
    }
    let entry = entry_of(state, &call, received, &workflow, &definition);
    let keep = call.address == Address::Test || workflow.keep_data;
    let mode = call.address.as_str();
    let scope = match scope {
        Ok(scope) => scope,
        Err(error) => {
            record(state, &workflow, call.address, method, started, failed_end(&error)).await?;
            return Err(error);
        }
    };
    let trigger = definition.trigger.clone();
    // An `immediately` run outlives the request (and its body's budget): a node takes as many
    // as it is configured for, the rest refused before anything was recorded or run
    // (`start_call`).
    let place = match place {
        Place::Answering(place) => place,
        Place::Background(mut slot) => {
            let execution = state.store.start_execution(workflow.id, mode, method.as_str()).await?;
            // The node keeps the execution alive while the run lasts, and waits for it when it
            // stops (`background_runs`).
            slot.running(execution);
            let state = state.clone();
            tokio::spawn(async move {
                let _slot = slot;
                let effects = ServiceEffects::new(&state, scope, &workflow, hops);
                let outcome = lector_workflow::run::run(definition.steps_for(method), entry, &effects).await;
                let end = end_of(&outcome, keep, None);
                if let Err(e) = state.store.finish_execution(execution, &end).await {
                    tracing::error!(workflow.id = workflow.id, error = %e, "an execution's end was not recorded");
                }
            });
            return Ok(Answer {
                status: trigger.response_code,
                reply: lector_workflow::run::started(),
            });
        }
    };
    // A `last_step` run is a task of its own, awaited here: a caller who stops waiting drops
    // this future, not the run, whose steps may have had effects already and which is recorded
    // either way.
    let state = state.clone();
    let address = call.address;
    let run = tokio::spawn(async move {
        let _place = place;
        let effects = ServiceEffects::new(&state, scope, &workflow, hops);
        let outcome = lector_workflow::run::run(definition.steps_for(method), entry, &effects).await;
        let reply = reply_of(&trigger, &outcome);
        let end = end_of(&outcome, keep, reply.as_ref().err().map(|e| e.detail.clone()));
        // The steps have had their effects: a record that cannot be written is logged, and the
        // caller still gets the answer (an error here would have it send the call again).
        if let Err(e) = record(&state, &workflow, address, method, started, end).await {
            tracing::error!(workflow.id = workflow.id, error = %e.detail, "a finished run could not be recorded");
        }
        Ok(Answer {
            status: trigger.response_code,
            reply: reply?,
        })
    });
    run.await.map_err(|e| {
        tracing::error!(error = %e, "a workflow run panicked");
        Error::internal()
    })?
}

/// What a `last_step` run answers: the trigger's reply, or why it could not be made.
fn reply_of(
    trigger: &Trigger,
    outcome: &std::result::Result<lector_workflow::Finished, lector_workflow::Failed>,
) -> Result<Reply> {
    match outcome {
        // The answer's property is missing from what the run made of the call: the call's
        // data does not fit the workflow, as a body lacking a field does not fit a route.
        Ok(finished) => lector_workflow::run::reply(trigger, &finished.entries).map_err(|why| {
            let mut error = Error::new(
                ErrorCode::ValidationFailed,
                format!("the workflow finished, but its answer could not be made: {why}"),
            );
            error.errors.push(lector_core::FieldError::new("property_name", why));
            error
        }),
        Err(failed) => Err(step_error(failed)),
    }
}

/// 503 with `Retry-After` for a call that finds the node's runs all taken.
fn busy(state: &AppState) -> Error {
    Error {
        retry_after: Some(lector_core::error::DEPENDENCY_RETRY_SECS),
        ..Error::unavailable(format!(
            "this server is running as many workflows as it may already ({} in the background, {} \
             answering); retry later",
            state.config.workflows.max_background_runs, state.config.http.max_connections
        ))
    }
}

/// The error a failing step answers: the step's own status (an outbound call's by whose fault
/// it failed: `workflow_effects::call_error`), never a 401 (the caller's credentials were
/// fine), and 409 when what a step names is gone (a 404 would read as an address nobody
/// listens on).
fn step_error(failed: &lector_workflow::Failed) -> Error {
    let code = match failed.error.code {
        ErrorCode::Unauthorized | ErrorCode::InvalidCredentials => ErrorCode::Forbidden,
        ErrorCode::NotFound => ErrorCode::Conflict,
        code => code,
    };
    Error::new(code, failed.message())
}

/// How an execution ended, with its data when kept.
fn end_of(
    outcome: &std::result::Result<lector_workflow::Finished, lector_workflow::Failed>,
    keep: bool,
    answer_error: Option<String>,
) -> ExecutionEnd {
    let (record, error) = match outcome {
        Ok(finished) => (&finished.record, answer_error),
        Err(failed) => (&failed.record, Some(failed.message())),
    };
    ExecutionEnd {
        status: if error.is_some() { "error" } else { "success" },
        error,
        data: keep.then(|| Value::Array(record.clone()).to_string()),
    }
}

/// The scope steps run with, in the workflow's workspace only: the role of who activated the
/// workflow for its production address, of who armed it for its test address. A read-only
/// workspace runs nothing (403 `workspace_read_only`).
async fn run_scope(state: &AppState, workflow: &Workflow, address: Address) -> Result<Scope> {
    let again = match address {
        Address::Production => "activate it",
        Address::Test => "arm its test address",
    };
    let gone = || {
        Error::conflict(format!(
            "the user who put this workflow to work is no longer an active member of its workspace, or the \
             workspace is inactive; an editor must {again} again"
        ))
    };
    let user = match address {
        Address::Production => workflow.run_as,
        Address::Test => workflow.test_run_as.or(workflow.run_as),
    };
    let user = user.ok_or_else(gone)?;
    let (user, mut scope) = state.store.principal(user).await?.ok_or_else(gone)?;
    // A deactivated account acts nowhere, as its own tokens and keys do not.
    if !user.is_active {
        return Err(gone());
    }
    scope.workspaces.retain(|w| w.workspace_id == workflow.workspace_id);
    if scope.workspaces.is_empty() && !scope.is_superuser {
        return Err(gone());
    }
    // The user must still be allowed to work in the workspace (USER or more), and the
    // workspace must be active and take changes.
    let workspace = lector_store::WorkspaceRef::Id(workflow.workspace_id);
    match state.store.workspace_access(&scope, &workspace, Action::Edit).await {
        Ok(_) => {}
        Err(error) if error.code == ErrorCode::WorkspaceReadOnly => {
            return Err(Error::new(
                ErrorCode::WorkspaceReadOnly,
                "the workflow's workspace is read-only and runs no workflow; a member with the role USER may \
                 deactivate it",
            ));
        }
        Err(error) if matches!(error.code, ErrorCode::NotFound | ErrorCode::Forbidden) => {
            return Err(Error::conflict(format!(
                "the workflow cannot run: its workspace is inactive, or the user who put it to work no longer \
                 holds the role USER there; an editor must {again} again"
            )));
        }
        Err(error) => return Err(error),
    }
    if scope.is_superuser {
        // A superuser's workflow still acts as an administrator of its own workspace only.
        scope.is_superuser = false;
        if scope.workspaces.is_empty() {
            scope.workspaces.push(lector_core::policy::WorkspaceAccess {
                workspace_id: workflow.workspace_id,
                role: lector_core::Role::Admin,
            });
        }
    }
    Ok(scope)
}

/// The webhook's entry: headers (without credentials), query, body, and the files.
fn entry_of(
    state: &AppState,
    call: &Incoming,
    received: Received,
    workflow: &Workflow,
    definition: &Definition,
) -> Entry {
    let secret_header = definition.trigger.authentication.name.as_deref().unwrap_or_default();
    let headers: serde_json::Map<String, Value> = call
        .headers
        .iter()
        .filter(|(name, _)| {
            !matches!(name.as_str(), "authorization" | "cookie") && !name.eq_ignore_ascii_case(secret_header)
        })
        .map(|(name, value)| (name.clone(), Value::String(value.clone())))
        .collect();
    let mut entry = Entry::default();
    entry.json.insert("headers".into(), Value::Object(headers));
    entry.json.insert("params".into(), json!({}));
    entry.json.insert("query".into(), Value::Object(call.query.clone()));
    entry.json.insert("body".into(), received.body);
    entry.json.insert(
        "webhook_url".into(),
        Value::String(format!(
            "{}/{}/{}",
            state.config.public_url(),
            call.address.prefix(),
            call.path
        )),
    );
    entry
        .json
        .insert("execution_mode".into(), Value::String(call.address.as_str().into()));
    entry.json.insert("workflow_id".into(), json!(workflow.id));
    entry.binary = received.files.into_iter().collect();
    entry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limiter_counts_per_workflow_and_window() {
        let limiter = WebhookLimiter::default();
        let admitted = Credentials::Admitted;
        assert!(limiter.admit(1, admitted, 2).is_ok());
        assert!(limiter.admit(1, admitted, 2).is_ok());
        let retry = limiter.admit(1, admitted, 2).unwrap_err();
        assert!((1..=60).contains(&retry));
        assert!(
            limiter.admit(2, admitted, 2).is_ok(),
            "another workflow has its own window"
        );
        assert!(
            limiter.admit(1, Credentials::Refused, 2).is_ok(),
            "refused calls count apart from admitted ones"
        );
    }
}
