package hold_test

import (
	"context"
	"sync"
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

// TestNewAccountHoldCap: a buyer whose actor carries a new account's
// cap (4) fires 20 single-seat requests at once over three processes.
// The event's own cap (8) is higher, and the hot caches all read "0
// held": Redis (fast path) and the hold statement (Postgres only) must
// both keep the buyer at 4 — the statement takes the lower of the event's
// cap and the account's, whatever a cache says. An established buyer
// holds up to the event's cap, and staff are not bound by the new
// account's cap.
func TestNewAccountHoldCap(t *testing.T) {
	const requests, young, eventCap = 20, 4, 8
	for _, tc := range []struct {
		name     string
		postgres bool
	}{
		{"fast path", false},
		{"postgres only", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mod := func(c *config.Config) {
				c.MaxHoldsPerBuyer = 10
				if tc.postgres {
					c.RedisURL = "redis://127.0.0.1:1/0" // nothing listens: Redis is down
				}
			}
			a := testenv.App(t, mod)
			tn := testenv.NewTenant(t, a, 2)
			ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 5, 10)
			if _, err := a.Pool.Exec(t.Context(), `UPDATE events SET max_holds_per_buyer = $2 WHERE id = $1`, ev.ID, eventCap); err != nil {
				t.Fatal(err)
			}
			procs := []*app.App{testenv.App(t, mod), testenv.App(t, mod), testenv.App(t, mod)}
			seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
			ctx := context.Background()
			newcomer := buyer(tn.Buyers[0])
			newcomer.HoldCap = young
			for _, p := range procs {
				if _, _, err := p.Events.Seats(ctx, newcomer, ev.ID); err != nil {
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
				wg.Go(func() {
					<-start
					res, err := p.Holds.Hold(ctx, newcomer, hold.Request{Event: ev.ID, Seats: seats[i : i+1], Source: hold.SourceAPI})
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
			active := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND user_id = $2 AND status = 'active'`,
				ev.ID, newcomer.User)
			t.Logf("new account: granted %d, refusals %v, active %d", granted, refusals, active)
			if active > young || granted != active || granted == 0 {
				t.Fatalf("new account holds %d (granted %d), cap %d", active, granted, young)
			}
			for code, n := range refusals {
				if code != string(apperr.HoldLimit) {
					t.Errorf("%d refusals %q, want only %q", n, code, apperr.HoldLimit)
				}
			}
			assertSeatInvariants(t, a, ev.ID)

			// An established buyer keeps the event's cap.
			old := buyer(tn.Buyers[1])
			held := 0
			for _, id := range seats[requests : requests+eventCap+1] {
				if _, err := procs[0].Holds.Hold(ctx, old, hold.Request{Event: ev.ID, Seats: []uuid.UUID{id}, Source: hold.SourceAPI}); err == nil {
					held++
				} else if apperr.CodeOf(err) != apperr.HoldLimit {
					t.Fatal(err)
				}
			}
			if held != eventCap {
				t.Fatalf("established buyer held %d, want the event's cap %d", held, eventCap)
			}

			// Staff carrying the same cap are not bound by it.
			box := staff(tn.BoxOffice)
			box.HoldCap = young
			res, err := procs[1].Holds.Hold(ctx, box, hold.Request{Event: ev.ID, Seats: seats[requests+eventCap+1 : requests+eventCap+1+young+2],
				Source: hold.SourceAPI, Customer: &store.Customer{Name: "Ada", Email: "ada@example.com"}, Until: time.Now().Add(time.Hour)})
			if err != nil || len(res.Holds) != young+2 {
				t.Fatalf("box office hold of %d seats: %d held, %v", young+2, len(res.Holds), err)
			}
		})
	}
}
