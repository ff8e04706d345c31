-- A buyer joining or leaving an event's waitlist becomes a webhook type of
-- its own (waitlist.joined, waitlist.left), so an integrator can follow
-- the demand behind a sold-out event, not only the offers. The audit rows
-- already exist (migration 024's feed reads them); the outbox trigger
-- maps their actions here.
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
    END
$$;
