-- The attendee list pages an event's tickets in seat order
-- (docs/organizers.md, "Watch it, and export"). Each ticket keeps its seat's
-- place in the event's order (seats.idx, fixed when the event is made),
-- so a page is one range of the event's ticket index, however many
-- tickets the event has; before, each page joined every ticket of the
-- event to its seat and sorted them. The index replaces the event's
-- ticket index of migration 031, whose readers (the door's revoked
-- tickets, the dashboard's counts) it serves as before.
ALTER TABLE tickets ADD COLUMN seat_idx int;
UPDATE tickets t SET seat_idx = s.idx FROM seats s WHERE s.org_id = t.org_id AND s.id = t.seat_id;
ALTER TABLE tickets ALTER COLUMN seat_idx SET NOT NULL;
DROP INDEX tickets_event_idx;
CREATE INDEX tickets_event_idx ON tickets (org_id, event_id, seat_idx) INCLUDE (cancelled_at);

---- create above / drop below ----

DROP INDEX tickets_event_idx;
CREATE INDEX tickets_event_idx ON tickets (org_id, event_id) INCLUDE (cancelled_at);
ALTER TABLE tickets DROP COLUMN seat_idx;
