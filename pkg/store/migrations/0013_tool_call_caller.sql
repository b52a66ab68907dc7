-- Who called the tool: the authenticated caller's name over HTTP; empty on stdio, where the person
-- running the process is the caller.
ALTER TABLE tool_calls ADD COLUMN caller TEXT NOT NULL DEFAULT '';
