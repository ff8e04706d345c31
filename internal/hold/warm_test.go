package hold_test

import (
	"context"
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

// TestWarm: warming an on-sale event loads it before any buyer asks and
// keeps it through idle eviction, while an event loaded by a request is
// evicted as before; an event that has started is not warmed; another
// org's event is not found; WarmOnSale with no seat budget warms the
// soonest event only.
func TestWarm(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, func(c *config.Config) { c.CacheIdle = time.Millisecond })
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 1)
	other := testenv.NewTenant(t, a, 0)
	onSale := testenv.NewEvent(t, a, tn.Org.ID, 1, 5, 20)
	asked := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 5)
	started, err := a.Store.Events.Create(ctx, tn.Org.ID, "Started", "Hall", time.Now().Add(-time.Hour),
		[]store.NewSection{store.GridSection("A", "Section A", 2, 5, 0, 0)})
	if err != nil {
		t.Fatal(err)
	}

	if err := a.Warmer.Warm(ctx, other.Org.ID, onSale.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("warm another org's event: %v, want not_found", err)
	}
	if err := a.Warmer.Warm(ctx, tn.Org.ID, started.ID); err != nil {
		t.Fatal(err)
	}
	if n := a.Engine.CachedEvents(); n != 0 {
		t.Fatalf("%d events cached after warming a started one and a foreign one", n)
	}
	if err := a.Warmer.Warm(ctx, tn.Org.ID, onSale.ID); err != nil {
		t.Fatal(err)
	}
	if n := a.Engine.CachedEvents(); n != 1 {
		t.Fatalf("%d events cached after warming one, want 1", n)
	}
	if _, _, err := a.Events.Seats(ctx, buyer(tn.Buyers[0]), asked.ID); err != nil {
		t.Fatal(err)
	}
	testenv.Background(t, a)
	// The follower evicts the event a request loaded (idle 1 ms)...
	testsvc.Eventually(t, 10*time.Second, "the requested event evicted", func() bool { return a.Engine.CachedEvents() == 1 })
	// ...and keeps the warmed one through more rounds.
	rounds := feedRounds(a)
	testsvc.Eventually(t, 10*time.Second, "two more follower rounds", func() bool { return feedRounds(a) >= rounds+2 })
	if n := a.Engine.CachedEvents(); n != 1 {
		t.Fatalf("%d events cached, want the warmed one", n)
	}
	secs, seats, err := a.Events.Seats(ctx, buyer(tn.Buyers[0]), onSale.ID)
	if err != nil || len(secs) != 1 || len(seats) != 100 {
		t.Fatalf("warmed event: %d sections, %d seats, %v", len(secs), len(seats), err)
	}

	fresh := testenv.App(t, nil)
	n, err := fresh.Warmer.WarmOnSale(ctx, 1000, 0)
	if err != nil || n != 1 || fresh.Engine.CachedEvents() != 1 {
		t.Fatalf("WarmOnSale with no seat budget: %d warmed, %d cached, %v", n, fresh.Engine.CachedEvents(), err)
	}
}

// TestWarmPublishedElsewhere: an event put on sale through one process
// reaches another process's cache within its warm interval, before any
// request there; an event already warm is not loaded again. Both run on a
// database of their own, whose on-sale events are only this test's.
func TestWarmPublishedElsewhere(t *testing.T) {
	t.Parallel()
	own := testsvc.OwnDatabase(t, "warmelsewhere")
	mod := func(c *config.Config) {
		c.DatabaseURL = own
		c.WarmInterval, c.WarmEvents, c.WarmSeats = 50*time.Millisecond, 10, 1_000_000
	}
	a1, a2 := testenv.App(t, mod), testenv.App(t, mod)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a2.Warmer.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	tn := testenv.NewTenant(t, a1, 0)
	warms := func() float64 { return testutil.ToFloat64(a2.Metrics.CacheWarms) }
	for i := 1; i <= 2; i++ {
		ev := testenv.NewEvent(t, a1, tn.Org.ID, 1, 2, 5)
		onSale := string(store.EventOnSale)
		if _, err := a1.Events.Update(ctx, staff(tn.Organizer), ev.ID, hold.EventInput{Status: &onSale}); err != nil {
			t.Fatal(err)
		}
		testsvc.Eventually(t, 5*time.Second, "the other process warmed the event", func() bool {
			return a2.Engine.CachedEvents() == i && warms() == float64(i)
		})
	}
	time.Sleep(300 * time.Millisecond) // six more rounds
	if n, w := a2.Engine.CachedEvents(), warms(); n != 2 || w != 2 {
		t.Fatalf("after more rounds: %d events cached, %v warms; want 2 and 2 (none loaded again)", n, w)
	}
}

