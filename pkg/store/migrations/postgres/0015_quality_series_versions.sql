-- PostgreSQL twin of ../0015_quality_series_versions.sql: a version per asset of its metric points
-- and incidents, bumped by triggers on every insert, update and delete, so a process knows whether
-- the baseline series it holds in memory are still what the store would return. Points arrive in
-- multi-row INSERTs (a run's points, a store copy's batches), so their insert trigger runs once per
-- statement and bumps each asset by its rows: the same versions as one bump per row, without a
-- plpgsql call per point. Updates and deletes, and incidents, bump per row.
CREATE TABLE quality_series_versions (
    asset   TEXT   PRIMARY KEY,
    version BIGINT NOT NULL
);

CREATE FUNCTION quality_series_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        INSERT INTO quality_series_versions (asset, version) VALUES (OLD.asset, 1)
            ON CONFLICT (asset) DO UPDATE SET version = quality_series_versions.version + 1;
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.asset IS DISTINCT FROM OLD.asset) THEN
        INSERT INTO quality_series_versions (asset, version) VALUES (NEW.asset, 1)
            ON CONFLICT (asset) DO UPDATE SET version = quality_series_versions.version + 1;
    END IF;
    RETURN NULL;
END;
$$;

CREATE FUNCTION quality_series_version_bump_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO quality_series_versions (asset, version)
        SELECT asset, count(*) FROM inserted GROUP BY asset
        ON CONFLICT (asset) DO UPDATE SET version = quality_series_versions.version + EXCLUDED.version;
    RETURN NULL;
END;
$$;

CREATE TRIGGER quality_series_version_point_insert AFTER INSERT ON metric_points
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION quality_series_version_bump_inserted();
CREATE TRIGGER quality_series_version_point AFTER UPDATE OR DELETE ON metric_points
    FOR EACH ROW EXECUTE FUNCTION quality_series_version_bump();
CREATE TRIGGER quality_series_version_incident AFTER INSERT OR UPDATE OR DELETE ON incidents
    FOR EACH ROW EXECUTE FUNCTION quality_series_version_bump();

-- TRUNCATE fires no row trigger: it moves every asset's version (a truncated table, or one emptied by
-- TRUNCATE … CASCADE from check_runs, leaves no cached series exact). SQLite has no TRUNCATE; its
-- DELETE without WHERE runs the row triggers above.
CREATE FUNCTION quality_series_version_bump_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE quality_series_versions SET version = version + 1;
    RETURN NULL;
END;
$$;
CREATE TRIGGER quality_series_version_point_truncate AFTER TRUNCATE ON metric_points
    FOR EACH STATEMENT EXECUTE FUNCTION quality_series_version_bump_all();
CREATE TRIGGER quality_series_version_incident_truncate AFTER TRUNCATE ON incidents
    FOR EACH STATEMENT EXECUTE FUNCTION quality_series_version_bump_all();
