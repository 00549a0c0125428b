-- When a worker first handed the job back because it could not run it (its kind unknown, its
-- payload a newer Lector's, or what it needs not installed there); NULL while no worker has.
-- A job fails for want of a worker an hour after this, not an hour after it was queued
-- (job_claims.rs).
ALTER TABLE jobs ADD COLUMN unrunnable_since BIGINT;
