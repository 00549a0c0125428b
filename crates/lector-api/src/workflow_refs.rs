//! What a workflow's steps name must exist where the workflow runs: a model of its workspace
//! (or, to analyse, a published one) of a type the step takes and that can predict, a member
//! of its workspace to notify, an address the outbound guard reaches to call. Checked when a
//! workflow is created, changed or activated, so that a step that could never run is refused
//! then (422 naming the step's field and what to do), rather than failing every call of a
//! webhook whose callers cannot fix it. A model still training may be saved in a workflow (it
//! will be READY), not activated. A run checks again: what exists now may be gone later. A
//! model an active workflow of its workspace runs is not deleted (409) while it does.
//!
//! The caller's access to the workspace is checked before (`routes/workflows.rs`): these
//! answers tell who its members are.

use crate::state::AppState;
use lector_core::{Action, ErrorCode, FieldError, ModelStatus, ModelType, Result, Scope};
use lector_store::Model;
use lector_workflow::{Definition, Step};

/// Why the references are checked: a workflow saved may name a model that is still training;
/// one activated runs its models from its first call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    Saving,
    Activating,
}

/// 422 naming every step field whose model or user the workflow of `workspace_id` cannot use.
/// The caller may edit the workspace (checked first).
pub async fn check_references(
    state: &AppState,
    scope: &Scope,
    workspace_id: i64,
    definition: &Definition,
    moment: Moment,
) -> Result<()> {
    let by_method = definition
        .steps_by_method
        .iter()
        .map(|(method, steps)| (format!("steps_by_method.{method}"), steps));
    let mut problems = Vec::new();
    for (field, steps) in std::iter::once(("steps".to_owned(), &definition.steps)).chain(by_method) {
        for (index, step) in steps.iter().enumerate() {
            if let Some(problem) = step_problem(state, scope, workspace_id, step, moment).await? {
                problems.push(FieldError::new(format!("{field}[{index}].{}", problem.0), problem.1));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(lector_core::Error::validation(problems))
    }
}

/// The field of `step` that names what the workflow cannot use, and why.
async fn step_problem(
    state: &AppState,
    scope: &Scope,
    workspace_id: i64,
    step: &Step,
    moment: Moment,
) -> Result<Option<(&'static str, String)>> {
    match step {
        Step::Analyze { model_id, .. } | Step::Extract { model_id, .. } => {
            let model = match state.store.model_access(scope, *model_id, Action::Read).await {
                Ok(model) => model,
                Err(e) if e.code == ErrorCode::NotFound => {
                    return Ok(Some(("model_id", "is not a model of the workflow's workspace".into())));
                }
                Err(e) => return Err(e),
            };
            let extract = matches!(step, Step::Extract { .. });
            Ok(model_problem(&model, extract, workspace_id, moment).map(|why| ("model_id", why)))
        }
        Step::Notify { user_id, .. } => {
            let member = is_member(state, *user_id, workspace_id).await?;
            Ok((!member).then(|| ("user_id", "is not a member of the workflow's workspace".to_owned())))
        }
        Step::HttpRequest { url, .. } => Ok(url_problem(state, url).map(|why| ("url", why))),
        Step::Set { .. } => Ok(None),
    }
}

/// Why an `http_request` step's `url` could never be called: written out (no placeholder),
/// it is not an http or https URL with a host, or its host is an address the outbound guard
/// never reaches. A host made from the call's data is judged when it is called.
fn url_problem(state: &AppState, url: &str) -> Option<String> {
    if !url.contains("{{")
        && let Some(why) = lector_sources::Sources::unusable(url)
    {
        return Some(why);
    }
    state.sources.never_reaches(url).then(|| {
        "names a private or reserved address, which this server does not call (sources.allow_private, \
         sources.allowed_networks)"
            .to_owned()
    })
}

/// Why an analyze (or, with `extract`, an extract) step of a workflow of `workspace_id` cannot
/// run `model`: what `analyze_texts` and `extract_file` would refuse on every call (409).
fn model_problem(model: &Model, extract: bool, workspace_id: i64, moment: Moment) -> Option<String> {
    // A published model analyses for anyone; extraction reads the model's own project.
    let usable = model.workspace_id == workspace_id || (model.status == ModelStatus::Published && !extract);
    if !usable {
        return Some("is not a model of the workflow's workspace".into());
    }
    let wanted = if extract {
        model.kind == ModelType::Label
    } else {
        model.kind != ModelType::Base
    };
    if !wanted {
        return Some(format!("is a {} model, which this step cannot use", model.kind));
    }
    if extract && model.project_id.is_none() {
        return Some(
            "is a model of no project, and extraction reads its fields from the model's project: name a LABEL \
             model of a project of the workspace (or upload this one into a project)"
                .into(),
        );
    }
    match model.status {
        ModelStatus::Queued | ModelStatus::Training => (moment == Moment::Activating).then(|| {
            format!(
                "is {} and predicts nothing yet: activate the workflow once the model is READY",
                model.status
            )
        }),
        ModelStatus::Failed => {
            Some("is FAILED (its training failed) and never predicts: train a new model and name it here".into())
        }
        status if !status.predicts() => Some(format!(
            "is {status} and was never trained, so it never predicts: name a READY model"
        )),
        _ if model.artifact_key.is_none() => {
            Some("has no trained artifact and never predicts: train or upload it again and name the new model".into())
        }
        _ => None,
    }
}

/// Whether `user_id` is an active member of `workspace_id` now (what a notify step may notify).
pub(crate) async fn is_member(state: &AppState, user_id: i64, workspace_id: i64) -> Result<bool> {
    Ok(match state.store.principal(user_id).await? {
        Some((user, scope)) => user.is_active && scope.role_in(workspace_id).is_some(),
        None => false,
    })
}

/// 409 when an active workflow of the model's workspace runs `model`: deleting it would fail
/// every call of that workflow's address. (A workflow of another workspace analysing with a
/// published model is not the owner's to see; its runs check the model again.)
pub async fn model_not_in_use(state: &AppState, scope: &Scope, model: &lector_store::Model) -> Result<()> {
    models_not_in_use(state, scope, model.workspace_id, &[model.id], "this model").await
}

/// 409 when an active workflow of the project's workspace runs one of the project's models:
/// deleting the project deletes them, and moving it takes them to another workspace, where the
/// workflow's runs no longer find them.
pub async fn project_models_not_in_use(state: &AppState, scope: &Scope, project_id: i64) -> Result<()> {
    let models = state.store.project_models(scope, project_id).await?;
    let Some(first) = models.first() else {
        return Ok(());
    };
    let ids: Vec<i64> = models.iter().map(|m| m.id).collect();
    models_not_in_use(state, scope, first.workspace_id, &ids, "a model of this project").await
}

async fn models_not_in_use(state: &AppState, scope: &Scope, workspace_id: i64, ids: &[i64], what: &str) -> Result<()> {
    let limit = lector_store::MAX_WORKFLOWS_PER_WORKSPACE;
    let (workflows, _) = state.store.workflows(scope, Some(workspace_id), 0, limit).await?;
    for workflow in workflows.iter().filter(|w| w.active) {
        // A definition that no longer parses cannot run these models either.
        let Ok(definition) = serde_json::from_str::<Definition>(&workflow.definition) else {
            continue;
        };
        if definition
            .all_steps()
            .any(|step| step.model_id().is_some_and(|id| ids.contains(&id)))
        {
            return Err(lector_core::Error::conflict(format!(
                "the active workflow {:?} ({}) runs {what}; deactivate it or change its steps first",
                workflow.name, workflow.id
            )));
        }
    }
    Ok(())
}
