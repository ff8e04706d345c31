-- A keyed hold request (best available, standing places, with an
-- Idempotency-Key) is claimed with an id of its own, and the hold
-- statement writes that id on each hold it makes, in the holds' own
-- transaction: a repeat finds the first request's holds by it. Recording
-- them after the hold (hold_ids) was a statement and a commit more a
-- request, and a process dying between the holds' commit and that record
-- left a claim a repeat took over 30 s later and held again. hold_ids is
-- still read, for requests recorded that way.
ALTER TABLE hold_requests ADD COLUMN request_id uuid;
ALTER TABLE seat_holds ADD COLUMN request_id uuid;
CREATE INDEX seat_holds_request_idx ON seat_holds (org_id, request_id) WHERE request_id IS NOT NULL;

---- create above / drop below ----

DROP INDEX seat_holds_request_idx;
ALTER TABLE seat_holds DROP COLUMN request_id;
ALTER TABLE hold_requests DROP COLUMN request_id;
