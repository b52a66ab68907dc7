-- Remediation plans (pkg/plans): the ordered proposals propose_remediation produced or accepted for an
-- incident, with the checks that must pass before the incident is resolved. A plan is immutable once
-- stored; a new proposal run stores a new plan and the latest one is the one that counts.
CREATE TABLE remediation_plans (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    incident_id INTEGER NOT NULL REFERENCES incidents (id),
    created_at  TEXT    NOT NULL,
    created_by  TEXT    NOT NULL,
    plan        TEXT    NOT NULL   -- JSON of plans.Plan
);
CREATE INDEX remediation_plans_by_incident ON remediation_plans (incident_id, id);
