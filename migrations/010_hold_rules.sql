-- The choosing rules (docs/architecture.md#choosing-seats) decided by the hold statement itself,
-- from the event row in its own snapshot, like the sales window
-- (event_open): a process whose cached settings lag a change can never
-- hold against it. Plain SQL expressions, so the planner inlines them.

-- accessible_open: may this request hold a seat with these flags now?
-- Accessible and companion seats are kept, until the event's
-- accessible_release_at, for requests that ask for accessible seating
-- and for staff (asked is true for both).
CREATE FUNCTION accessible_open(accessible boolean, companion boolean, release_at timestamptz, asked boolean, at timestamptz)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT asked OR NOT (accessible OR companion) OR release_at IS NULL OR release_at <= at
$$;

-- orphan_rule_met: a hold on an event whose orphan rule is strict is
-- taken only by a request that checked the rule in its own transaction,
-- with the seats' rows locked (checked), or by staff, whom it does not
-- bind.
CREATE FUNCTION orphan_rule_met(rule text, staff boolean, checked boolean)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT staff OR checked OR rule <> 'strict'
$$;

-- Idempotency keys of hold requests that choose their places themselves
-- (general admission): a repeated request with the same key answers the
-- holds the first one made instead of holding more. The row is claimed
-- before the hold (hold_ids NULL) and filled in after it; a failed hold
-- deletes its claim, so the key can be used again.
CREATE TABLE hold_requests (
    org_id          uuid NOT NULL,
    user_id         uuid NOT NULL,
    idempotency_key text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 200),
    event_id        uuid NOT NULL,
    request_hash    text NOT NULL,
    hold_ids        uuid[],
    claimed_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, user_id, idempotency_key),
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id),
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id)
);

---- create above / drop below ----

DROP TABLE hold_requests;

DROP FUNCTION orphan_rule_met(text, boolean, boolean);
DROP FUNCTION accessible_open(boolean, boolean, timestamptz, boolean, timestamptz);
