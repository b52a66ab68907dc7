-- PostgreSQL twin of ../0005_receipts.sql: the receipts' HMAC chain and its head.
CREATE TABLE receipts (
    seq         BIGINT PRIMARY KEY,
    incident_id BIGINT NOT NULL,
    created_at  TEXT   NOT NULL,
    body        TEXT   NOT NULL,
    prev_mac    TEXT   NOT NULL,
    mac         TEXT   NOT NULL
);
CREATE INDEX receipts_by_incident ON receipts (incident_id, seq);

CREATE TABLE receipt_chain (
    id       BIGINT PRIMARY KEY CHECK (id = 1),
    count    BIGINT NOT NULL,
    head_mac TEXT   NOT NULL,
    head_tag TEXT   NOT NULL
);
