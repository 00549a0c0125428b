//! What a workflow's steps name must exist where the workflow runs: a model of its workspace
//! (or, to analyse, a published one) of a type the step takes, a member of its workspace to
//! notify. Checked when a workflow is created, changed or activated, so that a step that could
//! never run is refused then (422 naming the step's field), rather than failing every call of a
//! webhook whose callers cannot fix it. A run checks again: what exists now may be gone later.
//! A model an active workflow of its workspace runs is not deleted (409) while it does.

use crate::state::AppState;
use lector_core::{Action, ErrorCode, FieldError, ModelStatus, ModelType, Result, Scope};
use lector_workflow::{Definition, Step};

/// 422 naming every step field whose model or user the workflow of `workspace_id` cannot use.
pub async fn check_references(
    state: &AppState,
    scope: &Scope,
    workspace_id: i64,
    definition: &Definition,
) -> Result<()> {
    let by_method = definition
        .steps_by_method
        .iter()
        .map(|(method, steps)| (format!("steps_by_method.{method}"), steps));
    let mut problems = Vec::new();
    for (field, steps) in std::iter::once(("steps".to_owned(), &definition.steps)).chain(by_method) {
        for (index, step) in steps.iter().enumerate() {
            if let Some(problem) = step_problem(state, scope, workspace_id, step).await? {
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
            // A published model analyses for anyone; extraction reads the model's own project.
            let usable = model.workspace_id == workspace_id
                || (model.status == ModelStatus::Published && matches!(step, Step::Analyze { .. }));
            let wanted = match step {
                Step::Extract { .. } => model.kind == ModelType::Label,
                _ => model.kind != ModelType::Base,
            };
            Ok(if !usable {
                Some(("model_id", "is not a model of the workflow's workspace".into()))
            } else if !wanted {
                Some((
                    "model_id",
                    format!("is a {} model, which this step cannot use", model.kind),
                ))
            } else {
                None
            })
        }
        Step::Notify { user_id, .. } => {
            let member = is_member(state, *user_id, workspace_id).await?;
            Ok((!member).then(|| ("user_id", "is not a member of the workflow's workspace".to_owned())))
        }
        Step::HttpRequest { .. } | Step::Set { .. } => Ok(None),
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
