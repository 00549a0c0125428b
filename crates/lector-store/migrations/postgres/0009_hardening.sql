-- Hardening (issue 12): who made a workspace read-only. A flag a superuser set is lifted by a
-- superuser only; an ADMIN's own flag the ADMIN may lift.
ALTER TABLE workspaces ADD COLUMN read_only_by_superuser BOOLEAN NOT NULL DEFAULT FALSE;
