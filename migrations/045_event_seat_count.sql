-- An event's number of seats and standing places, kept on the event: the
-- seats are made with the event and never added or removed after, and
-- every read of an event (a buyer's card page, the event API) counted
-- them, which read the whole of the event's seat index each time.
ALTER TABLE events ADD COLUMN seat_count int NOT NULL DEFAULT 0;
UPDATE events e SET seat_count = (SELECT count(*) FROM seats s WHERE s.org_id = e.org_id AND s.event_id = e.id);

---- create above / drop below ----

ALTER TABLE events DROP COLUMN seat_count;
