-- A workspace's and a user's trainings, analyses, corrections and clones waiting or running
-- are counted before another is queued (workspace_work.rs).
CREATE INDEX jobs_workspace_state ON jobs(workspace_id, state);
CREATE INDEX jobs_user_state ON jobs(user_id, state);
