package hold_test

import (
	"context"
	"testing"
	"time"

	"seatd/internal/app"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestSeatsVersionFollowsTheCache: an event's seats version is, on every
// process, the version of the seats its hot cache has: it changes with a
// change from this process, from another one's message and from the
// change feed alone (a cancel never published), it is the same while
// nothing changes, and it names the seats a fresh load reads.
func TestSeatsVersionFollowsTheCache(t *testing.T) {
	a1 := testenv.App(t, nil)
	a2 := testenv.App(t, nil)
	testenv.Background(t, a1)
	testenv.Background(t, a2)
	tn := testenv.NewTenant(t, a1, 0)
	ev := testenv.NewEvent(t, a1, tn.Org.ID, 1, 1, 6)
	seats := testenv.SeatIDs(t, a1, tn.Org.ID, ev.ID)
	ctx := context.Background()
	box, org := staff(tn.BoxOffice), staff(tn.Organizer)

	version := func(a *app.App) int64 {
		t.Helper()
		v, err := a.Events.SeatsVersion(ctx, org, ev.ID)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// sum is the version the cache's seats make: what a walk of them
	// would answer.
	sum := func(a *app.App) int64 {
		t.Helper()
		_, ss, err := a.Events.Seats(ctx, org, ev.ID)
		if err != nil {
			t.Fatal(err)
		}
		var v int64
		for _, s := range ss {
			v += s.Version
		}
		return v
	}
	apps := []*app.App{a1, a2}
	var last [2]int64
	// moved waits until every process's version left where it was and
	// names its cache's seats, and stays while nothing changes.
	moved := func(what string) {
		t.Helper()
		for i, a := range apps {
			testsvc.Eventually(t, 5*time.Second, what+" on process "+string(rune('1'+i)), func() bool {
				v := version(a)
				return v != last[i] && v == sum(a)
			})
			last[i] = version(a)
			if again := version(a); again != last[i] {
				t.Fatalf("%s: version %d then %d with no change", what, last[i], again)
			}
		}
	}
	for i, a := range apps {
		last[i] = version(a)
		if last[i] != sum(a) {
			t.Fatalf("loaded: version %d, seats %d", last[i], sum(a))
		}
	}

	hs := holdFor(t, a1, box, ev.ID, seats[0])
	moved("hold")
	if _, err := a1.Holds.Release(ctx, box, hs[0].ID, "changed plans"); err != nil {
		t.Fatal(err)
	}
	moved("release")
	b := sell(t, a1, box, ev.ID, seats[1], seats[2])
	moved("sale")
	// Straight in Postgres, never published: both processes' caches
	// learn it from the change feed alone.
	if _, _, err := a1.Store.Bookings.Cancel(ctx, tn.Org.ID, b.ID, tn.BoxOffice.ID, nil, "no publish"); err != nil {
		t.Fatal(err)
	}
	moved("change from the feed")

	// A process loading the event now reads the same seats, and names
	// them by the same version.
	a3 := testenv.App(t, nil)
	if v := version(a3); v != last[0] {
		t.Fatalf("fresh load: version %d, cached %d", v, last[0])
	}
}
