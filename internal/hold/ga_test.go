package hold_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"seatd/internal/app"
	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
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
// section, each asking once for 1 or 2 places. Each is granted or told
// sold_out, never asked to try again (the server settles races among
// buyers itself); exactly 100 places are granted and held, never more, on
// the fast path and on the Postgres-only path (Redis killed in the middle:
// TestGARedisKilledDuringSale); afterwards every request is sold_out.
func TestGAFlashSale(t *testing.T) {
	for _, tc := range []string{"fast path", "postgres only"} {
		t.Run(tc, func(t *testing.T) {
			mod := func(c *config.Config) {
				if tc == "postgres only" {
					c.RedisURL = "redis://127.0.0.1:1/0" // nothing listens
				}
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
				core := a1.Holds
				if i%2 == 1 {
					core = a2.Holds
				}
				wg.Go(func() {
					<-start
					// One place once the section says fewer than two are
					// left: the last place goes to someone.
					for _, n := range []int{1 + rand.IntN(2), 1} {
						attempts.Add(1)
						res, err := core.Hold(ctx, buyer(u), hold.Request{Event: ev.ID,
							GA: &hold.GA{Section: "G", Count: n}, Source: hold.SourceAPI})
						switch {
						case err == nil:
							granted.Add(int64(len(res.Holds)))
							return
						case apperr.CodeOf(err) == apperr.SoldOut && n > 1:
							continue
						case apperr.CodeOf(err) == apperr.SoldOut:
							return
						default:
							t.Errorf("hold GA: %v, want a grant or sold_out", err)
							return
						}
					}
				})
			}
			close(start)
			wg.Wait()
			t.Logf("%s: %d places granted in %d requests", tc, granted.Load(), attempts.Load())
			if g, held := granted.Load(), gaHeld(t, a1, ev.ID); g != 100 || held != 100 {
				t.Fatalf("granted %d, held in Postgres %d; want exactly the capacity, 100", g, held)
			}
			assertSeatInvariants(t, a1, ev.ID)
			late := testenv.AddBuyers(t, a1, tn.Org.ID, 1)[0]
			for _, core := range []*hold.Holds{a1.Holds, a2.Holds} {
				_, err := core.Hold(ctx, buyer(late), hold.Request{Event: ev.ID, GA: &hold.GA{Section: "G", Count: 1}, Source: hold.SourceAPI})
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

	res, err := a.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, GA: &hold.GA{Section: "G", Count: 2}, Source: hold.SourceAPI})
	if err != nil || len(res.Holds) != 2 || !res.Created {
		t.Fatalf("hold 2 places: %+v %v", res, err)
	}
	if _, err := a.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, GA: &hold.GA{Section: "G", Count: 2},
		Source: hold.SourceAPI}); apperr.CodeOf(err) != apperr.HoldLimit {
		t.Fatalf("2 more places over a cap of 3: %v, want hold_limit", err)
	}
	before := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, ev.ID)
	for _, bad := range []struct {
		section string
		n       int
		code    apperr.Code
	}{{"G", 0, apperr.Invalid}, {"G", 11, apperr.Invalid}, {"Z", 1, apperr.NotFound}, {"S", 1, apperr.NotFound}} {
		if _, err := a.Holds.Hold(ctx, v, hold.Request{Event: ev.ID, GA: &hold.GA{Section: bad.section, Count: bad.n},
			Source: hold.SourceAPI}); apperr.CodeOf(err) != bad.code {
			t.Errorf("hold %d of %q: %v, want %s", bad.n, bad.section, err, bad.code)
		}
	}
	other := testenv.NewTenant(t, a, 1)
	if _, err := a.Holds.Hold(ctx, buyer(other.Buyers[0]), hold.Request{Event: ev.ID, GA: &hold.GA{Section: "G", Count: 1},
		Source: hold.SourceAPI}); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("another tenant's event: %v, want not_found", err)
	}
	if after := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, ev.ID); after != before {
		t.Fatalf("refused requests wrote %d holds", after-before)
	}

	// The TTL is one second: the reaper gives the places back.
	testsvc.Eventually(t, 10*time.Second, "the places expired", func() bool { return gaHeld(t, a, ev.ID) == 0 })
	testsvc.Eventually(t, 5*time.Second, "100 places left", func() bool {
		secs, err := a.Events.GASections(ctx, u, ev.ID)
		return err == nil && len(secs) == 1 && secs[0].Left == 100 && secs[0].Capacity == 100
	})

	// Bought at the category price of the section (back: 2500 EUR).
	res, err = a.Holds.Hold(ctx, v, hold.Request{Event: ev.ID, GA: &hold.GA{Section: "G", Count: 2}, Source: hold.SourceAPI})
	if err != nil {
		t.Fatal(err)
	}
	ids := []uuid.UUID{res.Holds[0].ID, res.Holds[1].ID}
	if _, err := a.Holds.Purchase(ctx, v, ev.ID, fmt.Sprint("ga-", ev.ID), ids); err != nil {
		t.Fatalf("purchase places: %v", err)
	}
	if n := count(t, a, `SELECT count(*) FROM tickets WHERE event_id = $1 AND price_minor = 2500 AND currency = 'EUR'`, ev.ID); n != 2 {
		t.Fatalf("%d tickets at 2500 EUR, want 2", n)
	}
	secs, err := a.Events.GASections(ctx, u, ev.ID)
	if err != nil || secs[0].Left != 98 {
		t.Fatalf("places left after selling 2: %+v %v", secs, err)
	}
	assertSeatInvariants(t, a, ev.ID)
}

