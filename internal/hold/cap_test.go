package hold_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/uuid"

	"seatd/internal/app"
	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/testenv"
)

// TestHoldCapUnderBurst: one buyer fires 50 requests at the same instant,
// spread over three processes whose hot caches all read "0 held". The cap
// (10) must hold all the same, on the fast path (Redis counts the buyer's
// locks in the acquire script) and on the Postgres-only path (the hold
// statement counts the buyer's active holds): every refusal is hold_limit,
// and nothing is written beyond the granted holds.
func TestHoldCapUnderBurst(t *testing.T) {
	const requests, cap = 50, 10
	for _, tc := range []struct {
		name     string
		perReq   int
		postgres bool
	}{
		{"fast path, 10 seats a request", 10, false},
		{"fast path, 1 seat a request (shared statements)", 1, false},
		{"postgres only, 10 seats a request", 10, true},
		{"postgres only, 1 seat a request", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mod := func(c *config.Config) {
				c.MaxHoldsPerBuyer = cap
				if tc.postgres {
					c.RedisURL = "redis://127.0.0.1:1/0" // nothing listens: Redis is down
				}
			}
			procs := []*app.App{testenv.App(t, mod), testenv.App(t, mod), testenv.App(t, mod)}
			a := testenv.App(t, mod)
			tn := testenv.NewTenant(t, a, 1)
			ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 25, 20)
			seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
			ctx := context.Background()
			u := buyer(tn.Buyers[0])
			for _, p := range procs {
				if _, _, err := p.Events.Seats(ctx, u, ev.ID); err != nil {
					t.Fatal(err)
				}
				if p.Engine.FastPath() == tc.postgres {
					t.Fatalf("fast path %v, want %v", p.Engine.FastPath(), !tc.postgres)
				}
			}

			start := make(chan struct{})
			var wg sync.WaitGroup
			var mu sync.Mutex
			granted, refusals := 0, map[string]int{}
			for i := range requests {
				p := procs[i%len(procs)]
				ids := seats[i*tc.perReq : (i+1)*tc.perReq]
				wg.Go(func() {
					<-start
					res, err := p.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, Seats: ids, Source: hold.SourceAPI})
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						refusals[string(apperr.CodeOf(err))]++
						return
					}
					granted += len(res.Holds)
				})
			}
			close(start)
			wg.Wait()

			active := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND user_id = $2 AND status = 'active'`, ev.ID, u.User)
			written := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND user_id = $2`, ev.ID, u.User)
			held := count(t, a, `SELECT count(*) FROM seats WHERE event_id = $1 AND status = 'held'`, ev.ID)
			counted := count(t, a, `SELECT coalesce(sum(active), 0) FROM buyer_holds WHERE event_id = $1 AND user_id = $2`, ev.ID, u.User)
			t.Logf("granted %d seats, refusals %v; active %d, rows %d, seats held %d, counter %d", granted, refusals, active, written, held, counted)
			if active > cap || granted > cap {
				t.Fatalf("%d seats held (%d granted) by one buyer, cap %d", active, granted, cap)
			}
			if active != granted || written != granted || held != granted || counted != granted {
				t.Fatalf("granted %d but active %d, rows %d, seats held %d, counter %d", granted, active, written, held, counted)
			}
			for code, n := range refusals {
				if code != string(apperr.HoldLimit) {
					t.Errorf("%d refusals %q, want only %q", n, code, apperr.HoldLimit)
				}
			}
			if granted < tc.perReq {
				t.Fatalf("nothing granted (%v)", refusals)
			}
			assertSeatInvariants(t, a, ev.ID)
			if !tc.postgres {
				// Redis counts the same locks.
				n, err := a.Redis.ZLexCount(ctx, a.Locks.Keys(tn.Org.ID, ev.ID).Holders(),
					"["+u.User.String()+"|", "["+u.User.String()+"|~").Result()
				if err != nil || int(n) != granted {
					t.Fatalf("redis counts %d locks of the buyer (%v), want %d", n, err, granted)
				}
			}
			// Releasing makes room again: the count goes down with the holds.
			var one uuid.UUID
			if err := a.Pool.QueryRow(ctx, `SELECT id FROM seat_holds WHERE event_id = $1 AND user_id = $2 AND status = 'active' LIMIT 1`,
				ev.ID, u.User).Scan(&one); err != nil {
				t.Fatal(err)
			}
			if _, err := procs[0].Holds.Release(ctx, u, one, ""); err != nil {
				t.Fatal(err)
			}
			if n := count(t, a, `SELECT active FROM buyer_holds WHERE event_id = $1 AND user_id = $2`, ev.ID, u.User); n != granted-1 {
				t.Fatalf("counter after a release: %d, want %d", n, granted-1)
			}
		})
	}
}
