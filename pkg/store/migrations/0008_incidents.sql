-- Incidents (pkg/incidents) extend the table dw-quality opens: a timeline of events, the domain, the
-- recorded diagnosis and cause, and how it was resolved, so "has this feed broken before?" has an answer.
ALTER TABLE incidents ADD COLUMN domain TEXT NOT NULL DEFAULT '';
ALTER TABLE incidents ADD COLUMN cause TEXT NOT NULL DEFAULT '';
ALTER TABLE incidents ADD COLUMN resolution TEXT NOT NULL DEFAULT '';
ALTER TABLE incidents ADD COLUMN diagnosis TEXT NOT NULL DEFAULT '';
ALTER TABLE incidents ADD COLUMN occurrences INTEGER NOT NULL DEFAULT 1;

CREATE TABLE incident_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    incident_id INTEGER NOT NULL REFERENCES incidents (id),
    at          TEXT    NOT NULL,
    kind        TEXT    NOT NULL,  -- opened, joined, status, diagnosed, proposed, approved, action, verified, note
    actor       TEXT    NOT NULL,
    detail      TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX incident_events_by_incident ON incident_events (incident_id, id);
