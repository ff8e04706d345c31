-- API keys: machine credentials an organizer creates. Only a SHA-256 of the
-- key is stored: the key is 256 random bits, so a fast hash is as safe as a
-- slow one (there is nothing to guess), and it lets every request find its
-- key by index.
CREATE TABLE api_keys (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id       uuid NOT NULL REFERENCES organizations (id),
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    role         text NOT NULL CHECK (role IN ('buyer', 'organizer', 'box_office')),
    -- The key acts as the user who created it, in the key's role.
    created_by   uuid NOT NULL,
    hash         bytea NOT NULL UNIQUE,
    -- The first characters of the key, shown in lists to tell keys apart.
    hint         text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz,
    UNIQUE (org_id, id),
    FOREIGN KEY (org_id, created_by) REFERENCES users (org_id, id)
);
CREATE INDEX api_keys_org_idx ON api_keys (org_id, created_at);

-- Webhook endpoints of an organization. The secret is kept as is: it signs
-- every delivery, so it must be readable (as Stripe's are).
CREATE TABLE webhook_endpoints (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id     uuid NOT NULL REFERENCES organizations (id),
    url        text NOT NULL CHECK (length(url) BETWEEN 1 AND 2000),
    events     text[] NOT NULL,
    secret     text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    deleted_at timestamptz,
    UNIQUE (org_id, id)
);
-- The trigger below looks endpoints up by organization on every audited
-- change; for an organization without webhooks that is one probe of this
-- small partial index that finds nothing.
CREATE INDEX webhook_endpoints_org_idx ON webhook_endpoints (org_id) WHERE deleted_at IS NULL;

-- The outbox: one row per endpoint and change, written by the trigger in the
-- transaction of the change. Its id orders a seat's deliveries: two changes
-- of a seat are serialized by the seat's row lock, so the later change's
-- rows get larger ids and commit later.
CREATE TABLE webhook_deliveries (
    id            bigserial PRIMARY KEY,
    public_id     uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
    org_id        uuid NOT NULL,
    endpoint_id   uuid NOT NULL,
    audit_id      bigint NOT NULL,
    type          text NOT NULL,
    event_id      uuid,
    seat_id       uuid,
    data          jsonb NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    state         text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts      int NOT NULL DEFAULT 0,
    next_at       timestamptz NOT NULL DEFAULT now(),
    -- A worker that claimed the row owns it until then (it is sending).
    locked_until  timestamptz,
    last_status   int,
    last_error    text,
    delivered_at  timestamptz,
    FOREIGN KEY (org_id, endpoint_id) REFERENCES webhook_endpoints (org_id, id)
);
-- What the workers scan: pending rows by due time, and a seat's earlier
-- pending rows (ordering).
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_at, id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_seat_idx ON webhook_deliveries (endpoint_id, seat_id, id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (org_id, endpoint_id, id DESC);

-- Each attempt to send a delivery, for the deliveries page.
CREATE TABLE webhook_attempts (
    id          bigserial PRIMARY KEY,
    delivery_id bigint NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    at          timestamptz NOT NULL DEFAULT now(),
    status      int,
    error       text,
    duration_ms int NOT NULL
);
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, id);

-- The webhook type of an audit action; NULL for actions no webhook names.
CREATE FUNCTION webhook_type(action text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE action
        WHEN 'seat.sold' THEN 'booking.created'
        WHEN 'hold.created' THEN 'hold.created'
        WHEN 'hold.extended' THEN 'hold.extended'
        WHEN 'hold.released' THEN 'hold.released'
        WHEN 'hold.expired' THEN 'hold.expired'
        WHEN 'booking.cancelled' THEN 'booking.cancelled'
        WHEN 'seat.blocked' THEN 'seat.blocked'
        WHEN 'seat.unblocked' THEN 'seat.unblocked'
        WHEN 'waitlist.offered' THEN 'waitlist.offered'
    END
$$;

-- Every seat change writes audit rows in its transaction; this statement
-- trigger turns them into outbox rows for the organization's endpoints
-- that asked for the type, in the same transaction, so a change that rolls
-- back delivers nothing and one that commits is never lost. The hold core
-- is untouched. Once per statement, not per row: a batch of holds probes
-- the endpoints once per organization in it.
CREATE FUNCTION webhook_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER audit_log_webhooks AFTER INSERT ON audit_log
    REFERENCING NEW TABLE AS audit_new
    FOR EACH STATEMENT EXECUTE FUNCTION webhook_outbox();

---- create above / drop below ----

DROP TRIGGER audit_log_webhooks ON audit_log;
DROP FUNCTION webhook_outbox();
DROP FUNCTION webhook_type(text);
DROP TABLE webhook_attempts, webhook_deliveries, webhook_endpoints, api_keys;
