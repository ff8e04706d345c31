-- The audit log's waitlist trigger looked for waiting buyers by event id
-- alone; event ids are unique per organization (the key is the pair), so
-- another organization's line on an event of the same id queued work for
-- this one. It matches the organization too now, as every query does.
CREATE OR REPLACE FUNCTION waitlist_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO waitlist_work (org_id, event_id)
    SELECT DISTINCT n.org_id, n.event_id FROM freed n
    WHERE n.action IN ('hold.released', 'hold.expired', 'booking.cancelled', 'seat.unblocked')
      AND n.event_id IS NOT NULL
      AND EXISTS (SELECT 1 FROM waitlist_entries w
                  WHERE w.org_id = n.org_id AND w.event_id = n.event_id AND w.status = 'waiting');
    RETURN NULL;
END $$;

---- create above / drop below ----

CREATE OR REPLACE FUNCTION waitlist_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO waitlist_work (org_id, event_id)
    SELECT DISTINCT n.org_id, n.event_id FROM freed n
    WHERE n.action IN ('hold.released', 'hold.expired', 'booking.cancelled', 'seat.unblocked')
      AND n.event_id IS NOT NULL
      AND EXISTS (SELECT 1 FROM waitlist_entries w WHERE w.event_id = n.event_id AND w.status = 'waiting');
    RETURN NULL;
END $$;
