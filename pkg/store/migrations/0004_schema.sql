-- Registered schema versions as dw-schema has seen them. Schema Registry keeps no timestamps, so
-- first_seen (when any agent first listed the version) is the only "when was this registered" we
-- have; last_seen and deleted track soft deletes seen later. Keyed by subject and version; id is
-- the registry's global schema id (shared by subjects that registered the same schema).
CREATE TABLE schema_versions (
    subject     TEXT    NOT NULL,
    version     INTEGER NOT NULL,
    id          INTEGER NOT NULL,
    schema_type TEXT    NOT NULL CHECK (schema_type IN ('AVRO', 'PROTOBUF', 'JSON')),
    fingerprint TEXT    NOT NULL,
    first_seen  TEXT    NOT NULL,
    last_seen   TEXT    NOT NULL,
    deleted     INTEGER NOT NULL DEFAULT 0,
    schema      TEXT    NOT NULL,
    PRIMARY KEY (subject, version)
);
CREATE INDEX schema_versions_by_id ON schema_versions (id);
