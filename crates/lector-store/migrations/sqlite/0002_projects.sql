-- Projects with their classes and labels.
CREATE TABLE projects (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id BIGINT NOT NULL REFERENCES workspaces(id),
    name TEXT NOT NULL,
    type TEXT NOT NULL,
    status TEXT NOT NULL,
    external_id BIGINT,
    created BIGINT NOT NULL,
    UNIQUE (workspace_id, name)
);

CREATE TABLE classes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id BIGINT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    example TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    created BIGINT NOT NULL,
    UNIQUE (project_id, name)
);

CREATE TABLE labels (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id BIGINT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    created BIGINT NOT NULL,
    UNIQUE (project_id, name)
);
