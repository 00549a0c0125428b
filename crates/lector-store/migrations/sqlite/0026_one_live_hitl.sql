-- A model's extractions are judged by one live HITL configuration. The newest live one was the
-- one used; the older live configurations of the same model stop being live, and an index
-- keeps one live configuration per model from now on.
UPDATE hitls SET is_live = 0
WHERE is_live = 1 AND model_id IS NOT NULL
  AND id NOT IN (SELECT MAX(id) FROM hitls WHERE is_live = 1 AND model_id IS NOT NULL GROUP BY model_id);
CREATE UNIQUE INDEX hitls_one_live_per_model ON hitls(model_id) WHERE is_live = 1;
