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
// by one primary-key probe per seat even when the statistics date from
// before a sale, when the organization had no active hold. (As a plain
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

	rows, err := a.Pool.Query(ctx, "EXPLAIN "+store.SeatColumns+` WHERE s.org_id = $1 AND s.event_id = $2 ORDER BY s.idx`,
		tn.Org.ID, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	if !strings.Contains(text, "Index Scan using seat_holds_pkey") || strings.Contains(text, "Materialize") {
		t.Fatalf("an event's seats are not read with one hold probe per seat:\n%s", text)
	}
}
