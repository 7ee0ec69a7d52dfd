-- The lease and the table the worker prunes. Applied once, in order, by
-- retention_worker::pg::migrate (or by hand with psql -f).

-- The database's clock, in microseconds since the Unix epoch. Every expiry
-- decision and every applied-at time goes through this one function, so a
-- test database can swap in a clock it controls.
CREATE OR REPLACE FUNCTION retention_now_us() RETURNS bigint
    LANGUAGE sql VOLATILE
    AS $$ SELECT floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint $$;

-- One row per named lease. The row outlives its holders: after a release
-- `owner` is NULL and `token` keeps the last token granted, so tokens only
-- ever grow.
CREATE TABLE retention_lease (
    name          text   PRIMARY KEY,
    owner         text,
    token         bigint NOT NULL CHECK (token > 0),
    expires_at_ms bigint NOT NULL
);

-- The rows under retention: deleted oldest first once older than the cutoff.
CREATE TABLE retention_records (
    id            bigserial PRIMARY KEY,
    created_at_ms bigint    NOT NULL,
    payload       text
);

-- Serves "the oldest rows older than the cutoff" as an index range scan, in
-- the delete's order.
CREATE INDEX retention_records_age ON retention_records (created_at_ms, id);
