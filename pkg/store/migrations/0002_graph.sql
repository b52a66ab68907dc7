-- The context graph (pkg/graph). An asset is identified by its URN; what each importer or sync
-- ("source") says about it is kept as a separate claim, so re-importing one source updates or marks
-- stale only its own claims and never erases what another source asserted. Nothing is deleted:
-- a claim, field or edge its source no longer reports is marked stale.
CREATE TABLE graph_assets (
    id         INTEGER PRIMARY KEY,
    urn        TEXT NOT NULL UNIQUE,
    system     TEXT NOT NULL,
    first_seen TEXT NOT NULL
);

CREATE TABLE graph_asset_claims (
    asset_id    INTEGER NOT NULL REFERENCES graph_assets(id),
    source      TEXT    NOT NULL,
    kind        TEXT    NOT NULL DEFAULT '',
    name        TEXT    NOT NULL DEFAULT '',
    description TEXT    NOT NULL DEFAULT '',
    owners      TEXT    NOT NULL DEFAULT '[]', -- JSON array of strings
    domain      TEXT    NOT NULL DEFAULT '',
    tags        TEXT    NOT NULL DEFAULT '[]', -- JSON array of strings
    criticality TEXT    NOT NULL DEFAULT '',
    schedule    TEXT    NOT NULL DEFAULT '',
    attrs       TEXT    NOT NULL DEFAULT '{}', -- JSON object of strings
    observed_at TEXT    NOT NULL,
    stale       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (asset_id, source)
);
CREATE INDEX graph_asset_claims_by_source ON graph_asset_claims (source);

CREATE TABLE graph_fields (
    asset_id    INTEGER NOT NULL REFERENCES graph_assets(id),
    path        TEXT    NOT NULL,
    source      TEXT    NOT NULL,
    type        TEXT    NOT NULL DEFAULT '',
    nullable    INTEGER NOT NULL DEFAULT 1,
    description TEXT    NOT NULL DEFAULT '',
    tags        TEXT    NOT NULL DEFAULT '[]',
    ordinal     INTEGER NOT NULL DEFAULT 0,
    observed_at TEXT    NOT NULL,
    stale       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (asset_id, path, source)
);
CREATE INDEX graph_fields_by_source ON graph_fields (source);

-- An edge says data flows from (from_id, from_field) to (to_id, to_field); an empty field means
-- the whole asset. The same flow asserted by two sources is two rows: both are evidence.
CREATE TABLE graph_edges (
    id             INTEGER PRIMARY KEY,
    from_id        INTEGER NOT NULL REFERENCES graph_assets(id),
    from_field     TEXT    NOT NULL DEFAULT '',
    to_id          INTEGER NOT NULL REFERENCES graph_assets(id),
    to_field       TEXT    NOT NULL DEFAULT '',
    kind           TEXT    NOT NULL,
    transformation TEXT    NOT NULL DEFAULT '',
    source         TEXT    NOT NULL,
    observed_at    TEXT    NOT NULL,
    stale          INTEGER NOT NULL DEFAULT 0,
    UNIQUE (from_id, from_field, to_id, to_field, kind, source)
);
-- Covering indexes for traversal, one per direction: a BFS step is one range scan per reached
-- asset, and "is there a field-level edge between these two assets?" one seek on the pair.
CREATE INDEX graph_edges_out ON graph_edges (from_id, to_id, from_field, to_field, kind, stale);
CREATE INDEX graph_edges_in ON graph_edges (to_id, from_id, to_field, from_field, kind, stale);
CREATE INDEX graph_edges_by_source ON graph_edges (source);
