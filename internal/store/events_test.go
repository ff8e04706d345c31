package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/config"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestNewEventPlannedForItsSize: right after an event is created, the
// planner knows how many seats it has: as many as a fresh ANALYZE would
// tell it. When it did not (statistics from before the event, in which
// its id is absent), the event's queries were planned for a row or two
// and the strict rule's row read became a nested loop over the whole
// event: 1 to 2 s a statement under a crowd.
func TestNewEventPlannedForItsSize(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 0)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 3, 20, 50) // 3 000 seats
	expected := func() float64 {
		var raw []byte
		if err := a.Pool.QueryRow(ctx, `EXPLAIN (FORMAT JSON) SELECT id FROM seats WHERE org_id = $1 AND event_id = $2`,
			tn.Org.ID, ev.ID).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var plan []struct {
			Plan struct {
				Rows float64 `json:"Plan Rows"`
			} `json:"Plan"`
		}
		if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
			t.Fatalf("plan %s: %v", raw, err)
		}
		return plan[0].Plan.Rows
	}
	got := expected()
	if _, err := a.Pool.Exec(ctx, `ANALYZE seats`); err != nil {
		t.Fatal(err)
	}
	fresh := expected()
	t.Logf("planner expects %v seats after creation, %v after ANALYZE", got, fresh)
	if got < fresh*3/4 || got > fresh*4/3 {
		t.Fatalf("planner expects %v seats in a 3 000-seat event just created, %v once analyzed", got, fresh)
	}
}

// TestNewEventWaitsForAnotherAnalyze: an event is created while another
// transaction holds ANALYZE's lock on seats for longer than the pool's
// lock timeout (another event being created on a large table, or
// autovacuum): the new event waits its turn instead of failing. It runs on
// a database of its own, so the held lock delays no other test.
func TestNewEventWaitsForAnotherAnalyze(t *testing.T) {
	t.Parallel()
	own := testsvc.OwnDatabase(t, "analyzewait")
	a := testenv.App(t, func(c *config.Config) { c.DatabaseURL = own })
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 0)
	tx, err := a.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `ANALYZE seats`); err != nil {
		t.Fatal(err)
	}
	created := make(chan error, 1)
	go func() {
		secs := []store.NewSection{store.GridSection("A", "Stalls", 2, 10, 0, 0)}
		_, err := a.Store.Events.Create(ctx, tn.Org.ID, "Waits", "Hall", time.Now().Add(24*time.Hour), secs)
		created <- err
	}()
	select {
	case err := <-created:
		t.Fatalf("the event was decided while another ANALYZE held seats: %v", err)
	case <-time.After(a.Cfg.PGLockTimeout + 500*time.Millisecond):
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-created; err != nil {
		t.Fatalf("create event after the other ANALYZE: %v", err)
	}
}

// TestGridEventWaitsForAnalyze: a new event's statistics step waits for
// another ANALYZE of seats (here one held open in a transaction) past the
// pool's statement timeout, and the event is made once it can go on.
// Under the pool's timeout it failed the event.
func TestGridEventWaitsForAnalyze(t *testing.T) {
	a := testenv.App(t, func(c *config.Config) { c.PGStatementTimeout = 1500 * time.Millisecond })
	tn := testenv.NewTenant(t, a, 0)
	ctx := context.Background()
	other, err := a.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Rollback(ctx) }()
	if _, err := other.Exec(ctx, `ANALYZE seats`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.Store.Events.Create(ctx, tn.Org.ID, "Waits", "Hall", time.Now().Add(24*time.Hour),
			[]store.NewSection{store.GridSection("A", "A", 2, 5, 0, 0)})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("created while another ANALYZE held seats: %v", err)
	case <-time.After(3 * time.Second): // twice the pool's statement timeout
	}
	if err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("create after the other ANALYZE ended: %v", err)
	}
}

// TestEventSeatCount: an event read back has as many seats as were made
// for it, on the grid path and on the chart path; the count is kept on
// the event (events.seat_count), not counted on each read.
func TestEventSeatCount(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 0)
	grid := testenv.NewEvent(t, a, tn.Org.ID, 2, 3, 4)
	v := testenv.NewChart(t, a, tn.Org.ID, 2, 10)
	fromChart, err := a.Store.Events.CreateFromChart(ctx, tn.Org.ID, tn.Organizer.ID, v,
		store.EventSpec{Name: "From a chart", Venue: "Hall", StartsAt: time.Now().Add(48 * time.Hour), TimeZone: "UTC"},
		[]store.Price{{Category: "front", PriceMinor: 4000, Currency: "EUR"}, {Category: "back", PriceMinor: 1500, Currency: "EUR"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []uuid.UUID{grid.ID, fromChart.ID} {
		e, err := a.Store.Events.Event(ctx, tn.Org.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := a.Pool.QueryRow(ctx, `SELECT count(*) FROM seats WHERE org_id = $1 AND event_id = $2`, tn.Org.ID, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 || e.Seats != n {
			t.Fatalf("event %s read back with %d seats, has %d", e.Name, e.Seats, n)
		}
	}
}
