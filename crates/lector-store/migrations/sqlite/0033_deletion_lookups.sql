-- Deleting documents (a failed import takes what it stored with it, a project's deletion, a
-- document's) finds what names them: an analysis's tags by document, a correction's
-- predictions by segment. Their only indexes led with the analysis and the session, so each
-- deleted document scanned the whole table.
CREATE INDEX analysis_tags_by_document ON analysis_tags(document_id);
CREATE INDEX correction_predictions_by_segment ON correction_predictions(segment_id);
