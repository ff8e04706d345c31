-- The buyer's mail about a booking: its confirmation (every ticket's QR
-- code and a PDF of the tickets) when it is made, and a notice when some
-- or all of its tickets are cancelled. The statement that makes or
-- cancels the booking queues a small row here, in its own transaction, so
-- a sale that commits always gets its mail and one that rolls back never
-- does; a retry of a sale (same idempotency key) inserts no booking and
-- so queues nothing. A worker in every process renders each row into the
-- mail outbox (migration 030) and deletes it in one transaction, with a
-- dedupe key per booking and notice, so a row is mailed once even when
-- two workers race.

CREATE TABLE booking_mail (
    org_id     uuid        NOT NULL,
    id         bigserial,
    booking_id uuid        NOT NULL,
    kind       text        NOT NULL CHECK (kind IN ('confirmation', 'cancellation')),
    -- For a cancellation, the tickets this statement cancelled.
    tickets    uuid[]      NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, id),
    FOREIGN KEY (org_id, booking_id) REFERENCES bookings (org_id, id)
);
CREATE INDEX booking_mail_queue ON booking_mail (id);

-- Announced like the other queues (migration 029): coalesced, in the
-- transaction that queued the row.
CREATE FUNCTION booking_mail_confirm() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO booking_mail (org_id, booking_id, kind) VALUES (NEW.org_id, NEW.id, 'confirmation');
    IF pg_try_advisory_xact_lock(hashtext('seatd_booking_mail')) THEN
        PERFORM pg_notify('seatd_booking_mail', '');
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER bookings_mail_confirm AFTER INSERT ON bookings
    FOR EACH ROW EXECUTE FUNCTION booking_mail_confirm();

-- One notice per booking per cancelling statement, naming the tickets it
-- cancelled (a transition table: a column list is not allowed with one,
-- so every update of tickets runs this, and finds nothing unless a
-- ticket went from live to cancelled).
CREATE FUNCTION booking_mail_cancel() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO booking_mail (org_id, booking_id, kind, tickets)
    SELECT n.org_id, n.booking_id, 'cancellation', array_agg(n.id ORDER BY n.id)
    FROM tickets_new n JOIN tickets_old o ON o.id = n.id
    WHERE o.cancelled_at IS NULL AND n.cancelled_at IS NOT NULL
    GROUP BY n.org_id, n.booking_id;
    IF FOUND AND pg_try_advisory_xact_lock(hashtext('seatd_booking_mail')) THEN
        PERFORM pg_notify('seatd_booking_mail', '');
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER tickets_mail_cancel AFTER UPDATE ON tickets
    REFERENCING OLD TABLE AS tickets_old NEW TABLE AS tickets_new
    FOR EACH STATEMENT EXECUTE FUNCTION booking_mail_cancel();

---- create above / drop below ----

DROP TRIGGER tickets_mail_cancel ON tickets;
DROP TRIGGER bookings_mail_confirm ON bookings;
DROP FUNCTION booking_mail_cancel(), booking_mail_confirm();
DROP TABLE booking_mail;
