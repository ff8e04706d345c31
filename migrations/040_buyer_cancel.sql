-- A buyer may cancel their own paid booking, refunded through the payment
-- provider, until this many hours before the event starts (docs/payments.md).
-- NULL: buyers cannot cancel (the default).
ALTER TABLE events ADD COLUMN buyer_cancel_hours integer
    CHECK (buyer_cancel_hours BETWEEN 0 AND 8784);
