-- Tickets get in at the door (docs/architecture.md, "Ticket codes" and
-- "Check-ins").

-- Staff who only scan tickets at the door, and API keys in that role (a
-- scanning device that signs in with a key).
ALTER TABLE users DROP CONSTRAINT users_role_check,
    ADD CONSTRAINT users_role_check CHECK (role IN ('buyer', 'organizer', 'box_office', 'door'));
ALTER TABLE api_keys DROP CONSTRAINT api_keys_role_check,
    ADD CONSTRAINT api_keys_role_check CHECK (role IN ('buyer', 'organizer', 'box_office', 'door'));

-- One Ed25519 key pair per event signs its tickets' codes (package
-- ticket). Made on first use. The public key is what a scanner downloads
-- to verify codes offline; the private key's 32-byte seed is sealed with
-- AES-256-GCM under a key derived from SEATD_TICKET_SECRET, the event as
-- the additional data (a sealed seed moved to another event's row does not
-- open). Codes are not stored: Ed25519 signatures are deterministic, so a
-- ticket's code is signed again from its row whenever it is shown.
CREATE TABLE ticket_keys (
    org_id      uuid NOT NULL,
    event_id    uuid NOT NULL,
    public_key  bytea NOT NULL CHECK (length(public_key) = 32),
    sealed_seed bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, event_id),
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id)
);

-- Admissions: at most one per ticket, whatever the number of scanners and
-- processes (the primary key decides). scanned_at is the scanner's clock
-- (when the person went in, offline scans included); admitted_at is the
-- server's (when it was recorded).
CREATE TABLE checkins (
    org_id      uuid NOT NULL,
    ticket_id   uuid NOT NULL,
    event_id    uuid NOT NULL,
    seat_id     uuid NOT NULL,
    entrance    text NOT NULL CHECK (length(entrance) BETWEEN 1 AND 60),
    scanned_at  timestamptz NOT NULL,
    admitted_at timestamptz NOT NULL DEFAULT now(),
    scanned_by  uuid NOT NULL,
    offline     boolean NOT NULL DEFAULT false,
    PRIMARY KEY (ticket_id, org_id),
    FOREIGN KEY (ticket_id, org_id) REFERENCES tickets (id, org_id),
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id),
    FOREIGN KEY (org_id, scanned_by) REFERENCES users (org_id, id)
);
CREATE INDEX checkins_event_idx ON checkins (org_id, event_id, entrance);

-- The door reads an event's tickets: the revoked ones for the scanners,
-- the live ones counted for the dashboard. Until now tickets were read by
-- booking only.
CREATE INDEX tickets_event_idx ON tickets (org_id, event_id) INCLUDE (cancelled_at);

-- Scans that let someone in who should not have been: a ticket admitted
-- again while scanners were offline (the later scan by scanned_at), or a
-- cancelled ticket an offline scanner did not know was revoked. Staff list
-- them; the unique key makes a repeated sync of the same scan harmless.
CREATE TABLE checkin_conflicts (
    id          uuid NOT NULL DEFAULT gen_random_uuid(),
    org_id      uuid NOT NULL,
    event_id    uuid NOT NULL,
    ticket_id   uuid NOT NULL,
    reason      text NOT NULL CHECK (reason IN ('duplicate', 'cancelled')),
    entrance    text NOT NULL CHECK (length(entrance) BETWEEN 1 AND 60),
    scanned_at  timestamptz NOT NULL,
    scanned_by  uuid NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, id),
    UNIQUE (ticket_id, entrance, scanned_at, org_id),
    FOREIGN KEY (ticket_id, org_id) REFERENCES tickets (id, org_id),
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id),
    FOREIGN KEY (org_id, scanned_by) REFERENCES users (org_id, id)
);
CREATE INDEX checkin_conflicts_event_idx ON checkin_conflicts (org_id, event_id, scanned_at);

-- An admission writes an audit row (action ticket.checked_in, no seat_id,
-- so the seat change feed does not read it); the outbox trigger turns it
-- into the ticket.checked_in webhook.
CREATE OR REPLACE FUNCTION webhook_type(action text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
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
        WHEN 'waitlist.joined' THEN 'waitlist.joined'
        WHEN 'waitlist.left' THEN 'waitlist.left'
        WHEN 'ticket.checked_in' THEN 'ticket.checked_in'
    END
$$;

---- create above / drop below ----

CREATE OR REPLACE FUNCTION webhook_type(action text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
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
        WHEN 'waitlist.joined' THEN 'waitlist.joined'
        WHEN 'waitlist.left' THEN 'waitlist.left'
    END
$$;
DROP TABLE checkin_conflicts, checkins, ticket_keys;
DROP INDEX tickets_event_idx;
ALTER TABLE api_keys DROP CONSTRAINT api_keys_role_check,
    ADD CONSTRAINT api_keys_role_check CHECK (role IN ('buyer', 'organizer', 'box_office'));
ALTER TABLE users DROP CONSTRAINT users_role_check,
    ADD CONSTRAINT users_role_check CHECK (role IN ('buyer', 'organizer', 'box_office'));
