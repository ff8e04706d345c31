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

// TestChangeFeedReadByIndex: with a long audit history, the change feed's
// read of an event still goes to the feed index for the range past the
// cursor, not through the whole log. (Left to the planner, which guesses
// a third of an event's history lies past any cursor, it scanned the
// whole log on every round: 100-500 ms a read at a few hundred thousand
// rows.) It runs on a database of its own, so its history is the whole
// log and its bulk insert does not hold up the package's other tests.
func TestChangeFeedReadByIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	own := testenv.OwnDatabase(t, "feedplan")
	a := testenv.App(t, func(c *config.Config) {
		c.DatabaseURL = own
		c.PGStatementTimeout = time.Minute
	})

	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 10, 50)
	// A sale's worth of history: 40 000 changes of the event's seats.
	if _, err := a.Pool.Exec(ctx, `
		INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, seat_id, data)
		SELECT s.org_id, s.event_id, $3, 'hold.created', 'seat_hold', gen_random_uuid(), s.id, '{}'
		FROM seats s, generate_series(1, 80)
		WHERE s.org_id = $1 AND s.event_id = $2`, tn.Org.ID, ev.ID, tn.Buyers[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Pool.Exec(ctx, `ANALYZE audit_log`); err != nil {
		t.Fatal(err)
	}
	var snap string
	if err := a.Pool.QueryRow(ctx, `SELECT pg_current_snapshot()::text`).Scan(&snap); err != nil {
		t.Fatal(err)
	}
	// A follower reads its events in one statement: ten of them here (the
	// one event ten times, as far as the planner can tell).
	var is []int32
	var orgs, evs []any
	var snaps []string
	for i := range 10 {
		is, orgs, evs, snaps = append(is, int32(i)), append(orgs, tn.Org.ID), append(evs, ev.ID), append(snaps, snap)
	}
	rows, err := a.Pool.Query(ctx, "EXPLAIN "+store.ChangesSQL, is, orgs, evs, snaps)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	if strings.Contains(text, "Seq Scan on audit_log") || !strings.Contains(text, "audit_log_feed_idx") {
		t.Fatalf("the feed read does not use the feed index on a long history:\n%s", text)
	}
}
