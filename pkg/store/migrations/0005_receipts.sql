-- Receipts (pkg/receipts): an HMAC chain. Each receipt's MAC covers its sequence number, incident,
-- time, body and the previous MAC; receipt_chain holds the head and a MAC of the head, so edits,
-- removals, reordering and truncation are all detected by verify_receipts.
CREATE TABLE receipts (
    seq         INTEGER PRIMARY KEY,
    incident_id INTEGER NOT NULL,
    created_at  TEXT    NOT NULL,
    body        TEXT    NOT NULL,
    prev_mac    TEXT    NOT NULL,
    mac         TEXT    NOT NULL
);
CREATE INDEX receipts_by_incident ON receipts (incident_id, seq);

CREATE TABLE receipt_chain (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    count    INTEGER NOT NULL,
    head_mac TEXT    NOT NULL,
    head_tag TEXT    NOT NULL
);
