-- A session's progress comes from three counts: its documents, their segments, and the
-- segments marked annotated. Counted on every read of a session, they made listing a project's
-- sessions over 60,000 documents take seconds, and every tag or mark read them twice. They are
-- kept on the session's row instead, written in the transactions that change them (see
-- lector-store's session_counts.rs).
ALTER TABLE sessions ADD COLUMN document_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN segment_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN annotated_count BIGINT NOT NULL DEFAULT 0;
UPDATE sessions SET
    document_count = (SELECT COUNT(*) FROM session_documents sd WHERE sd.session_id = sessions.id),
    segment_count = (SELECT COUNT(*) FROM session_documents sd JOIN segments g ON g.document_id = sd.document_id
                     WHERE sd.session_id = sessions.id),
    annotated_count = (SELECT COUNT(*) FROM segment_statuses st WHERE st.session_id = sessions.id);
