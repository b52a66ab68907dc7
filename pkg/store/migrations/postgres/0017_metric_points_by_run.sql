-- PostgreSQL twin of ../0017_metric_points_by_run.sql: a run's points by run, for
-- get_check_history's read of each listed run's points and for the cascade when a run is deleted
-- (PostgreSQL does not index a foreign key's referencing column by itself).
CREATE INDEX metric_points_by_run ON metric_points (run_id);
