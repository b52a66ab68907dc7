-- profile
SELECT substr("hour", 1, 13) AS hour_bucket, count(*), count("account_id"), count("egress_bytes"), max("hour") FROM "main"."usage_hourly" WHERE "hour" >= ? AND "hour" < ? GROUP BY 1;
--   arg 1: 2025-12-15 00:00:00
--   arg 2: 2025-12-15 15:05:00
-- freshness: max(hour) of the profile
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
