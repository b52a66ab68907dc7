-- Approvals (pkg/approvals): every change goes through a named person. A request carries the exact
-- payload that would run and its SHA-256; a decision names that hash, and execution re-checks it,
-- so any edit voids the approval. Nothing here is ever granted without a decision by a named,
-- authenticated approver.
CREATE TABLE approval_requests (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    incident_id      INTEGER,
    class            TEXT    NOT NULL,
    target           TEXT    NOT NULL,
    title            TEXT    NOT NULL,
    payload          TEXT    NOT NULL,
    payload_sha256   TEXT    NOT NULL,
    domain           TEXT    NOT NULL,
    approvers        TEXT    NOT NULL,  -- JSON array: who may decide now (grows on escalation)
    copied           TEXT    NOT NULL,  -- JSON array: told, cannot decide
    escalation       TEXT    NOT NULL,  -- JSON array: who is next when the request expires
    escalation_level INTEGER NOT NULL DEFAULT 0,
    requested_by     TEXT    NOT NULL,
    requested_at     TEXT    NOT NULL,
    expires_at       TEXT    NOT NULL,
    status           TEXT    NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
    decided_by       TEXT    NOT NULL DEFAULT '',
    decided_at       TEXT    NOT NULL DEFAULT '',
    comment          TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX approval_requests_by_status ON approval_requests (status, expires_at);
CREATE INDEX approval_requests_by_incident ON approval_requests (incident_id);

CREATE TABLE approval_events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id INTEGER NOT NULL REFERENCES approval_requests (id),
    at         TEXT    NOT NULL,
    kind       TEXT    NOT NULL,  -- requested, notified, notify_failed, escalated, expired, approved, rejected, refused
    actor      TEXT    NOT NULL,
    detail     TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX approval_events_by_request ON approval_events (request_id, id);

-- Org-wide switches only a named, authenticated person can flip (key 'org_stop').
CREATE TABLE policy_state (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_by TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    reason     TEXT NOT NULL DEFAULT ''
);
