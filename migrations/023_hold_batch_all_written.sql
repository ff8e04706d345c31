-- A shared hold transaction sends its hold statement and its COMMIT
-- together, in one round trip (store.holdsTogether). It must still write
-- every hold it checked or none: a row the statement skips (an event that
-- closed between the check and the write) would leave a request with only
-- some of its seats. Fed the count of rows written and the count checked,
-- this fails the statement, and so its transaction, when they differ; the
-- COMMIT sent after it then rolls back, and each request is decided again
-- on its own. SQLSTATE SD001 is seatd's own, so it cannot be mistaken for
-- another refusal.
CREATE FUNCTION holds_all_written(written bigint, wanted int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF written <> wanted THEN
        RAISE EXCEPTION 'the hold statement wrote % of % holds', written, wanted USING ERRCODE = 'SD001';
    END IF;
    RETURN false;
END $$;

---- create above / drop below ----

DROP FUNCTION holds_all_written(bigint, int);
