//! Path parameters that the routes of several resources share, declared once so that a
//! `{project_id}`, a group of a project or an `{organization}` is read the same way everywhere.

use lector_store::WorkspaceRef;
use serde::Deserialize;

/// `/projects/{project_id}/…`
#[derive(Debug, Deserialize)]
pub struct ProjectPath {
    pub project_id: i64,
}

/// `/projects/{project_id}/groups/{group_id}…`
#[derive(Debug, Deserialize)]
pub struct GroupPath {
    pub project_id: i64,
    pub group_id: i64,
}

/// `/organizations/{organization}/…`: a workspace by id or by name.
#[derive(Debug, Deserialize)]
pub struct OrgPath {
    pub organization: String,
}

impl OrgPath {
    /// The workspace the path names.
    pub fn workspace(&self) -> WorkspaceRef {
        WorkspaceRef::parse(&self.organization)
    }
}
