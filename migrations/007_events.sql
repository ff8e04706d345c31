-- Events an organizer puts on: made from a chart version (copied, so later
-- chart edits never change them), with a lifecycle, a sales window, prices
-- per category, and per-event hold settings that override the global
-- defaults (NULL: the default).
ALTER TABLE events
    ADD COLUMN status text NOT NULL DEFAULT 'on_sale' CHECK (status IN ('draft', 'on_sale', 'closed')),
    ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC' CHECK (length(time_zone) BETWEEN 1 AND 64),
    ADD COLUMN on_sale_at timestamptz,
    ADD COLUMN sales_end_at timestamptz,
    ADD COLUMN chart_version_id uuid,
    ADD COLUMN hold_ttl_seconds int CHECK (hold_ttl_seconds > 0),
    ADD COLUMN max_holds_per_buyer int CHECK (max_holds_per_buyer > 0),
    -- Stored for the orphan-seat and accessible-seat rules (docs/architecture.md#choosing-seats).
    ADD COLUMN orphan_rule text NOT NULL DEFAULT 'off' CHECK (orphan_rule IN ('off', 'strict')),
    ADD COLUMN accessible_release_at timestamptz,
    ADD CHECK (sales_end_at > on_sale_at),
    ADD FOREIGN KEY (org_id, chart_version_id) REFERENCES chart_versions (org_id, id);
-- Existing events were on sale; new ones start as drafts.
ALTER TABLE events ALTER COLUMN status SET DEFAULT 'draft';

-- An event's categories, copied from its chart version, with their prices.
CREATE TABLE event_categories (
    org_id      uuid   NOT NULL,
    event_id    uuid   NOT NULL,
    key         text   NOT NULL CHECK (length(key) BETWEEN 1 AND 40),
    name        text   NOT NULL,
    color       text   NOT NULL DEFAULT '',
    position    int    NOT NULL DEFAULT 0,
    price_minor bigint NOT NULL CHECK (price_minor >= 0),
    currency    text   NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    PRIMARY KEY (event_id, key),
    UNIQUE (org_id, event_id, key),
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id)
);

ALTER TABLE sections
    ADD COLUMN kind text NOT NULL DEFAULT 'seated' CHECK (kind IN ('seated', 'ga')),
    ADD COLUMN capacity int NOT NULL DEFAULT 0 CHECK (capacity >= 0);

ALTER TABLE seats
    ADD COLUMN category text,
    ADD COLUMN accessible boolean NOT NULL DEFAULT false,
    ADD COLUMN companion boolean NOT NULL DEFAULT false,
    ADD FOREIGN KEY (org_id, event_id, category) REFERENCES event_categories (org_id, event_id, key);

-- What was paid: the seat's category price when the ticket was sold (NULL
-- for seats without a category).
ALTER TABLE tickets
    ADD COLUMN price_minor bigint CHECK (price_minor >= 0),
    ADD COLUMN currency text CHECK (currency ~ '^[A-Z]{3}$');

-- event_open is the one definition of "may this actor hold on this event
-- at this time", used by the hold statement and by the read that explains
-- a refusal. Staff (box office, organizers) may hold outside the sales
-- window until the event is closed; buyers only while it is on sale and
-- inside the window. A plain SQL expression, so the planner inlines it.
CREATE FUNCTION event_open(status text, on_sale_at timestamptz, sales_end_at timestamptz, staff boolean, at timestamptz)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN staff THEN status <> 'closed'
                ELSE status = 'on_sale' AND (on_sale_at IS NULL OR on_sale_at <= at)
                     AND (sales_end_at IS NULL OR at < sales_end_at) END
$$;

---- create above / drop below ----

DROP FUNCTION event_open(text, timestamptz, timestamptz, boolean, timestamptz);
ALTER TABLE tickets DROP COLUMN price_minor, DROP COLUMN currency;
ALTER TABLE seats DROP COLUMN category, DROP COLUMN accessible, DROP COLUMN companion;
ALTER TABLE sections DROP COLUMN kind, DROP COLUMN capacity;
DROP TABLE event_categories;
ALTER TABLE events DROP COLUMN status, DROP COLUMN time_zone, DROP COLUMN on_sale_at, DROP COLUMN sales_end_at,
    DROP COLUMN chart_version_id, DROP COLUMN hold_ttl_seconds, DROP COLUMN max_holds_per_buyer,
    DROP COLUMN orphan_rule, DROP COLUMN accessible_release_at;
