-- The box office: holds for a named customer, sales at the counter with a
-- human booking reference, cancellations, and house seats.

-- The customer a box-office hold is for. A row of its own rather than
-- columns of seat_holds: the hold statement stays the one it is, and a
-- hold without a customer costs nothing more.
CREATE TABLE hold_customers (
    hold_id uuid PRIMARY KEY REFERENCES seat_holds (id),
    org_id  uuid NOT NULL REFERENCES organizations (id),
    name    text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    email   text NOT NULL CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 254),
    note    text NOT NULL DEFAULT '' CHECK (length(note) <= 1000)
);

-- Short references people read out at the counter: 8 characters of an
-- alphabet without 0/O, 1/I/L (shown as XXXX-XXXX).
CREATE FUNCTION booking_reference() RETURNS text LANGUAGE sql VOLATILE AS $$
    SELECT string_agg(substr('ABCDEFGHJKMNPQRSTUVWXYZ23456789', 1 + floor(random() * 31)::int, 1), '')
    FROM generate_series(1, 8)
$$;

ALTER TABLE bookings DROP CONSTRAINT bookings_status_check;
ALTER TABLE bookings
    ADD CONSTRAINT bookings_status_check CHECK (status IN ('confirmed', 'partially_cancelled', 'cancelled')),
    ADD COLUMN reference      text,
    ADD COLUMN channel        text NOT NULL DEFAULT 'web' CHECK (channel IN ('web', 'box_office')),
    ADD COLUMN payment_method text CHECK (payment_method IN ('cash', 'card', 'comp')),
    ADD COLUMN customer_name  text CHECK (length(customer_name) BETWEEN 1 AND 200),
    ADD COLUMN customer_email text CHECK (customer_email = lower(customer_email)),
    ADD COLUMN customer_note  text NOT NULL DEFAULT '',
    ADD COLUMN cancelled_at   timestamptz,
    ADD COLUMN cancel_reason  text,
    ADD CONSTRAINT bookings_box_office CHECK ((channel = 'box_office') = (payment_method IS NOT NULL AND customer_email IS NOT NULL));
UPDATE bookings SET reference = booking_reference();
ALTER TABLE bookings ALTER COLUMN reference SET NOT NULL, ALTER COLUMN reference SET DEFAULT booking_reference(),
    ADD CONSTRAINT bookings_reference_format CHECK (reference ~ '^[A-HJKMNP-Z2-9]{8}$');
CREATE UNIQUE INDEX bookings_reference ON bookings (org_id, reference);
CREATE INDEX bookings_customer_email ON bookings (org_id, customer_email) WHERE customer_email IS NOT NULL;

-- A seat sold, cancelled and sold again has several tickets, one live.
ALTER TABLE tickets DROP CONSTRAINT tickets_seat_id_key;
ALTER TABLE tickets
    ADD COLUMN cancelled_at  timestamptz,
    ADD COLUMN cancel_reason text;
CREATE UNIQUE INDEX tickets_one_live_per_seat ON tickets (seat_id) WHERE cancelled_at IS NULL;

-- House seats: named allocations of blocked seats ("Sponsor", "Press")
-- released to sale in one action.
CREATE TABLE house_allocations (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id      uuid NOT NULL,
    event_id    uuid NOT NULL,
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    created_by  uuid NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    released_at timestamptz,
    released_by uuid,
    UNIQUE (org_id, id),
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id),
    FOREIGN KEY (org_id, created_by) REFERENCES users (org_id, id)
);
CREATE TABLE house_allocation_seats (
    allocation_id uuid NOT NULL,
    org_id        uuid NOT NULL,
    event_id      uuid NOT NULL,
    seat_id       uuid NOT NULL,
    -- live while the allocation is not released: a seat is in at most one
    -- live allocation.
    live          boolean NOT NULL DEFAULT true,
    PRIMARY KEY (allocation_id, seat_id),
    FOREIGN KEY (org_id, allocation_id) REFERENCES house_allocations (org_id, id),
    FOREIGN KEY (org_id, event_id, seat_id) REFERENCES seats (org_id, event_id, id)
);
CREATE UNIQUE INDEX house_allocation_seats_live ON house_allocation_seats (seat_id) WHERE live;

---- create above / drop below ----

DROP TABLE house_allocation_seats, house_allocations;
DROP INDEX tickets_one_live_per_seat;
ALTER TABLE tickets DROP COLUMN cancelled_at, DROP COLUMN cancel_reason, ADD CONSTRAINT tickets_seat_id_key UNIQUE (seat_id);
DROP INDEX bookings_customer_email, bookings_reference;
ALTER TABLE bookings DROP CONSTRAINT bookings_status_check, DROP CONSTRAINT bookings_box_office,
    DROP COLUMN reference, DROP COLUMN channel, DROP COLUMN payment_method, DROP COLUMN customer_name,
    DROP COLUMN customer_email, DROP COLUMN customer_note, DROP COLUMN cancelled_at, DROP COLUMN cancel_reason;
ALTER TABLE bookings ADD CONSTRAINT bookings_status_check CHECK (status IN ('confirmed'));
DROP FUNCTION booking_reference();
DROP TABLE hold_customers;
