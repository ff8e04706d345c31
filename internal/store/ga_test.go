package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestGAPlaceHeldAlreadyIsTaken: a GA request names places it picked as
// free, asking for that many more, so a place its buyer holds already is
// refused as taken, while a seat asked again is the buyer's own hold.
func TestGAPlaceHeldAlreadyIsTaken(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 4)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	params := func(ga bool, ids ...uuid.UUID) store.HoldParams {
		p := store.HoldParams{Org: tn.Org.ID, Event: ev.ID, User: tn.Buyers[0].ID, Now: now, HeldUntil: now.Add(time.Minute),
			Source: "api", GA: ga}
		for _, id := range ids {
			p.Seats = append(p.Seats, store.HoldRequest{SeatID: id, HoldID: uuid.New(), Fence: 1})
		}
		return p
	}
	if out, err := a.Store.Holds.Create(ctx, params(true, seats[0])); err != nil || len(out.Created) != 1 {
		t.Fatalf("first place: %+v, %v", out, err)
	}
	out, err := a.Store.Holds.Create(ctx, params(true, seats[0], seats[1]))
	if err != nil || len(out.Taken) != 1 || out.Taken[0] != seats[0] || len(out.Created)+len(out.Existing) != 0 {
		t.Fatalf("GA with a place held already: %+v, %v; want it taken, nothing held", out, err)
	}
	if out, err := a.Store.Holds.Create(ctx, params(false, seats[0])); err != nil || len(out.Existing) != 1 {
		t.Fatalf("the seat asked again: %+v, %v; want the buyer's own hold", out, err)
	}
	var n int
	if err := a.Pool.QueryRow(ctx, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, ev.ID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d holds (%v), want 1", n, err)
	}
}
