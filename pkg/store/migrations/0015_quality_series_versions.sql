-- A version per asset of everything a baseline read depends on (pkg/quality History): its metric
-- points and its incidents. A process keeps the baseline series it read in memory and, before a
-- run uses them, reads this one row: an unchanged version means the series are still what the
-- store would return. Triggers bump it, not the writers, so every writer is covered (a run's
-- record, an incident's status change, another process, a future path). One upsert per row written.
CREATE TABLE quality_series_versions (
    asset   TEXT    PRIMARY KEY,
    version INTEGER NOT NULL
);

CREATE TRIGGER quality_series_version_point_insert AFTER INSERT ON metric_points
BEGIN
    INSERT INTO quality_series_versions (asset, version) VALUES (NEW.asset, 1)
        ON CONFLICT (asset) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER quality_series_version_point_update AFTER UPDATE ON metric_points
BEGIN
    INSERT INTO quality_series_versions (asset, version) VALUES (OLD.asset, 1)
        ON CONFLICT (asset) DO UPDATE SET version = version + 1;
    INSERT INTO quality_series_versions (asset, version) SELECT NEW.asset, 1 WHERE NEW.asset IS NOT OLD.asset
        ON CONFLICT (asset) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER quality_series_version_point_delete AFTER DELETE ON metric_points
BEGIN
    INSERT INTO quality_series_versions (asset, version) VALUES (OLD.asset, 1)
        ON CONFLICT (asset) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER quality_series_version_incident_insert AFTER INSERT ON incidents
BEGIN
    INSERT INTO quality_series_versions (asset, version) VALUES (NEW.asset, 1)
        ON CONFLICT (asset) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER quality_series_version_incident_update AFTER UPDATE ON incidents
BEGIN
    INSERT INTO quality_series_versions (asset, version) VALUES (OLD.asset, 1)
        ON CONFLICT (asset) DO UPDATE SET version = version + 1;
    INSERT INTO quality_series_versions (asset, version) SELECT NEW.asset, 1 WHERE NEW.asset IS NOT OLD.asset
        ON CONFLICT (asset) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER quality_series_version_incident_delete AFTER DELETE ON incidents
BEGIN
    INSERT INTO quality_series_versions (asset, version) VALUES (OLD.asset, 1)
        ON CONFLICT (asset) DO UPDATE SET version = version + 1;
END;
