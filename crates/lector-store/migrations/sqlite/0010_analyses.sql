-- Batch analyses (create_analysis): the group of documents each reads (texts sent with the
-- request or in a file become documents of the model's project in a group of their own), its
-- job, why it failed, and the tags the model gave each segment with their confidence. Tags keep
-- the names the model gave beside the project's class and label they matched, so a renamed or
-- deleted class does not change what an analysis found.
ALTER TABLE analyses ADD COLUMN document_group_id BIGINT;
ALTER TABLE analyses ADD COLUMN task_id BIGINT;
ALTER TABLE analyses ADD COLUMN failure TEXT;

CREATE TABLE analysis_tags (
    analysis_id BIGINT NOT NULL REFERENCES analyses(id) ON DELETE CASCADE,
    document_id BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    segment_id BIGINT NOT NULL,
    class_id BIGINT REFERENCES classes(id) ON DELETE SET NULL,
    label_id BIGINT REFERENCES labels(id) ON DELETE SET NULL,
    class_name TEXT,
    label_name TEXT,
    confidence REAL NOT NULL
);
CREATE INDEX analysis_tags_document ON analysis_tags(analysis_id, document_id);
CREATE INDEX analysis_tags_class ON analysis_tags(analysis_id, class_id);
CREATE INDEX analysis_tags_label ON analysis_tags(analysis_id, label_id);
