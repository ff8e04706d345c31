-- What an event's live tickets were paid, per seat category and currency:
-- the dashboard's and the occupancy answer's sold revenue (as paid, not at
-- the category's price today), read in one small query however many
-- tickets there are. Kept by statement triggers on tickets, in the same
-- transaction as the sale or the cancellation, so it never disagrees with
-- them. A transaction adds to one of 16 slots (by its id), so concurrent
-- sales of one category do not queue on one row until they commit; the
-- reader sums the slots. A slot may go below zero (a cancellation lands on
-- another slot than its sale); the sum does not.
CREATE TABLE event_revenue (
    org_id     uuid NOT NULL,
    event_id   uuid NOT NULL,
    category   text NOT NULL,
    currency   text NOT NULL,
    slot       smallint NOT NULL,
    paid_minor bigint NOT NULL,
    PRIMARY KEY (org_id, event_id, category, currency, slot),
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id)
);

-- The two triggers add a statement's sold tickets and take away its
-- cancelled ones, by their seats' categories, locking slots in key order
-- (two sales in one transaction never deadlock each other's slots).
CREATE FUNCTION event_revenue_sold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO event_revenue AS r (org_id, event_id, category, currency, slot, paid_minor)
    SELECT t.org_id, t.event_id, s.category, t.currency, (txid_current() % 16)::smallint, sum(t.price_minor)
    FROM sold t JOIN seats s ON s.org_id = t.org_id AND s.id = t.seat_id
    WHERE t.cancelled_at IS NULL AND s.category IS NOT NULL AND t.currency IS NOT NULL AND t.price_minor IS NOT NULL
    GROUP BY t.org_id, t.event_id, s.category, t.currency
    ORDER BY t.org_id, t.event_id, s.category, t.currency
    ON CONFLICT (org_id, event_id, category, currency, slot) DO UPDATE SET paid_minor = r.paid_minor + excluded.paid_minor;
    RETURN NULL;
END $$;
CREATE TRIGGER tickets_revenue_sold AFTER INSERT ON tickets
    REFERENCING NEW TABLE AS sold FOR EACH STATEMENT EXECUTE FUNCTION event_revenue_sold();

CREATE FUNCTION event_revenue_cancelled() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO event_revenue AS r (org_id, event_id, category, currency, slot, paid_minor)
    SELECT t.org_id, t.event_id, s.category, t.currency, (txid_current() % 16)::smallint, -sum(t.price_minor)
    FROM after t JOIN before o ON o.id = t.id JOIN seats s ON s.org_id = t.org_id AND s.id = t.seat_id
    WHERE o.cancelled_at IS NULL AND t.cancelled_at IS NOT NULL
      AND s.category IS NOT NULL AND t.currency IS NOT NULL AND t.price_minor IS NOT NULL
    GROUP BY t.org_id, t.event_id, s.category, t.currency
    ORDER BY t.org_id, t.event_id, s.category, t.currency
    ON CONFLICT (org_id, event_id, category, currency, slot) DO UPDATE SET paid_minor = r.paid_minor + excluded.paid_minor;
    RETURN NULL;
END $$;
CREATE TRIGGER tickets_revenue_cancelled AFTER UPDATE ON tickets
    REFERENCING OLD TABLE AS before NEW TABLE AS after FOR EACH STATEMENT EXECUTE FUNCTION event_revenue_cancelled();

INSERT INTO event_revenue (org_id, event_id, category, currency, slot, paid_minor)
SELECT t.org_id, t.event_id, s.category, t.currency, 0, sum(t.price_minor)
FROM tickets t JOIN seats s ON s.org_id = t.org_id AND s.id = t.seat_id
WHERE t.cancelled_at IS NULL AND s.category IS NOT NULL AND t.currency IS NOT NULL AND t.price_minor IS NOT NULL
GROUP BY t.org_id, t.event_id, s.category, t.currency;

---- create above / drop below ----

DROP TRIGGER tickets_revenue_cancelled ON tickets;
DROP TRIGGER tickets_revenue_sold ON tickets;
DROP FUNCTION event_revenue_cancelled();
DROP FUNCTION event_revenue_sold();
DROP TABLE event_revenue;
