-- Whose role a workflow's test call runs with: who armed its test address. The production
-- address keeps running with the role of who activated it (run_as), so arming a test no
-- longer changes the production runs. Until an address is armed again after this migration,
-- a test call runs as run_as, as before.
ALTER TABLE workflows ADD COLUMN test_run_as BIGINT REFERENCES users(id) ON DELETE SET NULL;
