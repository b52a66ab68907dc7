-- A run's points by run: get_check_history (pkg/quality History.Runs) reads the points of each run
-- it lists, and deleting a run cascades to its points; without this index each of those read
-- every metric point (half a second for 50 runs over 120,000 points, seconds over a year of
-- monitors). A run's points sit side by side here, so a run's write adds one leaf page.
CREATE INDEX metric_points_by_run ON metric_points (run_id);
