-- The change feed. Every statement that changes a seat already writes an
-- audit row in the same transaction; stamping that row with its
-- transaction id makes the audit log a commit-ordered feed. A reader keeps
-- the snapshot of its last read as its cursor and next reads the rows
-- whose transaction is visible now but was not in that snapshot
-- (PgQ's batches): each committed change is read exactly once, whatever
-- order transactions took their ids or sequence numbers in, and a
-- transaction still running is simply read later.
ALTER TABLE audit_log ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();

-- The time index served only the periodic scan the feed replaces; the feed
-- index takes its place, so a hold still writes the same number of index
-- entries.
DROP INDEX audit_log_org_at_idx;
CREATE INDEX audit_log_feed_idx ON audit_log (org_id, event_id, xid) WHERE seat_id IS NOT NULL;

-- Active holds per buyer and event, so the per-buyer cap is checked in the
-- same statement that takes the holds: concurrent requests of one buyer
-- queue on this row (and only they do), and a statement that would lift
-- active above cap fails whole. Holds add to it in the hold statement;
-- holds leaving 'active' take away through the trigger below, whichever
-- statement ends them.
CREATE TABLE buyer_holds (
    org_id   uuid NOT NULL,
    event_id uuid NOT NULL,
    user_id  uuid NOT NULL,
    active   int  NOT NULL CHECK (active >= 0),
    cap      int  NOT NULL,
    PRIMARY KEY (org_id, event_id, user_id),
    CONSTRAINT buyer_holds_cap CHECK (active <= cap),
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id),
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id)
);

INSERT INTO buyer_holds (org_id, event_id, user_id, active, cap)
SELECT org_id, event_id, user_id, count(*), 2147483647
FROM seat_holds WHERE status = 'active' GROUP BY org_id, event_id, user_id;

CREATE FUNCTION buyer_holds_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE buyer_holds b SET active = b.active - d.n
    FROM (SELECT n.org_id, n.event_id, n.user_id, count(*) AS n
          FROM ended_new n JOIN ended_old o ON o.id = n.id
          WHERE o.status = 'active' AND n.status <> 'active'
          GROUP BY n.org_id, n.event_id, n.user_id) d
    WHERE b.org_id = d.org_id AND b.event_id = d.event_id AND b.user_id = d.user_id;
    RETURN NULL;
END $$;
CREATE TRIGGER seat_holds_ended AFTER UPDATE ON seat_holds
    REFERENCING OLD TABLE AS ended_old NEW TABLE AS ended_new
    FOR EACH STATEMENT EXECUTE FUNCTION buyer_holds_ended();

---- create above / drop below ----

DROP TRIGGER seat_holds_ended ON seat_holds;
DROP FUNCTION buyer_holds_ended();
DROP TABLE buyer_holds;
DROP INDEX audit_log_feed_idx;
CREATE INDEX audit_log_org_at_idx ON audit_log (org_id, event_id, at DESC);
ALTER TABLE audit_log DROP COLUMN xid;
