-- A workspace's trainings, analyses, corrections and clones waiting or running are counted
-- before another is queued (jobs::room_for_work).
CREATE INDEX jobs_workspace_state ON jobs(workspace_id, state);
