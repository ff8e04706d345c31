-- Sales of one event still queued on its revenue slots: a transaction
-- took slot txid % 16 and kept that slot's row locked until it committed,
-- and with tens of sales in flight two of them often drew the same slot
-- (the second then waited for the first's commit, WAL flush included). A
-- slot is now the backend's (pid % 256): a backend runs one transaction at
-- a time, and a pool's backends, started around the same time, have
-- nearby pids, so sales in flight together almost never share a slot. The
-- reader sums whatever slots exist; rows written under the old rule stay
-- and count.
CREATE OR REPLACE FUNCTION event_revenue_sold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO event_revenue AS r (org_id, event_id, category, currency, slot, paid_minor)
    SELECT t.org_id, t.event_id, s.category, t.currency, (pg_backend_pid() % 256)::smallint, sum(t.price_minor)
    FROM sold t JOIN seats s ON s.org_id = t.org_id AND s.id = t.seat_id
    WHERE t.cancelled_at IS NULL AND s.category IS NOT NULL AND t.currency IS NOT NULL AND t.price_minor IS NOT NULL
    GROUP BY t.org_id, t.event_id, s.category, t.currency
    ORDER BY t.org_id, t.event_id, s.category, t.currency
    ON CONFLICT (org_id, event_id, category, currency, slot) DO UPDATE SET paid_minor = r.paid_minor + excluded.paid_minor;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION event_revenue_cancelled() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO event_revenue AS r (org_id, event_id, category, currency, slot, paid_minor)
    SELECT t.org_id, t.event_id, s.category, t.currency, (pg_backend_pid() % 256)::smallint, -sum(t.price_minor)
    FROM after t JOIN before o ON o.id = t.id JOIN seats s ON s.org_id = t.org_id AND s.id = t.seat_id
    WHERE o.cancelled_at IS NULL AND t.cancelled_at IS NOT NULL
      AND s.category IS NOT NULL AND t.currency IS NOT NULL AND t.price_minor IS NOT NULL
    GROUP BY t.org_id, t.event_id, s.category, t.currency
    ORDER BY t.org_id, t.event_id, s.category, t.currency
    ON CONFLICT (org_id, event_id, category, currency, slot) DO UPDATE SET paid_minor = r.paid_minor + excluded.paid_minor;
    RETURN NULL;
END $$;
---- create above / drop below ----

CREATE OR REPLACE FUNCTION event_revenue_sold() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE OR REPLACE FUNCTION event_revenue_cancelled() RETURNS trigger LANGUAGE plpgsql AS $$
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
