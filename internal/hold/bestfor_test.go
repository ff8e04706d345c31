package hold_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestHoldBestForCustomer: staff ask for the 3 best seats for a named
// customer. They are chosen by the buyer's rules (the strict orphan rule
// and the accessible hold-back, which staff picking by hand are not bound
// by), held for the customer until the time staff chose, and the reaper
// leaves them; refusals write nothing.
func TestHoldBestForCustomer(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 1)
	e := onSale(t, a, tn, 2, func(in *hold.EventInput) {
		in.OrphanRule = ptr("strict")
		in.AccessibleReleaseAt = rfc(time.Now().Add(time.Hour))
	})
	_, pos := seatMap(t, a, tn.Org.ID, e.ID)
	ctx := context.Background()
	// A buyer has the front row's centre: 1 (accessible) and 2 (its
	// companion) are held back, and any 3 of 7–10 leave a seat alone.
	if _, err := a.Holds.Hold(ctx, buyer(tn.Buyers[0]), hold.Request{Event: e.ID,
		Seats: []uuid.UUID{pos["A/05"], pos["A/06"]}, Source: hold.SourceAPI}); err != nil {
		t.Fatal(err)
	}
	box := staff(tn.BoxOffice)
	until := time.Now().Add(3 * 24 * time.Hour).Truncate(time.Millisecond)

	for _, c := range []struct {
		name  string
		who   hold.Actor
		best  hold.Best
		c     store.Customer
		until time.Time
		want  apperr.Code
	}{
		{"buyer", buyer(tn.Buyers[0]), hold.Best{Count: 3}, customer, until, apperr.Forbidden},
		{"no seats", box, hold.Best{Count: 0}, customer, until, apperr.Invalid},
		{"too many", box, hold.Best{Count: 11}, customer, until, apperr.Invalid},
		{"unknown category", box, hold.Best{Count: 3, Category: "nope"}, customer, until, apperr.Invalid},
		{"unknown section", box, hold.Best{Count: 3, Section: "Z"}, customer, until, apperr.Invalid},
		{"bad email", box, hold.Best{Count: 3}, store.Customer{Name: "X", Email: "nope"}, until, apperr.Invalid},
		{"in the past", box, hold.Best{Count: 3}, customer, time.Now().Add(-time.Minute), apperr.Invalid},
		{"over 14 days", box, hold.Best{Count: 3}, customer, time.Now().Add(15 * 24 * time.Hour), apperr.Invalid},
		{"more than are left", box, hold.Best{Count: 7, Category: "front"}, customer, until, apperr.NotEnoughSeats},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := a.Holds.Hold(ctx, c.who, hold.Request{Event: e.ID, Best: &c.best, Customer: &c.c,
				Until: c.until}); apperr.CodeOf(err) != c.want {
				t.Fatalf("got %v, want %s", err, c.want)
			}
		})
	}
	if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, e.ID); n != 2 {
		t.Fatalf("%d holds after refused requests, want the buyer's 2", n)
	}

	res, err := a.Holds.Hold(ctx, box, hold.Request{Event: e.ID, Best: &hold.Best{Count: 3}, Customer: &customer, Until: until})
	if err != nil {
		t.Fatal(err)
	}
	var got []uuid.UUID
	for _, h := range res.Holds {
		got = append(got, h.SeatID)
		if h.Customer == nil || h.Customer.Email != customer.Email || !h.HeldUntil.Equal(until) || h.UserID != tn.BoxOffice.ID {
			t.Errorf("hold %+v, want one for %s until %v by the box office", h, customer.Email, until)
		}
	}
	// By hand staff could take A 2–4; by the buyer's rules the best is
	// the back row's centre.
	want := []uuid.UUID{pos["B/04"], pos["B/05"], pos["B/06"]}
	if !res.Created || !sameSeats(got, want) {
		t.Fatalf("best 3 for the customer: %v (created %v), want B 4–6 %v", got, res.Created, want)
	}
	for _, h := range res.Holds {
		assertLockFollows(t, a, tn.Org.ID, e.ID, h)
	}
	if _, err := a.Reaper.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, a, `SELECT count(*) FROM seat_holds h JOIN hold_customers c ON c.hold_id = h.id
		WHERE h.event_id = $1 AND h.status = 'active' AND h.source = 'box_office' AND c.email = $2`, e.ID, customer.Email); n != 3 {
		t.Fatalf("%d customer holds active after a reaper run, want 3", n)
	}
	// Section and category filters apply as for a buyer.
	res, err = a.Holds.Hold(ctx, staff(tn.Organizer), hold.Request{Event: e.ID,
		Best: &hold.Best{Count: 2, Section: "S", Category: "front"}, Customer: &store.Customer{Name: "Grace Hopper", Email: "grace@example.com"}, Until: until})
	if err != nil {
		t.Fatal(err)
	}
	byID, _ := seatMap(t, a, tn.Org.ID, e.ID)
	for _, h := range res.Holds {
		if s := byID[h.SeatID]; s.Category != "front" || s.Accessible || s.Companion {
			t.Errorf("seat %s-%d (%s) for a front-category request", s.Row, s.Number, s.Category)
		}
	}
	// The front row now has 7–10 and the held-back 1–2 left: 4 take
	// 7–10; then 2 more are there only for a customer who needs
	// accessible seating.
	grace := store.Customer{Name: "Grace Hopper", Email: "grace@example.com"}
	front := hold.Best{Count: 4, Category: "front"}
	if res, err = a.Holds.Hold(ctx, box, hold.Request{Event: e.ID, Best: &front, Customer: &grace, Until: until}); err != nil || len(res.Holds) != 4 {
		t.Fatalf("4 front seats: %+v %v", res, err)
	}
	front.Count = 2
	if _, err := a.Holds.Hold(ctx, box, hold.Request{Event: e.ID, Best: &front, Customer: &grace,
		Until: until}); apperr.CodeOf(err) != apperr.NotEnoughSeats {
		t.Fatalf("2 front seats with only the held-back ones left: %v, want not_enough_seats", err)
	}
	if res, err = a.Holds.Hold(ctx, box, hold.Request{Event: e.ID, Best: &front, Accessible: true, Customer: &grace, Until: until}); err != nil {
		t.Fatalf("2 accessible front seats: %v", err)
	}
	if got := []uuid.UUID{res.Holds[0].SeatID, res.Holds[1].SeatID}; !sameSeats(got, []uuid.UUID{pos["A/01"], pos["A/02"]}) {
		t.Errorf("accessible request got %v, want A 1–2", got)
	}
	assertSeatInvariants(t, a, e.ID)
	assertNoOrphans(t, a, e.ID)
}

