-- A session whose data did not change is still written about once a
-- minute while it is used: its idle expiry moves on, and its device's
-- last-seen time (web/session). With the expiry indexed, every such write
-- was a non-HOT update, a new entry in each of the session's indexes
-- with its WAL: at 100 000 visitors polling a waiting room, thousands a
-- second. Only the expired-session cleanup searches by expiry, once every
-- ten minutes per process, and a scan of the table serves it; so the
-- index goes. A HOT update also needs room on the row's own page: a
-- fifth of each page is left free, for the sessions and for their
-- devices (whose last-seen time is not indexed either). The fillfactor
-- applies to pages written from now on.
DROP INDEX sessions_expiry_idx;
ALTER TABLE sessions SET (fillfactor = 80);
ALTER TABLE user_sessions SET (fillfactor = 80);

---- create above / drop below ----

ALTER TABLE user_sessions RESET (fillfactor);
ALTER TABLE sessions RESET (fillfactor);
CREATE INDEX sessions_expiry_idx ON sessions (expiry);
