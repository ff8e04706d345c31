-- How long a checkout extends an event's holds, in seconds; NULL: the
-- deployment's default (SEATD_HOLD_EXTENSION).
ALTER TABLE events ADD COLUMN hold_extension_seconds int CHECK (hold_extension_seconds > 0);

---- create above / drop below ----

ALTER TABLE events DROP COLUMN hold_extension_seconds;
