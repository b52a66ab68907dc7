-- A run's points are written pending and settled in batches (pkg/quality History). The series
-- index orders points by series, so each point of a run lands on the leaf page of its own series:
-- a run of six metrics dirtied six index pages, which SQLite writes whole to the WAL at commit and
-- again at the checkpoint, about half of a run's history write. Pending points are indexed by
-- time instead, where all of a run's points sit side by side on one page; a flush marks them
-- settled in one statement, which moves them into the series index, each series' page once per
-- flush instead of once per run. Readers read both halves (store.PointsQuery). Existing points are
-- settled.
ALTER TABLE metric_points ADD COLUMN settled INTEGER NOT NULL DEFAULT 1;
CREATE INDEX metric_points_settled ON metric_points (asset, metric, subject, at, status, value, incident_id) WHERE settled = 1;
CREATE INDEX metric_points_pending ON metric_points (asset, at, metric, subject, status, value, incident_id) WHERE settled = 0;
DROP INDEX metric_points_series_read;

-- Settling a point changes nothing a baseline reads, so it does not move the asset's version
-- (migration 0015): the update trigger now fires on the other columns only. A column added to
-- metric_points later must be added to its list (and to the PostgreSQL twin's).
DROP TRIGGER quality_series_version_point_update;
CREATE TRIGGER quality_series_version_point_update
AFTER UPDATE OF run_id, asset, metric, subject, at, value, status, baseline, expected_low, expected_high, incident_id ON metric_points
BEGIN
    INSERT INTO quality_series_versions (asset, version) VALUES (OLD.asset, 1)
        ON CONFLICT (asset) DO UPDATE SET version = version + 1;
    INSERT INTO quality_series_versions (asset, version) SELECT NEW.asset, 1 WHERE NEW.asset IS NOT OLD.asset
        ON CONFLICT (asset) DO UPDATE SET version = version + 1;
END;
