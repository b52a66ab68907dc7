-- PostgreSQL twin of ../0004_schema.sql: registered schema versions as dw-schema has seen them.
CREATE TABLE schema_versions (
    subject     TEXT    NOT NULL,
    version     BIGINT  NOT NULL,
    id          BIGINT  NOT NULL,
    schema_type TEXT    NOT NULL CHECK (schema_type IN ('AVRO', 'PROTOBUF', 'JSON')),
    fingerprint TEXT    NOT NULL,
    first_seen  TEXT    NOT NULL,
    last_seen   TEXT    NOT NULL,
    deleted     INTEGER NOT NULL DEFAULT 0,
    schema      TEXT    NOT NULL,
    PRIMARY KEY (subject, version)
);
CREATE INDEX schema_versions_by_id ON schema_versions (id);