// TestWarmAnnounced: an event put on sale through one process is loaded
// by another at once, not at its next warm round (an hour away here): the
// publish is announced to every process's warmer. Its own database, as
// above.
func TestWarmAnnounced(t *testing.T) {
	t.Parallel()
	own := testsvc.OwnDatabase(t, "warmannounced")
	mod := func(c *config.Config) {
		c.DatabaseURL = own
		c.WarmInterval, c.WarmEvents, c.WarmSeats = time.Hour, 10, 1_000_000
	}
	a1, a2 := testenv.App(t, mod), testenv.App(t, mod)
	ctx := context.Background()
	tn := testenv.NewTenant(t, a1, 0)
	var drafts []uuid.UUID
	for range 2 {
		ev := testenv.NewEvent(t, a1, tn.Org.ID, 1, 2, 5)
		if _, err := a1.Pool.Exec(ctx, `UPDATE events SET status = 'draft' WHERE org_id = $1 AND id = $2`, tn.Org.ID, ev.ID); err != nil {
			t.Fatal(err)
		}
		drafts = append(drafts, ev.ID)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { a2.Warmer.Run(wctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	testsvc.Eventually(t, 5*time.Second, "the warmer listens", func() bool { return a2.Bus.Subscribed(a2.Locks.Published()) })
	for i, id := range drafts {
		onSale := string(store.EventOnSale)
		if _, err := a1.Events.Update(ctx, staff(tn.Organizer), id, hold.EventInput{Status: &onSale}); err != nil {
			t.Fatal(err)
		}
		testsvc.Eventually(t, 5*time.Second, "the other process warmed the published event", func() bool {
			return a2.Engine.CachedEvents() == i+1
		})
	}
}

func feedRounds(a *app.App) float64 { return testutil.ToFloat64(a.Metrics.FeedRounds) }

// TestOwnDeltasSkipped: a process applies its own committed changes when
// it commits them and skips its own messages when they come back from
// Redis; another process watching the event receives and applies them.
func TestOwnDeltasSkipped(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	b := testenv.App(t, nil)
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 5)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	for _, x := range []*app.App{a, b} {
		if _, _, err := x.Events.Seats(ctx, buyer(tn.Buyers[0]), ev.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Holds.Hold(ctx, buyer(tn.Buyers[0]), hold.Request{Event: ev.ID, Seats: []uuid.UUID{seats[3]}, Source: "api"}); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 10*time.Second, "the other process applies the hold", func() bool {
		_, got, err := b.Events.Seats(ctx, buyer(tn.Buyers[0]), ev.ID)
		return err == nil && got[3].Status == store.Held
	})
	_, got, err := a.Events.Seats(ctx, buyer(tn.Buyers[0]), ev.ID)
	if err != nil || got[3].Status != store.Held {
		t.Fatalf("the holding process's cache: %+v, %v", got[3], err)
	}
	// A hold by the other process, published after the first one on the
	// same channel, arrives after it: once it has, the first one's echo
	// would have been taken in too.
	if _, err := b.Holds.Hold(ctx, buyer(tn.Buyers[0]), hold.Request{Event: ev.ID, Seats: []uuid.UUID{seats[4]}, Source: "api"}); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 10*time.Second, "the first process applies the other's hold", func() bool {
		_, got, err := a.Events.Seats(ctx, buyer(tn.Buyers[0]), ev.ID)
		return err == nil && got[4].Status == store.Held
	})
	if in := testutil.ToFloat64(a.Metrics.DeltasIn); in != 1 {
		t.Fatalf("the first process took in %v deltas, want 1 (the other's, not its own)", in)
	}
}
