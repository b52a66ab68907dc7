-- PostgreSQL twin of ../0010_autonomous_actions.sql: actions that ran at L3 without a new approval.
-- PostgreSQL relaxes NOT NULL and swaps constraints in place, so no rebuild is needed and the id
-- sequence is untouched. The unique indexes make a 'running' claim exclusive.
ALTER TABLE actions ALTER COLUMN request_id DROP NOT NULL;
ALTER TABLE actions DROP CONSTRAINT actions_status_check;
ALTER TABLE actions ADD CONSTRAINT actions_status_check CHECK (status IN ('running', 'succeeded', 'failed', 'owner_steps'));
ALTER TABLE actions ADD COLUMN authority TEXT NOT NULL DEFAULT 'approval' CHECK (authority IN ('approval', 'l3_clean_record'));
ALTER TABLE actions ADD COLUMN rule TEXT NOT NULL DEFAULT '';
ALTER TABLE actions ADD COLUMN record TEXT NOT NULL DEFAULT '[]';
ALTER TABLE actions ADD COLUMN payload_sha256 TEXT NOT NULL DEFAULT '';
ALTER TABLE actions ADD COLUMN plan_id BIGINT;
ALTER TABLE actions ADD COLUMN plan_order BIGINT;
ALTER TABLE actions ADD CONSTRAINT actions_authority_names_its_source
    CHECK (authority = 'approval' AND request_id IS NOT NULL OR authority = 'l3_clean_record' AND plan_id IS NOT NULL);
UPDATE actions a SET payload_sha256 = COALESCE((SELECT r.payload_sha256 FROM approval_requests r WHERE r.id = a.request_id), '');
-- The clean-record rule reads class and target case-insensitively (as config.DomainFor matches).
DROP INDEX actions_by_class_target;
CREATE INDEX actions_by_class_target ON actions (class, lower(target));
CREATE UNIQUE INDEX actions_plan_step_once ON actions (plan_id, plan_order)
    WHERE authority = 'l3_clean_record' AND status IN ('running', 'succeeded');
CREATE UNIQUE INDEX actions_request_once ON actions (request_id)
    WHERE status IN ('running', 'succeeded', 'owner_steps');
