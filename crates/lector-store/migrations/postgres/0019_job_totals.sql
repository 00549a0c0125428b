-- Jobs that ended, per kind and final state (DONE, FAILED), counted in the transaction that
-- ends each: /metrics reads these rows instead of counting the whole jobs table, which keeps
-- every job ever run, at each scrape. Queued and running jobs are still counted live.
CREATE TABLE job_totals (
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    jobs BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (kind, state)
);
INSERT INTO job_totals (kind, state, jobs)
    SELECT kind, state, COUNT(*) FROM jobs WHERE state IN ('DONE', 'FAILED') GROUP BY kind, state;
