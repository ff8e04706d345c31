package hold_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestThousandBuyersOneSeat releases 1 000 different buyers on one seat
// at once: exactly one wins, and the 999 refusals never reach Postgres.
func TestThousandBuyersOneSeat(t *testing.T) {
	a := testenv.App(t, func(c *config.Config) { c.PGMaxConns = 50 })
	tn := testenv.NewTenant(t, a, 0)
	users := testenv.AddBuyers(t, a, tn.Org.ID, 1000)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 5)
	seat := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)[3]
	ctx := context.Background()
	// Warm the hot cache so the race is about the seat, not the load.
	if _, _, err := a.Events.Seats(ctx, buyer(users[0]), ev.ID); err != nil {
		t.Fatal(err)
	}
	writesBefore := pgWrites(a)
	auditBefore := count(t, a, `SELECT count(*) FROM audit_log WHERE org_id = $1`, tn.Org.ID)

	var wg sync.WaitGroup
	start := make(chan struct{})
	var won, taken, other atomic.Int64
	var slowest atomic.Int64
	for _, u := range users {
		wg.Go(func() {
			<-start
			t0 := time.Now()
			_, err := a.Holds.Hold(ctx, buyer(u), hold.Request{Event: ev.ID, Seats: []uuid.UUID{seat}, Source: hold.SourceAPI})
			d := time.Since(t0)
			for {
				cur := slowest.Load()
				if int64(d) <= cur || slowest.CompareAndSwap(cur, int64(d)) {
					break
				}
			}
			switch {
			case err == nil:
				won.Add(1)
			case errors.Is(err, apperr.ErrSeatTaken):
				taken.Add(1)
			default:
				other.Add(1)
				t.Errorf("unexpected error: %v", err)
			}
		})
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	wall := time.Since(t0)

	if won.Load() != 1 || taken.Load() != 999 {
		t.Fatalf("won=%d taken=%d other=%d, want 1/999/0", won.Load(), taken.Load(), other.Load())
	}
	if n := activeHolds(t, a, ev.ID)[seat]; n != 1 {
		t.Fatalf("postgres has %d active holds on the seat, want 1", n)
	}
	if w := pgWrites(a) - writesBefore; w != 1 {
		t.Fatalf("%v hold writes reached postgres, want exactly 1 (refusals must not write)", w)
	}
	if n := count(t, a, `SELECT count(*) FROM audit_log WHERE org_id = $1`, tn.Org.ID) - auditBefore; n != 1 {
		t.Fatalf("%d audit rows written, want 1", n)
	}
	if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE seat_id = $1`, seat); n != 1 {
		t.Fatalf("%d hold rows for the seat, want 1", n)
	}
	t.Logf("1000 buyers, one seat: 1 hold, 999 refusals, 1 postgres write; wall %v, slowest answer %v",
		wall.Round(time.Millisecond), time.Duration(slowest.Load()).Round(time.Millisecond))
	assertSeatInvariants(t, a, ev.ID)
}

// TestTwoCoresContend runs two independent cores (separate hot caches and
// Redis clients, like two processes) against the same seats.
func TestTwoCoresContend(t *testing.T) {
	a1 := testenv.App(t, nil)
	a2 := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a1, 0)
	users := testenv.AddBuyers(t, a1, tn.Org.ID, 60)
	ev := testenv.NewEvent(t, a1, tn.Org.ID, 1, 2, 10)
	seats := testenv.SeatIDs(t, a1, tn.Org.ID, ev.ID)
	ctx := context.Background()

	var wg sync.WaitGroup
	start := make(chan struct{})
	var granted atomic.Int64
	for i, u := range users {
		core := a1.Holds
		if i%2 == 1 {
			core = a2.Holds
		}
		wg.Go(func() {
			<-start
			for range 8 {
				seat := seats[rand.IntN(len(seats))]
				res, err := core.Hold(ctx, buyer(u), hold.Request{Event: ev.ID, Seats: []uuid.UUID{seat}, Source: hold.SourceAPI})
				if err == nil && res.Created {
					granted.Add(1)
					if rand.IntN(2) == 0 {
						if _, err := core.Release(ctx, buyer(u), res.Holds[0].ID, ""); err != nil {
							t.Errorf("release: %v", err)
						}
					}
				} else if err != nil && !errors.Is(err, apperr.ErrSeatTaken) && !errors.Is(err, apperr.ErrHoldLimit) {
					t.Errorf("hold: %v", err)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for seat, n := range activeHolds(t, a1, ev.ID) {
		if n > 1 {
			t.Fatalf("seat %s has %d active holds", seat, n)
		}
	}
	assertSeatInvariants(t, a1, ev.ID)
	total := count(t, a1, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, ev.ID)
	t.Logf("two cores, 60 buyers x 8 attempts on 20 seats: %d holds granted over time, never two at once", total)
	if total == 0 || granted.Load() == 0 {
		t.Fatal("no hold was ever granted: the test exercised nothing")
	}
}

// TestOverlappingMultiSeatHolds has goroutines grab overlapping groups of
// seats: every group is all-or-nothing and no seat ends up with two.
func TestOverlappingMultiSeatHolds(t *testing.T) {
	a1 := testenv.App(t, nil)
	a2 := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a1, 0)
	users := testenv.AddBuyers(t, a1, tn.Org.ID, 80)
	ev := testenv.NewEvent(t, a1, tn.Org.ID, 1, 3, 10)
	seats := testenv.SeatIDs(t, a1, tn.Org.ID, ev.ID)
	ctx := context.Background()

	type grant struct {
		user  uuid.UUID
		seats []uuid.UUID
		holds []store.Hold
	}
	var mu sync.Mutex
	var grants []grant
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, u := range users {
		core := a1.Holds
		if i%2 == 1 {
			core = a2.Holds
		}
		// A window of 2 to 4 adjacent seats, shuffled so lock order differs.
		n := 2 + rand.IntN(3)
		first := rand.IntN(len(seats) - n)
		want := append([]uuid.UUID(nil), seats[first:first+n]...)
		rand.Shuffle(len(want), func(i, j int) { want[i], want[j] = want[j], want[i] })
		wg.Go(func() {
			<-start
			res, err := core.Hold(ctx, buyer(u), hold.Request{Event: ev.ID, Seats: want, Source: hold.SourceAPI})
			if err != nil {
				if !errors.Is(err, apperr.ErrSeatTaken) {
					t.Errorf("hold: %v", err)
				}
				return
			}
			mu.Lock()
			grants = append(grants, grant{user: u.ID, seats: want, holds: res.Holds})
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()

	owner := map[uuid.UUID]uuid.UUID{}
	for _, g := range grants {
		for i, h := range g.holds {
			if h.SeatID != g.seats[i] || h.UserID != g.user {
				t.Fatalf("hold %d of a grant is for seat %s/user %s, want %s/%s", i, h.SeatID, h.UserID, g.seats[i], g.user)
			}
			if prev, ok := owner[h.SeatID]; ok {
				t.Fatalf("seat %s granted to %s and %s", h.SeatID, prev, g.user)
			}
			owner[h.SeatID] = g.user
		}
	}
	// No partial application: every active hold belongs to a full grant.
	active := activeHolds(t, a1, ev.ID)
	if len(active) != len(owner) {
		t.Fatalf("postgres has %d held seats, grants cover %d: a group was partially applied", len(active), len(owner))
	}
	assertSeatInvariants(t, a1, ev.ID)
	t.Logf("80 overlapping multi-seat requests: %d granted covering %d seats, %d refused whole", len(grants), len(owner), len(users)-len(grants))
	if len(grants) == 0 {
		t.Fatal("nothing granted")
	}
}

// TestHoldIsIdempotent: the same user asking again gets the same hold.
func TestHoldIsIdempotent(t *testing.T) {
	a := testenv.App(t, nil)
	a2 := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 6)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	u := buyer(tn.Buyers[0])

	first, err := a.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, Seats: seats[:1], Source: hold.SourceWeb})
	if err != nil || !first.Created {
		t.Fatalf("first hold: created=%v err=%v", first.Created, err)
	}
	for name, core := range map[string]*hold.Holds{"same process": a.Holds, "other process": a2.Holds} {
		again, err := core.Hold(ctx, u, hold.Request{Event: ev.ID, Seats: seats[:1], Source: hold.SourceWeb})
		if err != nil {
			t.Fatalf("%s: again: %v", name, err)
		}
		if again.Created || again.Holds[0].ID != first.Holds[0].ID {
			t.Fatalf("%s: again gave created=%v hold %s, want the same hold %s", name, again.Created, again.Holds[0].ID, first.Holds[0].ID)
		}
	}
	// A group containing the held seat plus new ones: the held one keeps
	// its id, the others are new.
	group, err := a2.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, Seats: seats[:3], Source: hold.SourceWeb})
	if err != nil || !group.Created {
		t.Fatalf("group: created=%v err=%v", group.Created, err)
	}
	if group.Holds[0].ID != first.Holds[0].ID {
		t.Fatalf("group reissued the held seat's hold")
	}
	// Another user is refused, naming the seat.
	_, err = a.Holds.Hold(ctx, buyer(tn.Buyers[1]), hold.Request{Event: ev.ID, Seats: seats[:1], Source: hold.SourceWeb})
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != apperr.SeatTaken || len(ae.Seats) != 1 || ae.Seats[0] != seats[0].String() {
		t.Fatalf("other user: %v", err)
	}
	t.Logf("refusal reads: %q", ae.Message)
	if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, ev.ID); n != 3 {
		t.Fatalf("%d hold rows, want 3", n)
	}
}

// TestHoldLimitAndValidation covers the per-buyer cap and bad requests.
func TestHoldLimitAndValidation(t *testing.T) {
	a := testenv.App(t, func(c *config.Config) { c.MaxHoldsPerBuyer = 3 })
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 8)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	u := buyer(tn.Buyers[0])
	if _, err := a.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, Seats: seats[:3], Source: hold.SourceWeb}); err != nil {
		t.Fatal(err)
	}
	_, err := a.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, Seats: seats[3:4], Source: hold.SourceWeb})
	if apperr.CodeOf(err) != apperr.HoldLimit {
		t.Fatalf("fourth hold: %v, want hold_limit", err)
	}
	cases := map[string][]uuid.UUID{
		"none":      nil,
		"duplicate": {seats[5], seats[5]},
		"unknown":   {uuid.New()},
	}
	want := map[string]apperr.Code{"none": apperr.Invalid, "duplicate": apperr.Invalid, "unknown": apperr.NotFound}
	for name, ids := range cases {
		_, err := a.Holds.Hold(ctx, buyer(tn.Buyers[0]), hold.Request{Event: ev.ID, Seats: ids, Source: hold.SourceWeb})
		if apperr.CodeOf(err) != want[name] {
			t.Errorf("%s: %v, want %s", name, err, want[name])
		}
	}
	if _, err := a.Holds.Hold(ctx, u, hold.Request{Event: uuid.New(), Seats: seats[:1],
		Source: hold.SourceWeb}); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("unknown event: %v", err)
	}
	if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, ev.ID); n != 3 {
		t.Fatalf("%d hold rows, want 3", n)
	}
}
