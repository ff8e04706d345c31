-- Core schema. Every row carries org_id and composite foreign keys tie
-- children to a parent of the same organization, so a row can never point
-- across tenants even if application code is wrong.

CREATE TABLE organizations (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    slug       text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9-]{1,39}$'),
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id        uuid NOT NULL REFERENCES organizations (id),
    email         text NOT NULL CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 254),
    password_hash text NOT NULL,
    role          text NOT NULL CHECK (role IN ('buyer', 'organizer', 'box_office')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (org_id, email),
    UNIQUE (org_id, id)
);

-- The scs pgxstore layout.
CREATE TABLE sessions (
    token  text PRIMARY KEY,
    data   bytea NOT NULL,
    expiry timestamptz NOT NULL
);
CREATE INDEX sessions_expiry_idx ON sessions (expiry);

CREATE TABLE events (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id     uuid NOT NULL REFERENCES organizations (id),
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    venue      text NOT NULL DEFAULT '',
    starts_at  timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (org_id, id)
);

CREATE TABLE sections (
    id       uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id   uuid NOT NULL,
    event_id uuid NOT NULL,
    label    text NOT NULL CHECK (length(label) BETWEEN 1 AND 20),
    name     text NOT NULL,
    position int  NOT NULL DEFAULT 0,
    UNIQUE (event_id, label),
    UNIQUE (org_id, event_id, id),
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id)
);

CREATE TABLE seats (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id     uuid NOT NULL,
    event_id   uuid NOT NULL,
    section_id uuid NOT NULL,
    row_label  text NOT NULL CHECK (length(row_label) BETWEEN 1 AND 10),
    number     int  NOT NULL CHECK (number > 0),
    idx        int  NOT NULL CHECK (idx >= 0),
    x          int  NOT NULL DEFAULT 0,
    y          int  NOT NULL DEFAULT 0,
    status     text NOT NULL DEFAULT 'available'
               CHECK (status IN ('available', 'held', 'sold', 'blocked')),
    hold_id    uuid,
    -- version increments on every change (optimistic concurrency, and the
    -- ordering clients use to drop stale live updates).
    version    bigint NOT NULL DEFAULT 1,
    -- fence is the highest fencing token ever applied to this seat; a write
    -- carrying an older token comes from a stale lock holder and is refused.
    fence      bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (event_id, idx),
    UNIQUE (event_id, section_id, row_label, number),
    UNIQUE (org_id, event_id, id),
    FOREIGN KEY (org_id, event_id, section_id) REFERENCES sections (org_id, event_id, id),
    CHECK ((status = 'held') = (hold_id IS NOT NULL))
);
CREATE INDEX seats_event_status_idx ON seats (org_id, event_id, section_id, status);

CREATE TABLE seat_holds (
    id             uuid PRIMARY KEY,
    org_id         uuid NOT NULL,
    event_id       uuid NOT NULL,
    seat_id        uuid NOT NULL,
    user_id        uuid NOT NULL,
    status         text NOT NULL DEFAULT 'active'
                   CHECK (status IN ('active', 'converted', 'expired', 'released')),
    held_until     timestamptz NOT NULL,
    extensions     int NOT NULL DEFAULT 0 CHECK (extensions >= 0),
    fence          bigint NOT NULL,
    source         text NOT NULL CHECK (source IN ('web', 'api', 'box_office')),
    released_by    uuid,
    release_reason text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    ended_at       timestamptz,
    CHECK (held_until > created_at),
    CHECK ((status = 'active') = (ended_at IS NULL)),
    FOREIGN KEY (org_id, event_id, seat_id) REFERENCES seats (org_id, event_id, id),
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id)
);
-- The last word on "one active hold per seat", whatever the caches say.
CREATE UNIQUE INDEX seat_holds_one_active ON seat_holds (seat_id) WHERE status = 'active';
CREATE INDEX seat_holds_expiry_idx ON seat_holds (held_until) WHERE status = 'active';
CREATE INDEX seat_holds_event_active_idx ON seat_holds (org_id, event_id, held_until) WHERE status = 'active';
CREATE INDEX seat_holds_user_active_idx ON seat_holds (org_id, user_id, event_id) WHERE status = 'active';

CREATE TABLE bookings (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id          uuid NOT NULL,
    event_id        uuid NOT NULL,
    user_id         uuid NOT NULL,
    idempotency_key text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 200),
    request_hash    text NOT NULL,
    status          text NOT NULL DEFAULT 'confirmed' CHECK (status IN ('confirmed')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (org_id, user_id, idempotency_key),
    UNIQUE (org_id, id),
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id),
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id)
);

CREATE TABLE tickets (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id     uuid NOT NULL,
    event_id   uuid NOT NULL,
    booking_id uuid NOT NULL,
    seat_id    uuid NOT NULL UNIQUE, -- a seat is sold at most once
    hold_id    uuid NOT NULL UNIQUE REFERENCES seat_holds (id),
    created_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (org_id, booking_id) REFERENCES bookings (org_id, id),
    FOREIGN KEY (org_id, event_id, seat_id) REFERENCES seats (org_id, event_id, id)
);
CREATE INDEX tickets_booking_idx ON tickets (booking_id);

CREATE TABLE audit_log (
    id        bigserial PRIMARY KEY,
    org_id    uuid NOT NULL REFERENCES organizations (id),
    event_id  uuid,
    actor_id  uuid,
    action    text NOT NULL,
    entity    text NOT NULL,
    entity_id uuid,
    seat_id   uuid,
    data      jsonb NOT NULL DEFAULT '{}',
    at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_log_org_at_idx ON audit_log (org_id, event_id, at DESC);

-- Append-only: the audit trail must survive application bugs.
CREATE FUNCTION audit_log_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only';
END $$;
CREATE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_immutable();

CREATE TABLE occupancy_snapshots (
    org_id    uuid NOT NULL,
    event_id  uuid NOT NULL,
    at        timestamptz NOT NULL DEFAULT now(),
    available int NOT NULL,
    held      int NOT NULL,
    sold      int NOT NULL,
    blocked   int NOT NULL,
    PRIMARY KEY (event_id, at),
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id)
);

---- create above / drop below ----

DROP TABLE occupancy_snapshots, audit_log, tickets, bookings, seat_holds, seats, sections, events, sessions, users, organizations;
DROP FUNCTION audit_log_immutable();
