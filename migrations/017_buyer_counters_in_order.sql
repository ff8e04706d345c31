-- A statement ending holds (the reaper's, a release, a purchase) updates
-- their buyers' counters in buyer_holds from a statement trigger. Its
-- UPDATE locked the counters in whatever order its join produced, so two
-- such statements ending holds of the same buyers at once (the reapers of
-- two processes) could deadlock; behind the 500 ms lock timeout the
-- deadlock showed as lock timeouts, of the reapers and of the purchases
-- waiting for the holds those reapers had locked. The counters are now
-- locked in key order first, the order the hold statement inserts them in.
CREATE OR REPLACE FUNCTION buyer_holds_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM buyer_holds b
    WHERE (b.org_id, b.event_id, b.user_id) IN (
        SELECT n.org_id, n.event_id, n.user_id
        FROM ended_new n JOIN ended_old o ON o.id = n.id
        WHERE o.status = 'active' AND n.status <> 'active')
    ORDER BY b.org_id, b.event_id, b.user_id
    FOR UPDATE OF b;
    UPDATE buyer_holds b SET active = b.active - d.n
    FROM (SELECT n.org_id, n.event_id, n.user_id, count(*) AS n
          FROM ended_new n JOIN ended_old o ON o.id = n.id
          WHERE o.status = 'active' AND n.status <> 'active'
          GROUP BY n.org_id, n.event_id, n.user_id) d
    WHERE b.org_id = d.org_id AND b.event_id = d.event_id AND b.user_id = d.user_id;
    RETURN NULL;
END $$;

---- create above / drop below ----

CREATE OR REPLACE FUNCTION buyer_holds_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE buyer_holds b SET active = b.active - d.n
    FROM (SELECT n.org_id, n.event_id, n.user_id, count(*) AS n
          FROM ended_new n JOIN ended_old o ON o.id = n.id
          WHERE o.status = 'active' AND n.status <> 'active'
          GROUP BY n.org_id, n.event_id, n.user_id) d
    WHERE b.org_id = d.org_id AND b.event_id = d.event_id AND b.user_id = d.user_id;
    RETURN NULL;
END $$;
