-- A project being filled by its clone job is CLONING, the value the original client's Project
-- status enum has for it (CREATED, CLONING, DELETED, FAILED); such projects were written
-- PROCESSING, which the client refuses when it reads the project.
UPDATE projects SET status = 'CLONING' WHERE status = 'PROCESSING';
