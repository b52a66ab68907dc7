-- PostgreSQL twin of ../0013_tool_call_caller.sql: the authenticated caller's name over HTTP.
ALTER TABLE tool_calls ADD COLUMN caller TEXT NOT NULL DEFAULT '';
