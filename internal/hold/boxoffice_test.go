package hold_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/app"
	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

var customer = store.Customer{Name: "Ada Lovelace", Email: "ada@example.com", Note: "pays on Friday"}

// holdFor holds seats for the test customer for a day.
func holdFor(t testing.TB, a *app.App, who hold.Actor, event uuid.UUID, seats ...uuid.UUID) []store.Hold {
	t.Helper()
	res, err := a.Holds.Hold(context.Background(), who, hold.Request{Event: event, Seats: seats, Customer: &customer,
		Until: time.Now().Add(24 * time.Hour)})
	if err != nil {
		t.Fatalf("hold for customer: %v", err)
	}
	return res.Holds
}

func holdIDs(hs []store.Hold) []uuid.UUID {
	ids := make([]uuid.UUID, len(hs))
	for i, h := range hs {
		ids[i] = h.ID
	}
	return ids
}

// assertLockFollows checks the seat's Redis lock and expiry entry follow
// the hold's held_until, not the default TTL.
func assertLockFollows(t *testing.T, a *app.App, org, event uuid.UUID, h store.Hold) {
	t.Helper()
	ctx := context.Background()
	k := a.Locks.Keys(org, event)
	ttl, err := a.Redis.PTTL(ctx, k.Seat(h.SeatID)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Until(h.HeldUntil); ttl < want || ttl > want+a.Cfg.LockMargin+time.Minute {
		t.Fatalf("lock TTL %v, want about %v (held_until) plus the margin", ttl, want)
	}
	score, err := a.Redis.ZScore(ctx, k.Holds(), h.SeatID.String()).Result()
	if err != nil {
		t.Fatal(err)
	}
	if int64(score) != h.HeldUntil.UnixMilli() {
		t.Fatalf("expiry score %d, want held_until %d", int64(score), h.HeldUntil.UnixMilli())
	}
}

// TestCustomerHoldLivesItsTime: a hold for a customer keeps the time staff
// chose in Postgres and in Redis (lock TTL and expiry set), on the fast
// path and on the Postgres-only path; the reaper leaves it until then and
// expires it after.
func TestCustomerHoldLivesItsTime(t *testing.T) {
	r := testsvc.StartRedis(t)
	a := testenv.App(t, onRedis(r, 200*time.Millisecond))
	testenv.Background(t, a)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	box := staff(tn.BoxOffice)

	until := time.Now().Add(3 * 24 * time.Hour).Truncate(time.Millisecond)
	res, err := a.Holds.Hold(ctx, box, hold.Request{Event: ev.ID, Seats: seats[0:2], Customer: &customer, Until: until})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || len(res.Holds) != 2 || !res.Holds[0].HeldUntil.Equal(until) || res.Holds[0].Customer == nil {
		t.Fatalf("customer hold: %+v", res)
	}
	for _, h := range res.Holds {
		assertLockFollows(t, a, tn.Org.ID, ev.ID, h)
	}
	// Again for the same customer: the same holds (200); for another
	// customer: taken.
	again, err := a.Holds.Hold(ctx, box, hold.Request{Event: ev.ID, Seats: seats[0:2], Customer: &customer, Until: until})
	if err != nil || again.Created || again.Holds[0].ID != res.Holds[0].ID {
		t.Fatalf("same customer again: %+v %v", again, err)
	}
	other := store.Customer{Name: "Grace Hopper", Email: "grace@example.com"}
	if _, err := a.Holds.Hold(ctx, box, hold.Request{Event: ev.ID, Seats: seats[1:3], Customer: &other,
		Until: until}); !errors.Is(err, apperr.ErrSeatTaken) {
		t.Fatalf("another customer on a held seat: %v, want seat_taken", err)
	}

	// The Postgres-only path: Redis down.
	r.Stop()
	testsvc.Eventually(t, 5*time.Second, "fallback", func() bool { return !a.Engine.FastPath() })
	res2, err := a.Holds.Hold(ctx, box, hold.Request{Event: ev.ID, Seats: seats[5:6], Customer: &other, Until: until})
	if err != nil {
		t.Fatalf("hold for a customer without redis: %v", err)
	}
	r.Start()
	testsvc.Eventually(t, 10*time.Second, "redis synced again", func() bool { return a.Engine.FastPath() })
	// A full sync writes Postgres's held seats as of its read, which may
	// come before this hold when Redis answers again within the round:
	// the follower's next round brings the hold's change from the feed.
	k := a.Locks.Keys(tn.Org.ID, ev.ID)
	testsvc.Eventually(t, 5*time.Second, "the lock of the hold made without redis", func() bool {
		n, err := a.Redis.Exists(ctx, k.Seat(res2.Holds[0].SeatID)).Result()
		return err == nil && n == 1
	})
	assertLockFollows(t, a, tn.Org.ID, ev.ID, res2.Holds[0])

	// The reaper leaves them alone before their time...
	if _, err := a.Reaper.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND status = 'active' AND source = 'box_office'`, ev.ID); n != 3 {
		t.Fatalf("%d customer holds active after a reaper run, want 3", n)
	}
	// ...and expires them after it (time moved on: their deadline is past).
	if _, err := a.Pool.Exec(ctx, `UPDATE seat_holds SET created_at = now() - interval '4 days', held_until = now() - interval '1 second'
		WHERE event_id = $1 AND status = 'active'`, ev.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := a.Reaper.Reap(ctx); err != nil || n != 3 {
		t.Fatalf("reaped %d (%v), want 3", n, err)
	}
	assertSeatInvariants(t, a, ev.ID)
	testsvc.Eventually(t, 5*time.Second, "locks dropped", func() bool {
		n, err := a.Redis.ZCard(ctx, a.Locks.Keys(tn.Org.ID, ev.ID).Holds()).Result()
		return err == nil && n == 0
	})
}

// TestCustomerHoldRules: who may hold for a customer, and for how long.
func TestCustomerHoldRules(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 5)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	cases := []struct {
		name  string
		who   hold.Actor
		c     store.Customer
		until time.Time
		want  apperr.Code
	}{
		{"buyer", buyer(tn.Buyers[0]), customer, time.Now().Add(time.Hour), apperr.Forbidden},
		{"over 14 days", staff(tn.BoxOffice), customer, time.Now().Add(14*24*time.Hour + time.Minute), apperr.Invalid},
		{"in the past", staff(tn.BoxOffice), customer, time.Now().Add(-time.Minute), apperr.Invalid},
		{"no name", staff(tn.BoxOffice), store.Customer{Email: "x@example.com"}, time.Now().Add(time.Hour), apperr.Invalid},
		{"bad email", staff(tn.BoxOffice), store.Customer{Name: "X", Email: "not an email"}, time.Now().Add(time.Hour), apperr.Invalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := a.Holds.Hold(ctx, c.who, hold.Request{Event: ev.ID, Seats: seats[:1], Customer: &c.c,
				Until: c.until}); apperr.CodeOf(err) != c.want {
				t.Fatalf("got %v, want %s", err, c.want)
			}
		})
	}
	if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, ev.ID); n != 0 {
		t.Fatalf("%d holds written by refused requests", n)
	}
	// 14 days exactly is allowed, by an organizer too.
	if _, err := a.Holds.Hold(ctx, staff(tn.Organizer), hold.Request{Event: ev.ID, Seats: seats[:1], Customer: &customer,
		Until: time.Now().Add(14*24*time.Hour - time.Second)}); err != nil {
		t.Fatal(err)
	}
}

// TestSaleReplayedInParallel: twenty sellers send one sale with one key at
// once: one booking, every answer is it, one of them created it.
func TestSaleReplayedInParallel(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 0)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	box := staff(tn.BoxOffice)
	ids := holdIDs(holdFor(t, a, box, ev.ID, seats[0:3]...))

	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[uuid.UUID]int{}
	created := 0
	for range 20 {
		wg.Go(func() {
			b, err := a.BoxOffice.Sell(context.Background(), box, ev.ID, "counter-1", ids, "card")
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("sell: %v", err)
				return
			}
			got[b.ID]++
			if !b.Replayed {
				created++
			}
			if len(b.Tickets) != 3 || b.Customer == nil || b.Customer.Email != customer.Email || b.PaymentMethod != "card" {
				t.Errorf("booking %+v", b)
			}
		})
	}
	wg.Wait()
	if len(got) != 1 || created != 1 {
		t.Fatalf("bookings %v, %d created; want one booking created once", got, created)
	}
	if n := count(t, a, `SELECT count(*) FROM bookings WHERE event_id = $1`, ev.ID); n != 1 {
		t.Fatalf("%d bookings in postgres", n)
	}
	assertSeatInvariants(t, a, ev.ID)
	// The same key with another payment is another payload.
	if _, err := a.BoxOffice.Sell(context.Background(), box, ev.ID, "counter-1", ids, "cash"); apperr.CodeOf(err) != apperr.IdempotencyMismatch {
		t.Fatalf("key reused with another payment: %v", err)
	}
	// A colleague sells a customer hold they did not take; a buyer's own
	// hold is no box-office hold.
	h := holdFor(t, a, staff(tn.Organizer), ev.ID, seats[4])
	if _, err := a.BoxOffice.Sell(context.Background(), box, ev.ID, "counter-2", holdIDs(h), "cash"); err != nil {
		t.Fatalf("sell a colleague's customer hold: %v", err)
	}
	bu := testenv.AddBuyers(t, a, tn.Org.ID, 1)[0]
	res, err := a.Holds.Hold(context.Background(), buyer(bu), hold.Request{Event: ev.ID, Seats: seats[5:6], Source: hold.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.BoxOffice.Sell(context.Background(), box, ev.ID, "counter-3", holdIDs(res.Holds), "cash"); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("sell a buyer's own hold: %v, want invalid", err)
	}
	if _, err := a.BoxOffice.Sell(context.Background(), buyer(bu), ev.ID, "counter-4", holdIDs(res.Holds), "cash"); apperr.CodeOf(err) != apperr.Forbidden {
		t.Fatalf("buyer selling: %v, want forbidden", err)
	}
}

// sell holds and sells seats for the test customer.
func sell(t testing.TB, a *app.App, who hold.Actor, event uuid.UUID, seats ...uuid.UUID) store.Booking {
	t.Helper()
	b, err := a.BoxOffice.Sell(context.Background(), who, event, uuid.NewString(), holdIDs(holdFor(t, a, who, event, seats...)), "cash")
	if err != nil {
		t.Fatalf("sell: %v", err)
	}
	return b
}

// TestPartialCancelAndResale cancels a booking ticket by ticket; a
// cancelled seat is sold again.
func TestPartialCancelAndResale(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	box := staff(tn.BoxOffice)
	b := sell(t, a, box, ev.ID, seats[0:3]...)
	if len(b.Reference) != 8 || store.NormalizeReference(store.FormatReference(b.Reference)) != b.Reference {
		t.Fatalf("reference %q", b.Reference)
	}

	if _, err := a.BoxOffice.Cancel(ctx, buyer(tn.Buyers[0]), b.ID, nil, "no"); apperr.CodeOf(err) != apperr.Forbidden {
		t.Fatalf("buyer cancelling: %v", err)
	}
	if _, err := a.BoxOffice.Cancel(ctx, box, b.ID, nil, " "); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("cancel without a reason: %v", err)
	}
	first := b.Tickets[0]
	got, err := a.BoxOffice.Cancel(ctx, box, b.ID, []uuid.UUID{first.ID}, "customer changed their mind")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.BookingPartiallyCancelled {
		t.Fatalf("status %s, want partially_cancelled", got.Status)
	}
	for _, tk := range got.Tickets {
		if tk.Cancelled() != (tk.ID == first.ID) {
			t.Fatalf("ticket %s cancelled=%v", tk.Seat, tk.Cancelled())
		}
	}
	if _, err := a.BoxOffice.Cancel(ctx, box, b.ID, []uuid.UUID{first.ID}, "again"); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("cancelling a cancelled ticket: %v, want conflict", err)
	}
	if _, err := a.BoxOffice.Cancel(ctx, box, b.ID, []uuid.UUID{uuid.New()}, "x"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("cancelling a ticket of no booking: %v, want not_found", err)
	}
	if n := count(t, a, `SELECT count(*) FROM seats WHERE event_id = $1 AND status = 'sold'`, ev.ID); n != 2 {
		t.Fatalf("%d seats sold after one of three cancelled", n)
	}
	if n := count(t, a, `SELECT count(*) FROM audit_log WHERE event_id = $1 AND action = 'booking.cancelled' AND data->>'reason' = 'customer changed their mind'`, ev.ID); n != 1 {
		t.Fatalf("%d audit rows for the cancel", n)
	}
	assertSeatInvariants(t, a, ev.ID)

	// Sold again: a buyer buys the freed seat.
	u := tn.Buyers[0]
	res, err := a.Holds.Hold(ctx, buyer(u), hold.Request{Event: ev.ID, Seats: []uuid.UUID{first.SeatID}, Source: hold.SourceWeb})
	if err != nil {
		t.Fatalf("hold a cancelled seat: %v", err)
	}
	if _, err := a.Holds.Purchase(ctx, buyer(u), ev.ID, "k", holdIDs(res.Holds)); err != nil {
		t.Fatalf("buy a cancelled seat: %v", err)
	}
	// The rest of the first booking: cancelled whole.
	got, err = a.BoxOffice.Cancel(ctx, box, b.ID, nil, "event moved")
	if err != nil || got.Status != store.BookingCancelled {
		t.Fatalf("cancel the rest: %v %v", got.Status, err)
	}
	if _, err := a.BoxOffice.Cancel(ctx, box, b.ID, nil, "again"); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("cancelling a cancelled booking: %v", err)
	}
	assertSeatInvariants(t, a, ev.ID)
	if n := count(t, a, `SELECT count(*) FROM tickets WHERE seat_id = $1`, first.SeatID); n != 2 {
		t.Fatalf("%d tickets on the seat sold twice", n)
	}
}

// TestCancelRacesHold: buyers hammer seats of a booking while staff cancel
// it. A hold succeeds only once the cancel committed: never a live ticket
// and an active hold on one seat, never a seat held twice.
func TestCancelRacesHold(t *testing.T) {
	a1 := testenv.App(t, nil)
	a2 := testenv.App(t, nil)
	testenv.Background(t, a1)
	testenv.Background(t, a2)
	tn := testenv.NewTenant(t, a1, 6)
	ev := testenv.NewEvent(t, a1, tn.Org.ID, 1, 1, 10)
	seats := testenv.SeatIDs(t, a1, tn.Org.ID, ev.ID)
	ctx := context.Background()
	box := staff(tn.BoxOffice)

	for round := range 5 {
		seat := seats[round]
		b := sell(t, a1, box, ev.ID, seat)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var winners []uuid.UUID
		var won atomic.Bool
		start := make(chan struct{})
		for i, u := range tn.Buyers {
			core := a1.Holds
			if i%2 == 1 {
				core = a2.Holds
			}
			wg.Go(func() {
				<-start
				for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && !won.Load(); {
					_, err := core.Hold(ctx, buyer(u), hold.Request{Event: ev.ID, Seats: []uuid.UUID{seat}, Source: hold.SourceAPI})
					if err == nil {
						// The ticket must be cancelled by now.
						var live int
						if err := a1.Pool.QueryRow(ctx, `SELECT count(*) FROM tickets WHERE seat_id = $1 AND cancelled_at IS NULL`, seat).Scan(&live); err != nil {
							t.Error(err)
						}
						won.Store(true)
						mu.Lock()
						winners = append(winners, u.ID)
						if live != 0 {
							t.Errorf("round %d: hold succeeded with a live ticket on the seat", round)
						}
						mu.Unlock()
						return
					}
					if !errors.Is(err, apperr.ErrSeatTaken) {
						t.Errorf("hold: %v", err)
						return
					}
				}
			})
		}
		close(start)
		time.Sleep(20 * time.Millisecond) // not a condition: the holders are already retrying when the seat frees up
		if _, err := a1.BoxOffice.Cancel(ctx, box, b.ID, nil, "race"); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		// The losers stop once a hold succeeded; none may hold it too.
		if n := count(t, a1, `SELECT count(*) FROM seat_holds WHERE seat_id = $1 AND status = 'active'`, seat); n != 1 {
			t.Fatalf("round %d: %d active holds on the freed seat", round, n)
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d buyers hold the freed seat, want exactly 1", round, len(winners))
		}
		assertSeatInvariants(t, a1, ev.ID)
	}
}

// TestCancelReachesOtherProcesses: a cancel committed without this
// process publishing it (as if it died right after the commit) reaches
// another process's hot cache through the change feed as a "cancelled"
// change, and the registry stays consistent.
func TestCancelReachesOtherProcesses(t *testing.T) {
	a1 := testenv.App(t, nil)
	a2 := testenv.App(t, nil)
	testenv.Background(t, a1)
	testenv.Background(t, a2)
	tn := testenv.NewTenant(t, a1, 0)
	ev := testenv.NewEvent(t, a1, tn.Org.ID, 1, 1, 10)
	seats := testenv.SeatIDs(t, a1, tn.Org.ID, ev.ID)
	ctx := context.Background()
	box := staff(tn.BoxOffice)
	org := staff(tn.Organizer)

	var mu sync.Mutex
	kinds := map[uuid.UUID]string{}
	stop, err := a2.Engine.Watch(ctx, org, ev.ID, func(ds []hold.Delta) {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range ds {
			kinds[d.Seat] = d.Kind
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	status := func(a *app.App, seat uuid.UUID) store.SeatStatus {
		_, ss, err := a.Events.Seats(ctx, org, ev.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			if s.ID == seat {
				return s.Status
			}
		}
		t.Fatalf("seat %s missing", seat)
		return ""
	}

	// Through the core: published at once.
	b := sell(t, a1, box, ev.ID, seats[0], seats[1])
	testsvc.Eventually(t, 5*time.Second, "sold on the other process", func() bool { return status(a2, seats[0]) == store.Sold })
	if _, err := a1.BoxOffice.Cancel(ctx, box, b.ID, []uuid.UUID{b.Tickets[0].ID}, "changed plans"); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 5*time.Second, "available on the other process", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return status(a2, b.Tickets[0].SeatID) == store.Available && kinds[b.Tickets[0].SeatID] == hold.KindCancelled
	})

	// Straight in Postgres, never published: the feed carries it.
	if _, _, err := a1.Store.Bookings.Cancel(ctx, tn.Org.ID, b.ID, tn.BoxOffice.ID, nil, "no publish"); err != nil {
		t.Fatal(err)
	}
	other := b.Tickets[1].SeatID
	testsvc.Eventually(t, 5*time.Second, "feed change on the other process", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return status(a2, other) == store.Available && kinds[other] == hold.KindCancelled
	})
	// The freed seats take a hold through Redis at once, and every tier
	// agrees.
	holdFor(t, a2, box, ev.ID, other)
	for _, a := range []*app.App{a1, a2} {
		testsvc.Eventually(t, 5*time.Second, "registry consistent", func() bool {
			r, err := a.Monitor.RegistryStatus(ctx, org, ev.ID)
			return err == nil && r.Consistent && r.Postgres == 1
		})
	}
}

// TestBookingTenancy: another organization's booking is not found, to read
// or to cancel; a buyer reads only their own.
func TestBookingTenancy(t *testing.T) {
	a := testenv.App(t, nil)
	t1 := testenv.NewTenant(t, a, 2)
	t2 := testenv.NewTenant(t, a, 0)
	ev := testenv.NewEvent(t, a, t1.Org.ID, 1, 1, 5)
	seats := testenv.SeatIDs(t, a, t1.Org.ID, ev.ID)
	ctx := context.Background()
	b := sell(t, a, staff(t1.BoxOffice), ev.ID, seats[0])

	if _, err := a.BoxOffice.Booking(ctx, staff(t2.BoxOffice), b.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("other org reading: %v", err)
	}
	if _, err := a.BoxOffice.Cancel(ctx, staff(t2.BoxOffice), b.ID, nil, "x"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("other org cancelling: %v", err)
	}
	if _, err := a.BoxOffice.Booking(ctx, buyer(t1.Buyers[0]), b.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("a buyer reading a booking not theirs: %v", err)
	}
	if got, err := a.BoxOffice.Booking(ctx, staff(t1.Organizer), b.ID); err != nil || got.ID != b.ID {
		t.Fatalf("staff reading: %v", err)
	}
	bs, err := a.BoxOffice.FindBookings(ctx, staff(t2.BoxOffice), b.Reference)
	if err != nil || len(bs) != 0 {
		t.Fatalf("other org finding by reference: %d %v", len(bs), err)
	}
	for _, q := range []string{store.FormatReference(b.Reference), " " + b.Reference + " ", "ADA@example.com"} {
		bs, err := a.BoxOffice.FindBookings(ctx, staff(t1.BoxOffice), q)
		if err != nil || len(bs) != 1 || bs[0].ID != b.ID {
			t.Fatalf("finding by %q: %d %v", q, len(bs), err)
		}
	}
}

// TestHouseSeats: blocked seats named as house seats go on sale in one
// action.
func TestHouseSeats(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 0)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	box := staff(tn.BoxOffice)
	for _, s := range seats[:3] {
		if _, err := a.Holds.SetBlocked(ctx, box, ev.ID, s, true, "sponsor"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.BoxOffice.CreateHouseSeats(ctx, box, ev.ID, "Sponsor", seats[2:4]); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("house seats with an available seat: %v", err)
	}
	h, err := a.BoxOffice.CreateHouseSeats(ctx, box, ev.ID, "Sponsor", seats[:3])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.BoxOffice.CreateHouseSeats(ctx, box, ev.ID, "Press", seats[2:3]); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("a seat in two house allocations: %v", err)
	}
	got, err := a.BoxOffice.ReleaseHouseSeats(ctx, box, h.ID)
	if err != nil || !got.Released() || len(got.Seats) != 3 {
		t.Fatalf("release: %+v %v", got, err)
	}
	_, ss, err := a.Events.Seats(ctx, box, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss[:3] {
		if s.Status != store.Available {
			t.Fatalf("seat %s is %s after release", s.ID, s.Status)
		}
	}
	if n := count(t, a, `SELECT count(*) FROM seats WHERE event_id = $1 AND status = 'available'`, ev.ID); n != 10 {
		t.Fatalf("%d seats available in postgres", n)
	}
	if _, err := a.BoxOffice.ReleaseHouseSeats(ctx, box, h.ID); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("releasing twice: %v", err)
	}
	other := testenv.NewTenant(t, a, 0)
	if _, err := a.BoxOffice.ReleaseHouseSeats(ctx, staff(other.BoxOffice), h.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("another org releasing: %v", err)
	}
}
