-- profile
SELECT DATE_TRUNC('HOUR', "HOUR") AS hour_bucket, count(*), count("ACCOUNT_ID"), count("EGRESS_BYTES"), max("HOUR") FROM "ANALYTICS"."USAGE"."USAGE_HOURLY" WHERE "HOUR" >= ? AND "HOUR" < ? GROUP BY 1;
--   arg 1: 2025-12-15 00:00:00 +0000 UTC
--   arg 2: 2025-12-15 15:05:00 +0000 UTC
-- freshness
SELECT MAX("HOUR") FROM "ANALYTICS"."USAGE"."USAGE_HOURLY";
-- uniqueness
SELECT count("USAGE_ID") - count(DISTINCT "USAGE_ID") FROM "ANALYTICS"."USAGE"."USAGE_HOURLY" WHERE "HOUR" >= ? AND "HOUR" < ?;
--   arg 1: 2025-12-15 00:00:00 +0000 UTC
--   arg 2: 2025-12-15 15:05:00 +0000 UTC
-- uniqueness sample
SELECT "USAGE_ID", count(*) AS copies FROM "ANALYTICS"."USAGE"."USAGE_HOURLY" WHERE "HOUR" >= ? AND "HOUR" < ? AND "USAGE_ID" IS NOT NULL GROUP BY "USAGE_ID" HAVING count(*) > 1 ORDER BY count(*) DESC LIMIT 20;
--   arg 1: 2025-12-15 00:00:00 +0000 UTC
--   arg 2: 2025-12-15 15:05:00 +0000 UTC
-- custom egress_not_negative
SELECT count(*) FROM (SELECT * FROM usage_hourly WHERE egress_bytes < 0 AND hour >= ? AND hour < ?) dw_violations;
--   arg 1: 2025-12-15 00:00:00 +0000 UTC
--   arg 2: 2025-12-15 15:05:00 +0000 UTC
-- custom sample egress_not_negative
SELECT * FROM (SELECT * FROM usage_hourly WHERE egress_bytes < 0 AND hour >= ? AND hour < ?) dw_violations LIMIT 20;
--   arg 1: 2025-12-15 00:00:00 +0000 UTC
--   arg 2: 2025-12-15 15:05:00 +0000 UTC
-- null_rate USAGE_ID: declared NOT NULL
-- null_rate HOUR: declared NOT NULL
