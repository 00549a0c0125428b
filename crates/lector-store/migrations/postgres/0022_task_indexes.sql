-- Finished jobs are pruned after `finished_jobs_kept_secs`, except a job that a group, a model
-- or an analysis still names as its task (`get_project_task` follows it). These indexes let the
-- pruning ask that of each job without reading those tables whole.
CREATE INDEX document_groups_task ON document_groups(task_id);
CREATE INDEX models_task ON models(task_id);
CREATE INDEX analyses_task ON analyses(task_id);
-- The pruning reads ended jobs by when they ended.
CREATE INDEX jobs_finished ON jobs(finished) WHERE finished IS NOT NULL;
