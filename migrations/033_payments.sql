-- Buyers pay for their holds through a payment provider (Stripe, or the
-- embedded test provider), and a booking is made only from the provider's
-- confirmation (docs/payments.md, docs/architecture.md#payments).
--
-- A payment covers the holds a buyer had when they started paying
-- (payment_holds, with the price of each seat then); its amount is their
-- sum, in integer minor units of the event's currency. The status follows
-- the provider's word: requires_payment → processing → succeeded | failed
-- | canceled, and a succeeded payment becomes refunded or
-- partially_refunded as its refunds succeed. A failed payment may still
-- succeed (the buyer tries another card on the same intent).
CREATE TABLE payments (
    org_id          uuid NOT NULL,
    id              uuid NOT NULL,
    event_id        uuid NOT NULL,
    user_id         uuid NOT NULL,
    -- The buyer's Idempotency-Key: the same key answers the same payment.
    -- The provider gets a key derived from the payment's id instead, which
    -- is unique across the provider account (two buyers may send one key).
    idempotency_key text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 200),
    amount_minor    bigint NOT NULL CHECK (amount_minor > 0),
    currency        text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    status          text NOT NULL DEFAULT 'requires_payment' CHECK (status IN
                        ('requires_payment', 'processing', 'succeeded', 'failed', 'canceled', 'refunded', 'partially_refunded')),
    provider        text NOT NULL CHECK (provider IN ('stripe', 'test')),
    -- The provider's PaymentIntent, set once the provider made it.
    intent_id       text CHECK (length(intent_id) BETWEEN 1 AND 255),
    -- The payment's holds are kept until then; an intent still unpaid then
    -- is canceled.
    deadline        timestamptz NOT NULL,
    booking_id      uuid,
    -- The last declined attempt's sentence, fit for the buyer.
    failure_message text,
    -- Why seatd refunded the whole payment itself: a seat it paid for was
    -- taken by someone else after its holds lapsed. Shown to the buyer.
    refund_reason   text,
    -- Refunded so far: the greater of the refunds that succeeded and the
    -- charge's refunded total the provider last reported (a refund made on
    -- the provider's dashboard is known only from the latter).
    refunded_minor  bigint NOT NULL DEFAULT 0 CHECK (refunded_minor >= 0),
    charge_refunded_minor bigint NOT NULL DEFAULT 0,
    -- The provider's time of the status last applied: an event about an
    -- older moment does not undo a newer non-final status (a decline
    -- delivered after the retry that is processing).
    status_at       timestamptz NOT NULL DEFAULT now(),
    -- When the reconciler next asks the provider about a payment not
    -- settled yet (its due order is the reconciler's cursor).
    next_check_at   timestamptz NOT NULL,
    -- The test provider's record of the intent (payment.TestIntent), kept
    -- beside its payment so a delayed card is answered after a restart.
    test_intent     jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, id),
    UNIQUE (org_id, user_id, idempotency_key),
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id),
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id),
    FOREIGN KEY (org_id, booking_id) REFERENCES bookings (org_id, id)
);
-- A provider event names its payment in its metadata (organization and
-- payment); one without it (a refund made on the provider's dashboard) is
-- found by its intent, as is the test provider's record.
CREATE INDEX payments_intent_idx ON payments (intent_id) WHERE intent_id IS NOT NULL;
CREATE INDEX payments_event_idx ON payments (org_id, event_id, created_at);
CREATE INDEX payments_user_idx ON payments (org_id, user_id, event_id, created_at);
CREATE INDEX payments_due_idx ON payments (next_check_at)
    WHERE status IN ('requires_payment', 'processing', 'failed');

-- The holds a payment covers, with each seat's price when it started: the
-- tickets it makes carry these prices, whatever the categories cost later.
CREATE TABLE payment_holds (
    org_id      uuid NOT NULL,
    payment_id  uuid NOT NULL,
    hold_id     uuid NOT NULL,
    seat_id     uuid NOT NULL,
    category    text,
    price_minor bigint NOT NULL CHECK (price_minor >= 0),
    PRIMARY KEY (org_id, payment_id, hold_id),
    FOREIGN KEY (org_id, payment_id) REFERENCES payments (org_id, id) ON DELETE CASCADE,
    FOREIGN KEY (org_id, hold_id) REFERENCES seat_holds (org_id, id)
);

-- Every provider event applied, once: a redelivery (or twenty parallel
-- copies) finds its id here and changes nothing. result says what it did
-- (applied, or ignored: news older than what the payment knows).
CREATE TABLE payment_events (
    org_id      uuid NOT NULL,
    event_id    text NOT NULL CHECK (length(event_id) BETWEEN 1 AND 255),
    payment_id  uuid NOT NULL,
    type        text NOT NULL,
    result      text NOT NULL CHECK (result IN ('applied', 'ignored')),
    created_at  timestamptz NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, event_id),
    FOREIGN KEY (org_id, payment_id) REFERENCES payments (org_id, id) ON DELETE CASCADE
);
CREATE INDEX payment_events_payment_idx ON payment_events (org_id, payment_id, applied_at);

