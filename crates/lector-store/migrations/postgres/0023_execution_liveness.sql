-- A background run of a workflow (an "immediately" webhook) is recorded as running before its
-- steps run. Its node renews `alive_until` while the run lasts, so a run whose node is gone
-- (killed, lost) can be told from one that is still going on another node: once
-- `alive_until` has passed, any node records it as an error. Rows written before this step
-- have none; their start stands in for it.
ALTER TABLE workflow_executions ADD COLUMN alive_until BIGINT;
-- The sweep reads the running executions only.
CREATE INDEX workflow_executions_running ON workflow_executions(alive_until) WHERE status = 'running';
