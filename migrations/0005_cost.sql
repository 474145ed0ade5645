-- What each LLM call cost: the cached part of its prompt (read from / written to the provider's prompt
-- cache), its cost in USD (NULL: the model has no known price) and where the price came from
-- (bundled:DATE, file:PATH or local); the prompt side of that cost, and the tokens each tool result
-- first sent in this call added to the prompt ({tool_call_id: tokens}), so cost can be attributed to
-- tools and servers (see synapse_nb/history/cost.py). Turns carry their cost; a turn stopped by a
-- budget has status 'budget_exceeded'.
ALTER TABLE llm_calls ADD COLUMN cached_input_tokens BIGINT;
ALTER TABLE llm_calls ADD COLUMN cache_write_tokens BIGINT;
ALTER TABLE llm_calls ADD COLUMN cost_usd DOUBLE;
ALTER TABLE llm_calls ADD COLUMN price_source VARCHAR;
ALTER TABLE llm_calls ADD COLUMN input_cost_usd DOUBLE;
ALTER TABLE llm_calls ADD COLUMN tool_result_tokens JSON;
ALTER TABLE turns ADD COLUMN cost_usd DOUBLE;
ALTER TABLE turns ADD COLUMN cached_input_tokens BIGINT;
