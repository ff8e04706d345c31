package hold_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"seatd/internal/app"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testsvc"
)

// onRedis points an app at a test's own Redis r (which the test may stop)
// with short Redis timeouts, so a dead Redis is noticed within a few
// hundred milliseconds; the breaker then stays open for openFor.
func onRedis(r *testsvc.Redis, openFor time.Duration) func(*config.Config) {
	return func(c *config.Config) {
		c.RedisURL = r.URL()
		c.BreakerOpenFor = openFor
		c.RedisTimeout = 100 * time.Millisecond
		c.RedisDialTimeout = 100 * time.Millisecond
	}
}

func buyer(u store.User) hold.Actor {
	return hold.Actor{Org: u.OrgID, User: u.ID, Role: hold.RoleBuyer}
}

func staff(u store.User) hold.Actor {
	return hold.Actor{Org: u.OrgID, User: u.ID, Role: hold.Role(u.Role)}
}

// activeHolds counts active holds per seat of an event straight from SQL.
func activeHolds(t testing.TB, a *app.App, event uuid.UUID) map[uuid.UUID]int {
	t.Helper()
	rows, err := a.Pool.Query(context.Background(),
		`SELECT seat_id, count(*) FROM seat_holds WHERE event_id = $1 AND status = 'active' GROUP BY seat_id`, event)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[uuid.UUID]int{}
	for rows.Next() {
		var id uuid.UUID
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		out[id] = n
	}
	return out
}

func count(t testing.TB, a *app.App, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := a.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// assertSeatInvariants checks, in SQL, the invariants that no cache can
// break: at most one active hold per seat, a held seat points at its one
// active hold, a sold seat has exactly one ticket and a booking.
func assertSeatInvariants(t testing.TB, a *app.App, event uuid.UUID) {
	t.Helper()
	checks := []struct{ name, sql string }{
		{"two active holds on a seat", `SELECT count(*) FROM (SELECT seat_id FROM seat_holds WHERE event_id = $1 AND status = 'active' GROUP BY seat_id HAVING count(*) > 1) x`},
		{"held seat without its active hold", `SELECT count(*) FROM seats s WHERE s.event_id = $1 AND s.status = 'held' AND NOT EXISTS (SELECT 1 FROM seat_holds h WHERE h.id = s.hold_id AND h.status = 'active' AND h.seat_id = s.id)`},
		{"active hold on a seat not held by it", `SELECT count(*) FROM seat_holds h JOIN seats s ON s.id = h.seat_id WHERE h.event_id = $1 AND h.status = 'active' AND (s.status <> 'held' OR s.hold_id <> h.id)`},
		{"sold seat without exactly one live ticket", `SELECT count(*) FROM seats s WHERE s.event_id = $1 AND s.status = 'sold' AND (SELECT count(*) FROM tickets t WHERE t.seat_id = s.id AND t.cancelled_at IS NULL) <> 1`},
		{"live ticket without booking or on unsold seat", `SELECT count(*) FROM tickets t LEFT JOIN bookings b ON b.id = t.booking_id JOIN seats s ON s.id = t.seat_id WHERE t.event_id = $1 AND t.cancelled_at IS NULL AND (b.id IS NULL OR s.status <> 'sold')`},
		{"converted hold without ticket", `SELECT count(*) FROM seat_holds h WHERE h.event_id = $1 AND h.status = 'converted' AND NOT EXISTS (SELECT 1 FROM tickets t WHERE t.hold_id = h.id)`},
	}
	for _, c := range checks {
		if n := count(t, a, c.sql, event); n != 0 {
			t.Errorf("invariant broken: %s (%d rows)", c.name, n)
		}
	}
}

func pgWrites(a *app.App) float64 { return testutil.ToFloat64(a.Metrics.PGHoldWrites) }
