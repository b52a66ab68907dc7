-- PostgreSQL twin of ../0014_metric_points_covering.sql: the series index carries the columns a
-- baseline read needs, so the read is an index-only scan.
CREATE INDEX metric_points_series_read ON metric_points (asset, metric, subject, at) INCLUDE (status, value, incident_id);
DROP INDEX metric_points_series;
