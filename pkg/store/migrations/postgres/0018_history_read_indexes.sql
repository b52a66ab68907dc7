-- PostgreSQL twin of ../0018_history_read_indexes.sql: the newest runs of every asset, an asset's
-- newest failing point, the newest incidents. The order's tie-breaker (id) is in the index, as
-- SQLite's rowid is in its.
CREATE INDEX check_runs_by_started ON check_runs (started_at, id);
CREATE INDEX metric_points_failing ON metric_points (asset, at, id) WHERE status = 'fail';
CREATE INDEX incidents_by_opened ON incidents (opened_at, id);
