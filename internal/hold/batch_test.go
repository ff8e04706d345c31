package hold_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/testenv"
)

// TestCoalescedHolds sends many buyers at distinct seats at once with a
// single statement slot, so holds are coalesced into shared statements,
// plus every buyer repeating its own seat concurrently. Every seat must
// end up held exactly once by its buyer, each buyer gets exactly one
// "created" (the repeat is the idempotent answer with the same hold), and
// two tenants' holds in one statement stay apart.
func TestCoalescedHolds(t *testing.T) {
	for _, tc := range []struct {
		name       string
		slots, max int
	}{
		{"one statement at a time", 1, 64},
		{"batches of two", 2, 2},
		{"off", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := testenv.App(t, func(c *config.Config) { c.HoldBatchSlots, c.HoldBatchMax = tc.slots, tc.max })
			ctx := context.Background()
			type tenant struct {
				ev    uuid.UUID
				seats []uuid.UUID
				acts  []hold.Actor
			}
			var ts []tenant
			for range 2 {
				tn := testenv.NewTenant(t, a, 0)
				users := testenv.AddBuyers(t, a, tn.Org.ID, 60)
				ev := testenv.NewEvent(t, a, tn.Org.ID, 2, 3, 10)
				x := tenant{ev: ev.ID, seats: testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)}
				for _, u := range users {
					x.acts = append(x.acts, buyer(u))
				}
				if _, _, err := a.Events.Seats(ctx, x.acts[0], ev.ID); err != nil {
					t.Fatal(err)
				}
				ts = append(ts, x)
			}
			writes := pgWrites(a)
			var wg sync.WaitGroup
			start := make(chan struct{})
			var created, again atomic.Int64
			holdIDs := sync.Map{}
			for _, x := range ts {
				for i, act := range x.acts {
					seat := x.seats[i]
					for range 2 {
						wg.Go(func() {
							<-start
							res, err := a.Holds.Hold(ctx, act, hold.Request{Event: x.ev, Seats: []uuid.UUID{seat}, Source: hold.SourceAPI})
							if err != nil {
								t.Errorf("hold: %v", err)
								return
							}
							if res.Created {
								created.Add(1)
							} else {
								again.Add(1)
							}
							if prev, loaded := holdIDs.LoadOrStore(seat, res.Holds[0].ID); loaded && prev != res.Holds[0].ID {
								t.Errorf("seat %s answered with two holds", seat)
							}
						})
					}
				}
			}
			close(start)
			wg.Wait()
			n := int64(len(ts) * len(ts[0].acts))
			if created.Load() != n || again.Load() != n {
				t.Errorf("created %d, repeated %d; want %d and %d", created.Load(), again.Load(), n, n)
			}
			for _, x := range ts {
				held := activeHolds(t, a, x.ev)
				for i, act := range x.acts {
					if held[x.seats[i]] != 1 {
						t.Errorf("seat %d: %d active holds", i, held[x.seats[i]])
					}
					if c := count(t, a, `SELECT count(*) FROM seat_holds WHERE seat_id = $1 AND user_id = $2 AND org_id = $3`,
						x.seats[i], act.User, act.Org); c != 1 {
						t.Errorf("seat %d: %d holds of its buyer in its org", i, c)
					}
				}
				if c := count(t, a, `SELECT count(*) FROM audit_log WHERE event_id = $1 AND action = 'hold.created'`, x.ev); c != len(x.acts) {
					t.Errorf("%d hold.created audit rows, want %d", c, len(x.acts))
				}
				assertSeatInvariants(t, a, x.ev)
			}
			st, rows := a.Store.Holds.BatchStats()
			t.Logf("%d holds and %d repeats; %.0f reached Postgres; %d rows in %d coalesced statements", n, n, pgWrites(a)-writes, rows, st)
			switch {
			case tc.max == 1 && st != 0:
				t.Errorf("coalescing is off, yet %d statements went through the batcher", st)
			case tc.max > 1 && rows <= st:
				t.Errorf("no statement carried more than one hold (%d rows in %d statements): nothing was coalesced", rows, st)
			case tc.max > 1 && rows > st*int64(tc.max):
				t.Errorf("%d rows in %d statements exceeds %d per statement", rows, st, tc.max)
			}
		})
	}
}
