package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestWaitlistLinePerOrganization: an event's line is its organization's
// alone. Another organization may have an event with the same id (the
// key is the pair), and its buyers waiting there neither move this
// line's places nor queue waitlist work for this event when its seats
// free up.
func TestWaitlistLinePerOrganization(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ours, theirs := testenv.NewTenant(t, a, 1), testenv.NewTenant(t, a, 2)
	ev := testenv.NewEvent(t, a, ours.Org.ID, 1, 1, 2)
	ctx := context.Background()
	if _, err := a.Pool.Exec(ctx, `
		INSERT INTO events (id, org_id, name, venue, starts_at, status) VALUES ($1, $2, 'Twin', 'Hall', now() + interval '1 day', 'on_sale')`,
		ev.ID, theirs.Org.ID); err != nil {
		t.Fatal(err)
	}
	for _, u := range theirs.Buyers {
		if _, err := a.Store.Waitlist.Join(ctx, store.WaitlistRequest{Org: theirs.Org.ID, Event: ev.ID, User: u.ID, Seats: 1}); err != nil {
			t.Fatal(err)
		}
	}

	// A seat of ours freed while nobody of ours waits: no work queued.
	buyer := ours.Buyers[0]
	act := hold.Actor{Org: ours.Org.ID, User: buyer.ID, Role: hold.RoleBuyer}
	seat := testenv.SeatIDs(t, a, ours.Org.ID, ev.ID)[0]
	res, err := a.Holds.Hold(ctx, act, hold.Request{Event: ev.ID, Seats: []uuid.UUID{seat}, Source: hold.SourceAPI})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Pool.Exec(ctx, `DELETE FROM waitlist_work WHERE org_id = $1 AND event_id = $2`, ours.Org.ID, ev.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.Release(ctx, act, res.Holds[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	var work int
	if err := a.Pool.QueryRow(ctx, `SELECT count(*) FROM waitlist_work WHERE org_id = $1 AND event_id = $2`,
		ours.Org.ID, ev.ID).Scan(&work); err != nil || work != 0 {
		t.Fatalf("%d waitlist work rows for our event (%v): another organization's line queued them", work, err)
	}

	e, err := a.Store.Waitlist.Join(ctx, store.WaitlistRequest{Org: ours.Org.ID, Event: ev.ID, User: buyer.ID, Seats: 1})
	if err != nil {
		t.Fatal(err)
	}
	if e.Position != 1 {
		t.Fatalf("our only waiting buyer is at place %d; the other organization's line was counted", e.Position)
	}
	mine, err := a.Store.Waitlist.OfUser(ctx, ours.Org.ID, ev.ID, buyer.ID)
	if err != nil || len(mine) != 1 || mine[0].Position != 1 {
		t.Fatalf("the buyer's entries %+v (%v), want one at place 1", mine, err)
	}
	n, first, err := a.Store.Waitlist.OfEvent(ctx, ours.Org.ID, ev.ID, 10)
	if err != nil || n != 1 || len(first) != 1 || first[0].Position != 1 {
		t.Fatalf("the event's line: %d waiting, %+v (%v); want ours alone at place 1", n, first, err)
	}
	theirLine, err := a.Store.Waitlist.OfUser(ctx, theirs.Org.ID, ev.ID, theirs.Buyers[1].ID)
	if err != nil || len(theirLine) != 1 || theirLine[0].Position != 2 {
		t.Fatalf("their second buyer: %+v (%v), want place 2", theirLine, err)
	}
}
