-- BASE models (sentence encoders shipped with the service) belong to one system workspace,
-- which has no members: its PUBLISHED models are read by every user, nothing else of it by
-- anyone but a superuser. At most one workspace is the system workspace.
ALTER TABLE workspaces ADD COLUMN is_system BOOLEAN NOT NULL DEFAULT FALSE;
CREATE UNIQUE INDEX workspaces_one_system ON workspaces(is_system) WHERE is_system;
