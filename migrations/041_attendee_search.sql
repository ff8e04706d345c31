-- The attendee list's search (store.Checkins.Attendees) finds a
-- box-office customer by any part of their name (lower(customer_name)
-- LIKE '%q%') or the start of their email, and a buyer by the start of
-- their account's email: indexes answer each without reading every
-- booking of the event. pg_trgm is a trusted extension: the database's
-- owner may create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX bookings_customer_search ON bookings
    USING gin (lower(customer_name) gin_trgm_ops, customer_email gin_trgm_ops)
    WHERE customer_email IS NOT NULL;
CREATE INDEX users_email_prefix ON users (org_id, email text_pattern_ops);

---- create above / drop below ----

DROP INDEX users_email_prefix;
DROP INDEX bookings_customer_search;
-- The extension stays: other objects may use it by now.
