-- PostgreSQL twin of ../0016_metric_points_pending.sql: a run's points are written pending,
-- indexed by time, and settled into the series index in batches; readers read both halves
-- (store.PointsQuery). Existing points are settled. Settling does not move an asset's version.
ALTER TABLE metric_points ADD COLUMN settled INTEGER NOT NULL DEFAULT 1;
-- Both carry id, which the baseline read selects to drop a point a flush moved between its two
-- statements (SQLite's indexes carry the rowid anyway), so the read stays index-only.
CREATE INDEX metric_points_settled ON metric_points (asset, metric, subject, at) INCLUDE (status, value, incident_id, id) WHERE settled = 1;
CREATE INDEX metric_points_pending ON metric_points (asset, at, metric, subject) INCLUDE (status, value, incident_id, id) WHERE settled = 0;
DROP INDEX metric_points_series_read;

DROP TRIGGER quality_series_version_point ON metric_points;
CREATE TRIGGER quality_series_version_point
    AFTER UPDATE OF run_id, asset, metric, subject, at, value, status, baseline, expected_low, expected_high, incident_id OR DELETE ON metric_points
    FOR EACH ROW EXECUTE FUNCTION quality_series_version_bump();
