-- Webhook deliveries are claimed fairly between organizations
-- (store.Webhooks.ClaimDeliveries): a claim finds the organizations with
-- pending deliveries by skipping through this index, takes each one's
-- oldest due deliveries, and interleaves them, so one tenant's backlog no
-- longer comes before every other tenant's changes. An endpoint whose
-- last attempts all failed is marked failing (failing_since, set and
-- cleared as attempts finish) and gets only a few deliveries per claim:
-- a dead receiver's backlog does not fill the workers with attempts
-- that wait out their timeout. The claim no longer scans pending rows by
-- due time alone, so that index goes.
ALTER TABLE webhook_endpoints ADD COLUMN failing_since timestamptz;
CREATE INDEX webhook_deliveries_org_due_idx ON webhook_deliveries (org_id, endpoint_id, next_at, id) WHERE state = 'pending';
DROP INDEX webhook_deliveries_due_idx;

---- create above / drop below ----

CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_at, id) WHERE state = 'pending';
DROP INDEX webhook_deliveries_org_due_idx;
ALTER TABLE webhook_endpoints DROP COLUMN failing_since;
