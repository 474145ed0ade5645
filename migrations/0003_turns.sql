-- One row per ended agent turn, and the spool bookkeeping that makes ingest exactly-once.
CREATE TABLE turns (
    turn_id       VARCHAR,
    session_id    VARCHAR,
    prompt        VARCHAR,
    status        VARCHAR,   -- finished | failed | cancelled
    started_at    TIMESTAMP,
    duration_ms   DOUBLE,
    iterations    BIGINT,
    input_tokens  BIGINT,
    output_tokens BIGINT,
    error         VARCHAR,
    model         VARCHAR,
    error_type    VARCHAR
);

-- Internal: how many bytes of each spool file are already in this database (see history/ingest.py).
-- Updated in the same transaction as the rows it accounts for.
CREATE TABLE _ingest_offsets (
    spool       VARCHAR,
    byte_offset BIGINT,
    updated_at  TIMESTAMP
);
