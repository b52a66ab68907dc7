-- Check history for baselines (dw-quality) and the minimal incidents table a failed check opens or
-- joins (dw-incidents extends it).

-- One run of run_quality_check (or of a monitor) on one table.
CREATE TABLE check_runs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    asset        TEXT    NOT NULL,              -- warehouse:<engine>/<db.schema.table> URN
    monitor      TEXT    NOT NULL DEFAULT '',   -- the config monitor's name, '' for ad-hoc runs
    started_at   TEXT    NOT NULL,
    finished_at  TEXT    NOT NULL,
    window_start TEXT    NOT NULL DEFAULT '',
    window_end   TEXT    NOT NULL DEFAULT '',
    window_label TEXT    NOT NULL DEFAULT '',
    status       TEXT    NOT NULL CHECK (status IN ('pass', 'warn', 'fail', 'error')),
    error        TEXT    NOT NULL DEFAULT '',
    summary      TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX check_runs_by_asset ON check_runs (asset, started_at);
CREATE INDEX check_runs_by_monitor ON check_runs (monitor, started_at);

-- A failed check can open an incident; it stays deduplicated by asset + failure mode while open.
CREATE TABLE incidents (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    asset        TEXT NOT NULL,
    failure_mode TEXT NOT NULL,                 -- null_rate, volume, freshness, uniqueness, custom
    status       TEXT NOT NULL CHECK (status IN ('open', 'acknowledged', 'investigating', 'mitigated', 'resolved', 'false_positive', 'expected')),
    severity     TEXT NOT NULL,                 -- sev1 (worst) … sev4
    opened_at    TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    resolved_at  TEXT,                          -- set when status becomes resolved, false_positive or expected
    summary      TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX incidents_open_dedup ON incidents (asset, failure_mode)
    WHERE status IN ('open', 'acknowledged', 'investigating', 'mitigated');
CREATE INDEX incidents_by_asset ON incidents (asset, opened_at);

-- One measured metric of a run: the series a baseline is trained on. subject is the column, key or
-- assertion the metric is about ('' for table-level metrics).
CREATE TABLE metric_points (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id        INTEGER NOT NULL REFERENCES check_runs (id) ON DELETE CASCADE,
    asset         TEXT    NOT NULL,
    metric        TEXT    NOT NULL,
    subject       TEXT    NOT NULL DEFAULT '',
    at            TEXT    NOT NULL,
    value         REAL    NOT NULL,
    status        TEXT    NOT NULL CHECK (status IN ('pass', 'warn', 'fail')),
    baseline      REAL,
    expected_low  REAL,
    expected_high REAL,
    incident_id   INTEGER REFERENCES incidents (id)
);
CREATE INDEX metric_points_series ON metric_points (asset, metric, subject, at);
