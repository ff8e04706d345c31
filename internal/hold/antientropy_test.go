package hold_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestAntiEntropyAppliesSilentChanges commits changes to Postgres that no
// process announces (as when the committing process dies before it
// publishes): a hold right after the event entered the cache, and its
// release a while later. The process's cache must pick up each from
// Postgres within a couple of rounds of its periodic check.
func TestAntiEntropyAppliesSilentChanges(t *testing.T) {
	a := testenv.App(t, nil)
	testenv.Background(t, a)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 5)
	seat := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)[3]
	ctx := context.Background()
	b := buyer(tn.Buyers[0])
	status := func() string {
		_, seats, err := a.Core.Seats(ctx, b, ev.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range seats {
			if st.ID == seat {
				return st.Status
			}
		}
		t.Fatal("seat not in the event")
		return ""
	}
	waitFor := func(want string) time.Duration {
		t.Helper()
		start := time.Now()
		for status() != want {
			if time.Since(start) > 5*time.Second {
				t.Fatalf("cache still says %q 5 s after the change to %q", status(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return time.Since(start)
	}

	if got := status(); got != store.Available { // loads the event into the cache
		t.Fatalf("seat starts %q", got)
	}
	now := time.Now()
	hid := uuid.New()
	out, err := a.Store.CreateHolds(ctx, store.HoldParams{Org: tn.Org.ID, Event: ev.ID, User: b.User, Now: now,
		HeldUntil: now.Add(time.Minute), Source: "api", Seats: []store.HoldRequest{{SeatID: seat, HoldID: hid, Fence: 1 << 40}}})
	if err != nil || len(out.Created) != 1 {
		t.Fatalf("silent hold: %+v, %v", out, err)
	}
	t.Logf("silent hold seen after %v", waitFor(store.Held))

	time.Sleep(1500 * time.Millisecond) // a later round, not the first one
	if _, err := a.Store.Release(ctx, tn.Org.ID, hid, b.User, false, ""); err != nil {
		t.Fatal(err)
	}
	t.Logf("silent release seen after %v", waitFor(store.Available))
}
