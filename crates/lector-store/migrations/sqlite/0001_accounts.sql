-- Accounts, workspaces, memberships, tokens, rate limits and notifications.
-- Timestamps are microseconds since the Unix epoch (UTC).
-- Flags are INTEGER 0/1 here (sqlx's Any driver cannot decode SQLite BOOLEAN); BOOLEAN on PostgreSQL.
CREATE TABLE workspaces (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT '',
    created BIGINT NOT NULL,
    is_beta INTEGER NOT NULL DEFAULT 0,
    is_read_only INTEGER NOT NULL DEFAULT 0,
    is_active INTEGER NOT NULL DEFAULT 1
);

CREATE TABLE users (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    email TEXT NOT NULL UNIQUE,
    first_name TEXT NOT NULL DEFAULT '',
    last_name TEXT NOT NULL DEFAULT '',
    password_hash TEXT,
    is_superuser INTEGER NOT NULL DEFAULT 0,
    is_betauser INTEGER NOT NULL DEFAULT 0,
    is_active INTEGER NOT NULL DEFAULT 1,
    token_version BIGINT NOT NULL DEFAULT 0,
    personal_workspace_id BIGINT REFERENCES workspaces(id),
    default_workspace_id BIGINT REFERENCES workspaces(id),
    created BIGINT NOT NULL
);

CREATE TABLE memberships (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id BIGINT NOT NULL REFERENCES workspaces(id),
    user_id BIGINT NOT NULL REFERENCES users(id),
    role TEXT NOT NULL,
    created BIGINT NOT NULL,
    UNIQUE (workspace_id, user_id)
);
CREATE INDEX memberships_user ON memberships(user_id);

CREATE TABLE invitations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id BIGINT NOT NULL REFERENCES workspaces(id),
    email TEXT NOT NULL,
    role TEXT NOT NULL,
    invited_by_id BIGINT NOT NULL REFERENCES users(id),
    token_hash TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL,
    created BIGINT NOT NULL,
    expires BIGINT NOT NULL
);
CREATE INDEX invitations_workspace ON invitations(workspace_id, status);

CREATE TABLE one_time_tokens (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT NOT NULL REFERENCES users(id),
    purpose TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created BIGINT NOT NULL,
    expires BIGINT NOT NULL,
    used BIGINT
);

CREATE TABLE product_keys (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT NOT NULL REFERENCES users(id),
    name TEXT NOT NULL,
    prefix TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created BIGINT NOT NULL
);
CREATE INDEX product_keys_user ON product_keys(user_id);

CREATE TABLE revoked_tokens (
    jti TEXT PRIMARY KEY,
    expires BIGINT NOT NULL
);

CREATE TABLE rate_limits (
    key TEXT PRIMARY KEY,
    window_start BIGINT NOT NULL,
    count BIGINT NOT NULL
);

CREATE TABLE notifications (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id BIGINT NOT NULL REFERENCES users(id),
    type TEXT NOT NULL,
    title TEXT NOT NULL,
    text TEXT NOT NULL,
    created BIGINT NOT NULL,
    read BIGINT
);
CREATE INDEX notifications_user ON notifications(user_id, id);
