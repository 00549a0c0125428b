-- The durable job queue: leases with heartbeats, and a fencing token that grows with every
-- claim so that a worker whose lease was taken over can no longer commit.
CREATE TABLE jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    state TEXT NOT NULL,
    workspace_id BIGINT REFERENCES workspaces(id),
    project_id BIGINT,
    user_id BIGINT REFERENCES users(id),
    attempts BIGINT NOT NULL DEFAULT 0,
    max_attempts BIGINT NOT NULL,
    lease_owner TEXT,
    lease_expires BIGINT,
    fencing_token BIGINT NOT NULL DEFAULT 0,
    progress REAL NOT NULL DEFAULT 0,
    result TEXT,
    error TEXT,
    run_after BIGINT NOT NULL,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL,
    finished BIGINT
);
CREATE INDEX jobs_queue ON jobs(state, run_after, id);
CREATE INDEX jobs_project ON jobs(project_id);

-- A job's input, kept apart so that the frequent updates of a job's row (heartbeats,
-- progress) never rewrite a large payload.
CREATE TABLE job_inputs (
    job_id BIGINT PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
    input TEXT NOT NULL
);
