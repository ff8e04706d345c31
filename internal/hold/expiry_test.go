package hold_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestReaperExpiresWithinTwoSeconds: holds with 1 s and 2 s lifetimes are
// expired by the reaper, and the "available" change reaches a watcher,
// within 2 s of held_until.
func TestReaperExpiresWithinTwoSeconds(t *testing.T) {
	short := testenv.App(t, func(c *config.Config) { c.HoldTTL = time.Second })
	long := testenv.App(t, func(c *config.Config) { c.HoldTTL = 2 * time.Second })
	testenv.Background(t, short)
	tn := testenv.NewTenant(t, short, 10)
	ev := testenv.NewEvent(t, short, tn.Org.ID, 1, 2, 10)
	seats := testenv.SeatIDs(t, short, tn.Org.ID, ev.ID)
	ctx := context.Background()

	var mu sync.Mutex
	freedAt := map[uuid.UUID]time.Time{}
	cancel, err := short.Engine.Watch(ctx, staff(tn.Organizer), ev.ID, func(ds []hold.Delta) {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range ds {
			// The reaper's own delta, or, had it been lost, the same
			// change read from the feed: both say "expired".
			if d.Kind == hold.KindExpired && d.Status == store.Available {
				if _, seen := freedAt[d.Seat]; !seen {
					freedAt[d.Seat] = time.Now()
				}
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()

	until := map[uuid.UUID]time.Time{}
	for i, u := range tn.Buyers {
		core := short.Holds
		if i%2 == 1 {
			core = long.Holds
		}
		res, err := core.Hold(ctx, buyer(u), hold.Request{Event: ev.ID, Seats: seats[2*i : 2*i+2], Source: hold.SourceWeb})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Holds {
			until[h.SeatID] = h.HeldUntil
		}
	}
	testsvc.Poll(6*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(freedAt) == len(until)
	})
	var worst time.Duration
	for seat, u := range until {
		mu.Lock()
		at, ok := freedAt[seat]
		mu.Unlock()
		if !ok {
			t.Fatalf("seat %s never seen expiring", seat)
		}
		worst = max(worst, at.Sub(u))
	}
	if worst > 2*time.Second {
		t.Fatalf("slowest expiry seen %v after held_until, want < 2s", worst)
	}
	if n := count(t, short, `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND status = 'expired' AND ended_at - held_until < interval '2 seconds'`, ev.ID); n != len(until) {
		t.Fatalf("%d holds expired within 2s in postgres, want %d", n, len(until))
	}
	t.Logf("%d holds (1 s and 2 s TTL) expired; slowest visible to a watcher %v after held_until", len(until), worst.Round(time.Millisecond))
	assertSeatInvariants(t, short, ev.ID)
	// Expired seats can be held again.
	if _, err := short.Holds.Hold(ctx, buyer(tn.Buyers[0]), hold.Request{Event: ev.ID, Seats: seats[5:6], Source: hold.SourceWeb}); err != nil {
		t.Fatalf("hold after expiry: %v", err)
	}
}

// TestPurchaseRacesExpiry buys holds right at their expiry while reapers
// run in a tight loop: each hold ends converted or expired, never both,
// and no seat is sold without a booking.
func TestPurchaseRacesExpiry(t *testing.T) {
	a := testenv.App(t, func(c *config.Config) { c.HoldTTL = time.Second })
	tn := testenv.NewTenant(t, a, 10)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 3, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Three reapers, like three processes.
	var reapers sync.WaitGroup
	for range 3 {
		reapers.Go(func() {
			for ctx.Err() == nil {
				if _, err := a.Reaper.Reap(ctx); err != nil && ctx.Err() == nil {
					t.Errorf("reap: %v", err)
				}
				time.Sleep(2 * time.Millisecond) // a tight loop that leaves the purchases some room
			}
		})
	}
	type attempt struct {
		hold store.Hold
		err  error
	}
	results := make([]attempt, 0, 30)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 30 {
		u := tn.Buyers[i%10]
		res, err := a.Holds.Hold(ctx, buyer(u), hold.Request{Event: ev.ID, Seats: seats[i : i+1], Source: hold.SourceWeb})
		if err != nil {
			t.Fatal(err)
		}
		h := res.Holds[0]
		// Aim at held_until, spread over ±30 ms.
		at := h.HeldUntil.Add(time.Duration(i%7-3) * 10 * time.Millisecond)
		wg.Go(func() {
			time.Sleep(time.Until(at)) // not a wait for a condition: the purchase is aimed at an instant (under the 1 s TTL)
			_, err := a.Holds.Purchase(context.Background(), buyer(u), ev.ID, "key-"+h.ID.String(), []uuid.UUID{h.ID})
			mu.Lock()
			results = append(results, attempt{hold: h, err: err})
			mu.Unlock()
		})
	}
	wg.Wait()
	// The reapers expire what the purchases did not convert.
	testsvc.Eventually(t, 5*time.Second, "every hold converted or expired", func() bool {
		return count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND status = 'active'`, ev.ID) == 0
	})
	cancel()
	reapers.Wait()

	converted, expired := 0, 0
	for _, r := range results {
		var status store.HoldStatus
		if err := a.Pool.QueryRow(context.Background(), `SELECT status FROM seat_holds WHERE id = $1`, r.hold.ID).Scan(&status); err != nil {
			t.Fatal(err)
		}
		switch {
		case r.err == nil && status == store.HoldConverted:
			converted++
		case errors.Is(r.err, apperr.ErrHoldsExpired) && status == store.HoldExpired:
			expired++
		default:
			t.Errorf("hold %s: purchase err=%v, hold status %s", r.hold.ID, r.err, status)
		}
	}
	assertSeatInvariants(t, a, ev.ID)
	if n := count(t, a, `SELECT count(*) FROM seats WHERE event_id = $1 AND status = 'sold'`, ev.ID); n != converted {
		t.Fatalf("%d seats sold, %d purchases succeeded", n, converted)
	}
	t.Logf("purchase at expiry: %d converted, %d expired, 0 both", converted, expired)
}
