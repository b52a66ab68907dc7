-- The audit log of tool calls: which agent ran which tool, when, how it ended and how long it took.
-- Arguments are kept as a SHA-256 only: the log proves what was asked without copying payloads.
CREATE TABLE tool_calls (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          TEXT    NOT NULL,
    agent       TEXT    NOT NULL,
    tool        TEXT    NOT NULL,
    outcome     TEXT    NOT NULL CHECK (outcome IN ('ok', 'tool_error')),
    duration_ms REAL    NOT NULL,
    args_sha256 TEXT    NOT NULL,
    error       TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX tool_calls_by_tool ON tool_calls (tool, at);
