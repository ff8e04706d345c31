package hold_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/app"
	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

func join(t testing.TB, a *app.App, who hold.Actor, event uuid.UUID, n int, category, section string) store.WaitlistEntry {
	t.Helper()
	e, err := a.Waitlist.Join(context.Background(), who, event, hold.WaitFor{Count: n, Category: category, Section: section})
	if err != nil {
		t.Fatalf("join waitlist: %v", err)
	}
	return e
}

func offers(t testing.TB, a *app.App) int {
	t.Helper()
	n, err := a.Waitlist.OfferRound(context.Background())
	if err != nil {
		t.Fatalf("offer round: %v", err)
	}
	return n
}

func entry(t testing.TB, a *app.App, org, id uuid.UUID) store.WaitlistEntry {
	t.Helper()
	e, err := a.Store.Waitlist.Entry(context.Background(), org, id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// assertOffered checks the entry was offered n seats that are now held
// for its buyer as waitlist holds, in the cart the buyer sees.
func assertOffered(t testing.TB, a *app.App, who hold.Actor, event uuid.UUID, e store.WaitlistEntry, n int) []store.Hold {
	t.Helper()
	got := entry(t, a, who.Org, e.ID)
	if got.Status != store.WaitlistOffered || len(got.HoldIDs) != n || got.Position != 0 {
		t.Fatalf("entry %+v, want offered %d seats", got, n)
	}
	hs, err := a.Holds.Mine(context.Background(), who, event)
	if err != nil {
		t.Fatal(err)
	}
	var offered []store.Hold
	for _, h := range hs {
		if h.Source == store.SourceWaitlist {
			offered = append(offered, h)
		}
	}
	if len(offered) != n {
		t.Fatalf("buyer has %d waitlist holds, want %d", len(offered), n)
	}
	return offered
}

// TestWaitlistFirstComeFirstServed: two buyers wait for one seat each;
// the first freed seat goes to the first, the next to the second, each
// audited once; nothing is offered while nothing is free.
func TestWaitlistFirstComeFirstServed(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 3)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 2)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	holder, first, second := buyer(tn.Buyers[0]), buyer(tn.Buyers[1]), buyer(tn.Buyers[2])
	res, err := a.Holds.Hold(ctx, holder, hold.Request{Event: ev.ID, Seats: seats, Source: hold.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	e1 := join(t, a, first, ev.ID, 1, "", "")
	e2 := join(t, a, second, ev.ID, 1, "", "")
	if e1.Position != 1 || e2.Position != 2 {
		t.Fatalf("positions %d, %d, want 1, 2", e1.Position, e2.Position)
	}
	if _, err := a.Waitlist.Join(ctx, first, ev.ID, hold.WaitFor{Count: 1}); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("joining twice: %v, want conflict", err)
	}
	if n := offers(t, a); n != 0 {
		t.Fatalf("%d offers with no seat free", n)
	}

	if _, err := a.Holds.Release(ctx, holder, res.Holds[1].ID, ""); err != nil {
		t.Fatal(err)
	}
	if n := offers(t, a); n != 1 {
		t.Fatalf("%d offers after one release, want 1", n)
	}
	h := assertOffered(t, a, first, ev.ID, e1, 1)
	if h[0].SeatID != seats[1] || time.Until(h[0].HeldUntil) < 9*time.Minute {
		t.Fatalf("offer %+v: want seat %v held for the default 10 minutes", h[0], seats[1])
	}
	if got := entry(t, a, tn.Org.ID, e2.ID); got.Status != store.WaitlistWaiting || got.Position != 1 {
		t.Fatalf("second entry %+v, want waiting first in line", got)
	}

	if _, err := a.Holds.Release(ctx, holder, res.Holds[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	offers(t, a)
	assertOffered(t, a, second, ev.ID, e2, 1)
	if n := count(t, a, `SELECT count(*) FROM audit_log WHERE event_id = $1 AND action = 'waitlist.offered'`, ev.ID); n != 2 {
		t.Fatalf("%d waitlist.offered audit rows, want 2", n)
	}
	if n := count(t, a, `SELECT count(*) FROM waitlist_work WHERE event_id = $1`, ev.ID); n != 0 {
		t.Fatalf("%d work items left", n)
	}
	assertSeatInvariants(t, a, ev.ID)
}

// TestWaitlistExpiryAndLapse: with the background loops running, a hold
// that expires is offered to the first in line, and that offer lapsing
// goes to the next.
func TestWaitlistExpiryAndLapse(t *testing.T) {
	a := testenv.App(t, func(c *config.Config) {
		c.HoldTTL = time.Second
		c.WaitlistOfferTTL = time.Second
		c.ReaperInterval = 100 * time.Millisecond
	})
	testenv.Background(t, a)
	tn := testenv.NewTenant(t, a, 3)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 1)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	holder, first, second := buyer(tn.Buyers[0]), buyer(tn.Buyers[1]), buyer(tn.Buyers[2])
	if _, err := a.Holds.Hold(context.Background(), holder, hold.Request{Event: ev.ID, Seats: seats, Source: hold.SourceWeb}); err != nil {
		t.Fatal(err)
	}
	e1 := join(t, a, first, ev.ID, 1, "", "")
	e2 := join(t, a, second, ev.ID, 1, "", "")
	testsvc.Eventually(t, 5*time.Second, "first in line offered after the expiry", func() bool {
		return entry(t, a, tn.Org.ID, e1.ID).Status == store.WaitlistOffered
	})
	testsvc.Eventually(t, 5*time.Second, "offer lapsed to the second in line", func() bool {
		return entry(t, a, tn.Org.ID, e2.ID).Status == store.WaitlistOffered
	})
	// The first offer stays offered; its seat went back, so it is over.
	if e := entry(t, a, tn.Org.ID, e1.ID); e.Status != store.WaitlistOffered || e.Offer != store.OfferEnded {
		t.Fatalf("the lapsed offer: status %s, offer %q, want offered and ended", e.Status, e.Offer)
	}
	if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND source = 'waitlist'`, ev.ID); n != 2 {
		t.Fatalf("%d waitlist holds in all, want 2 (one per entry)", n)
	}
	assertSeatInvariants(t, a, ev.ID)
}

// TestWaitlistCancelAndUnblock: a cancelled ticket and an unblocked seat
// are offered too.
func TestWaitlistCancelAndUnblock(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 2)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	box := staff(tn.BoxOffice)
	b, err := a.BoxOffice.Sell(ctx, box, ev.ID, "k1", holdIDs(holdFor(t, a, box, ev.ID, seats[0])), "cash")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.SetBlocked(ctx, box, ev.ID, seats[1], true, "camera"); err != nil {
		t.Fatal(err)
	}
	first, second := buyer(tn.Buyers[0]), buyer(tn.Buyers[1])
	e1 := join(t, a, first, ev.ID, 1, "", "")
	e2 := join(t, a, second, ev.ID, 1, "", "")
	if n := offers(t, a); n != 0 {
		t.Fatalf("%d offers with the seats sold and blocked", n)
	}
	if _, err := a.BoxOffice.Cancel(ctx, box, b.ID, nil, "customer asked"); err != nil {
		t.Fatal(err)
	}
	offers(t, a)
	if h := assertOffered(t, a, first, ev.ID, e1, 1); h[0].SeatID != seats[0] {
		t.Fatalf("offered %v, want the cancelled seat", h[0].SeatID)
	}
	if _, err := a.Holds.SetBlocked(ctx, box, ev.ID, seats[1], false, ""); err != nil {
		t.Fatal(err)
	}
	offers(t, a)
	if h := assertOffered(t, a, second, ev.ID, e2, 1); h[0].SeatID != seats[1] {
		t.Fatalf("offered %v, want the unblocked seat", h[0].SeatID)
	}
	assertSeatInvariants(t, a, ev.ID)
}

// TestWaitlistMatching: an entry is offered only seats of its category or
// section, and only all it asked for; freed seats go to the first entry in
// line they match.
func TestWaitlistMatching(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 3)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 2, 1, 2) // sections A and B, two seats each
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	if _, err := a.Pool.Exec(ctx, `INSERT INTO event_categories (org_id, event_id, key, name, price_minor, currency)
		VALUES ($1, $2, 'vip', 'VIP', 9000, 'EUR')`, tn.Org.ID, ev.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Pool.Exec(ctx, `UPDATE seats SET category = 'vip' FROM sections sc
		WHERE sc.id = seats.section_id AND sc.label = 'B' AND seats.event_id = $1`, ev.ID); err != nil {
		t.Fatal(err)
	}
	holder, vip, inA := buyer(tn.Buyers[0]), buyer(tn.Buyers[1]), buyer(tn.Buyers[2])
	res, err := a.Holds.Hold(ctx, holder, hold.Request{Event: ev.ID, Seats: seats, Source: hold.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	heldOn := map[uuid.UUID]store.Hold{}
	for _, h := range res.Holds {
		heldOn[h.SeatID] = h
	}
	var a0, b0, b1 uuid.UUID
	for _, id := range seats {
		st, _ := a.Events.SeatLayout(tn.Org.ID, ev.ID, id)
		switch {
		case st.Category == "vip" && b0 == uuid.Nil:
			b0 = id
		case st.Category == "vip":
			b1 = id
		case a0 == uuid.Nil:
			a0 = id
		}
	}
	eVip := join(t, a, vip, ev.ID, 2, "vip", "")
	eA := join(t, a, inA, ev.ID, 1, "", "A")

	// A seat of A: not what the first in line asked for; the second's.
	if _, err := a.Holds.Release(ctx, holder, heldOn[a0].ID, ""); err != nil {
		t.Fatal(err)
	}
	offers(t, a)
	if h := assertOffered(t, a, inA, ev.ID, eA, 1); h[0].SeatID != a0 {
		t.Fatalf("offered %v, want %v", h[0].SeatID, a0)
	}
	// One VIP seat of the two asked for: nothing yet.
	if _, err := a.Holds.Release(ctx, holder, heldOn[b0].ID, ""); err != nil {
		t.Fatal(err)
	}
	offers(t, a)
	if got := entry(t, a, tn.Org.ID, eVip.ID); got.Status != store.WaitlistWaiting {
		t.Fatalf("entry for 2 offered with 1 seat free: %+v", got)
	}
	if _, err := a.Holds.Release(ctx, holder, heldOn[b1].ID, ""); err != nil {
		t.Fatal(err)
	}
	offers(t, a)
	assertOffered(t, a, vip, ev.ID, eVip, 2)
	assertSeatInvariants(t, a, ev.ID)
}

// TestWaitlistRefusals: malformed requests are 422 with fields and write
// nothing; another org's event and entries are not found; leaving takes
// the entry out of line and no offer follows.
func TestWaitlistRefusals(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 2)
	other := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 1)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	b0, b1 := buyer(tn.Buyers[0]), buyer(tn.Buyers[1])
	for _, c := range []struct {
		n            int
		cat, section string
		field        string
	}{{0, "", "", "count"}, {1000, "", "", "count"}, {1, "nope", "", "category"}, {1, "", "Z", "section"},
		{1, "", uuid.NewString(), "section"}} {
		_, err := a.Waitlist.Join(ctx, b0, ev.ID, hold.WaitFor{Count: c.n, Category: c.cat, Section: c.section})
		var e *apperr.Error
		if !errors.As(err, &e) || e.Code != apperr.Invalid || e.Fields[c.field] == "" {
			t.Fatalf("join %+v: %v, want 422 on %s", c, err, c.field)
		}
	}
	if n := count(t, a, `SELECT count(*) FROM waitlist_entries WHERE event_id = $1`, ev.ID); n != 0 {
		t.Fatalf("%d entries written by refused requests", n)
	}
	if _, err := a.Waitlist.Join(ctx, buyer(other.Buyers[0]), ev.ID, hold.WaitFor{Count: 1}); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("other org joining: %v, want not found", err)
	}
	if _, err := a.Waitlist.Join(ctx, staff(tn.BoxOffice), ev.ID, hold.WaitFor{Count: 1}); apperr.CodeOf(err) != apperr.Forbidden {
		t.Fatalf("staff joining: %v, want forbidden", err)
	}

	res, err := a.Holds.Hold(ctx, b1, hold.Request{Event: ev.ID, Seats: seats, Source: hold.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	e := join(t, a, b0, ev.ID, 1, "", "")
	if err := a.Waitlist.Leave(ctx, buyer(other.Buyers[0]), e.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("other org leaving: %v, want not found", err)
	}
	if err := a.Waitlist.Leave(ctx, b1, e.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("another buyer leaving: %v, want not found", err)
	}
	if err := a.Waitlist.Leave(ctx, b0, e.ID); err != nil {
		t.Fatal(err)
	}
	if err := a.Waitlist.Leave(ctx, b0, e.ID); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("leaving twice: %v, want conflict", err)
	}
	mine, err := a.Waitlist.Mine(ctx, b0, ev.ID)
	if err != nil || len(mine) != 0 {
		t.Fatalf("my waitlist after leaving: %v %v", mine, err)
	}
	if _, err := a.Holds.Release(ctx, b1, res.Holds[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	offers(t, a)
	if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND status = 'active'`, ev.ID); n != 0 {
		t.Fatalf("%d holds after the only entry left", n)
	}
}

// TestWaitlistWorkerDies: a worker dying after it wrote the offer but
// before its commit leaves the work queued; another process makes the
// offer, exactly once, and two processes racing on the same work make it
// once too.
func TestWaitlistWorkerDies(t *testing.T) {
	a1 := testenv.App(t, nil)
	a2 := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a1, 4)
	ev := testenv.NewEvent(t, a1, tn.Org.ID, 1, 1, 3)
	seats := testenv.SeatIDs(t, a1, tn.Org.ID, ev.ID)
	ctx := context.Background()
	holder := buyer(tn.Buyers[0])
	res, err := a1.Holds.Hold(ctx, holder, hold.Request{Event: ev.ID, Seats: seats, Source: hold.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	var es []store.WaitlistEntry
	for _, u := range tn.Buyers[1:] {
		es = append(es, join(t, a1, buyer(u), ev.ID, 1, "", ""))
	}
	if _, err := a1.Holds.Release(ctx, holder, res.Holds[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	// The process "dies": its context ends after the offer was written.
	dying, kill := context.WithCancel(ctx)
	a1.Waitlist.SetOfferHook(func(context.Context) error { kill(); return errors.New("process killed") })
	if _, err := a1.Waitlist.OfferRound(dying); err == nil {
		t.Fatal("the dying round reported success")
	}
	if n := count(t, a1, `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND source = 'waitlist'`, ev.ID); n != 0 {
		t.Fatalf("%d offers survived the dead worker", n)
	}
	if n := count(t, a1, `SELECT count(*) FROM waitlist_work WHERE event_id = $1`, ev.ID); n == 0 {
		t.Fatal("the dead worker's work was lost")
	}
	a1.Waitlist.SetOfferHook(nil)
	if n := offers(t, a2); n != 1 {
		t.Fatalf("the other process made %d offers, want 1", n)
	}
	assertOffered(t, a2, buyer(tn.Buyers[1]), ev.ID, es[0], 1)

	// Both processes on the same freed seats at once.
	for _, h := range res.Holds[1:] {
		if _, err := a1.Holds.Release(ctx, holder, h.ID, ""); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, a := range []*app.App{a1, a2, a1, a2} {
		wg.Go(func() {
			if _, err := a.Waitlist.OfferRound(ctx); err != nil {
				t.Errorf("offer round: %v", err)
			}
		})
	}
	wg.Wait()
	offers(t, a1) // whatever a round skipped while another held the event
	for i, e := range es {
		assertOffered(t, a1, buyer(tn.Buyers[i+1]), ev.ID, e, 1)
	}
	if n := count(t, a1, `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND source = 'waitlist'`, ev.ID); n != 3 {
		t.Fatalf("%d waitlist holds, want 3 (one per entry, once)", n)
	}
	assertSeatInvariants(t, a1, ev.ID)
}

// TestWaitlistOfferRacesHoldsAndExpiry: offers, the reaper and a buyer
// clicking the seat race on one seat whose holds keep expiring; the seat
// never has two holds and no entry is offered twice.
func TestWaitlistOfferRacesHoldsAndExpiry(t *testing.T) {
	a := testenv.App(t, func(c *config.Config) {
		c.HoldTTL = 50 * time.Millisecond
		c.WaitlistOfferTTL = 50 * time.Millisecond
	})
	tn := testenv.NewTenant(t, a, 6)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 1)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	clicker := buyer(tn.Buyers[0])
	if _, err := a.Holds.Hold(ctx, clicker, hold.Request{Event: ev.ID, Seats: seats, Source: hold.SourceWeb}); err != nil {
		t.Fatal(err)
	}
	for _, u := range tn.Buyers[1:] {
		join(t, a, buyer(u), ev.ID, 1, "", "")
	}
	stop := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	wg.Go(func() {
		for time.Now().Before(stop) {
			if _, err := a.Reaper.Reap(ctx); err != nil {
				t.Errorf("reap: %v", err)
			}
		}
	})
	wg.Go(func() {
		for time.Now().Before(stop) {
			if _, err := a.Waitlist.OfferRound(ctx); err != nil {
				t.Errorf("offer round: %v", err)
			}
		}
	})
	wg.Go(func() {
		for time.Now().Before(stop) {
			_, _ = a.Holds.Hold(ctx, clicker, hold.Request{Event: ev.ID, Seats: seats, Source: hold.SourceWeb})
		}
	})
	wg.Wait()
	assertSeatInvariants(t, a, ev.ID)
	if n := count(t, a, `SELECT count(*) FROM (SELECT 1 FROM audit_log WHERE event_id = $1 AND action = 'waitlist.offered'
		GROUP BY entity_id HAVING count(*) > 1) x`, ev.ID); n != 0 {
		t.Fatalf("%d entries offered twice", n)
	}
	if n := count(t, a, `SELECT count(*) FROM waitlist_entries WHERE event_id = $1 AND status = 'offered' AND cardinality(hold_ids) <> 1`, ev.ID); n != 0 {
		t.Fatalf("%d offers of the wrong size", n)
	}
}

// feedOnly is two processes of which the second hears none of the
// first's messages (another key prefix) and follows the change feed, an
// event of one seat, held by the tenant's first buyer through the first.
type feedOnly struct {
	a1, a2 *app.App
	tn     testenv.Tenant
	ev     store.Event
	seat   uuid.UUID
	held   hold.Result
}

func newFeedOnly(t *testing.T, buyers int) feedOnly {
	t.Helper()
	f := feedOnly{a1: testenv.App(t, nil)}
	// a2 follows the feed but makes no offer itself: it runs its follower
	// alone, without the offer worker that would race a1's round for the
	// work.
	f.a2 = testenv.App(t, func(c *config.Config) { c.KeyPrefix = "seatd-feed-" + uuid.NewString()[:8] })
	testenv.Run(t, f.a2.Follower)
	f.tn = testenv.NewTenant(t, f.a1, buyers)
	f.ev = testenv.NewEvent(t, f.a1, f.tn.Org.ID, 1, 1, 1)
	f.seat = testenv.SeatIDs(t, f.a1, f.tn.Org.ID, f.ev.ID)[0]
	var err error
	if f.held, err = f.a1.Holds.Hold(context.Background(), buyer(f.tn.Buyers[0]), hold.Request{Event: f.ev.ID,
		Seats: []uuid.UUID{f.seat}, Source: hold.SourceWeb}); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestWaitlistOfferThroughFeed: a process that hears no message of the
// offer (here: on another key prefix, so on no shared channel) learns of
// it from the change feed as an offer, not as a plain hold, so the
// waiting buyer's cart says what it is wherever they are connected; and
// its line watchers are told the buyer's entry changed and the line
// moved, as the lost message would have told them.
func TestWaitlistOfferThroughFeed(t *testing.T) {
	f := newFeedOnly(t, 2)
	a1, a2, tn, ev, seat, res := f.a1, f.a2, f.tn, f.ev, f.seat, f.held
	ctx := context.Background()
	holder := buyer(tn.Buyers[0])
	e := join(t, a1, buyer(tn.Buyers[1]), ev.ID, 1, "", "")
	var mu sync.Mutex
	var kinds []string
	stop, err := a2.Engine.Watch(ctx, buyer(tn.Buyers[1]), ev.ID, func(ds []hold.Delta) {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range ds {
			if d.Seat == seat {
				kinds = append(kinds, d.Kind)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var lines []hold.WaitlistChange
	stopLine, err := a2.Engine.WatchWaitlist(ctx, buyer(tn.Buyers[1]), ev.ID, func(c hold.WaitlistChange) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, c)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stopLine()
	if _, err := a1.Holds.Release(ctx, holder, res.Holds[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	if n := offers(t, a1); n != 1 {
		t.Fatalf("%d offers, want 1", n)
	}
	assertOffered(t, a1, buyer(tn.Buyers[1]), ev.ID, e, 1)
	testsvc.Eventually(t, 5*time.Second, "the other process's last change of the seat is an offer", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(kinds) > 0 && kinds[len(kinds)-1] == hold.KindOffered
	})
	testsvc.Eventually(t, 5*time.Second, "the other process's line watchers told of the offer", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.ContainsFunc(lines, func(c hold.WaitlistChange) bool {
			return c.Line && slices.Equal(c.Users, []uuid.UUID{tn.Buyers[1].ID})
		})
	})
}

// TestWaitlistLineThroughFeed: joins, leaves and the end of an offer
// whose messages never reach another process (its key prefix is another,
// so it hears none of a1's messages) still reach that process's line
// watchers, through the change feed.
func TestWaitlistLineThroughFeed(t *testing.T) {
	f := newFeedOnly(t, 3)
	a1, a2, tn, ev, res := f.a1, f.a2, f.tn, f.ev, f.held
	ctx := context.Background()
	holder, first, second := buyer(tn.Buyers[0]), buyer(tn.Buyers[1]), buyer(tn.Buyers[2])
	var mu sync.Mutex
	var lines []hold.WaitlistChange
	stop, err := a2.Engine.WatchWaitlist(ctx, second, ev.ID, func(c hold.WaitlistChange) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, c)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	// told waits until a change told since from satisfies ok and returns
	// how many were told by then.
	told := func(what string, from int, ok func(hold.WaitlistChange) bool) int {
		t.Helper()
		n := 0
		testsvc.Eventually(t, 5*time.Second, what, func() bool {
			mu.Lock()
			defer mu.Unlock()
			n = len(lines)
			return slices.ContainsFunc(lines[from:], ok)
		})
		return n
	}
	e1 := join(t, a1, first, ev.ID, 1, "", "")
	n := told("the first join", 0, func(c hold.WaitlistChange) bool { return slices.Contains(c.Users, first.User) })
	join(t, a1, second, ev.ID, 1, "", "")
	n = told("the second join", n, func(c hold.WaitlistChange) bool { return slices.Contains(c.Users, second.User) })
	if err := a1.Waitlist.Leave(ctx, first, e1.ID); err != nil {
		t.Fatal(err)
	}
	n = told("the leave, which moves the line", n, func(c hold.WaitlistChange) bool {
		return c.Line && slices.Contains(c.Users, first.User)
	})
	if _, err := a1.Holds.Release(ctx, holder, res.Holds[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	if got := offers(t, a1); got != 1 {
		t.Fatalf("%d offers, want 1", got)
	}
	n = told("the offer", n, func(c hold.WaitlistChange) bool { return c.Line && slices.Contains(c.Users, second.User) })
	hs, err := a1.Holds.Mine(ctx, second, ev.ID)
	if err != nil || len(hs) != 1 {
		t.Fatalf("the offered buyer's holds: %+v, %v", hs, err)
	}
	if _, err := a1.Holds.Release(ctx, second, hs[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	told("the offer's release", n, func(c hold.WaitlistChange) bool { return slices.Contains(c.Users, second.User) })
}

// TestWaitlistChangesAreTold: joins, leaves and offers are told to the
// line watchers of the process that made them and of another process,
// after they commit: whose entries changed, and whether the line moved
// (a join moves no one else). So are an offer bought or released (its
// buyer's panels in other tabs must not keep showing it in the cart).
func TestWaitlistChangesAreTold(t *testing.T) {
	a1 := testenv.App(t, nil)
	a2 := testenv.App(t, nil)
	testenv.Background(t, a1)
	tn := testenv.NewTenant(t, a1, 3)
	ev := testenv.NewEvent(t, a1, tn.Org.ID, 1, 1, 2)
	seats := testenv.SeatIDs(t, a1, tn.Org.ID, ev.ID)
	ctx := context.Background()
	holder, first, second := buyer(tn.Buyers[0]), buyer(tn.Buyers[1]), buyer(tn.Buyers[2])
	res, err := a1.Holds.Hold(ctx, holder, hold.Request{Event: ev.ID, Seats: seats, Source: hold.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		mu      sync.Mutex
		changes []hold.WaitlistChange
	}
	watch := func(a *app.App) *seen {
		s := &seen{}
		stop, err := a.Engine.WatchWaitlist(ctx, second, ev.ID, func(c hold.WaitlistChange) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.changes = append(s.changes, c)
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		return s
	}
	own, other := watch(a1), watch(a2)
	expect := func(what string, want hold.WaitlistChange) {
		t.Helper()
		for name, s := range map[string]*seen{"own process": own, "other process": other} {
			testsvc.Eventually(t, 5*time.Second, what+" told to the "+name, func() bool {
				s.mu.Lock()
				defer s.mu.Unlock()
				for _, c := range s.changes {
					if c.Line == want.Line && slices.Equal(c.Users, want.Users) {
						return true
					}
				}
				return false
			})
		}
		for _, s := range []*seen{own, other} {
			s.mu.Lock()
			s.changes = nil
			s.mu.Unlock()
		}
	}

	e1 := join(t, a1, first, ev.ID, 1, "", "")
	expect("a join", hold.WaitlistChange{Users: []uuid.UUID{first.User}})
	e2 := join(t, a1, second, ev.ID, 1, "", "")
	expect("a join", hold.WaitlistChange{Users: []uuid.UUID{second.User}})
	if err := a1.Waitlist.Leave(ctx, staff(tn.Organizer), e1.ID); err != nil {
		t.Fatal(err)
	}
	// Staff took the entry out: the change names its buyer, not staff.
	expect("a leave", hold.WaitlistChange{Users: []uuid.UUID{first.User}, Line: true})
	if _, err := a1.Holds.Release(ctx, holder, res.Holds[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	expect("an offer", hold.WaitlistChange{Users: []uuid.UUID{second.User}, Line: true})
	offer := assertOffered(t, a1, second, ev.ID, e2, 1)
	if _, err := a1.Holds.Purchase(ctx, second, ev.ID, "offer", []uuid.UUID{offer[0].ID}); err != nil {
		t.Fatal(err)
	}
	expect("an offer bought", hold.WaitlistChange{Users: []uuid.UUID{second.User}})

	e3 := join(t, a1, first, ev.ID, 1, "", "")
	expect("a join", hold.WaitlistChange{Users: []uuid.UUID{first.User}})
	if _, err := a1.Holds.Release(ctx, holder, res.Holds[1].ID, ""); err != nil {
		t.Fatal(err)
	}
	expect("an offer", hold.WaitlistChange{Users: []uuid.UUID{first.User}, Line: true})
	offer = assertOffered(t, a1, first, ev.ID, e3, 1)
	// Staff released it: the change names the offer's buyer.
	if _, err := a1.Holds.Release(ctx, staff(tn.Organizer), offer[0].ID, "no-show"); err != nil {
		t.Fatal(err)
	}
	expect("an offer released", hold.WaitlistChange{Users: []uuid.UUID{first.User}})
}

// TestWaitlistStandingPlaces: a buyer waiting for places of a standing
// section is offered places as they are freed; a buyer who named no
// section waits for seats, not places, while the event has seated
// sections, and is offered the next seats freed.
func TestWaitlistStandingPlaces(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 3)
	ev := gaEvent(t, a, tn, func(in *hold.EventInput) { in.MaxHoldsPerBuyer = ptr(200) })
	ctx := context.Background()
	holder, standing, anySeat := buyer(tn.Buyers[0]), buyer(tn.Buyers[1]), buyer(tn.Buyers[2])

	// The holder takes every place and every seat.
	var places []store.Hold
	for len(places) < 100 {
		res, err := a.Holds.Hold(ctx, holder, hold.Request{Event: ev.ID, GA: &hold.GA{Section: "G", Count: 10}, Source: hold.SourceAPI})
		if err != nil {
			t.Fatalf("hold places: %v", err)
		}
		places = append(places, res.Holds...)
	}
	rows, err := a.Pool.Query(ctx, `SELECT s.id FROM seats s JOIN sections c ON c.id = s.section_id
		WHERE s.event_id = $1 AND c.kind = 'seated' ORDER BY s.idx`, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	seated, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil || len(seated) != 20 {
		t.Fatalf("seated seats %d, %v", len(seated), err)
	}
	var seats []store.Hold
	for _, part := range [][]uuid.UUID{seated[:10], seated[10:]} {
		res, err := a.Holds.Hold(ctx, holder, hold.Request{Event: ev.ID, Seats: part, Source: hold.SourceWeb})
		if err != nil {
			t.Fatalf("hold seats: %v", err)
		}
		seats = append(seats, res.Holds...)
	}

	ePlaces := join(t, a, standing, ev.ID, 2, "", "G")
	eAny := join(t, a, anySeat, ev.ID, 2, "", "")
	release := func(hs ...store.Hold) {
		t.Helper()
		for _, h := range hs {
			if _, err := a.Holds.Release(ctx, holder, h.ID, ""); err != nil {
				t.Fatal(err)
			}
		}
		offers(t, a)
	}
	release(places[0], places[1])
	for _, h := range assertOffered(t, a, standing, ev.ID, ePlaces, 2) {
		if h.SeatID != places[0].SeatID && h.SeatID != places[1].SeatID {
			t.Fatalf("offered %v, not a freed place", h.SeatID)
		}
	}
	// Places freed again: not for a buyer waiting for seats.
	release(places[2], places[3])
	if got := entry(t, a, tn.Org.ID, eAny.ID); got.Status != store.WaitlistWaiting {
		t.Fatalf("entry without a section offered standing places: %+v", got)
	}
	// Two seats side by side freed: they are.
	var pair []store.Hold
	for _, h := range seats {
		if h.SeatID == seated[4] || h.SeatID == seated[5] {
			pair = append(pair, h)
		}
	}
	release(pair...)
	for _, h := range assertOffered(t, a, anySeat, ev.ID, eAny, 2) {
		if h.SeatID != seated[4] && h.SeatID != seated[5] {
			t.Fatalf("offered %v, not a freed seat", h.SeatID)
		}
	}
	if n := gaHeld(t, a, ev.ID); n != 98 {
		t.Fatalf("%d places taken, want 98 (96 held by the holder, 2 offered)", n)
	}
	assertSeatInvariants(t, a, ev.ID)
}
