package hold_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"seatd/internal/app"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestFeedLeavesOutOwnFastHolds: the follower does not read back, nor sync
// into Redis again, the holds its own process made on the fast path
// (Redis took their locks, the cache has them), while a hold written by
// anyone else is read and synced by the same round. Redis's record of the
// seat versions it was synced to shows which seats a round synced.
func TestFeedLeavesOutOwnFastHolds(t *testing.T) {
	// No round runs until the holds are made (the follower starts after
	// them), so none can fall between a hold's commit and its record as
	// known; then rounds run only when kicked (loading an event kicks).
	a := testenv.App(t, func(c *config.Config) { c.FeedInterval = time.Hour })
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 0)
	u := testenv.AddBuyers(t, a, tn.Org.ID, 1)[0]
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	if _, _, err := a.Events.Seats(ctx, buyer(u), ev.ID); err != nil {
		t.Fatal(err)
	}
	if !a.Engine.FastPath() {
		t.Fatal("the loaded event is not synced into Redis")
	}

	fast := testutil.ToFloat64(a.Metrics.HoldSuccess.WithLabelValues("fast"))
	res, err := a.Holds.Hold(ctx, buyer(u), hold.Request{Event: ev.ID, Seats: seats[:4], Source: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if testutil.ToFloat64(a.Metrics.HoldSuccess.WithLabelValues("fast")) != fast+1 {
		t.Fatal("the hold did not take the fast path")
	}
	// Another process's hold, which only the feed tells this one of.
	now := time.Now().UTC().Truncate(time.Millisecond)
	other := uuid.New()
	out, err := a.Store.Holds.Create(ctx, store.HoldParams{Org: tn.Org.ID, Event: ev.ID, User: u.ID, Now: now,
		HeldUntil: now.Add(time.Minute), Source: "api",
		Seats: []store.HoldRequest{{SeatID: seats[6], HoldID: other, Fence: 1 << 40}}})
	if err != nil || len(out.Created) != 1 {
		t.Fatalf("the other process's hold: %+v, %v", out, err)
	}
	// A round: the load of the event kicked one, which runs now.
	testenv.Background(t, a)
	synced := syncedVersions(t, a, tn.Org.ID, ev.ID)
	testsvc.Eventually(t, 5*time.Second, "the other process's hold read and synced", func() bool {
		return synced(seats[6]) == out.Created[0].SeatVersion
	})
	assertNotSyncedAgain(t, a, synced, res.Holds)
	// The cache has both, from the commit and from the feed.
	_, view, err := a.Events.Seats(ctx, buyer(u), ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range view {
		want := s.ID == seats[6] || s.Idx < 4
		if (s.Status == store.Held) != want {
			t.Errorf("seat %s (idx %d) is %s in the cache", s.ID, s.Idx, s.Status)
		}
	}
}

// TestFeedLeavesOutOtherProcessesFastHolds: a process that heard another
// process's fast-path holds on the live bus (their deltas say Redis took
// their locks) does not read them back from the feed nor sync them into
// Redis again, as their maker does not; a hold made without Redis's lock
// is read and synced by the same round.
func TestFeedLeavesOutOtherProcessesFastHolds(t *testing.T) {
	// No follower round runs until a has heard b's holds: a's starts
	// after that, b's never (a round of either between a hold's commit
	// and its record as known would read it back). Messages are received
	// without the jobs running.
	mod := func(c *config.Config) { c.FeedInterval = time.Hour }
	a, b := testenv.App(t, mod), testenv.App(t, mod)
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 0)
	u := testenv.AddBuyers(t, a, tn.Org.ID, 1)[0]
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	for _, x := range []*app.App{a, b} {
		if _, _, err := x.Events.Seats(ctx, buyer(u), ev.ID); err != nil {
			t.Fatal(err)
		}
	}
	testsvc.Eventually(t, 5*time.Second, "both processes on the fast path", func() bool {
		return a.Engine.FastPath() && b.Engine.FastPath()
	})
	res, err := b.Holds.Hold(ctx, buyer(u), hold.Request{Event: ev.ID, Seats: seats[:4], Source: "web"})
	if err != nil {
		t.Fatal(err)
	}
	// A hold written without Redis, which no message tells of.
	now := time.Now().UTC().Truncate(time.Millisecond)
	out, err := a.Store.Holds.Create(ctx, store.HoldParams{Org: tn.Org.ID, Event: ev.ID, User: u.ID, Now: now,
		HeldUntil: now.Add(time.Minute), Source: "api",
		Seats: []store.HoldRequest{{SeatID: seats[6], HoldID: uuid.New(), Fence: 1 << 40}}})
	if err != nil || len(out.Created) != 1 {
		t.Fatalf("the hold without Redis: %+v, %v", out, err)
	}
	held := func(x *app.App, idx func(int) bool) bool {
		_, view, err := x.Events.Seats(ctx, buyer(u), ev.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range view {
			if (s.Status == store.Held) != idx(s.Idx) {
				return false
			}
		}
		return true
	}
	testsvc.Eventually(t, 5*time.Second, "b's holds in a's cache, from b's message", func() bool {
		return held(a, func(i int) bool { return i < 4 })
	})
	// A round on a: the load of the event kicked one, which runs now, and
	// loading another event kicks one more.
	testenv.Background(t, a)
	other := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 2)
	if _, _, err := a.Events.Seats(ctx, buyer(u), other.ID); err != nil {
		t.Fatal(err)
	}
	synced := syncedVersions(t, a, tn.Org.ID, ev.ID)
	testsvc.Eventually(t, 5*time.Second, "the hold without Redis read and synced", func() bool {
		return synced(seats[6]) == out.Created[0].SeatVersion && held(a, func(i int) bool { return i < 4 || i == 6 })
	})
	assertNotSyncedAgain(t, a, synced, res.Holds)
}

// syncedVersions reads, from Redis's record of the seat versions the
// follower synced one by one, the version a seat of the event was synced
// to (0: never).
func syncedVersions(t *testing.T, a *app.App, org, event uuid.UUID) func(uuid.UUID) int64 {
	versions := a.Locks.Keys(org, event).Versions()
	return func(seat uuid.UUID) int64 {
		v, err := a.Redis.HGet(context.Background(), versions, seat.String()).Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		return v
	}
}

// assertNotSyncedAgain checks that no follower round synced the fast-path
// holds into Redis again (synced: syncedVersions), and that Redis still
// has each one's lock.
func assertNotSyncedAgain(t *testing.T, a *app.App, synced func(uuid.UUID) int64, holds []store.Hold) {
	t.Helper()
	for _, h := range holds {
		if v := synced(h.SeatID); v >= h.SeatVersion {
			t.Errorf("seat %s synced again to version %d (the hold's is %d): a round read it back", h.SeatID, v, h.SeatVersion)
		}
		lk, ok, err := a.Locks.Get(context.Background(), h.OrgID, h.EventID, h.SeatID)
		if err != nil || !ok || lk.HoldID != h.ID {
			t.Errorf("seat %s: Redis lock %+v (found %v, %v), want hold %s", h.SeatID, lk, ok, err, h.ID)
		}
	}
}
