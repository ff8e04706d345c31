package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/testenv"
)

// TestBookingsOfUser: a buyer's list holds their own online bookings only,
// newest first, with the live tickets counted; another buyer's and another
// organization's are not in it.
func TestBookingsOfUser(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 2)
	other := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	buy := func(u int, s []uuid.UUID) uuid.UUID {
		b := tn.Buyers[u]
		act := hold.Actor{Org: b.OrgID, User: b.ID, Role: hold.RoleBuyer}
		res, err := a.Holds.Hold(ctx, act, hold.Request{Event: ev.ID, Seats: s, Source: hold.SourceWeb})
		if err != nil {
			t.Fatal(err)
		}
		var ids []uuid.UUID
		for _, h := range res.Holds {
			ids = append(ids, h.ID)
		}
		bk, err := a.Holds.Purchase(ctx, act, ev.ID, uuid.NewString(), ids)
		if err != nil {
			t.Fatal(err)
		}
		return bk.ID
	}
	first := buy(0, seats[:2])
	second := buy(0, seats[2:3])
	buy(1, seats[3:4])
	got, err := a.Store.Bookings.OfUser(ctx, tn.Org.ID, tn.Buyers[0].ID, 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != second || got[1].ID != first {
		t.Fatalf("bookings %+v, want [%s %s]", got, second, first)
	}
	if got[1].LiveTickets != 2 || got[1].EventName != ev.Name {
		t.Errorf("first booking %+v: want 2 live tickets of %q", got[1], ev.Name)
	}
	if mine, err := a.Store.Bookings.OfUser(ctx, other.Org.ID, tn.Buyers[0].ID, 50); err != nil || len(mine) != 0 {
		t.Errorf("under another organization: %v, %v; want none", mine, err)
	}
}
