-- profile
SELECT date_trunc('hour', "hour") AS hour_bucket, count(*), count("account_id"), count("egress_bytes"), max("hour") FROM "dw"."usage"."usage_hourly" WHERE "hour" >= $1::timestamp AND "hour" < $2::timestamp GROUP BY 1;
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
