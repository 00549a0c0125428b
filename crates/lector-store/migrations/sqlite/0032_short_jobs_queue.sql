-- The queue of mails and webhook posts alone: every runner keeps a loop that claims only those
-- (job_claims.rs, claim_short_job) and polls for them while the other loops run long jobs.
-- Without it each poll read every runnable job, thousands of queued imports included, to find
-- none of its kinds. The kinds are written out as the claim writes them, so that the planner
-- can use the index.
CREATE INDEX jobs_short_queue ON jobs(run_after, id)
    WHERE state = 'QUEUED' AND kind IN ('send_mail', 'send_password_reset', 'deliver_webhook');
