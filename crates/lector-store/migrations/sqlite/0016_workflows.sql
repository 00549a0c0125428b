-- Workflows: a webhook trigger and ordered steps (definition: JSON, lector-workflow's
-- Definition without its secret), owned by a workspace. auth_digest is the salted digest of
-- the trigger's header value or basic password. run_as is the user who last activated the
-- workflow or armed its test address: its steps run with that user's role in the workspace.
CREATE TABLE workflows (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id BIGINT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    definition TEXT NOT NULL,
    auth_digest TEXT,
    keep_data INTEGER NOT NULL DEFAULT 0,
    active INTEGER NOT NULL DEFAULT 0,
    run_as BIGINT REFERENCES users(id) ON DELETE SET NULL,
    created_by BIGINT REFERENCES users(id) ON DELETE SET NULL,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL
);
CREATE INDEX workflows_workspace ON workflows(workspace_id, id);

-- One registration per path and method across the installation. A row is held by one
-- workflow: for its production address while it is active, and for its test address until
-- test_until (one call). Another workflow may take the row only when neither holds.
CREATE TABLE webhook_registrations (
    method TEXT NOT NULL,
    path TEXT NOT NULL,
    workflow_id BIGINT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
    production INTEGER NOT NULL DEFAULT 0,
    test_until BIGINT,
    PRIMARY KEY (method, path)
);
CREATE INDEX webhook_registrations_workflow ON webhook_registrations(workflow_id);
CREATE INDEX webhook_registrations_path ON webhook_registrations(path);

-- What happened when a webhook was called: status running, success or error; data (the
-- entries each step made) for test executions, and for production ones when the workflow
-- keeps them.
CREATE TABLE workflow_executions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id BIGINT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
    mode TEXT NOT NULL,
    method TEXT NOT NULL,
    status TEXT NOT NULL,
    started BIGINT NOT NULL,
    finished BIGINT,
    error TEXT,
    data TEXT
);
CREATE INDEX workflow_executions_workflow ON workflow_executions(workflow_id, id);
