-- The audit log page lists an event's entries newest first, paged by id
-- (keyset). Without this index Postgres walks the primary key backwards
-- through every organization's entries and filters; with it, a page is an
-- index range scan whatever the size of the log.
CREATE INDEX audit_log_event_id_idx ON audit_log (org_id, event_id, id);

---- create above / drop below ----

DROP INDEX audit_log_event_id_idx;
