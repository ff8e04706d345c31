-- Every process runs a waitlist worker and a webhook worker and caches API
-- keys, and hears Postgres through one LISTEN connection (internal/notify).
-- The statements that queue waitlist work or webhook deliveries, or revoke
-- a key, now announce it in their own transaction: a worker wakes when
-- there is work instead of polling for it, and a revocation reaches every
-- process's cache, whatever statement made it. The work itself stays in
-- its table; an announcement only says "look".
--
-- Announcements are coalesced. Postgres sends identical notifications of
-- one transaction once, so a transaction that queues work many times (a
-- batch of holds, a reaper round) announces it once. And a notifying
-- transaction holds Postgres's one notify-queue lock from its commit until
-- its commit record is flushed, so notifying transactions commit one at a
-- time: announcing every transaction of a busy sale cost 3 to 4 times the
-- commits per second (8 clients each inserting an audited change with a
-- webhook, durable commits: ~200/s announced against ~800/s not). So a
-- transaction announces work only if no other transaction announcing the
-- same channel is in flight (a transaction-level advisory lock, tried,
-- never waited for); otherwise it leaves the announcement to that one.
-- It may commit just after that one, so the workers look again shortly
-- after each announcement, and keep a slow backstop poll.

CREATE FUNCTION notify_work() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF pg_try_advisory_xact_lock(hashtext(TG_ARGV[0])) THEN
        PERFORM pg_notify(TG_ARGV[0], '');
    END IF;
    RETURN NULL;
END $$;

-- Waitlist work is queued by JoinWaitlist and by waitlist_enqueue (the
-- audit log's trigger, for freed seats). A row trigger fires only for rows
-- inserted: a statement trigger would fire for every audited change, whose
-- INSERT ... SELECT usually inserts none.
CREATE TRIGGER waitlist_work_queued AFTER INSERT ON waitlist_work
    FOR EACH ROW EXECUTE FUNCTION notify_work('seatd_waitlist');

-- A redelivery makes a delivered or given-up delivery pending again.
CREATE TRIGGER webhook_deliveries_redelivered AFTER UPDATE OF state ON webhook_deliveries
    FOR EACH ROW WHEN (OLD.state <> 'pending' AND NEW.state = 'pending')
    EXECUTE FUNCTION notify_work('seatd_webhooks');

-- The outbox trigger announces the deliveries it wrote, as above.
CREATE OR REPLACE FUNCTION webhook_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_deliveries (org_id, endpoint_id, audit_id, type, event_id, seat_id, data, created_at)
    SELECT n.org_id, e.id, n.id, webhook_type(n.action), n.event_id, n.seat_id,
           n.data || jsonb_strip_nulls(jsonb_build_object('seat_id', n.seat_id, n.entity || '_id', n.entity_id,
                                                          'actor_id', n.actor_id)),
           n.at
    FROM audit_new n
    JOIN webhook_endpoints e ON e.org_id = n.org_id AND e.deleted_at IS NULL
                            AND webhook_type(n.action) = ANY (e.events)
    ORDER BY n.id, e.id;
    IF FOUND AND pg_try_advisory_xact_lock(hashtext('seatd_webhooks')) THEN
        PERFORM pg_notify('seatd_webhooks', '');
    END IF;
    RETURN NULL;
END $$;

-- A revoked key is announced with its id, always (revocations are rare);
-- revoking it again is not.
CREATE FUNCTION api_key_revoked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('seatd_api_keys', NEW.id::text);
    RETURN NULL;
END $$;
CREATE TRIGGER api_keys_revoked AFTER UPDATE OF revoked_at ON api_keys
    FOR EACH ROW WHEN (OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL)
    EXECUTE FUNCTION api_key_revoked();

---- create above / drop below ----

DROP TRIGGER api_keys_revoked ON api_keys;
DROP FUNCTION api_key_revoked();
CREATE OR REPLACE FUNCTION webhook_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_deliveries (org_id, endpoint_id, audit_id, type, event_id, seat_id, data, created_at)
    SELECT n.org_id, e.id, n.id, webhook_type(n.action), n.event_id, n.seat_id,
           n.data || jsonb_strip_nulls(jsonb_build_object('seat_id', n.seat_id, n.entity || '_id', n.entity_id,
                                                          'actor_id', n.actor_id)),
           n.at
    FROM audit_new n
    JOIN webhook_endpoints e ON e.org_id = n.org_id AND e.deleted_at IS NULL
                            AND webhook_type(n.action) = ANY (e.events)
    ORDER BY n.id, e.id;
    RETURN NULL;
END $$;
DROP TRIGGER webhook_deliveries_redelivered ON webhook_deliveries;
DROP TRIGGER waitlist_work_queued ON waitlist_work;
DROP FUNCTION notify_work();
