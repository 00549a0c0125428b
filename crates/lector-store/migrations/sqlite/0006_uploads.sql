-- Uploaded files: the bytes live in the blob store under `uploads/{id}`; this row says whose they
-- are and whether anything has used them yet. Unused uploads are swept after a while. No foreign
-- keys on the project or workspace: when a project goes, the sweeper finds its uploads and
-- deletes their blobs too, which a cascade could not do.
CREATE TABLE uploads (
    id TEXT PRIMARY KEY,
    workspace_id BIGINT NOT NULL,
    project_id BIGINT NOT NULL,
    user_id BIGINT,
    file_name TEXT NOT NULL,
    format TEXT NOT NULL,
    byte_size BIGINT NOT NULL,
    -- The file's header row (a JSON array of names), once its preview was read.
    columns TEXT,
    created BIGINT NOT NULL,
    used BIGINT
);
CREATE INDEX uploads_project ON uploads(project_id);
CREATE INDEX uploads_unused ON uploads(created) WHERE used IS NULL;
