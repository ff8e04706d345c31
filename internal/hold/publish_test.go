package hold_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/realtime"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestLargeCommitPublished: a commit of more deltas than one message can
// carry (40 held seats, about 450 bytes each) reaches a subscriber of the
// event's channel whole, every delta once, in messages within the bus's
// bound. Twenty deltas a message, as before, overran it for held seats,
// and such a hold was told to other processes by the feed alone.
func TestLargeCommitPublished(t *testing.T) {
	a := testenv.App(t, func(c *config.Config) { c.MaxSeatsPerRequest, c.MaxHoldsPerBuyer = 40, 40 })
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 0)
	u := testenv.AddBuyers(t, a, tn.Org.ID, 1)[0]
	ev := testenv.NewEvent(t, a, tn.Org.ID, 2, 3, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)[:40]
	if _, _, err := a.Events.Seats(ctx, buyer(u), ev.ID); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[uuid.UUID]int{}
	messages := 0
	unsubscribe := a.Bus.Subscribe(a.Locks.Keys(tn.Org.ID, ev.ID).Live(), func(b []byte) {
		var m struct {
			Deltas []struct {
				Seat uuid.UUID `json:"seat"`
			} `json:"deltas"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("message %s: %v", b, err)
		}
		if len(b) > realtime.MaxPayload {
			t.Errorf("a message of %d bytes", len(b))
		}
		mu.Lock()
		defer mu.Unlock()
		messages++
		for _, d := range m.Deltas {
			seen[d.Seat]++
		}
	}, nil)
	defer unsubscribe()

	if _, err := a.Holds.Hold(ctx, buyer(u), hold.Request{Event: ev.ID, Seats: seats, Source: "web"}); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 5*time.Second, "a delta for every seat held", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == len(seats)
	})
	time.Sleep(50 * time.Millisecond) // a repeat would show by now
	mu.Lock()
	defer mu.Unlock()
	for _, id := range seats {
		if seen[id] != 1 {
			t.Errorf("seat %s: %d deltas, want 1", id, seen[id])
		}
	}
	if messages < 3 {
		t.Errorf("40 held seats in %d messages: they cannot fit the bound in fewer than 3", messages)
	}
	t.Logf("a hold of %d seats published in %d messages", len(seats), messages)
}
