package hold_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestDeletedDraftLeavesEveryProcess: a draft deleted on one process is
// gone there at once, its Redis keys with it; another process that had it cached refuses a
// staff hold on it in Postgres even before it hears (the seat is no
// longer available, the event no longer open), and then forgets it at
// its follower's next round.
func TestDeletedDraftLeavesEveryProcess(t *testing.T) {
	t.Parallel()
	a1 := testenv.App(t, nil)
	a2 := testenv.App(t, nil) // its follower starts only after the stale hold below
	testenv.Background(t, a1)
	tn := testenv.NewTenant(t, a1, 0)
	ev := testenv.NewEvent(t, a1, tn.Org.ID, 1, 2, 5)
	ctx := context.Background()
	if _, err := a1.Pool.Exec(ctx, `UPDATE events SET status = 'draft' WHERE org_id = $1 AND id = $2`, tn.Org.ID, ev.ID); err != nil {
		t.Fatal(err)
	}
	seats := testenv.SeatIDs(t, a1, tn.Org.ID, ev.ID)
	org := staff(tn.Organizer)
	if _, _, err := a2.Events.Seats(ctx, org, ev.ID); err != nil {
		t.Fatal(err)
	}

	k := a1.Locks.Keys(tn.Org.ID, ev.ID)
	redisKeys := func() int64 {
		n, err := a1.Redis.Exists(ctx, k.Synced(), k.Fence(), k.Holds(), k.Holders(), k.Versions()).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if redisKeys() == 0 {
		t.Fatal("loading the draft wrote no redis keys to check the delete against")
	}
	if err := a1.Events.Delete(ctx, buyer(tn.Organizer), ev.ID); apperr.CodeOf(err) != apperr.Forbidden {
		t.Fatalf("delete by a non-organizer: %v", err)
	}
	if err := a1.Events.Delete(ctx, org, ev.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a1.Events.Seats(ctx, org, ev.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("the deleting process still serves the event: %v", err)
	}
	if n := redisKeys(); n != 0 {
		t.Fatalf("%d of the deleted draft's redis keys left", n)
	}
	if _, err := a2.Holds.Hold(ctx, org, hold.Request{Event: ev.ID, Seats: seats[:1], Source: hold.SourceAPI}); err == nil {
		t.Fatal("a staff hold on the deleted draft through a stale cache was granted")
	}
	var holds int
	if err := a1.Pool.QueryRow(ctx, `SELECT count(*) FROM seat_holds WHERE org_id = $1 AND event_id = $2`, tn.Org.ID, ev.ID).Scan(&holds); err != nil {
		t.Fatal(err)
	}
	if holds != 0 {
		t.Fatalf("%d holds written on the deleted draft", holds)
	}

	testenv.Background(t, a2)
	testsvc.Eventually(t, 5*time.Second, "the other process forgets the event", func() bool {
		_, _, err := a2.Events.Seats(ctx, org, ev.ID)
		return apperr.CodeOf(err) == apperr.NotFound
	})
	if n := redisKeys(); n != 0 {
		t.Fatalf("%d redis keys of the deleted draft written again", n)
	}
	if err := a2.Events.Delete(ctx, org, ev.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("deleting it again: %v", err)
	}
	if err := a2.Events.Delete(ctx, org, uuid.New()); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("deleting an unknown event: %v", err)
	}
}
