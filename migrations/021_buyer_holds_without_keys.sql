-- buyer_holds counts each buyer's active holds of an event, and only the
-- hold statement and the trigger on seat_holds write it, for holds of
-- seats of existing events, as seat_holds has them (without foreign keys
-- either). Its foreign keys checked the event and the buyer again for
-- every buyer's first hold of an event: two more lookups, a row lock on
-- the buyer and one on the event's row, which the concurrent hold
-- transactions of an opening sale all share (a new MultiXact each).
ALTER TABLE buyer_holds DROP CONSTRAINT buyer_holds_org_id_event_id_fkey,
    DROP CONSTRAINT buyer_holds_org_id_user_id_fkey;

---- create above / drop below ----

ALTER TABLE buyer_holds
    ADD CONSTRAINT buyer_holds_org_id_event_id_fkey FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id),
    ADD CONSTRAINT buyer_holds_org_id_user_id_fkey FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id);
