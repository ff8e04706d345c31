package store_test

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/config"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestEndedHoldsLockCountersInOrder: a statement ending holds of several
// buyers locks their counters in key order, so two such statements (the
// reapers of two processes) cannot deadlock on them. For each pair of
// buyers, another transaction holds the lower counter; the statement
// ending one hold of each then waits for it holding no other counter, so
// the higher one can still be locked at once. Locked in whatever order
// the statement's join produced them (before migration 017), the first
// pair already waited holding the higher counter, which is how two
// reapers deadlocked behind the lock timeout. It runs on a database of
// its own.
func TestEndedHoldsLockCountersInOrder(t *testing.T) {
	t.Parallel()
	own := testsvc.OwnDatabase(t, "counters")
	a := testenv.App(t, func(c *config.Config) {
		c.DatabaseURL = own
		// Long enough that the statement outwaits this test's lock on a
		// busy machine; what is checked is the order it locks in.
		c.PGLockTimeout = 5 * time.Second
	})
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 12)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	now := time.Now().UTC().Truncate(time.Millisecond)
	holdOf := map[uuid.UUID]uuid.UUID{} // buyer → hold
	for i, u := range tn.Buyers {
		id := uuid.New()
		out, err := a.Store.Holds.Create(ctx, store.HoldParams{Org: tn.Org.ID, Event: ev.ID, User: u.ID, Now: now,
			HeldUntil: now.Add(time.Hour), Source: "api", Seats: []store.HoldRequest{{SeatID: seats[i], HoldID: id, Fence: 1}}})
		if err != nil || len(out.Created) != 1 {
			t.Fatalf("hold for buyer %d: %+v %v", i, out, err)
		}
		holdOf[u.ID] = id
	}
	lock := `SELECT 1 FROM buyer_holds WHERE org_id = $1 AND event_id = $2 AND user_id = $3 FOR UPDATE`
	for p := 0; p < len(tn.Buyers); p += 2 {
		pair := []uuid.UUID{tn.Buyers[p].ID, tn.Buyers[p+1].ID}
		slices.SortFunc(pair, func(x, y uuid.UUID) int { return bytes.Compare(x[:], y[:]) })
		lo, hi := pair[0], pair[1]
		tx, err := a.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, lock, tn.Org.ID, ev.ID, lo); err != nil {
			t.Fatal(err)
		}
		ended := make(chan error, 1)
		go func() {
			_, err := a.Pool.Exec(ctx, `UPDATE seat_holds SET status = 'released', ended_at = now() WHERE org_id = $1 AND id = ANY($2::uuid[])`,
				tn.Org.ID, []uuid.UUID{holdOf[hi], holdOf[lo]})
			ended <- err
		}()
		time.Sleep(150 * time.Millisecond) // the statement now waits for lo
		_, higher := tx.Exec(ctx, lock+` NOWAIT`, tn.Org.ID, ev.ID, hi)
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-ended; err != nil {
			t.Fatalf("pair %d: ending the holds: %v", p/2, err)
		}
		if higher != nil {
			t.Errorf("pair %d: the statement held the higher counter while waiting for the lower one: %v", p/2, higher)
		}
	}
	var left int
	if err := a.Pool.QueryRow(ctx, `SELECT coalesce(sum(active), 0) FROM buyer_holds WHERE event_id = $1`, ev.ID).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("counters sum to %d after every hold ended, want 0", left)
	}
}
