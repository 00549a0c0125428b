-- Documents, their segments, and the groups documents arrive in.
CREATE TABLE document_groups (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id BIGINT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    source TEXT NOT NULL,
    status TEXT NOT NULL,
    task_id BIGINT,
    created BIGINT NOT NULL
);
CREATE INDEX document_groups_project ON document_groups(project_id, id);

CREATE TABLE documents (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id BIGINT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    group_id BIGINT REFERENCES document_groups(id) ON DELETE SET NULL,
    -- The document's place in the import that created it: makes re-running an import idempotent.
    group_position BIGINT,
    text TEXT NOT NULL,
    meta TEXT NOT NULL,
    language TEXT NOT NULL,
    created BIGINT NOT NULL,
    UNIQUE (group_id, group_position)
);
CREATE INDEX documents_project ON documents(project_id, id);
CREATE INDEX documents_group ON documents(group_id, id);

CREATE TABLE segments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    document_id BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    position BIGINT NOT NULL,
    span_start BIGINT NOT NULL,
    span_end BIGINT NOT NULL,
    text TEXT NOT NULL,
    UNIQUE (document_id, position)
);
