-- The waitlist: buyers waiting for seats of an event, first come first
-- served, and the durable queue of work that offers freed seats to them.

ALTER TABLE seat_holds DROP CONSTRAINT seat_holds_source_check;
ALTER TABLE seat_holds ADD CONSTRAINT seat_holds_source_check
    CHECK (source IN ('web', 'api', 'box_office', 'waitlist'));

CREATE TABLE waitlist_entries (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- seq is the place in line: ids are random, creation times can tie.
    seq         bigserial NOT NULL UNIQUE,
    org_id      uuid NOT NULL,
    event_id    uuid NOT NULL,
    user_id     uuid NOT NULL,
    seats       int  NOT NULL CHECK (seats BETWEEN 1 AND 100),
    category    text CHECK (length(category) BETWEEN 1 AND 40),
    section_id  uuid,
    status      text NOT NULL DEFAULT 'waiting' CHECK (status IN ('waiting', 'offered', 'left')),
    hold_ids    uuid[],
    offered_at  timestamptz,
    offer_until timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((status = 'offered') = (hold_ids IS NOT NULL)),
    UNIQUE (org_id, id),
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id),
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id),
    FOREIGN KEY (org_id, event_id, section_id) REFERENCES sections (org_id, event_id, id)
);
-- One place in line per buyer and event.
CREATE UNIQUE INDEX waitlist_one_waiting ON waitlist_entries (org_id, event_id, user_id) WHERE status = 'waiting';
CREATE INDEX waitlist_line_idx ON waitlist_entries (event_id, seq) WHERE status = 'waiting';

-- Work for the offer workers: "seats of this event may have freed up".
-- Rows are written by the trigger below in the transaction that freed the
-- seats, so a freed seat is never forgotten, whatever process dies when; a
-- worker deletes the rows it claimed in the transaction that makes the
-- offers, so the work is done exactly once.
CREATE TABLE waitlist_work (
    id        bigserial PRIMARY KEY,
    org_id    uuid NOT NULL,
    event_id  uuid NOT NULL,
    queued_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id)
);
CREATE INDEX waitlist_work_event_idx ON waitlist_work (event_id, id);

-- Every statement that frees a seat writes its audit rows in its own
-- transaction (release, expiry, cancellation, unblock), so one statement
-- trigger on the audit log covers them all, present and future. Events
-- nobody waits for cost one index probe.
CREATE FUNCTION waitlist_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO waitlist_work (org_id, event_id)
    SELECT DISTINCT n.org_id, n.event_id FROM freed n
    WHERE n.action IN ('hold.released', 'hold.expired', 'booking.cancelled', 'seat.unblocked')
      AND n.event_id IS NOT NULL
      AND EXISTS (SELECT 1 FROM waitlist_entries w WHERE w.event_id = n.event_id AND w.status = 'waiting');
    RETURN NULL;
END $$;
CREATE TRIGGER audit_log_waitlist AFTER INSERT ON audit_log
    REFERENCING NEW TABLE AS freed
    FOR EACH STATEMENT EXECUTE FUNCTION waitlist_enqueue();

---- create above / drop below ----

DROP TRIGGER audit_log_waitlist ON audit_log;
DROP FUNCTION waitlist_enqueue();
DROP TABLE waitlist_work, waitlist_entries;
ALTER TABLE seat_holds DROP CONSTRAINT seat_holds_source_check;
ALTER TABLE seat_holds ADD CONSTRAINT seat_holds_source_check CHECK (source IN ('web', 'api', 'box_office'));