// TestHoldBestForRacesBuyers: two box offices on two processes ask for the
// best seats for customers while buyers ask for theirs, more seats than
// there are: nobody gets a seat twice, customer holds carry the customer,
// the refused hear not_enough_seats, and Postgres holds what was granted.
func TestHoldBestForRacesBuyers(t *testing.T) {
	bothPaths(t, func(t *testing.T, mod func(*config.Config), _ bool) {
		a, b := testenv.App(t, mod), testenv.App(t, mod)
		tn := testenv.NewTenant(t, a, 0)
		e := onSale(t, a, tn, 2, nil)
		buyers := testenv.AddBuyers(t, a, tn.Org.ID, 6)
		ctx := context.Background()
		until := time.Now().Add(time.Hour)
		var mu sync.Mutex
		var wg sync.WaitGroup
		granted := map[uuid.UUID]int{} // seat -> request
		var refused []error
		grant := func(i int, res hold.Result, err error, forCustomer bool) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refused = append(refused, err)
				return
			}
			if len(res.Holds) != 3 {
				t.Errorf("request %d granted %d seats, want 3", i, len(res.Holds))
			}
			for _, h := range res.Holds {
				if other, ok := granted[h.SeatID]; ok {
					t.Errorf("seat %v granted to requests %d and %d", h.SeatID, other, i)
				}
				granted[h.SeatID] = i
				if (h.Customer != nil) != forCustomer {
					t.Errorf("request %d: hold customer %+v", i, h.Customer)
				}
			}
		}
		for i, u := range buyers {
			core := []*hold.Holds{a.Holds, b.Holds}[i%2]
			wg.Go(func() {
				res, err := core.Hold(ctx, buyer(u), hold.Request{Event: e.ID, Best: &hold.Best{Count: 3}, Source: hold.SourceAPI})
				grant(i, res, err, false)
			})
		}
		for i, s := range []store.User{tn.BoxOffice, tn.Organizer} {
			core := []*hold.Holds{a.Holds, b.Holds}[i%2]
			c := store.Customer{Name: "Customer", Email: s.ID.String() + "@example.com"}
			wg.Go(func() {
				res, err := core.Hold(ctx, staff(s), hold.Request{Event: e.ID, Best: &hold.Best{Count: 3}, Customer: &c, Until: until})
				grant(100+i, res, err, true)
			})
		}
		wg.Wait()
		t.Logf("granted %d seats, refused %d requests", len(granted), len(refused))
		// 8 requests of 3 for 20 seats: at most 6 can be granted.
		if len(granted) > 18 || len(refused) < 2 {
			t.Errorf("granted %d seats, refused %d", len(granted), len(refused))
		}
		for _, err := range refused {
			if apperr.CodeOf(err) != apperr.NotEnoughSeats {
				t.Errorf("refused with %v, want not_enough_seats", err)
			}
		}
		if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND status = 'active'`, e.ID); n != len(granted) {
			t.Errorf("%d active holds in Postgres, %d granted", n, len(granted))
		}
		assertSeatInvariants(t, a, e.ID)
	})
}

func sameSeats(got, want []uuid.UUID) bool {
	g, w := slices.Clone(got), slices.Clone(want)
	cmp := func(x, y uuid.UUID) int { return slices.Compare(x[:], y[:]) }
	slices.SortFunc(g, cmp)
	slices.SortFunc(w, cmp)
	return slices.Equal(g, w)
}