-- Money returned: a cancellation of paid tickets (their prices), or the
-- whole payment when its seats could not be sold. requested: written, the
-- provider not yet answered (the reconciler sends it again with the same
-- key); pending, succeeded, failed, canceled: the provider's word. A
-- failed refund is retried as a new attempt with a key of its own.
CREATE TABLE refunds (
    org_id             uuid NOT NULL,
    id                 uuid NOT NULL,
    payment_id         uuid NOT NULL,
    booking_id         uuid,
    amount_minor       bigint NOT NULL CHECK (amount_minor > 0),
    currency           text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    status             text NOT NULL DEFAULT 'requested' CHECK (status IN
                           ('requested', 'pending', 'succeeded', 'failed', 'canceled')),
    reason             text NOT NULL CHECK (reason IN ('cancelled', 'seats_taken')),
    note               text NOT NULL DEFAULT '',
    provider_refund_id text CHECK (length(provider_refund_id) BETWEEN 1 AND 255),
    idempotency_key    text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    attempt            int NOT NULL DEFAULT 1 CHECK (attempt >= 1),
    failure_reason     text,
    -- The seats whose prices it returns (every seat of the payment for a
    -- whole refund): the organizer's figures per category read them.
    seat_ids           uuid[] NOT NULL DEFAULT '{}',
    requested_by       uuid,
    next_check_at      timestamptz NOT NULL DEFAULT now(),
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, id),
    UNIQUE (org_id, idempotency_key),
    FOREIGN KEY (org_id, payment_id) REFERENCES payments (org_id, id),
    FOREIGN KEY (org_id, booking_id) REFERENCES bookings (org_id, id),
    FOREIGN KEY (org_id, requested_by) REFERENCES users (org_id, id)
);
CREATE INDEX refunds_payment_idx ON refunds (org_id, payment_id, created_at);
CREATE INDEX refunds_provider_idx ON refunds (provider_refund_id) WHERE provider_refund_id IS NOT NULL;
CREATE INDEX refunds_due_idx ON refunds (next_check_at) WHERE status = 'requested';
CREATE INDEX refunds_failed_idx ON refunds (org_id, created_at) WHERE status = 'failed';

-- A hold being paid for names its payment: the buyer's cart shows it as
-- paying, and the buyer cannot release it while the payment may still
-- succeed. Its held_until is the payment's deadline, so the reaper leaves
-- it until then. No foreign key: the hold statement would check it for
-- every seat it holds, and it writes none.
ALTER TABLE seat_holds ADD COLUMN payment_id uuid;

-- A booking made from a payment names it.
ALTER TABLE bookings ADD COLUMN payment_id uuid,
    ADD FOREIGN KEY (org_id, payment_id) REFERENCES payments (org_id, id);
CREATE UNIQUE INDEX bookings_payment ON bookings (org_id, payment_id) WHERE payment_id IS NOT NULL;

-- The payment flow's audit rows (no seat: the change feed passes them by)
-- become webhooks for integrators through the outbox trigger.
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
        WHEN 'booking.paid' THEN 'booking.paid'
        WHEN 'payment.failed' THEN 'payment.failed'
        WHEN 'refund.succeeded' THEN 'refund.succeeded'
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
        WHEN 'ticket.checked_in' THEN 'ticket.checked_in'
    END
$$;
DROP INDEX bookings_payment;
ALTER TABLE bookings DROP COLUMN payment_id;
ALTER TABLE seat_holds DROP COLUMN payment_id;
DROP TABLE refunds, payment_events, payment_holds, payments;
