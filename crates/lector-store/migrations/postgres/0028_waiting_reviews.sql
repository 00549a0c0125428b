-- Extractions count a configuration's waiting reviews before they add one (at most
-- MAX_PENDING_REVIEWS_PER_HITL): an index that finds them without reading its submitted ones.
CREATE INDEX hitl_reviews_waiting ON hitl_reviews(hitl_id, status);
