-- Credentials of external sources: one workspace's, its secret sealed by the service's key.
CREATE TABLE credentials (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id BIGINT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('http', 'postgres', 's3')),
    sealed_secret TEXT NOT NULL,
    created BIGINT NOT NULL,
    created_by BIGINT REFERENCES users(id) ON DELETE SET NULL,
    UNIQUE (workspace_id, name)
);
