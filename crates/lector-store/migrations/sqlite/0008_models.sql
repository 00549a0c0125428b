-- Models: trained (or uploaded) classifiers of a workspace, most of them of one project. The
-- artifact lives in the blob store under `artifact_key`; `version` grows whenever it changes, so
-- nodes that cache loaded models know when to load again.
CREATE TABLE models (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid TEXT NOT NULL UNIQUE,
    workspace_id BIGINT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    project_id BIGINT REFERENCES projects(id) ON DELETE CASCADE,
    user_id BIGINT REFERENCES users(id) ON DELETE SET NULL,
    name TEXT NOT NULL,
    display_name TEXT NOT NULL,
    short_description TEXT NOT NULL DEFAULT '',
    long_description TEXT NOT NULL DEFAULT '',
    type TEXT NOT NULL,
    status TEXT NOT NULL,
    progress REAL NOT NULL DEFAULT 0,
    score REAL,
    -- JSON: the evaluation on the test side, and a few test documents with predictions.
    metrics TEXT,
    demoset TEXT,
    -- JSON arrays of names, as the model knows them.
    classes TEXT NOT NULL DEFAULT '[]',
    labels TEXT NOT NULL DEFAULT '[]',
    base_id BIGINT REFERENCES models(id) ON DELETE SET NULL,
    language TEXT NOT NULL,
    artifact_key TEXT,
    version BIGINT NOT NULL DEFAULT 0,
    collection_id BIGINT,
    task_id BIGINT,
    failure TEXT,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL,
    finished BIGINT,
    UNIQUE (workspace_id, name)
);
CREATE INDEX models_project ON models(project_id, id);
CREATE INDEX models_status ON models(status, id);

-- Which users starred which models (the `starred` filter of list_models).
CREATE TABLE model_stars (
    model_id BIGINT NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created BIGINT NOT NULL,
    PRIMARY KEY (model_id, user_id)
);
CREATE INDEX model_stars_user ON model_stars(user_id, model_id);
