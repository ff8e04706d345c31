-- Webhook signing secrets are kept sealed (package seal: AES-256-GCM under
-- a key derived from SEATD_TICKET_SECRET for webhook secrets alone, the
-- endpoint's ids as additional data), so a copy of the database cannot
-- sign deliveries as seatd. SQL cannot seal: the secrets stored in the
-- clear until now are sealed by seatd right after it migrates
-- (store.Webhooks.SealSecrets), and secret is then NULL.
--
-- Rotation: a new secret signs at once, and the one it replaced
-- (previous_secret, sealed) keeps signing beside it until
-- previous_secret_until, so receivers switch without missing a delivery
-- (docs/integrators.md).
ALTER TABLE webhook_endpoints
    ALTER COLUMN secret DROP NOT NULL,
    ADD COLUMN sealed_secret bytea,
    ADD COLUMN previous_secret bytea,
    ADD COLUMN previous_secret_until timestamptz,
    ADD CONSTRAINT webhook_endpoints_secret_check CHECK (secret IS NOT NULL OR sealed_secret IS NOT NULL);

---- create above / drop below ----

-- A sealed secret cannot be opened in SQL; the schema before this one has
-- nowhere to keep it sealed.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM webhook_endpoints WHERE secret IS NULL) THEN
        RAISE EXCEPTION 'webhook secrets are sealed, and SQL cannot open them to keep them in the clear again';
    END IF;
END $$;
ALTER TABLE webhook_endpoints
    DROP CONSTRAINT webhook_endpoints_secret_check,
    DROP COLUMN previous_secret_until,
    DROP COLUMN previous_secret,
    DROP COLUMN sealed_secret,
    ALTER COLUMN secret SET NOT NULL;
