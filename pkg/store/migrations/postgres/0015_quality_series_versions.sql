-- PostgreSQL twin of ../0015_quality_series_versions.sql: a version per asset of its metric points
-- and incidents, bumped by row triggers on every insert, update and delete, so a process knows
-- whether the baseline series it holds in memory are still what the store would return.
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
CREATE TRIGGER quality_series_version_point AFTER INSERT OR UPDATE OR DELETE ON metric_points
    FOR EACH ROW EXECUTE FUNCTION quality_series_version_bump();
CREATE TRIGGER quality_series_version_incident AFTER INSERT OR UPDATE OR DELETE ON incidents
    FOR EACH ROW EXECUTE FUNCTION quality_series_version_bump();
