-- Who asked for an LLM call: NULL for the agent's own, `sampling:SERVER` when an MCP server's
-- sampling/createMessage was answered by the kernel's model; and the tool call during which it asked.
ALTER TABLE llm_calls ADD COLUMN origin VARCHAR;
ALTER TABLE llm_calls ADD COLUMN tool_call_id VARCHAR;
