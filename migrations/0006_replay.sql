-- Record and replay (synapse_nb/cassette.py): what each LLM request held besides the transcript, so a
-- session can be exported as a cassette (`request`: system, params, tools digest and names, number of
-- transcript messages sent), and which calls and turns a cassette answered (`replayed`).
ALTER TABLE llm_calls ADD COLUMN request JSON;
ALTER TABLE llm_calls ADD COLUMN replayed BOOLEAN;
ALTER TABLE turns ADD COLUMN replayed BOOLEAN;
