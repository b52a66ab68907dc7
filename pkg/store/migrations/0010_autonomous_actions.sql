-- Actions (pkg/remediation) that ran at L3 without a new approval: request_id becomes optional, and
-- each action says on what authority it ran (a named approval, or the L3 clean-record rule with the
-- record it relied on), the SHA-256 of the payload it dispatched, and the plan step it carried out.
-- An action is claimed as 'running' before it is dispatched and finished afterwards; the unique
-- indexes below make a claim exclusive, so an approval or a plan step is dispatched once even when
-- two processes race. SQLite cannot relax NOT NULL in place, so the table is rebuilt; nothing
-- references actions, the copy keeps every id and the id counter (sqlite_sequence) carries over, so
-- an id is never reused. Existing rows get the payload hash of the approval they ran on.
CREATE TABLE actions_v2 (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id     INTEGER REFERENCES approval_requests (id),
    incident_id    INTEGER NOT NULL DEFAULT 0,
    class          TEXT    NOT NULL,
    target         TEXT    NOT NULL,
    payload        TEXT    NOT NULL,
    approved_by    TEXT    NOT NULL,
    status         TEXT    NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'owner_steps')),
    started_at     TEXT    NOT NULL,
    finished_at    TEXT    NOT NULL,   -- the start while running
    result         TEXT    NOT NULL DEFAULT 'null',
    error          TEXT    NOT NULL DEFAULT '',
    undo           TEXT    NOT NULL DEFAULT '{}',
    steps          TEXT    NOT NULL DEFAULT 'null',
    verified       INTEGER,            -- NULL until checked; 1 passed, 0 failed
    verified_at    TEXT,
    authority      TEXT    NOT NULL DEFAULT 'approval' CHECK (authority IN ('approval', 'l3_clean_record')),
    rule           TEXT    NOT NULL DEFAULT '',      -- for l3_clean_record: the rule and the record it relied on
    record         TEXT    NOT NULL DEFAULT '[]',    -- JSON ids of the approved, verified actions relied on
    payload_sha256 TEXT    NOT NULL DEFAULT '',
    plan_id        INTEGER,
    plan_order     INTEGER,
    CHECK (authority = 'approval' AND request_id IS NOT NULL OR authority = 'l3_clean_record' AND plan_id IS NOT NULL)
);
INSERT INTO actions_v2 (id, request_id, incident_id, class, target, payload, approved_by, status, started_at, finished_at,
    result, error, undo, steps, verified, verified_at, payload_sha256)
SELECT a.id, a.request_id, a.incident_id, a.class, a.target, a.payload, a.approved_by, a.status, a.started_at, a.finished_at,
    a.result, a.error, a.undo, a.steps, a.verified, a.verified_at,
    COALESCE((SELECT r.payload_sha256 FROM approval_requests r WHERE r.id = a.request_id), '')
FROM actions a;
-- Carry the id counter over: ids of deleted rows above the highest kept one stay used.
INSERT INTO sqlite_sequence (name, seq)
SELECT 'actions_v2', 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'actions_v2');
UPDATE sqlite_sequence
SET seq = MAX(seq, COALESCE((SELECT s.seq FROM sqlite_sequence s WHERE s.name = 'actions'), 0))
WHERE name = 'actions_v2';
DROP TABLE actions;
ALTER TABLE actions_v2 RENAME TO actions;
CREATE INDEX actions_by_incident ON actions (incident_id, id);
-- The clean-record rule reads class and target case-insensitively (as config.DomainFor matches).
CREATE INDEX actions_by_class_target ON actions (class, target COLLATE NOCASE);
CREATE UNIQUE INDEX actions_plan_step_once ON actions (plan_id, plan_order)
    WHERE authority = 'l3_clean_record' AND status IN ('running', 'succeeded');
CREATE UNIQUE INDEX actions_request_once ON actions (request_id)
    WHERE status IN ('running', 'succeeded', 'owner_steps');
