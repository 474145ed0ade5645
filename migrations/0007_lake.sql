-- The shared Parquet lake (history/lake.py): every row gets a publish order `_seq` (existing rows in
-- insertion order, new rows from the sequence as they are inserted), the file gets an id that names its
-- part files in a lake, and `_lake_published` says how far each relation is published to each lake.
CREATE SEQUENCE _lake_seq;
ALTER TABLE sessions ADD COLUMN _seq BIGINT DEFAULT nextval('_lake_seq');
ALTER TABLE messages ADD COLUMN _seq BIGINT DEFAULT nextval('_lake_seq');
ALTER TABLE tool_calls ADD COLUMN _seq BIGINT DEFAULT nextval('_lake_seq');
ALTER TABLE llm_calls ADD COLUMN _seq BIGINT DEFAULT nextval('_lake_seq');
ALTER TABLE turns ADD COLUMN _seq BIGINT DEFAULT nextval('_lake_seq');
ALTER TABLE server_events ADD COLUMN _seq BIGINT DEFAULT nextval('_lake_seq');

CREATE TABLE _lake_source AS
SELECT replace(CAST(uuid() AS VARCHAR), '-', '') AS source_id, CAST(now() AS TIMESTAMP) AS created_at;

CREATE TABLE _lake_published (
    lake       VARCHAR,    -- the lake's id (from its _lake.json), so a lake moved or mounted elsewhere is the same lake
    relation   VARCHAR,
    published  BIGINT,     -- rows with _seq <= published are in the lake
    pending    BIGINT,     -- NULL, or the end of the range (published, pending] being written (redone after a crash)
    updated_at TIMESTAMP
);