// TestGARedisKilledDuringSale: 100 buyers on two processes keep holding
// 1-2 places of the 100 and releasing about half of what they get, for
// three phases: Redis up, Redis killed, Redis back. At the end every place
// a buyer was told it holds (and did not release) is held in Postgres by
// exactly that hold, no place was told to two buyers, and Postgres holds
// nothing else: no place was granted twice, whichever path granted it.
func TestGARedisKilledDuringSale(t *testing.T) {
	r := testsvc.StartRedis(t)
	mod := func(c *config.Config) {
		onRedis(r, 300*time.Millisecond)(c)
		c.PGStatementTimeout = 2 * time.Second
	}
	a1, a2 := testenv.App(t, mod), testenv.App(t, mod)
	testenv.Background(t, a1)
	testenv.Background(t, a2)
	tn := testenv.NewTenant(t, a1, 0)
	users := testenv.AddBuyers(t, a1, tn.Org.ID, 100)
	ev := gaEvent(t, a1, tn, nil)
	ctx := context.Background()

	var phase atomic.Int32
	var granted [3]atomic.Int64
	stop := make(chan struct{})
	var mu sync.Mutex
	kept := map[uuid.UUID]uuid.UUID{} // place -> hold a buyer was told it has
	var wg sync.WaitGroup
	for i, u := range users {
		core := a1.Holds
		if i%2 == 1 {
			core = a2.Holds
		}
		wg.Go(func() {
			var mine []store.Hold
			for {
				select {
				case <-stop:
					return
				default:
				}
				p := phase.Load()
				// Give one back half the time: the section keeps changing hands.
				if len(mine) > 0 && rand.IntN(2) == 0 {
					i := rand.IntN(len(mine))
					h := mine[i]
					mine = append(mine[:i], mine[i+1:]...)
					mu.Lock()
					delete(kept, h.SeatID)
					mu.Unlock()
					if _, err := core.Release(ctx, buyer(u), h.ID, ""); err != nil {
						t.Errorf("release in phase %d: %v", p, err)
					}
					continue
				}
				res, err := core.Hold(ctx, buyer(u), hold.Request{Event: ev.ID,
					GA: &hold.GA{Section: "G", Count: 1 + rand.IntN(2)}, Source: hold.SourceAPI})
				switch {
				case err == nil:
					granted[p].Add(int64(len(res.Holds)))
					mine = append(mine, res.Holds...)
					mu.Lock()
					for _, h := range res.Holds {
						if other, dup := kept[h.SeatID]; dup {
							t.Errorf("place %s told to holds %s and %s", h.SeatID, other, h.ID)
						}
						kept[h.SeatID] = h.ID
					}
					mu.Unlock()
				case apperr.CodeOf(err) == apperr.SeatTaken, apperr.CodeOf(err) == apperr.SoldOut,
					apperr.CodeOf(err) == apperr.HoldLimit,
					// Refused eight times while places looked free: the
					// churn here keeps the few free places changing hands.
					apperr.CodeOf(err) == apperr.Unavailable:
					time.Sleep(time.Duration(rand.IntN(5)) * time.Millisecond) // a buyer's pause before trying again
				default:
					t.Errorf("hold GA in phase %d: %v", p, err)
				}
			}
		})
	}
	// Each phase lasts until the load was served in it: with Redis dead,
	// until both processes left the Redis fast path and went on granting.
	halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer halt()
	testsvc.Eventually(t, 10*time.Second, "30 places granted with Redis up", func() bool { return granted[0].Load() >= 30 })
	r.Stop()
	phase.Store(1)
	testsvc.Eventually(t, 10*time.Second, "both processes off the Redis fast path", func() bool {
		return !a1.Engine.FastPath() && !a2.Engine.FastPath()
	})
	served := granted[1].Load()
	testsvc.Eventually(t, 10*time.Second, "30 more places granted with Redis dead", func() bool { return granted[1].Load() >= served+30 })
	r.Start()
	phase.Store(2)
	testsvc.Eventually(t, 10*time.Second, "30 places granted with Redis back", func() bool { return granted[2].Load() >= 30 })
	halt()

	for p, name := range []string{"redis up", "redis killed", "redis restarted"} {
		t.Logf("%-16s places granted %d", name, granted[p].Load())
	}
	if granted[1].Load() == 0 {
		t.Fatal("no place was granted while Redis was down")
	}
	assertSeatInvariants(t, a1, ev.ID)
	rows, err := a1.Pool.Query(ctx, `SELECT s.id, s.hold_id FROM seats s JOIN sections c ON c.id = s.section_id
		WHERE s.event_id = $1 AND c.kind = 'ga' AND s.status = 'held'`, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	held := map[uuid.UUID]uuid.UUID{}
	for rows.Next() {
		var place, h uuid.UUID
		if err := rows.Scan(&place, &h); err != nil {
			t.Fatal(err)
		}
		held[place] = h
	}
	rows.Close()
	if len(held) != len(kept) || len(held) > 100 {
		t.Fatalf("Postgres holds %d places, buyers were told they keep %d (capacity 100)", len(held), len(kept))
	}
	for place, h := range kept {
		if held[place] != h {
			t.Fatalf("place %s: buyer told hold %s, Postgres has %s", place, h, held[place])
		}
	}
}

// TestGAHoldIdempotent: one GA request with an Idempotency-Key sent 20
// times at once through two processes holds one set of places: every
// answer names the same holds, and Postgres has no others. The key with
// another count is refused; a request that held nothing frees its key.
func TestGAHoldIdempotent(t *testing.T) {
	a := testenv.App(t, nil)
	b := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 1)
	ev := onSale(t, a, tn, 2, nil)
	ctx := context.Background()
	u := buyer(tn.Buyers[0])
	answers := make([][]uuid.UUID, 20)
	errs := make([]error, 20)
	var wg sync.WaitGroup
	for i := range answers {
		core := []*hold.Holds{a.Holds, b.Holds}[i%2]
		wg.Go(func() {
			res, err := core.Hold(ctx, u, hold.Request{Event: ev.ID, GA: &hold.GA{Section: "G", Count: 3}, Key: "order-1", Source: hold.SourceAPI})
			errs[i] = err
			for _, h := range res.Holds {
				answers[i] = append(answers[i], h.ID)
			}
		})
	}
	wg.Wait()
	for i := range answers {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		if len(answers[i]) != 3 || !slices.Equal(answers[i], answers[0]) {
			t.Fatalf("request %d answered holds %v, the first %v", i, answers[i], answers[0])
		}
	}
	if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, ev.ID); n != 3 {
		t.Fatalf("%d holds written, want 3", n)
	}
	if _, err := a.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, GA: &hold.GA{Section: "G", Count: 2}, Key: "order-1",
		Source: hold.SourceAPI}); apperr.CodeOf(err) != apperr.IdempotencyMismatch {
		t.Errorf("same key, another count: %v, want idempotency_mismatch", err)
	}
	// Refused (more than one request may ask): nothing held, the key is
	// free again, for any request.
	if _, err := a.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, GA: &hold.GA{Section: "G", Count: 11}, Key: "order-2",
		Source: hold.SourceAPI}); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("11 places: %v, want invalid", err)
	}
	res, err := b.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, GA: &hold.GA{Section: "G", Count: 1}, Key: "order-2", Source: hold.SourceAPI})
	if err != nil || !res.Created || len(res.Holds) != 1 {
		t.Fatalf("the freed key again: %+v, %v", res, err)
	}
	if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, ev.ID); n != 4 {
		t.Fatalf("%d holds written, want 4", n)
	}
	// Both processes' registries count the section's 4 held places in
	// every tier.
	for _, mon := range []*hold.Monitor{a.Monitor, b.Monitor} {
		var reg hold.Registry
		testsvc.Eventually(t, 10*time.Second, "the GA count in every tier", func() bool {
			var err error
			reg, err = mon.RegistryStatus(ctx, organizer(tn), ev.ID)
			return err == nil && reg.Consistent
		})
		if len(reg.GA) != 1 || reg.GA[0] != (hold.RegistryGA{Section: "G", Capacity: 100, HotCache: 4, Redis: 4, Postgres: 4}) {
			t.Errorf("registry GA %+v, want section G with 4 places held in every tier", reg.GA)
		}
	}
}

