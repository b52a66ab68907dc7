-- Indexes for the routine reads of a mature store, which scanned whole tables:
--   get_check_history with no table, or with only `since`, lists the newest runs of every asset
--   (ORDER BY started_at DESC): check_runs' indexes lead with the asset and the monitor;
--   diagnose_incident finds an asset's newest failing point: the series index leads with the
--   metric, which the failure mode may leave open, so it read every point of the asset; failing
--   points are few, and this index holds only them;
--   get_incident_history lists the newest incidents of every asset (ORDER BY opened_at DESC).
-- Each adds a leaf page to the writes of its table (the failing index only to failing points).
CREATE INDEX check_runs_by_started ON check_runs (started_at);
CREATE INDEX metric_points_failing ON metric_points (asset, at) WHERE status = 'fail';
CREATE INDEX incidents_by_opened ON incidents (opened_at);
