-- Nothing changes on SQLite. On PostgreSQL this step checks the foreign keys that imports
-- write for every row (documents -> projects, documents -> document_groups, segments ->
-- documents) once per statement instead of once per row; SQLite checks its foreign keys inside
-- the process, for little cost, and keeps them.
SELECT 1;
