-- A burst of holds on one event wrote a full-page image for nearly every
-- hold after each checkpoint: two of the active holds' indexes led with a
-- random uuid (the seat's and the buyer's), so each new hold landed on a
-- leaf page of its own among every active hold of every event (measured:
-- 2 000 holds of a best-available burst touched 337 pages of
-- seat_holds_one_active and 155 of seat_holds_user_active_idx, and the
-- random hold ids 360 of the primary key; together 800 of its 1 050
-- full-page images, 6.5 of its 9.5 MB of WAL). With the event first, one
-- event's holds sit together in both (a few pages for a burst), and every
-- lookup of these indexes names the event already. Hold ids are now
-- time-ordered (hold.newHoldID), so the primary key fills its right edge.
--
-- One active hold per seat stays exactly that: a hold's (org_id, event_id,
-- seat_id) is its seat's own (the foreign key to seats), and a seat id is
-- one seat, so no two active holds of one seat can differ in event_id.
DROP INDEX seat_holds_one_active;
CREATE UNIQUE INDEX seat_holds_one_active ON seat_holds (event_id, seat_id, org_id) WHERE status = 'active';
DROP INDEX seat_holds_user_active_idx;
CREATE INDEX seat_holds_user_active_idx ON seat_holds (event_id, user_id, org_id) WHERE status = 'active';

---- create above / drop below ----

DROP INDEX seat_holds_user_active_idx;
CREATE INDEX seat_holds_user_active_idx ON seat_holds (user_id, event_id, org_id) WHERE status = 'active';
DROP INDEX seat_holds_one_active;
CREATE UNIQUE INDEX seat_holds_one_active ON seat_holds (seat_id, org_id) WHERE status = 'active';
