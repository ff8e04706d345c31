-- API keys carry scopes (what kinds of request they may make: read,
-- holds, box_office, admin), an optional expiry, and the key that made
-- them, if a key did: a key can make nothing with more power than itself,
-- and revoking it revokes the keys it made and deletes the webhook
-- endpoints it registered (auth.APIKeys, store.Accounts.RevokeAPIKey).
-- Keys made before this keep what their role allows, admin included for
-- organizer keys, so nothing given out stops working.
ALTER TABLE api_keys
    ADD COLUMN scopes text[],
    ADD COLUMN expires_at timestamptz,
    ADD COLUMN created_by_key uuid;
UPDATE api_keys SET scopes = CASE role
    WHEN 'buyer' THEN '{read,holds}'::text[]
    WHEN 'box_office' THEN '{read,holds,box_office}'::text[]
    ELSE '{read,holds,box_office,admin}'::text[] END;
ALTER TABLE api_keys
    ALTER COLUMN scopes SET NOT NULL,
    ADD CONSTRAINT api_keys_scopes_check
        CHECK (cardinality(scopes) > 0 AND scopes <@ '{read,holds,box_office,admin}'::text[]),
    ADD CONSTRAINT api_keys_created_by_key_fkey FOREIGN KEY (org_id, created_by_key) REFERENCES api_keys (org_id, id);
CREATE INDEX api_keys_created_by_key_idx ON api_keys (org_id, created_by_key) WHERE created_by_key IS NOT NULL;

ALTER TABLE webhook_endpoints
    ADD COLUMN created_by_key uuid,
    ADD CONSTRAINT webhook_endpoints_created_by_key_fkey FOREIGN KEY (org_id, created_by_key) REFERENCES api_keys (org_id, id);
CREATE INDEX webhook_endpoints_created_by_key_idx ON webhook_endpoints (org_id, created_by_key)
    WHERE created_by_key IS NOT NULL AND deleted_at IS NULL;

---- create above / drop below ----

ALTER TABLE webhook_endpoints DROP COLUMN created_by_key;
ALTER TABLE api_keys DROP COLUMN created_by_key, DROP COLUMN expires_at, DROP COLUMN scopes;
