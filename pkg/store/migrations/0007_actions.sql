-- Actions (pkg/remediation): every executed or handed-over action, with its approval, result and undo,
-- and whether the checks after it verified (the L3 clean-record rule reads this).
CREATE TABLE actions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id  INTEGER NOT NULL REFERENCES approval_requests (id),
    incident_id INTEGER NOT NULL DEFAULT 0,
    class       TEXT    NOT NULL,
    target      TEXT    NOT NULL,
    payload     TEXT    NOT NULL,
    approved_by TEXT    NOT NULL,
    status      TEXT    NOT NULL CHECK (status IN ('succeeded', 'failed', 'owner_steps')),
    started_at  TEXT    NOT NULL,
    finished_at TEXT    NOT NULL,
    result      TEXT    NOT NULL DEFAULT 'null',
    error       TEXT    NOT NULL DEFAULT '',
    undo        TEXT    NOT NULL DEFAULT '{}',
    steps       TEXT    NOT NULL DEFAULT 'null',
    verified    INTEGER,            -- NULL until checked; 1 passed, 0 failed
    verified_at TEXT
);
CREATE INDEX actions_by_incident ON actions (incident_id, id);
CREATE INDEX actions_by_class_target ON actions (class, target);
