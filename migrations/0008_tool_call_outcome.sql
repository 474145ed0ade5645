-- What became of each tool call: ok | error | cancelled | denied. Until now a call the user cancelled was
-- stored as is_error = true with error 'cancelled' (and a refused one as an error result), so the inspector
-- showed the user's own cancels in red and counted them as errors. From this version on, is_error means a
-- real error only (the tool or its server failed), and `outcome` says the rest; old rows are brought in line.
ALTER TABLE tool_calls ADD COLUMN outcome VARCHAR;
UPDATE tool_calls SET outcome = CASE
    WHEN error = 'cancelled' THEN 'cancelled'
    WHEN approval = 'denied' THEN 'denied'
    WHEN is_error THEN 'error'
    ELSE 'ok'
END;
UPDATE tool_calls SET is_error = false WHERE outcome IN ('cancelled', 'denied');
