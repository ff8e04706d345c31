package hold_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/app"
	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
)

// gaEvent is a chart event on sale (its GA section G has 100 places).
func gaEvent(t *testing.T, a *app.App, tn testenv.Tenant, mod func(*hold.EventInput)) store.Event {
	t.Helper()
	e := chartEvent(t, a, tn, mod)
	if err := setStatus(t, a, tn, e.ID, "on_sale"); err != nil {
		t.Fatal(err)
	}
	return e
}

func gaHeld(t *testing.T, a *app.App, event uuid.UUID) int {
	return count(t, a, `SELECT count(*) FROM seats s JOIN sections c ON c.id = s.section_id
		WHERE s.event_id = $1 AND c.kind = 'ga' AND s.status <> 'available'`, event)
}

// TestGAFlashSale: 200 buyers on two processes rush the 100 places of a GA
// section, each asking for 1 or 2 places and asking again after losing a
// race, until told sold_out. Exactly 100 places are granted and held, never
// more, on the fast path, on the Postgres-only path, and with Redis killed
// in the middle of the rush; afterwards every request is sold_out.
func TestGAFlashSale(t *testing.T) {
	for _, tc := range []string{"fast path", "postgres only", "redis killed mid-run"} {
		t.Run(tc, func(t *testing.T) {
			var r *testenv.Redis
			mod := func(c *config.Config) {
				switch tc {
				case "postgres only":
					c.RedisURL = "redis://127.0.0.1:1/0" // nothing listens
				case "redis killed mid-run":
					c.RedisURL = r.URL()
					c.BreakerOpenFor = 300 * time.Millisecond
					c.RedisTimeout = 100 * time.Millisecond
					c.RedisDialTimeout = 100 * time.Millisecond
				}
			}
			if tc == "redis killed mid-run" {
				r = testenv.StartRedis(t)
			}
			a1, a2 := testenv.App(t, mod), testenv.App(t, mod)
			testenv.Background(t, a1)
			testenv.Background(t, a2)
			tn := testenv.NewTenant(t, a1, 0)
			users := testenv.AddBuyers(t, a1, tn.Org.ID, 200)
			ev := gaEvent(t, a1, tn, nil)
			ctx := context.Background()

			start := make(chan struct{})
			var granted, attempts atomic.Int64
			var wg sync.WaitGroup
			for i, u := range users {
				core := a1.Core
				if i%2 == 1 {
					core = a2.Core
				}
				wg.Go(func() {
					<-start
					for range 200 {
						attempts.Add(1)
						res, err := core.HoldGA(ctx, buyer(u), ev.ID, "G", 1+rand.IntN(2))
						switch {
						case err == nil:
							granted.Add(int64(len(res.Holds)))
							return
						case apperr.CodeOf(err) == apperr.SoldOut:
							return
						case apperr.CodeOf(err) == apperr.SeatTaken:
							continue
						default:
							t.Errorf("hold GA: %v", err)
							return
						}
					}
					t.Errorf("buyer %s never got an answer but seat_taken", u.ID)
				})
			}
			close(start)
			if r != nil {
				testenv.Eventually(t, 10*time.Second, "30 places granted", func() bool { return granted.Load() >= 30 })
				r.Stop()
			}
			wg.Wait()
			t.Logf("%s: %d places granted in %d requests", tc, granted.Load(), attempts.Load())
			if g, held := granted.Load(), gaHeld(t, a1, ev.ID); g != 100 || held != 100 {
				t.Fatalf("granted %d, held in Postgres %d; want exactly the capacity, 100", g, held)
			}
			assertSeatInvariants(t, a1, ev.ID)
			late := testenv.AddBuyers(t, a1, tn.Org.ID, 1)[0]
			for _, core := range []*hold.Service{a1.Core, a2.Core} {
				_, err := core.HoldGA(ctx, buyer(late), ev.ID, "G", 1)
				if apperr.CodeOf(err) != apperr.SoldOut {
					t.Fatalf("hold after the sell-out: %v, want sold_out", err)
				}
			}
			if gaHeld(t, a1, ev.ID) != 100 {
				t.Fatal("a place was held after the sell-out")
			}
		})
	}
}

