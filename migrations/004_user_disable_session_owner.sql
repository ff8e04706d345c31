-- Accounts can be disabled, and sessions know whose they are, so that
-- disabling a user or changing their role ends every session they have.
-- scs (pgxstore) writes only token, data and expiry; the owner is read
-- from the encoded data (web/session.go's JSON codec) by a trigger, so the
-- session library stays unaware of it.
ALTER TABLE users ADD COLUMN disabled_at timestamptz;

ALTER TABLE sessions ADD COLUMN org_id uuid, ADD COLUMN user_id uuid;

CREATE FUNCTION sessions_set_owner() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v jsonb;
BEGIN
    v := convert_from(NEW.data, 'UTF8')::jsonb -> 'values';
    NEW.org_id := NULL;
    NEW.user_id := NULL;
    IF v ->> 'org_id' ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
       AND v ->> 'user_id' ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN
        NEW.org_id := (v ->> 'org_id')::uuid;
        NEW.user_id := (v ->> 'user_id')::uuid;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER sessions_set_owner BEFORE INSERT OR UPDATE OF data ON sessions
    FOR EACH ROW EXECUTE FUNCTION sessions_set_owner();

CREATE INDEX sessions_owner_idx ON sessions (org_id, user_id) WHERE user_id IS NOT NULL;

---- create above / drop below ----

DROP INDEX sessions_owner_idx;
DROP TRIGGER sessions_set_owner ON sessions;
DROP FUNCTION sessions_set_owner();
ALTER TABLE sessions DROP COLUMN user_id, DROP COLUMN org_id;
ALTER TABLE users DROP COLUMN disabled_at;
