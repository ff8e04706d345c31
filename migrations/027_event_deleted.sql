-- An organizer may delete a draft that nobody acted on: no seat of it was
-- ever held, blocked or sold (its change feed is empty). Deleting marks
-- the event 'deleted' rather than removing its rows: removing its seats
-- would make Postgres look for each one in every table that refers to
-- seats, and seat_holds has no index on the seat alone (one would cost
-- every hold). A deleted event is read by no one: the event reads leave
-- it out, event_open refuses it to staff as to buyers, and its seats are
-- marked blocked in the same transaction (see store.DeleteEvent). It lets
-- go of its chart version, so that chart can be deleted in turn.
ALTER TABLE events DROP CONSTRAINT events_status_check,
    ADD CONSTRAINT events_status_check CHECK (status IN ('draft', 'on_sale', 'closed', 'deleted'));

CREATE OR REPLACE FUNCTION event_open(status text, on_sale_at timestamptz, sales_end_at timestamptz, staff boolean, at timestamptz)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN staff THEN status NOT IN ('closed', 'deleted')
                ELSE status = 'on_sale' AND (on_sale_at IS NULL OR on_sale_at <= at)
                     AND (sales_end_at IS NULL OR at < sales_end_at) END
$$;

---- create above / drop below ----

CREATE OR REPLACE FUNCTION event_open(status text, on_sale_at timestamptz, sales_end_at timestamptz, staff boolean, at timestamptz)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN staff THEN status <> 'closed'
                ELSE status = 'on_sale' AND (on_sale_at IS NULL OR on_sale_at <= at)
                     AND (sales_end_at IS NULL OR at < sales_end_at) END
$$;

-- Deleted events come back closed.
UPDATE events SET status = 'closed' WHERE status = 'deleted';
ALTER TABLE events DROP CONSTRAINT events_status_check,
    ADD CONSTRAINT events_status_check CHECK (status IN ('draft', 'on_sale', 'closed'));
