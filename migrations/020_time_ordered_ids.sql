-- Ids of events, sections and seats are time-ordered (UUIDv7), as seatd
-- makes them (store.NewID), whoever inserts the rows: an event's seats,
-- made together, sit together in seats' primary key, so the seat reads
-- of a sale touch a few hot pages of it instead of one page per seat
-- spread over the keys of every seat ever made. Postgres 15 has no
-- uuidv7(): the first 48 bits are the time in milliseconds, then the
-- version, then random bits.
CREATE FUNCTION uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
    SELECT encode(set_byte(overlay(uuid_send(gen_random_uuid())
        placing substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
        6, 112 + floor(random() * 16)::int), 'hex')::uuid
$$;
ALTER TABLE events ALTER COLUMN id SET DEFAULT uuid_v7();
ALTER TABLE sections ALTER COLUMN id SET DEFAULT uuid_v7();
ALTER TABLE seats ALTER COLUMN id SET DEFAULT uuid_v7();

---- create above / drop below ----

ALTER TABLE seats ALTER COLUMN id SET DEFAULT gen_random_uuid();
ALTER TABLE sections ALTER COLUMN id SET DEFAULT gen_random_uuid();
ALTER TABLE events ALTER COLUMN id SET DEFAULT gen_random_uuid();
DROP FUNCTION uuid_v7();
