-- Every process caches sessions (web/session.go). A session that ends —
-- its row deleted at logout, when its user is disabled or changes role,
-- or by the expiry cleanup — or whose data changes is announced on the
-- seatd_sessions channel by the statement that does it, in the same
-- transaction: an end cannot commit without its announcement, and every
-- process listening when it commits hears it. Tokens are as stored
-- (hashed, base64url), space-separated, 150 to a notification to stay
-- well under the 8000-byte payload limit.
CREATE FUNCTION sessions_ended() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    tokens text;
BEGIN
    IF TG_OP = 'DELETE' THEN
        FOR tokens IN
            SELECT string_agg(token, ' ') FROM (SELECT token, row_number() OVER () / 150 AS part FROM gone) t
            GROUP BY part
        LOOP
            PERFORM pg_notify('seatd_sessions', tokens);
        END LOOP;
    ELSE
        FOR tokens IN
            SELECT string_agg(token, ' ') FROM (
                SELECT n.token, row_number() OVER () / 150 AS part
                FROM changed_new n JOIN changed_old o ON o.token = n.token
                WHERE o.data IS DISTINCT FROM n.data) t
            GROUP BY part
        LOOP
            PERFORM pg_notify('seatd_sessions', tokens);
        END LOOP;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER sessions_deleted AFTER DELETE ON sessions
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION sessions_ended();
CREATE TRIGGER sessions_changed AFTER UPDATE ON sessions
    REFERENCING OLD TABLE AS changed_old NEW TABLE AS changed_new
    FOR EACH STATEMENT EXECUTE FUNCTION sessions_ended();

---- create above / drop below ----

DROP TRIGGER sessions_changed ON sessions;
DROP TRIGGER sessions_deleted ON sessions;
DROP FUNCTION sessions_ended();
