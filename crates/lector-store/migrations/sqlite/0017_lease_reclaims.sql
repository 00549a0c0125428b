-- How many times a lease was taken back from a worker that stopped renewing it (its lease
-- expired) or died, per kind of job: a counter for /metrics that survives restarts and is
-- the same whichever node reports it.
CREATE TABLE job_lease_reclaims (
    kind TEXT PRIMARY KEY,
    reclaims INTEGER NOT NULL DEFAULT 0
);
