-- hours: ungrouped pass, and hourly counts from ranges of the index on hour
-- profile
SELECT NULL AS hour_bucket, count(*), count("account_id"), count("egress_bytes"), count("billable"), count(CASE WHEN "usage_id" = '' THEN 1 END), min(length("usage_id")), max(length("usage_id")), total(length("usage_id")), count(CASE WHEN "account_id" = 0 THEN 1 END), count(CASE WHEN "account_id" < 0 THEN 1 END), total("account_id"), min("account_id"), max("account_id"), total("account_id" * "account_id"), count(CASE WHEN "egress_bytes" = 0 THEN 1 END), count(CASE WHEN "egress_bytes" < 0 THEN 1 END), total("egress_bytes"), min("egress_bytes"), max("egress_bytes"), total("egress_bytes" * "egress_bytes"), count(CASE WHEN "billable" THEN 1 END) FROM "main"."usage_hourly" WHERE "hour" >= ? AND "hour" < ?;
--   arg 1: 2025-12-15 00:00:00
--   arg 2: 2025-12-15 15:05:00
-- hourly counts
WITH RECURSIVE dw_h(h) AS (SELECT (SELECT substr(min("hour"), 1, 13) FROM "main"."usage_hourly" WHERE "hour" >= ? AND "hour" < ?) UNION ALL SELECT (SELECT substr(min("hour"), 1, 13) FROM "main"."usage_hourly" WHERE "hour" >= strftime('%Y-%m-%d %H', dw_h.h || ':00', '+1 hour') AND "hour" < ?) FROM dw_h WHERE dw_h.h IS NOT NULL) SELECT dw_h.h AS hour_bucket, (SELECT count(*) FROM "main"."usage_hourly" WHERE "hour" >= max(dw_h.h, ?) AND "hour" < min(strftime('%Y-%m-%d %H', dw_h.h || ':00', '+1 hour'), ?)) FROM dw_h WHERE dw_h.h IS NOT NULL;
--   arg 1: 2025-12-15 00:00:00
--   arg 2: 2025-12-15 15:05:00
--   arg 3: 2025-12-15 15:05:00
--   arg 4: 2025-12-15 00:00:00
--   arg 5: 2025-12-15 15:05:00
-- distinct counts
SELECT count(DISTINCT "usage_id"), count(DISTINCT "account_id"), count(DISTINCT "egress_bytes"), count(DISTINCT "billable"), count(DISTINCT "loaded_at") FROM "main"."usage_hourly" WHERE "hour" >= ? AND "hour" < ?;
--   arg 1: 2025-12-15 00:00:00
--   arg 2: 2025-12-15 15:05:00
-- dimension
SELECT "account_id", count(*), total("egress_bytes") FROM "main"."usage_hourly" WHERE "hour" >= ? AND "hour" < ? GROUP BY 1 ORDER BY 2 DESC LIMIT 1001;
--   arg 1: 2025-12-15 00:00:00
--   arg 2: 2025-12-15 15:05:00
-- load lag
SELECT max("loaded_at") FROM "main"."usage_hourly" WHERE "loaded_at" <= ?;
--   arg 1: 2025-12-15 15:05:00
-- reconciliation upstream
SELECT count(*), total("egress_bytes") FROM "main"."usage_raw" WHERE "hour" >= ? AND "hour" < ?;
--   arg 1: 2025-12-15 00:00:00
--   arg 2: 2025-12-15 15:05:00
-- freshness
SELECT max("hour") FROM "main"."usage_hourly" WHERE "hour" <= ?;
--   arg 1: 2025-12-15 15:05:00
-- uniqueness: a UNIQUE or PRIMARY KEY constraint the engine enforces covers (usage_id)
-- custom egress_not_negative
SELECT count(*) FROM (SELECT * FROM usage_hourly WHERE egress_bytes < 0 AND hour >= ? AND hour < ?) dw_violations;
--   arg 1: 2025-12-15 00:00:00
--   arg 2: 2025-12-15 15:05:00
-- custom sample egress_not_negative
SELECT * FROM (SELECT * FROM usage_hourly WHERE egress_bytes < 0 AND hour >= ? AND hour < ?) dw_violations LIMIT 20;
--   arg 1: 2025-12-15 00:00:00
--   arg 2: 2025-12-15 15:05:00
-- null_rate usage_id: declared NOT NULL
-- null_rate hour: declared NOT NULL
-- null_rate loaded_at: declared NOT NULL
