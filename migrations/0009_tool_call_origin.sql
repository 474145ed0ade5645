-- Who started each tool call: 'agent' (a %%synapse turn's model asked for it), 'manual' (a person: %mcp call,
-- the inspector's Call), or 'app:SERVER' (an MCP Apps View of that server, through the kernel). Until now a
-- call made by hand was recognised by approval = 'manual' only, and every other row was the agent's.
ALTER TABLE tool_calls ADD COLUMN origin VARCHAR;
UPDATE tool_calls SET origin = CASE WHEN approval = 'manual' THEN 'manual' ELSE 'agent' END;
