-- Lookups for limits and for deleting a model.
--
-- Extractions count a configuration's waiting reviews before they add one (at most
-- MAX_PENDING_REVIEWS_PER_HITL): an index that finds them without reading its submitted ones.
CREATE INDEX hitl_reviews_waiting ON hitl_reviews(hitl_id, status);

-- delete_model looks for the analyses and correction sessions that work with the model.
CREATE INDEX analyses_model ON analyses(model_id, status);
CREATE INDEX sessions_model ON sessions(model_id, status);
