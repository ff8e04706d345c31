package hold_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestFallbackHoldsShareStatements: with Redis down, 200 buyers hold 200
// free seats while 100 others race for one seat, all at once. Every
// free seat is granted, the raced seat to exactly one buyer and refused
// as taken to the rest, no hold fails, and the single-seat holds shared
// statements (fewer statements than holds) as they do with Redis up.
func TestFallbackHoldsShareStatements(t *testing.T) {
	r := testsvc.StartRedis(t)
	a := testenv.App(t, onRedis(r, time.Minute))
	testenv.Background(t, a)
	tn := testenv.NewTenant(t, a, 0)
	users := testenv.AddBuyers(t, a, tn.Org.ID, 300)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 10, 30)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	if _, err := a.Holds.Hold(ctx, buyer(users[0]), hold.Request{Event: ev.ID, Seats: seats[299:300],
		Source: hold.SourceAPI}); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 5*time.Second, "fast path", func() bool { return a.Engine.FastPath() })
	r.Stop()
	testsvc.Eventually(t, 5*time.Second, "off the fast path", func() bool { return !a.Engine.FastPath() })
	statements0, rows0 := a.Store.Holds.BatchStats()

	hot := seats[250]
	var distinct, won, taken atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, u := range users {
		seat, raced := hot, i >= 200
		if !raced {
			seat = seats[i]
		}
		wg.Go(func() {
			<-start
			_, err := a.Holds.Hold(ctx, buyer(u), hold.Request{Event: ev.ID, Seats: []uuid.UUID{seat}, Source: hold.SourceAPI})
			switch {
			case err == nil && raced:
				won.Add(1)
			case err == nil:
				distinct.Add(1)
			case raced && errors.Is(err, apperr.ErrSeatTaken):
				taken.Add(1)
			default:
				t.Errorf("buyer %d, seat %d: %v", i, seat, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if distinct.Load() != 200 || won.Load() != 1 || taken.Load() != 99 {
		t.Fatalf("free seats granted %d of 200; raced seat granted %d, taken %d of 100", distinct.Load(), won.Load(), taken.Load())
	}
	statements, rows := a.Store.Holds.BatchStats()
	statements, rows = statements-statements0, rows-rows0
	t.Logf("with Redis down: %d shared statements carrying %d requests", statements, rows)
	// The raced seat's late buyers may be refused by the hot cache before
	// reaching Postgres; the 200 free seats all go there.
	if rows < 200 || statements >= rows {
		t.Fatalf("%d shared statements for %d requests; want every hold shared, fewer statements than holds", statements, rows)
	}
	if a.Engine.FastPath() {
		t.Fatal("the fast path came back while Redis was down")
	}
	assertSeatInvariants(t, a, ev.ID)
}
