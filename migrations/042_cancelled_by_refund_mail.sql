-- Who last cancelled tickets of a booking (the acting user: the buyer
-- themselves, or staff), so the buyer's page says who did it. NULL for
-- bookings never cancelled, and for cancellations made before this column.
ALTER TABLE bookings ADD COLUMN cancelled_by uuid;

-- The buyer hears when money is returned: a refund of a booking that
-- succeeds queues a booking mail notice in the transaction that records
-- the success (the provider's answer, or its webhook), naming the refund,
-- its amount and currency, and the booking's tickets whose prices it
-- returns. A refund that failed is staff's to retry (docs/payments.md);
-- a webhook that reports a success already recorded changes no status
-- and queues nothing, and the mail's dedupe key per refund covers the
-- rest. A refund without a booking (the whole payment, when its seats
-- were taken) is told on the payment's page.
ALTER TABLE booking_mail
    DROP CONSTRAINT booking_mail_kind_check,
    ADD CONSTRAINT booking_mail_kind_check CHECK (kind IN ('confirmation', 'cancellation', 'refund')),
    ADD COLUMN refund_id uuid,
    ADD COLUMN amount_minor bigint,
    ADD COLUMN currency text;

CREATE FUNCTION booking_mail_refund() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.booking_id IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO booking_mail (org_id, booking_id, kind, tickets, refund_id, amount_minor, currency)
    SELECT NEW.org_id, NEW.booking_id, 'refund',
           coalesce((SELECT array_agg(t.id ORDER BY t.id) FROM tickets t
                     WHERE t.org_id = NEW.org_id AND t.booking_id = NEW.booking_id AND t.seat_id = ANY (NEW.seat_ids)), '{}'),
           NEW.id, NEW.amount_minor, NEW.currency;
    IF pg_try_advisory_xact_lock(hashtext('seatd_booking_mail')) THEN
        PERFORM pg_notify('seatd_booking_mail', '');
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER refunds_mail_succeeded AFTER UPDATE OF status ON refunds
    FOR EACH ROW WHEN (NEW.status = 'succeeded' AND OLD.status IS DISTINCT FROM 'succeeded')
    EXECUTE FUNCTION booking_mail_refund();
CREATE TRIGGER refunds_mail_inserted AFTER INSERT ON refunds
    FOR EACH ROW WHEN (NEW.status = 'succeeded')
    EXECUTE FUNCTION booking_mail_refund();

---- create above / drop below ----

DROP TRIGGER refunds_mail_inserted ON refunds;
DROP TRIGGER refunds_mail_succeeded ON refunds;
DROP FUNCTION booking_mail_refund();
DELETE FROM booking_mail WHERE kind = 'refund';
ALTER TABLE booking_mail
    DROP COLUMN currency,
    DROP COLUMN amount_minor,
    DROP COLUMN refund_id,
    DROP CONSTRAINT booking_mail_kind_check,
    ADD CONSTRAINT booking_mail_kind_check CHECK (kind IN ('confirmation', 'cancellation'));
ALTER TABLE bookings DROP COLUMN cancelled_by;
