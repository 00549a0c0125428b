-- Labeling (and later correction) sessions: which documents they cover, the classes and labels
-- they offer, the tags annotators put on segments, and which segments are marked annotated.
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid TEXT NOT NULL UNIQUE,
    project_id BIGINT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    mode TEXT NOT NULL,
    status TEXT NOT NULL,
    document_group_id BIGINT REFERENCES document_groups(id) ON DELETE SET NULL,
    model_id BIGINT,
    created BIGINT NOT NULL,
    finished BIGINT
);
CREATE INDEX sessions_project ON sessions(project_id, id);

CREATE TABLE session_documents (
    session_id BIGINT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    document_id BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    PRIMARY KEY (session_id, document_id)
);
CREATE INDEX session_documents_document ON session_documents(document_id);

CREATE TABLE session_classes (
    session_id BIGINT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    class_id BIGINT NOT NULL REFERENCES classes(id) ON DELETE CASCADE,
    PRIMARY KEY (session_id, class_id)
);

CREATE TABLE session_labels (
    session_id BIGINT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    label_id BIGINT NOT NULL REFERENCES labels(id) ON DELETE CASCADE,
    PRIMARY KEY (session_id, label_id)
);

CREATE TABLE segment_tags (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id BIGINT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    segment_id BIGINT NOT NULL REFERENCES segments(id) ON DELETE CASCADE,
    class_id BIGINT REFERENCES classes(id) ON DELETE CASCADE,
    label_id BIGINT REFERENCES labels(id) ON DELETE CASCADE,
    -- An optional part of the segment the tag points at (an aspect term), in code points of
    -- the document text.
    span_start BIGINT,
    span_end BIGINT,
    text TEXT,
    user_id BIGINT,
    created BIGINT NOT NULL
);
CREATE INDEX segment_tags_segment ON segment_tags(segment_id, session_id);
CREATE INDEX segment_tags_session ON segment_tags(session_id, segment_id);

CREATE TABLE segment_statuses (
    session_id BIGINT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    segment_id BIGINT NOT NULL REFERENCES segments(id) ON DELETE CASCADE,
    document_id BIGINT NOT NULL,
    name TEXT NOT NULL,
    user_id BIGINT,
    created BIGINT NOT NULL,
    PRIMARY KEY (session_id, segment_id)
);
CREATE INDEX segment_statuses_segment ON segment_statuses(segment_id);

-- Cloning a project copies rows into a new project; each copy remembers its original, so the
-- copies of rows that refer to each other can be joined up with plain INSERT ... SELECT.
ALTER TABLE document_groups ADD COLUMN cloned_from BIGINT;
ALTER TABLE documents ADD COLUMN cloned_from BIGINT;
ALTER TABLE sessions ADD COLUMN cloned_from BIGINT;
CREATE INDEX documents_cloned_from ON documents(cloned_from);
CREATE INDEX document_groups_cloned_from ON document_groups(cloned_from);
CREATE INDEX sessions_cloned_from ON sessions(cloned_from);

-- Analyses: a model's predictions over documents of its project. Written by the analysis job
-- (a later step); documents are filtered by the analyses that cover them.
CREATE TABLE analyses (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid TEXT NOT NULL UNIQUE,
    project_id BIGINT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    model_id BIGINT,
    user_id BIGINT,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    type TEXT NOT NULL,
    progress REAL NOT NULL DEFAULT 0,
    created BIGINT NOT NULL,
    finished BIGINT
);
CREATE INDEX analyses_project ON analyses(project_id, id);

CREATE TABLE analysis_documents (
    analysis_id BIGINT NOT NULL REFERENCES analyses(id) ON DELETE CASCADE,
    document_id BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    PRIMARY KEY (analysis_id, document_id)
);
CREATE INDEX analysis_documents_document ON analysis_documents(document_id);

-- The sentence rules a project's documents are split by, unless a request names others.
ALTER TABLE projects ADD COLUMN language TEXT NOT NULL DEFAULT 'en';
