-- A waitlist's changes (a buyer joined, left, or was offered seats) are
-- audit rows of entity 'waitlist_entry' without a seat. Every process's
-- change feed reads them past its cursor (store.Changes), so a change
-- whose live message was lost (its process died between commit and
-- publish) still moves every open waitlist panel. The seats' feed index
-- leaves these rows out; this one holds only them, so the extra read of
-- each round costs one index probe per event.
CREATE INDEX audit_log_line_idx ON audit_log (org_id, event_id, xid) WHERE entity = 'waitlist_entry';

---- create above / drop below ----

DROP INDEX audit_log_line_idx;
