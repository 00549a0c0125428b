-- Correction sessions: a model's predictions on a sample of documents, corrected by people.
-- The documents keep the order they were chosen in (least sure first); a tag the model gave
-- keeps its confidence and a status (CORRECTING until a person confirms it READY); what the
-- model predicted is kept apart, so the agreement of the corrections with it can be measured.
ALTER TABLE session_documents ADD COLUMN position BIGINT;
ALTER TABLE segment_tags ADD COLUMN confidence DOUBLE PRECISION;
ALTER TABLE segment_tags ADD COLUMN status TEXT;

CREATE TABLE correction_predictions (
    session_id BIGINT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    segment_id BIGINT NOT NULL,
    class_name TEXT,
    label_name TEXT,
    confidence DOUBLE PRECISION NOT NULL
);
CREATE INDEX correction_predictions_segment ON correction_predictions(session_id, segment_id);
