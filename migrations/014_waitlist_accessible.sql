-- A buyer who needs accessible seating can say so when joining a line, as
-- they can when holding: their offers may then include the accessible and
-- companion seats kept back until the event's accessible_release_at.
ALTER TABLE waitlist_entries ADD COLUMN accessible boolean NOT NULL DEFAULT false;

---- create above / drop below ----

ALTER TABLE waitlist_entries DROP COLUMN accessible;