// TestGALaggingCache: a process whose hot cache has not heard of another
// process's holds (no live deltas: it publishes and listens on a Redis of
// its own) picks places that are taken. With its follower running it asks for a round after
// the first refusal and answers sold_out from the caught-up cache; with
// no follower its cache never catches up, and a request stops after
// eight refused rounds with 503 unavailable and Retry-After, instead of
// sending a hold for every place of the section.
func TestGALaggingCache(t *testing.T) {
	apart := testsvc.StartRedis(t)
	quiet := func(c *config.Config) {
		c.RedisURL = apart.URL()
		c.FeedInterval = time.Hour // a round only when asked
	}
	a1, stale, caught := testenv.App(t, nil), testenv.App(t, quiet), testenv.App(t, quiet)
	testenv.Run(t, caught.Follower)
	tn := testenv.NewTenant(t, a1, 0)
	ev := gaEvent(t, a1, tn, func(in *hold.EventInput) { in.MaxHoldsPerBuyer = ptr(10) })
	buyers := testenv.AddBuyers(t, a1, tn.Org.ID, 11)
	ctx := context.Background()
	left := func(a *app.App) int {
		t.Helper()
		secs, err := a.Events.GASections(ctx, buyer(buyers[10]), ev.ID)
		if err != nil || len(secs) != 1 {
			t.Fatalf("GA sections: %+v %v", secs, err)
		}
		return secs[0].Left
	}
	// Both caches load the section with its 100 places free; the round
	// the load asked for is over (Reconcile waits for it) before the
	// places go.
	if left(stale) != 100 || left(caught) != 100 {
		t.Fatal("the section does not start with 100 places free")
	}
	testsvc.Eventually(t, 5*time.Second, "the follower's first round", func() bool {
		return testutil.ToFloat64(caught.Metrics.FeedRounds) >= 1
	})
	if _, err := caught.Monitor.Reconcile(ctx, organizer(tn), ev.ID); err != nil {
		t.Fatal(err)
	}
	for _, u := range buyers[:10] {
		if _, err := a1.Holds.Hold(ctx, buyer(u), hold.Request{Event: ev.ID, GA: &hold.GA{Section: "G", Count: 10},
			Source: hold.SourceAPI}); err != nil {
			t.Fatal(err)
		}
	}
	if left(stale) != 100 || left(caught) != 100 {
		t.Fatalf("the caches heard of the holds: nothing lags (%d, %d left)", left(stale), left(caught))
	}
	late := buyer(buyers[10])
	ask := func(a *app.App) (int, error) {
		before := testutil.ToFloat64(a.Metrics.HoldAttempt)
		_, err := a.Holds.Hold(ctx, late, hold.Request{Event: ev.ID, GA: &hold.GA{Section: "G", Count: 1}, Source: hold.SourceAPI})
		return int(testutil.ToFloat64(a.Metrics.HoldAttempt) - before), err
	}

	sent, err := ask(caught)
	if apperr.CodeOf(err) != apperr.SoldOut || sent > 2 {
		t.Errorf("with a follower: %v after %d holds sent, want sold_out after at most 2", err, sent)
	}
	if left(caught) != 0 {
		t.Errorf("the caught-up cache shows %d places left", left(caught))
	}

	sent, err = ask(stale)
	var ra interface{ RetryAfter() int }
	if apperr.CodeOf(err) != apperr.Unavailable || !errors.As(err, &ra) || ra.RetryAfter() < 1 {
		t.Errorf("with a cache that never catches up: %v, want unavailable with a Retry-After", err)
	}
	if sent > 8 {
		t.Errorf("%d holds sent for one request, want at most 8", sent)
	}
	t.Logf("lagging cache: %d holds sent, then %v", sent, err)
	if n := gaHeld(t, a1, ev.ID); n != 100 {
		t.Fatalf("%d places held, want the 100 of the first buyers", n)
	}
}