// TestGAHoldsFollowTheRules: places count against the buyer's cap, expire
// back to the section, and are bought at the section's category price; a
// bad count, an unknown or seated section and another tenant's event are
// refused with nothing written.
func TestGAHoldsFollowTheRules(t *testing.T) {
	a := testenv.App(t, nil)
	testenv.Background(t, a)
	tn := testenv.NewTenant(t, a, 2)
	ev := gaEvent(t, a, tn, func(in *hold.EventInput) {
		in.HoldTTLSeconds = ptr(1)
		in.MaxHoldsPerBuyer = ptr(3)
	})
	ctx := context.Background()
	u, v := buyer(tn.Buyers[0]), buyer(tn.Buyers[1])

	res, err := a.Core.HoldGA(ctx, u, ev.ID, "G", 2)
	if err != nil || len(res.Holds) != 2 || !res.Created {
		t.Fatalf("hold 2 places: %+v %v", res, err)
	}
	if _, err := a.Core.HoldGA(ctx, u, ev.ID, "G", 2); apperr.CodeOf(err) != apperr.HoldLimit {
		t.Fatalf("2 more places over a cap of 3: %v, want hold_limit", err)
	}
	before := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, ev.ID)
	for _, bad := range []struct {
		section string
		n       int
		code    apperr.Code
	}{{"G", 0, apperr.Invalid}, {"G", 11, apperr.Invalid}, {"Z", 1, apperr.NotFound}, {"S", 1, apperr.NotFound}} {
		if _, err := a.Core.HoldGA(ctx, v, ev.ID, bad.section, bad.n); apperr.CodeOf(err) != bad.code {
			t.Errorf("hold %d of %q: %v, want %s", bad.n, bad.section, err, bad.code)
		}
	}
	other := testenv.NewTenant(t, a, 1)
	if _, err := a.Core.HoldGA(ctx, buyer(other.Buyers[0]), ev.ID, "G", 1); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("another tenant's event: %v, want not_found", err)
	}
	if after := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, ev.ID); after != before {
		t.Fatalf("refused requests wrote %d holds", after-before)
	}

	// The TTL is one second: the reaper gives the places back.
	testenv.Eventually(t, 10*time.Second, "the places expired", func() bool { return gaHeld(t, a, ev.ID) == 0 })
	testenv.Eventually(t, 5*time.Second, "100 places left", func() bool {
		secs, err := a.Core.GASections(ctx, u, ev.ID)
		return err == nil && len(secs) == 1 && secs[0].Left == 100 && secs[0].Capacity == 100
	})

	// Bought at the category price of the section (back: 2500 EUR).
	res, err = a.Core.HoldGA(ctx, v, ev.ID, "G", 2)
	if err != nil {
		t.Fatal(err)
	}
	ids := []uuid.UUID{res.Holds[0].ID, res.Holds[1].ID}
	if _, err := a.Core.Purchase(ctx, v, ev.ID, fmt.Sprint("ga-", ev.ID), ids); err != nil {
		t.Fatalf("purchase places: %v", err)
	}
	if n := count(t, a, `SELECT count(*) FROM tickets WHERE event_id = $1 AND price_minor = 2500 AND currency = 'EUR'`, ev.ID); n != 2 {
		t.Fatalf("%d tickets at 2500 EUR, want 2", n)
	}
	secs, err := a.Core.GASections(ctx, u, ev.ID)
	if err != nil || secs[0].Left != 98 {
		t.Fatalf("places left after selling 2: %+v %v", secs, err)
	}
	assertSeatInvariants(t, a, ev.ID)
}
