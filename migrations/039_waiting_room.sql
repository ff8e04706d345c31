-- An event's waiting room: {"enabled": bool, "opens_at": RFC 3339 time,
-- "rate_per_minute": visitors a minute, 0 for automatic}; NULL: none.
ALTER TABLE events ADD COLUMN waiting_room jsonb CHECK (waiting_room IS NULL OR jsonb_typeof(waiting_room) = 'object');

-- The admitter lists the rooms that are on, across organizations, every
-- second: only those events.
CREATE INDEX events_waiting_room_on ON events (org_id, id) WHERE (waiting_room ->> 'enabled')::boolean AND status = 'on_sale';

---- create above / drop below ----

DROP INDEX events_waiting_room_on;
ALTER TABLE events DROP COLUMN waiting_room;
