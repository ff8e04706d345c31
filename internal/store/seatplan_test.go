package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"seatd/internal/config"
	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestEventSeatsReadByHoldKey: an event's seats are read with their holds
// (loading an event, and in the change feed) by one primary-key probe per
// seat even when the statistics date from before a sale, when the
// organization had no active hold. (As a plain
// join the planner believed them, and compared every seat with every
// active hold of the organization: 9.4 s to load an event of 4 000 seats
// at 38 000 active holds, past the statement timeout.) It runs on a
// database of its own, whose statistics only it moves.
func TestEventSeatsReadByHoldKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	own := testenv.OwnDatabase(t, "seatplan")
	a := testenv.App(t, func(c *config.Config) {
		c.DatabaseURL = own
		c.PGStatementTimeout = time.Minute
	})
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 10, 50)
	other := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 1)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := a.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	// Statistics from before the sale: many holds, none active.
	exec(`ALTER TABLE seat_holds SET (autovacuum_enabled = false)`)
	holds := `
		INSERT INTO seat_holds (id, org_id, event_id, seat_id, user_id, status, held_until, fence, source, created_at, ended_at)
		SELECT gen_random_uuid(), $1, $2, gen_random_uuid(), $3, $4, now() + interval '1 hour', 1, 'web', now(),
		       CASE WHEN $4 = 'active' THEN NULL ELSE now() END
		FROM generate_series(1, 20000)`
	exec(holds, tn.Org.ID, other.ID, tn.Buyers[0].ID, "expired")
	exec(`ANALYZE seat_holds`)
	// The sale: as many active holds again, unseen by the statistics.
	exec(holds, tn.Org.ID, other.ID, tn.Buyers[0].ID, "active")

	explain := func(sql string, args ...any) string {
		t.Helper()
		rows, err := a.Pool.Query(ctx, "EXPLAIN "+sql, args...)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(plan, "\n")
	}
	// byKey says whether every read of seat_holds in plan is a probe of
	// its primary key.
	byKey := func(plan string) bool {
		n := 0
		for _, line := range strings.Split(plan, "\n") {
			if strings.Contains(line, " on seat_holds ") {
				n++
				if !strings.Contains(line, "Index Scan using seat_holds_pkey") {
					return false
				}
			}
		}
		return n > 0
	}
	load := explain(store.SeatColumns+` WHERE s.org_id = $1 AND s.event_id = $2 ORDER BY s.idx`, tn.Org.ID, ev.ID)
	if !byKey(load) || strings.Contains(load, "Materialize") {
		t.Errorf("an event's seats are not read with one hold probe per seat:\n%s", load)
	}
	// The change feed reads the holds of the seats it returns the same way.
	var snap string
	if err := a.Pool.QueryRow(ctx, `SELECT pg_current_snapshot()::text`).Scan(&snap); err != nil {
		t.Fatal(err)
	}
	feed := explain(store.ChangesSQL, []int32{0}, []any{tn.Org.ID}, []any{ev.ID}, []string{snap})
	if !byKey(feed) {
		t.Errorf("the change feed does not read holds by their key:\n%s", feed)
	}
}
