-- hours: one pass grouped by date_trunc('hour'): PostgreSQL hash-aggregates while it scans
-- profile
SELECT date_trunc('hour', "hour") AS hour_bucket, count(*), count("account_id"), count("egress_bytes"), count("billable"), max("hour"), count(CASE WHEN "usage_id" = '' THEN 1 END), min(length("usage_id")), max(length("usage_id")), sum(CAST(length("usage_id") AS float8)), count(CASE WHEN "account_id" = 0 THEN 1 END), count(CASE WHEN "account_id" < 0 THEN 1 END), sum(CAST("account_id" AS float8)), min("account_id"), max("account_id"), sum(CAST("account_id" AS float8) * CAST("account_id" AS float8)), count(CASE WHEN "egress_bytes" = 0 THEN 1 END), count(CASE WHEN "egress_bytes" < 0 THEN 1 END), sum(CAST("egress_bytes" AS float8)), min("egress_bytes"), max("egress_bytes"), sum(CAST("egress_bytes" AS float8) * CAST("egress_bytes" AS float8)), count(CASE WHEN "billable" THEN 1 END) FROM "dw"."usage"."usage_hourly" WHERE "hour" >= $1::timestamp AND "hour" < $2::timestamp GROUP BY 1;
--   arg 1: 2025-12-15 00:00:00 +0000 UTC
--   arg 2: 2025-12-15 15:05:00 +0000 UTC
-- distinct counts
SELECT count(DISTINCT "usage_id"), count(DISTINCT "account_id"), count(DISTINCT "egress_bytes"), count(DISTINCT "billable"), count(DISTINCT "loaded_at") FROM "dw"."usage"."usage_hourly" WHERE "hour" >= $1::timestamp AND "hour" < $2::timestamp;
--   arg 1: 2025-12-15 00:00:00 +0000 UTC
--   arg 2: 2025-12-15 15:05:00 +0000 UTC
-- dimension
SELECT "account_id", count(*), sum(CAST("egress_bytes" AS float8)) FROM "dw"."usage"."usage_hourly" WHERE "hour" >= $1::timestamp AND "hour" < $2::timestamp GROUP BY 1 ORDER BY 2 DESC LIMIT 1001;
--   arg 1: 2025-12-15 00:00:00 +0000 UTC
--   arg 2: 2025-12-15 15:05:00 +0000 UTC
-- load lag
SELECT max("loaded_at") FROM "dw"."usage"."usage_hourly" WHERE "loaded_at" <= $1::timestamp;
--   arg 1: 2025-12-15 15:05:00 +0000 UTC
-- reconciliation upstream
SELECT count(*), sum(CAST("egress_bytes" AS float8)) FROM "dw"."usage"."usage_raw" WHERE "hour" >= $1::timestamp AND "hour" < $2::timestamp;
--   arg 1: 2025-12-15 00:00:00 +0000 UTC
--   arg 2: 2025-12-15 15:05:00 +0000 UTC
-- freshness: max(hour) of the profile
-- uniqueness: a UNIQUE or PRIMARY KEY constraint the engine enforces covers (usage_id)
-- custom egress_not_negative
SELECT count(*) FROM (SELECT * FROM usage_hourly WHERE egress_bytes < 0 AND hour >= $1::timestamp AND hour < $2::timestamp) dw_violations;
--   arg 1: 2025-12-15 00:00:00 +0000 UTC
--   arg 2: 2025-12-15 15:05:00 +0000 UTC
-- custom sample egress_not_negative
SELECT * FROM (SELECT * FROM usage_hourly WHERE egress_bytes < 0 AND hour >= $1::timestamp AND hour < $2::timestamp) dw_violations LIMIT 20;
--   arg 1: 2025-12-15 00:00:00 +0000 UTC
--   arg 2: 2025-12-15 15:05:00 +0000 UTC
-- null_rate usage_id: declared NOT NULL
-- null_rate hour: declared NOT NULL
-- null_rate loaded_at: declared NOT NULL
