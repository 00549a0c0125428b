-- Human review of extractions (HITL). A configuration ties a project's extraction model to the
-- user who reviews, its field settings (labels: JSON {field: {required, confidence_threshold,
-- data_type}}) and the address review events are posted to. A review is created when a live
-- configuration's model extracts with a required field missing or a confidence under its
-- threshold; it keeps what was extracted and, once submitted, the corrected values. Review
-- events are posted to webhook_url signed with webhook_secret (HMAC-SHA256).
CREATE TABLE hitls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id BIGINT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    assigned_user_id BIGINT REFERENCES users(id) ON DELETE SET NULL,
    model_id BIGINT REFERENCES models(id) ON DELETE SET NULL,
    is_live INTEGER NOT NULL DEFAULT 0,
    webhook_url TEXT,
    webhook_secret TEXT NOT NULL,
    labels TEXT NOT NULL DEFAULT '{}',
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL
);
CREATE INDEX hitls_project ON hitls(project_id);
CREATE INDEX hitls_model ON hitls(model_id);

CREATE TABLE hitl_reviews (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    hitl_id BIGINT NOT NULL REFERENCES hitls(id) ON DELETE CASCADE,
    user_id BIGINT REFERENCES users(id) ON DELETE SET NULL,
    document_name TEXT NOT NULL,
    page_num INTEGER NOT NULL,
    status TEXT NOT NULL,
    label TEXT,
    confidence_threshold REAL,
    extracted TEXT NOT NULL,
    corrected TEXT,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL
);
CREATE INDEX hitl_reviews_hitl ON hitl_reviews(hitl_id, id);
