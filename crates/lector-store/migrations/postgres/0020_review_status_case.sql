-- HITL review statuses are upper case (PENDING, APPROVED, REJECTED), as SPEC shows a review's
-- status and as every other status of the service is spelled; reviews written before were
-- lower case.
UPDATE hitl_reviews SET status = UPPER(status) WHERE status <> UPPER(status);
