-- Migration 018 announced a session whose data changed (a flash message
-- set or shown) exactly like one that ended, and every process closed its
-- live sockets. A change is now announced with a '~' before the tokens:
-- processes forget their cached copy and leave the sockets open.
CREATE OR REPLACE FUNCTION sessions_ended() RETURNS trigger LANGUAGE plpgsql AS $$
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
            PERFORM pg_notify('seatd_sessions', '~' || tokens);
        END LOOP;
    END IF;
    RETURN NULL;
END $$;

---- create above / drop below ----

CREATE OR REPLACE FUNCTION sessions_ended() RETURNS trigger LANGUAGE plpgsql AS $$
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
