-- Keyed hold requests are remembered for a day (store.PruneHoldRequests
-- deletes older ones, a batch at a time): the index finds them without
-- reading the whole table during a sale.
CREATE INDEX hold_requests_claimed_at_idx ON hold_requests (claimed_at);

---- create above / drop below ----

DROP INDEX hold_requests_claimed_at_idx;
